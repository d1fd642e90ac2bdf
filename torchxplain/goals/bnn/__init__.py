"""GOALS on networks with a Bayesian last layer: the model (``_model``: :class:`~torchxplain.goals.LastLayerBNN`),
its Pyro head (``_pyro_head``), the GOALS backend (``_backend``), the posterior and its fit checks, and RATE
(``_rate``). Public names are in :mod:`torchxplain.goals`."""

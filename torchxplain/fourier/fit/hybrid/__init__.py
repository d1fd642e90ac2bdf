"""Fits on hybrid points ``(x_S, b_~S)``, where interventional SHAP evaluates a model: the sampler (``_sampler``),
the terms and their sparse design (``_terms``), sparse regression by stagewise orthogonal matching pursuit
(``_regression``), the ladder of stages held to a target (``_ladder``) and the held-out check (``_checks``)."""

"""Fitting a black box by queries: :func:`~torchxplain.fit_sparse_fourier` (``_api``), its options and argument
checks (``_options``), :class:`~torchxplain.fourier.FitReport` (``_report``) and the oracle that queries the model in
batches on its device (``_oracle``).

* the players' observed levels, the reference-coded basis (``_levels``), term keys (``_keys``) and the exact map of
  products of level indicators to Walsh terms (``_walsh``); one-hot blocks found in the data (``_one_hot``);
* the exact routes: tabulation of a small level grid (``_tabulate``) and enumeration of coalitions through the
  model, the library's reference (``_enumerate``);
* ``cube/`` — fits on uniform inputs of the cube: the exact WHT, the sparse WHT by hashing, low-degree regression;
* ``hybrid/`` — fits where SHAP looks: hybrid samples, the terms' sparse design, sparse regression, the ladder of
  stages and its held-out check.
"""

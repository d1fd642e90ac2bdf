"""Fitting a black box by queries: :func:`~torchxplain.fit_sparse_fourier` (``_api``), its options and argument
checks (``_options``), :class:`~torchxplain.fourier.FitReport` (``_report``) and the oracle that queries the model in
batches on its device (``_oracle``).

* ``cube/`` — fits on uniform inputs of the cube: the exact WHT, the sparse WHT by hashing, low-degree regression.
* ``hybrid/`` — fits where SHAP looks: hybrid points, the identifiable player basis, sparse regression, the
  escalation ladder and its held-out checks.
"""

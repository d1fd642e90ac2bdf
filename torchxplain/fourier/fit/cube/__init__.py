"""Fits on uniform inputs of the Boolean cube: the exact WHT and low-degree regression (``_uniform``,
``_regression``) and the sparse WHT by hashing and peeling (``_hashing``)."""

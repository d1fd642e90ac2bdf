"""Closed-form game values of a sparse spectrum against a background (interventional), batched.

Two exact kernels compute the same values (see the design page): the dense two-GEMM form of Eq. 5 (``_gemm``,
``Θ(Q·|D|·k·n)``, the dense/GPU path) and the small-support kernel (``_support``: tables over the patterns of support
families, ``_families``, for trees and low-degree spectra). A :class:`~torchxplain.fourier.ValuePlan` (``_plan``)
picks one by its cost model (``_cost``); the public functions (``_public``) validate their inputs once and go
through the same plan. ``_players`` maps players to binary features, ``_relaxed`` extends the values to real-valued
queries, and ``interactions/`` holds the interaction-index family. Public names are in :mod:`torchxplain.fourier`.
"""

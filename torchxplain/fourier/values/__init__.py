"""Closed-form game values of a sparse spectrum against a background (interventional), batched.

Two exact kernels compute the same values (DESIGN §3): the dense two-GEMM form of paper Eq. 5
(:mod:`~torchxplain.fourier.values.gemm`, ``Θ(Q·|D|·k·n)``, the dense/GPU path) and the small-support kernel
(tables over the patterns of support families, for trees and low-degree spectra). A
:class:`~torchxplain.fourier.values.plan.ValuePlan` picks one by its cost model; the public functions here validate
their inputs once and go through the same plan.
"""

from torchxplain.fourier.values.background import BackgroundTerm, background_term, validate_groups
from torchxplain.fourier.values.public import (
    banzhaf_values,
    precompute_background,
    shapley_interactions,
    shapley_values,
)

__all__ = [
    "BackgroundTerm",
    "background_term",
    "banzhaf_values",
    "precompute_background",
    "shapley_interactions",
    "shapley_values",
    "validate_groups",
]

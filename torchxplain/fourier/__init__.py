"""Walsh–Hadamard (Fourier) representations and the closed-form SHAP values built on them."""

from torchxplain.fourier.explainers import FourierShap
from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.surrogate import SparseFourierSurrogate
from torchxplain.fourier.values import (
    BackgroundTerm,
    banzhaf_values,
    precompute_background,
    shapley_interactions,
    shapley_values,
)

__all__ = [
    "BackgroundTerm",
    "FourierShap",
    "FourierSpectrum",
    "SparseFourierSurrogate",
    "banzhaf_values",
    "precompute_background",
    "shapley_interactions",
    "shapley_values",
]

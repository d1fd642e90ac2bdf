"""Walsh–Hadamard (Fourier) representations and the closed-form SHAP values built on them."""

from torchxplain.fourier.encoders import BinaryEncoder, InputEncoder, ThresholdEncoder
from torchxplain.fourier.explainers import FourierShap
from torchxplain.fourier.interactions import interaction_values
from torchxplain.fourier.pruning import PruningReport
from torchxplain.fourier.recovery import FitQualityWarning, FitReport, fit_sparse_fourier
from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.surrogate import SparseFourierSurrogate
from torchxplain.fourier.trees import TreeEncoding, tree_spectrum
from torchxplain.fourier.values import (
    BackgroundTerm,
    banzhaf_values,
    precompute_background,
    shapley_interactions,
    shapley_values,
)

__all__ = [
    "BackgroundTerm",
    "BinaryEncoder",
    "FitQualityWarning",
    "FitReport",
    "FourierShap",
    "FourierSpectrum",
    "InputEncoder",
    "PruningReport",
    "SparseFourierSurrogate",
    "ThresholdEncoder",
    "TreeEncoding",
    "banzhaf_values",
    "fit_sparse_fourier",
    "interaction_values",
    "precompute_background",
    "shapley_interactions",
    "shapley_values",
    "tree_spectrum",
]

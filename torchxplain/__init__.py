"""torchxplain: FourierSHAP, GOALS and IDX as Captum-compatible torch modules."""

from torchxplain import fourier, goals, idx, settings, viz
from torchxplain.fourier import FourierShap, FourierSpectrum, SparseFourierSurrogate, fit_sparse_fourier, tree_spectrum
from torchxplain.goals import Goals
from torchxplain.integrations.after_fit import AfterFitResult, explain_after_fit

__version__ = "0.1.0"

__all__ = [
    "AfterFitResult",
    "FourierShap",
    "FourierSpectrum",
    "Goals",
    "SparseFourierSurrogate",
    "explain_after_fit",
    "fit_sparse_fourier",
    "fourier",
    "goals",
    "idx",
    "settings",
    "tree_spectrum",
    "viz",
]

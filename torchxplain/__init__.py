"""torchxplain: FourierSHAP, GOALS and IDX as Captum-compatible torch modules."""

from torchxplain import fourier, goals, idx, settings, viz
from torchxplain.fourier.explainer._fourier_shap import FourierShap
from torchxplain.fourier.fit._api import fit_sparse_fourier
from torchxplain.fourier.spectrum._spectrum import FourierSpectrum
from torchxplain.fourier.spectrum._surrogate import SparseFourierSurrogate
from torchxplain.fourier.trees._extraction import tree_spectrum
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

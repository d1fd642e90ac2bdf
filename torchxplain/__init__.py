"""torchxplain: FourierSHAP, GOALS and IDX as Captum-compatible torch modules."""

from torchxplain import fourier
from torchxplain import goals
from torchxplain import idx
from torchxplain.fourier import FourierShap, FourierSpectrum, SparseFourierSurrogate
from torchxplain.fourier import tree_spectrum
from torchxplain.fourier import fit_sparse_fourier
from torchxplain.goals import Goals
from torchxplain.integrations.after_fit import AfterFitResult, explain_after_fit

__version__ = "0.1.0"

__all__ = [
    "AfterFitResult",
    "FourierShap",
    "FourierSpectrum",
    "SparseFourierSurrogate",
    "Goals",
    "explain_after_fit",
    "fit_sparse_fourier",
    "fourier",
    "goals",
    "idx",
    "tree_spectrum",
]

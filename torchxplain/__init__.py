"""torchxplain: FourierSHAP, GOALS and IDX as Captum-compatible torch modules."""

from torchxplain import fourier
from torchxplain.fourier import FourierShap, FourierSpectrum, SparseFourierSurrogate

__version__ = "0.1.0"

__all__ = [
    "FourierShap",
    "FourierSpectrum",
    "SparseFourierSurrogate",
    "fourier",
]

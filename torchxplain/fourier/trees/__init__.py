"""Exact Fourier spectra of tree ensembles (scikit-learn, XGBoost, LightGBM, CatBoost).

:func:`tree_spectrum` reads a fitted model through :mod:`torchxplain.fourier.adapters`, maps its splits to
binary features (the inputs themselves, or a :class:`TreeEncoding` of thresholds for continuous inputs),
expands every tree exactly (:mod:`~torchxplain.fourier.trees.expansion`) and merges duplicate frequencies
under the memory budget (:mod:`~torchxplain.fourier.trees.terms`). ``return_families=True`` also gives the
:class:`SupportFamilies` grouping of the frequencies by a root-to-leaf support set.
"""

from torchxplain.fourier.trees.encoding import TreeEncoding
from torchxplain.fourier.trees.extraction import (
    DEFAULT_MAX_TERMS,
    ENCODINGS,
    extract,
    resolve_encoding,
    spectrum_of_ensemble,
    tree_spectrum,
)
from torchxplain.fourier.trees.families import SupportFamilies
from torchxplain.fourier.trees.splits import splits_binary_inputs

__all__ = [
    "DEFAULT_MAX_TERMS",
    "ENCODINGS",
    "SupportFamilies",
    "TreeEncoding",
    "extract",
    "resolve_encoding",
    "spectrum_of_ensemble",
    "splits_binary_inputs",
    "tree_spectrum",
]

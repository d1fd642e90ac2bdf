"""torchxplain: FourierSHAP, GOALS and IDX as Captum-compatible torch modules.

The public names load on first use (PEP 562), so ``import torchxplain`` and ``torchxplain --version`` import
neither torch nor the library; ``tx.Goals``, ``from torchxplain import FourierShap`` and ``tx.idx`` import what
they name.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# each name of __all__ -> the module that defines it (a subpackage's own name maps to None)
_EXPORTS: dict[str, str | None] = {
    "AfterFitResult": "torchxplain.integrations._after_fit",
    "FourierShap": "torchxplain.fourier.explainer._fourier_shap",
    "FourierSpectrum": "torchxplain.fourier.spectrum._spectrum",
    "Goals": "torchxplain.goals._explainers",
    "SparseFourierSurrogate": "torchxplain.fourier.spectrum._surrogate",
    "explain_after_fit": "torchxplain.integrations._after_fit",
    "fit_sparse_fourier": "torchxplain.fourier.sources._fit_sparse",
    "fourier": None,
    "goals": None,
    "idx": None,
    "settings": None,
    "tree_spectrum": "torchxplain.fourier.trees._extraction",
    "viz": None,
}

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

if TYPE_CHECKING:
    from torchxplain import fourier, goals, idx, settings, viz
    from torchxplain.fourier.explainer._fourier_shap import FourierShap
    from torchxplain.fourier.sources._fit_sparse import fit_sparse_fourier
    from torchxplain.fourier.spectrum._spectrum import FourierSpectrum
    from torchxplain.fourier.spectrum._surrogate import SparseFourierSurrogate
    from torchxplain.fourier.trees._extraction import tree_spectrum
    from torchxplain.goals._explainers import Goals
    from torchxplain.integrations._after_fit import AfterFitResult, explain_after_fit


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'torchxplain' has no attribute {name!r}")
    module = _EXPORTS[name]
    value = (
        importlib.import_module(f"torchxplain.{name}")
        if module is None
        else getattr(importlib.import_module(module), name)
    )
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))

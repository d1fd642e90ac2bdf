"""Adapters that read tree ensembles from scikit-learn, XGBoost and LightGBM into one flat form.

Each library's adapter lives in its own module and imports that library lazily, so XGBoost and LightGBM
stay optional (``pip install torchxplain[trees]``).
"""

from __future__ import annotations

from typing import Any

from torchxplain.fourier.adapters import lightgbm as _lightgbm
from torchxplain.fourier.adapters import sklearn as _sklearn
from torchxplain.fourier.adapters import xgboost as _xgboost
from torchxplain.fourier.adapters.base import TreeEnsemble

_ADAPTERS = (_sklearn, _xgboost, _lightgbm)
SUPPORTED_MODELS = "; ".join(adapter.SUPPORTED for adapter in _ADAPTERS)


def supports(model: Any) -> bool:
    """Whether ``model`` is a tree model one of the adapters reads."""
    return any(adapter.matches(model) for adapter in _ADAPTERS)


def parse_model(model: Any, target: int | None = None) -> TreeEnsemble:
    """Read a fitted tree model into a :class:`TreeEnsemble` for output ``target``.

    Raises:
        TypeError: the model type is not supported (the message names it and lists the supported ones).
        ValueError: the model is not fitted, ``target`` is missing for a multi-output model or out of range,
            or the model uses a feature this package cannot represent (categorical splits, linear leaves).
    """
    for adapter in _ADAPTERS:
        if adapter.matches(model):
            return adapter.parse(model, target)
    raise TypeError(
        f"model of type {type(model).__module__}.{type(model).__qualname__} is not a supported tree model; "
        f"supported: {SUPPORTED_MODELS}"
    )


__all__ = ["SUPPORTED_MODELS", "TreeEnsemble", "parse_model", "supports"]

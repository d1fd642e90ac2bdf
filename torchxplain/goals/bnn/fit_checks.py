"""Validation of ``LastLayerBNN``'s constructor and ``fit`` options (messages name the argument and the fix)."""

from __future__ import annotations

import math
from typing import Any


def _positive_finite(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def _positive_int(name: str, value: Any, hint: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int ({hint}), got {value!r}")
    return value


def check_model_options(
    likelihood: str,
    guide: str,
    n_classes: int | None,
    feature_dim: int,
    prior_scale: float,
    bias_prior_scale: float | None,
    bias: bool,
    init_scale: float,
    likelihoods: tuple[str, ...],
    guides: tuple[str, ...],
) -> float:
    """Check the constructor's options; returns the bias prior scale (``prior_scale`` when not given)."""
    if likelihood not in likelihoods:
        raise ValueError(f"likelihood must be one of {list(likelihoods)}, got {str(likelihood)[:40]!r}")
    if guide not in guides:
        raise ValueError(f"guide must be one of {list(guides)}, got {str(guide)[:40]!r}")
    if likelihood == "categorical":
        if isinstance(n_classes, bool) or not isinstance(n_classes, int) or n_classes < 2:
            raise ValueError(f"likelihood='categorical' needs n_classes >= 2 (an int), got {n_classes!r}")
    elif n_classes is not None:
        raise ValueError(f"n_classes is only used with likelihood='categorical', got {n_classes!r}; drop it")
    _positive_int("feature_dim", feature_dim, "the width L of the features' output")
    _positive_finite("prior_scale", prior_scale)
    _positive_finite("init_scale", init_scale)
    if not bias:
        return float(prior_scale)
    return _positive_finite("bias_prior_scale", prior_scale if bias_prior_scale is None else bias_prior_scale)


def check_fit_options(epochs: Any, lr: Any, batch_size: Any, num_particles: Any, seed: Any) -> None:
    """Check ``fit``'s optimisation options."""
    _positive_int("epochs", epochs, "passes over the data")
    _positive_finite("lr", lr)
    if batch_size is not None:
        _positive_int("batch_size", batch_size, "or None for full batches")
    _positive_int("num_particles", num_particles, "ELBO samples per step, e.g. 1")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__} {seed!r}")

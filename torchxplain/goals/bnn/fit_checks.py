"""Validation of ``LastLayerBNN``'s constructor and ``fit`` options (messages name the argument and the fix)."""

from __future__ import annotations

from typing import Any

from torchxplain._core import check_flag, check_int, check_number


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
        check_int(n_classes, "n_classes", 2, hint="likelihood='categorical' needs the number of classes")
    elif n_classes is not None:
        raise ValueError(f"n_classes is only used with likelihood='categorical', got {n_classes!r}; drop it")
    check_int(feature_dim, "feature_dim", 1, hint="the width L of the features' output")
    check_number(prior_scale, "prior_scale", greater_than=0)
    check_number(init_scale, "init_scale", greater_than=0)
    if not check_flag(bias, "bias"):
        return float(prior_scale)
    return check_number(
        prior_scale if bias_prior_scale is None else bias_prior_scale, "bias_prior_scale", greater_than=0
    )


def check_fit_options(
    epochs: Any, lr: Any, batch_size: Any, num_particles: Any, seed: Any, train_features: Any
) -> None:
    """Check ``fit``'s optimisation options."""
    check_int(epochs, "epochs", 1, hint="passes over the data")
    check_number(lr, "lr", greater_than=0, hint="e.g. 1e-2")
    if batch_size is not None:
        check_int(batch_size, "batch_size", 1, hint="or None for full batches")
    check_int(num_particles, "num_particles", 1, hint="ELBO samples per step, e.g. 1")
    check_int(seed, "seed", 0)
    check_flag(train_features, "train_features")

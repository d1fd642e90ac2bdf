"""Validation of ``LastLayerBNN``'s constructor and ``fit`` options and data (messages name the argument and the
fix)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from torchxplain._core import check_flag, check_int, check_number, chunk_bounds, rows_per_chunk
from torchxplain.goals.bnn._modes import train_mode


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


def check_features(features: nn.Module, X: Tensor, feature_dim: int) -> None:
    """The extractor must map ``X`` ``(N, J)`` to finite ``(N, feature_dim)`` features (one pass, in row blocks,
    without autograd and in eval mode).

    Raises:
        ValueError: the extractor fails on ``X`` (e.g. a wrong feature count), returns another shape, or returns
            NaN or infinite features (the rows are named).
    """
    width = next((m.in_features for m in features.modules() if isinstance(m, nn.Linear)), None)
    hint = f"; the extractor's first nn.Linear takes {width} features" if width not in (None, X.shape[1]) else ""
    step = rows_per_chunk(8 * 4 * (X.shape[1] + feature_dim), X.shape[0])
    with torch.no_grad(), train_mode(features, False):
        for a, b in chunk_bounds(X.shape[0], step):
            try:
                h = features(X[a:b])
            except (RuntimeError, ValueError, IndexError) as err:
                raise ValueError(
                    f"the feature extractor fails on X of shape {tuple(X.shape)} ({type(err).__name__}: "
                    f"{str(err)[:120]}){hint}; pass X with the columns the network was trained on"
                ) from None
            if h.ndim != 2 or h.shape[1] != feature_dim:
                raise ValueError(f"features(X) must have shape (batch, {feature_dim}), got {tuple(h.shape)}")
            bad = (~torch.isfinite(h)).any(1).nonzero().flatten()
            if bad.numel():
                raise ValueError(
                    f"features(X) is NaN or infinite at rows {(bad[:5] + a).tolist()}: the feature extractor returns "
                    "non-finite values there (check the network's weights, e.g. a diverged training, and those rows)"
                )

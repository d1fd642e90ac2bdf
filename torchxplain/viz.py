"""Plots shared by all methods. Each returns ``(fig, ax)`` and never calls ``plt.show()``."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from torch import Tensor


def _numpy(x: Tensor | np.ndarray) -> np.ndarray:
    return x.detach().cpu().double().numpy() if isinstance(x, Tensor) else np.asarray(x, dtype=float)


def _names(names: Sequence[str] | None, count: int) -> list[str]:
    if names is None:
        return [f"x{i}" for i in range(count)]
    if len(names) != count:
        raise ValueError(f"got {len(names)} feature names for {count} features")
    return list(names)


def _axes(ax: Axes | None, size: tuple[float, float]) -> tuple[Figure, Axes]:
    if ax is not None:
        return ax.figure, ax
    fig, ax = plt.subplots(figsize=size)
    return fig, ax


def bar_mean_abs(
    attributions: Tensor | np.ndarray,
    feature_names: Sequence[str] | None = None,
    max_features: int = 20,
    ax: Axes | None = None,
    title: str | None = None,
) -> tuple[Figure, Axes]:
    """Horizontal bars of the mean ``|attribution|`` per feature over rows.

    Args:
        attributions: ``(Q, n)`` attributions.
        feature_names: ``n`` names (default ``x0..``).
        max_features: show the top features only.
    """
    values = _numpy(attributions)
    if values.ndim != 2:
        raise ValueError(f"attributions must be (rows, features), got shape {values.shape}")
    names = _names(feature_names, values.shape[1])
    score = np.abs(values).mean(0)
    order = np.argsort(score)[::-1][:max_features][::-1]
    fig, ax = _axes(ax, (6, 0.3 * len(order) + 1.2))
    ax.barh([names[i] for i in order], score[order], color="#1f77b4")
    ax.set_xlabel("mean |attribution|")
    ax.set_title(title or "Global importance")
    fig.tight_layout()
    return fig, ax


def beeswarm(
    attributions: Tensor | np.ndarray,
    features: Tensor | np.ndarray | None = None,
    feature_names: Sequence[str] | None = None,
    max_features: int = 20,
    ax: Axes | None = None,
    title: str | None = None,
    seed: int = 0,
) -> tuple[Figure, Axes]:
    """SHAP-style beeswarm: one row per feature, one dot per sample, coloured by the feature value.

    Args:
        attributions: ``(Q, n)`` attributions.
        features: ``(Q, n)`` feature values used for colour (optional).
    """
    values = _numpy(attributions)
    names = _names(feature_names, values.shape[1])
    colour = None if features is None else _numpy(features)
    order = np.argsort(np.abs(values).mean(0))[::-1][:max_features][::-1]
    fig, ax = _axes(ax, (7, 0.35 * len(order) + 1.5))
    jitter = np.random.default_rng(seed).uniform(-0.3, 0.3, size=values.shape[0])
    scatter = None
    for row, j in enumerate(order):
        c = None if colour is None else colour[:, j]
        scatter = ax.scatter(values[:, j], row + jitter, c=c, cmap="coolwarm", s=8, alpha=0.8)
    ax.set_yticks(range(len(order)), [names[j] for j in order])
    ax.axvline(0.0, color="grey", lw=0.8)
    ax.set_xlabel("attribution")
    ax.set_title(title or "Attributions per sample")
    if colour is not None and scatter is not None:
        fig.colorbar(scatter, ax=ax, label="feature value")
    fig.tight_layout()
    return fig, ax


def interaction_heatmap(
    interactions: Tensor | np.ndarray,
    feature_names: Sequence[str] | None = None,
    ax: Axes | None = None,
    title: str | None = None,
) -> tuple[Figure, Axes]:
    """Heatmap of mean pairwise interactions.

    Args:
        interactions: ``(m, m)`` or ``(Q, m, m)`` (averaged over queries).
    """
    values = _numpy(interactions)
    if values.ndim == 3:
        values = values.mean(0)
    if values.ndim != 2 or values.shape[0] != values.shape[1]:
        raise ValueError(f"interactions must be (m, m) or (Q, m, m), got shape {values.shape}")
    names = _names(feature_names, values.shape[0])
    bound = float(np.abs(values).max()) or 1.0
    fig, ax = _axes(ax, (0.35 * len(names) + 2.5, 0.35 * len(names) + 2))
    image = ax.imshow(values, cmap="RdBu_r", vmin=-bound, vmax=bound)
    ax.set_xticks(range(len(names)), names, rotation=90)
    ax.set_yticks(range(len(names)), names)
    ax.set_title(title or "Mean pairwise interaction")
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    return fig, ax


def importance_with_intervals(
    mean: Tensor | np.ndarray,
    std: Tensor | np.ndarray,
    feature_names: Sequence[str] | None = None,
    z: float = 1.96,
    max_features: int = 20,
    ax: Axes | None = None,
    title: str | None = None,
) -> tuple[Figure, Axes]:
    """Point estimates with ``± z·std`` intervals, sorted by ``|mean|``.

    Args:
        mean, std: ``(J,)`` posterior means and standard deviations of an importance score.
    """
    mu, sd = _numpy(mean), _numpy(std)
    if mu.shape != sd.shape or mu.ndim != 1:
        raise ValueError(f"mean and std must both be (J,), got {mu.shape} and {sd.shape}")
    names = _names(feature_names, mu.shape[0])
    order = np.argsort(np.abs(mu))[::-1][:max_features][::-1]
    fig, ax = _axes(ax, (6, 0.3 * len(order) + 1.2))
    ax.errorbar(mu[order], range(len(order)), xerr=z * sd[order], fmt="o", color="#d62728", capsize=3)
    ax.set_yticks(range(len(order)), [names[j] for j in order])
    ax.axvline(0.0, color="grey", lw=0.8)
    ax.set_xlabel(f"importance (± {z:g} sd)")
    ax.set_title(title or "Importance with posterior intervals")
    fig.tight_layout()
    return fig, ax


def save(fig: Figure, path: str) -> str:
    """Save ``fig`` as PNG at ``path``, close it and return the path."""
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


__all__ = ["bar_mean_abs", "beeswarm", "importance_with_intervals", "interaction_heatmap", "save"]

"""Displays of local attributions: mean-|attribution| bars, the beeswarm, and the pairwise interaction heatmap."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes

from torchxplain.viz._base import ArrayLike, Display, as_numpy, resolve_names, top_order

COLOUR_LABEL = "feature value (low → high)"


class BarDisplay(Display):
    """Horizontal bars of one importance number per feature, the largest ``|importance|`` on top.

    Args:
        importance: ``(n,)`` one number per feature (e.g. mean ``|attribution|``, in the attributions' units).
        feature_names: ``n`` names (default: a DataFrame's columns, else ``x0, x1, ...``).
        xlabel: what the number is.

    Attributes:
        order_: ``(shown,)`` feature indices drawn, bottom to top (set by :meth:`plot`).

    Example:
        >>> import torch
        >>> import torchxplain as tx
        >>> display = tx.viz.BarDisplay(torch.tensor([0.3, 0.7]), ["age", "dose"]).plot()
        >>> [label.get_text() for label in display.ax_.get_yticklabels()]
        ['age', 'dose']
        >>> display.figure_.clf()
    """

    order_: np.ndarray

    def __init__(
        self, importance: ArrayLike, feature_names: Sequence[str] | None = None, xlabel: str = "mean |attribution|"
    ) -> None:
        self.importance = as_numpy(importance, "importance", ndim=1)
        self.feature_names = resolve_names(feature_names, self.importance.shape[0], importance)
        self.xlabel = xlabel

    @classmethod
    def from_attributions(
        cls,
        attributions: ArrayLike,
        feature_names: Sequence[str] | None = None,
        *,
        ax: Axes | None = None,
        max_features: int = 20,
        title: str | None = None,
    ) -> BarDisplay:
        """Bars of the mean ``|attribution|`` over rows of ``(Q, n)`` attributions, drawn on ``ax``."""
        values = as_numpy(attributions, "attributions", ndim=2)
        names = resolve_names(feature_names, values.shape[1], attributions)
        return cls(np.abs(values).mean(0), names).plot(ax=ax, max_features=max_features, title=title)

    def plot(self, ax: Axes | None = None, *, max_features: int = 20, title: str | None = None) -> BarDisplay:
        """Draw the ``max_features`` largest bars on ``ax`` (a new figure when ``None``); returns ``self``."""
        self.order_ = top_order(self.importance, max_features)
        ax = self._start(ax, (6.0, 0.3 * len(self.order_) + 1.2))
        ax.barh(range(len(self.order_)), self.importance[self.order_], color="#1f77b4")
        ax.set_yticks(range(len(self.order_)), [self.feature_names[i] for i in self.order_])
        ax.set_xlabel(self.xlabel)
        ax.set_title(title or "Global importance")
        self.figure_.tight_layout()
        return self


class BeeswarmDisplay(Display):
    """SHAP-style beeswarm: one row per feature, one dot per sample at its attribution, coloured by its value.

    Colours share one scale across features: each feature's values are mapped to ``[0, 1]`` between its own
    5th and 95th percentiles (clipped), so blue is a low and red a high value *of that feature*, and the
    colour bar is labelled ``feature value (low → high)`` rather than in any one feature's units. Constant
    features and missing values are drawn grey.

    Args:
        attributions: ``(Q, n)`` attributions (rows: samples).
        features: ``(Q, n)`` the samples' feature values, or ``None`` for uncoloured dots.
        feature_names: ``n`` names (default: a DataFrame's columns, else ``x0, x1, ...``).

    Attributes:
        order_: ``(shown,)`` feature indices drawn, bottom to top, by mean ``|attribution|``.
        colour_values_: ``(Q, shown)`` the shared-scale colour values in ``[0, 1]`` (NaN: grey), or ``None``.

    Example:
        >>> import torch
        >>> import torchxplain as tx
        >>> values = torch.tensor([[0.5, -1.0], [0.2, 0.3], [-0.1, 0.8]])  # (Q, p) attributions
        >>> features = torch.tensor([[1.0, 0.0], [2.0, 1.0], [3.0, 0.5]])  # the explained rows: the colours
        >>> display = tx.viz.BeeswarmDisplay(values, features, ["age", "dose"]).plot()
        >>> display.figure_ is display.ax_.figure
        True
        >>> display.figure_.clf()
    """

    order_: np.ndarray
    colour_values_: np.ndarray | None

    def __init__(
        self, attributions: ArrayLike, features: ArrayLike | None = None, feature_names: Sequence[str] | None = None
    ) -> None:
        self.attributions = as_numpy(attributions, "attributions", ndim=2)
        self.features = None if features is None else as_numpy(features, "features", ndim=2)
        if self.features is not None and self.features.shape != self.attributions.shape:
            raise ValueError(
                f"features must have the attributions' shape {self.attributions.shape}, got {self.features.shape}"
            )
        source = features if hasattr(features, "columns") else attributions
        self.feature_names = resolve_names(feature_names, self.attributions.shape[1], source)

    def plot(
        self,
        ax: Axes | None = None,
        *,
        max_features: int = 20,
        title: str | None = None,
        xlabel: str = "attribution",
        seed: int = 0,
    ) -> BeeswarmDisplay:
        """Draw the ``max_features`` features with the largest mean ``|attribution|``; returns ``self``.

        ``seed`` fixes the vertical jitter, which is proportional to the local density of dots.
        """
        import matplotlib.pyplot as plt
        from matplotlib.colors import Normalize

        self.order_ = top_order(np.abs(self.attributions).mean(0), max_features)
        x = self.attributions[:, self.order_]
        y = np.arange(len(self.order_))[None, :] + _swarm_offsets(x, np.random.default_rng(seed))
        ax = self._start(ax, (7.0, 0.35 * len(self.order_) + 1.5))
        self.colour_values_ = None
        if self.features is None:
            ax.scatter(x.ravel(), y.ravel(), s=8, alpha=0.8, color="#1f77b4")
        else:
            self.colour_values_ = _shared_scale(self.features[:, self.order_])
            grey = np.isnan(self.colour_values_)
            ax.scatter(x[grey], y[grey], s=8, alpha=0.8, color="#999999")
            cmap, norm = plt.get_cmap("coolwarm"), Normalize(0.0, 1.0)
            ax.scatter(x[~grey], y[~grey], c=self.colour_values_[~grey], cmap=cmap, norm=norm, s=8, alpha=0.8)
            bar = self.figure_.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax, ticks=[0.0, 1.0])
            bar.ax.set_yticklabels(["low", "high"])
            bar.set_label(COLOUR_LABEL)
        ax.set_yticks(range(len(self.order_)), [self.feature_names[j] for j in self.order_])
        ax.axvline(0.0, color="grey", lw=0.8)
        ax.set_xlabel(xlabel)
        ax.set_title(title or "Attributions per sample")
        self.figure_.tight_layout()
        return self


class InteractionHeatmapDisplay(Display):
    """Heatmap of pairwise interactions on a symmetric colour scale centred at zero.

    Args:
        interactions: ``(m, m)`` interactions, or ``(Q, m, m)`` per row (averaged over rows).
        feature_names: ``m`` names (default ``x0, x1, ...``).

    Attributes:
        matrix: ``(m, m)`` the drawn (row-averaged) matrix.
    """

    def __init__(self, interactions: ArrayLike, feature_names: Sequence[str] | None = None) -> None:
        values = as_numpy(interactions, "interactions", ndim=(2, 3))
        self.matrix = values.mean(0) if values.ndim == 3 else values
        if self.matrix.shape[0] != self.matrix.shape[1]:
            raise ValueError(f"interactions must be (m, m) or (Q, m, m), got shape {values.shape}")
        self.feature_names = resolve_names(feature_names, self.matrix.shape[0])

    def plot(
        self, ax: Axes | None = None, *, title: str | None = None, label: str = "mean interaction"
    ) -> InteractionHeatmapDisplay:
        """Draw the matrix (colour bar labelled ``label``); returns ``self``."""
        m = self.matrix.shape[0]
        bound = float(np.nanmax(np.abs(self.matrix), initial=0.0)) or 1.0
        ax = self._start(ax, (0.35 * m + 2.5, 0.35 * m + 2.0))
        image = ax.imshow(self.matrix, cmap="RdBu_r", vmin=-bound, vmax=bound)
        ax.set_xticks(range(m), self.feature_names, rotation=90)
        ax.set_yticks(range(m), self.feature_names)
        ax.set_title(title or "Mean pairwise interaction")
        self.figure_.colorbar(image, ax=ax, label=label)
        self.figure_.tight_layout()
        return self


def _shared_scale(values: np.ndarray) -> np.ndarray:
    """``(Q, m)`` values mapped per column to ``[0, 1]`` between its 5th and 95th percentile; NaN where undefined.

    A column whose percentiles coincide (a constant or nearly constant feature) falls back to its min and max;
    a truly constant column is NaN (no low or high to show).
    """
    lo, hi = np.nanpercentile(values, 5, axis=0), np.nanpercentile(values, 95, axis=0)
    narrow = hi <= lo
    lo, hi = np.where(narrow, np.nanmin(values, axis=0), lo), np.where(narrow, np.nanmax(values, axis=0), hi)
    span = np.where(hi > lo, hi - lo, np.nan)
    return np.clip((values - lo) / span, 0.0, 1.0)


def _swarm_offsets(x: np.ndarray, rng: np.random.Generator, bins: int = 40) -> np.ndarray:
    """``(Q, m)`` vertical offsets in ``(-0.4, 0.4)``: uniform jitter scaled by each dot's column density."""
    lo, hi = x.min(0), x.max(0)
    width = np.where(hi > lo, hi - lo, 1.0)
    cell = np.clip(((x - lo) / width * bins).astype(int), 0, bins - 1)
    counts = np.zeros((bins, x.shape[1]))
    np.add.at(counts, (cell, np.arange(x.shape[1])[None, :].repeat(x.shape[0], 0)), 1.0)
    density = np.take_along_axis(counts, cell, axis=0) / counts.max(0)
    return rng.uniform(-0.4, 0.4, size=x.shape) * np.sqrt(density)

"""Displays of global importances: bars with (optional) intervals, and the genome-wide Manhattan plot."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes

from torchxplain.viz._base import ArrayLike, Display, as_numpy, resolve_names, top_order


class ImportanceDisplay(Display):
    """One importance score per feature as bars, with an interval around each bar when one is given.

    Args:
        score: ``(J,)`` the scores (ranked and drawn by ``|score|``).
        lower, upper: ``(J,)`` interval bounds in the units of ``score`` (both or neither), e.g. a 95% credible
            interval; bounds need not be symmetric.
        feature_names: ``J`` names (default ``x0, x1, ...``).
        xlabel: what the score is.
        interval_label: what the interval is (e.g. ``"95% posterior interval"``); appended to the x label.

    Attributes:
        order_: ``(shown,)`` feature indices drawn, bottom to top (set by :meth:`plot`).
        intervals_drawn_: whether intervals were drawn (captions should say so only then).

    Example:
        >>> import torch
        >>> import torchxplain as tx
        >>> score, lower, upper = torch.tensor([0.9, 0.1]), torch.tensor([0.7, -0.1]), torch.tensor([1.1, 0.3])
        >>> display = tx.viz.ImportanceDisplay(score, lower, upper, ["age", "dose"]).plot()
        >>> display.ax_.get_xlabel()
        'importance, interval'
        >>> display.figure_.clf()
    """

    order_: np.ndarray
    intervals_drawn_: bool

    def __init__(
        self,
        score: ArrayLike,
        lower: ArrayLike | None = None,
        upper: ArrayLike | None = None,
        feature_names: Sequence[str] | None = None,
        xlabel: str = "importance",
        interval_label: str = "interval",
    ) -> None:
        self.score = as_numpy(score, "score", ndim=1)
        if (lower is None) != (upper is None):
            raise ValueError("lower and upper must be given together (or neither)")
        self.lower = None if lower is None else as_numpy(lower, "lower", ndim=1)
        self.upper = None if upper is None else as_numpy(upper, "upper", ndim=1)
        for name, bound in (("lower", self.lower), ("upper", self.upper)):
            if bound is not None and bound.shape != self.score.shape:
                raise ValueError(f"{name} must have the score's shape {self.score.shape}, got {bound.shape}")
        if self.lower is not None and self.upper is not None:
            outside = np.flatnonzero((self.lower > self.score) | (self.score > self.upper))
            if outside.size:
                j = int(outside[0])
                raise ValueError(
                    f"lower <= score <= upper must hold for every feature; feature {j} has "
                    f"[{self.lower[j]:.4g}, {self.upper[j]:.4g}] around {self.score[j]:.4g}"
                )
        self.feature_names = resolve_names(feature_names, self.score.shape[0])
        self.xlabel, self.interval_label = xlabel, interval_label

    @classmethod
    def from_mean_std(
        cls,
        mean: ArrayLike,
        std: ArrayLike,
        feature_names: Sequence[str] | None = None,
        *,
        z: float = 1.96,
        ax: Axes | None = None,
        max_features: int = 20,
        title: str | None = None,
    ) -> ImportanceDisplay:
        """Point estimates ``mean`` (``(J,)``) with ``mean ± z·std`` intervals, drawn on ``ax``."""
        mu, sd = as_numpy(mean, "mean", ndim=1), as_numpy(std, "std", ndim=1)
        if sd.shape != mu.shape:
            raise ValueError(f"std must have the mean's shape {mu.shape}, got {sd.shape}")
        display = cls(mu, mu - z * sd, mu + z * sd, feature_names, interval_label=f"± {z:g} sd")
        return display.plot(ax=ax, max_features=max_features, title=title)

    def plot(self, ax: Axes | None = None, *, max_features: int = 20, title: str | None = None) -> ImportanceDisplay:
        """Draw the ``max_features`` largest ``|score|`` bars (with intervals when given); returns ``self``."""
        self.order_ = top_order(self.score, max_features)
        ax = self._start(ax, (6.0, 0.3 * len(self.order_) + 1.2))
        score = self.score[self.order_]
        xerr = None
        if self.lower is not None and self.upper is not None:
            xerr = np.stack([score - self.lower[self.order_], self.upper[self.order_] - score])
        self.intervals_drawn_ = xerr is not None
        rows = range(len(self.order_))
        ax.barh(rows, score, xerr=xerr, color="tab:blue", ecolor="black", capsize=2)
        ax.set_yticks(rows, [self.feature_names[j] for j in self.order_])
        ax.axvline(0.0, color="grey", linewidth=0.8)
        ax.set_xlabel(self.xlabel + (f", {self.interval_label}" if self.intervals_drawn_ else ""))
        ax.set_title(title or f"Top {len(self.order_)} features")
        self.figure_.tight_layout()
        return self


class ManhattanDisplay(Display):
    """Manhattan plot: a statistic per feature along the genome, chromosomes in alternating colours.

    Args:
        values: ``(J,)`` the statistic per feature (e.g. GOALS's ``|mean| / sd``).
        chromosome: ``J`` chromosome labels; chromosomes are drawn in the order they first appear.
        position: ``(J,)`` positions within chromosomes (any unit, e.g. Mbp), or ``None`` for the feature order.
        feature_names: ``J`` names, used to annotate the top features (default ``x0, x1, ...``).
        ylabel: what the statistic is.

    Attributes:
        x_: ``(J,)`` the features' plotted genome coordinates (set by :meth:`plot`).
    """

    x_: np.ndarray

    def __init__(
        self,
        values: ArrayLike,
        chromosome: Sequence[Any],
        position: ArrayLike | None = None,
        feature_names: Sequence[str] | None = None,
        ylabel: str = "statistic",
    ) -> None:
        self.values = as_numpy(values, "values", ndim=1)
        count = self.values.shape[0]
        if len(chromosome) != count:
            raise ValueError(f"chromosome has {len(chromosome)} labels, expected one per feature ({count})")
        self.chromosome = np.asarray([str(c) for c in chromosome])
        self.position = np.arange(count, dtype=float) if position is None else as_numpy(position, "position", 1)
        if self.position.shape != (count,):
            raise ValueError(f"position must have {count} entries, got shape {self.position.shape}")
        self.feature_names = resolve_names(feature_names, count)
        self.ylabel = ylabel

    def plot(self, ax: Axes | None = None, *, annotate: int = 5, title: str | None = None) -> ManhattanDisplay:
        """Draw the statistic along the genome and label the ``annotate`` largest values; returns ``self``."""
        ax = self._start(ax, (10.0, 3.5))
        labels = list(dict.fromkeys(self.chromosome))
        self.x_ = np.zeros(len(self.chromosome))
        offset, ticks = 0.0, []
        for k, label in enumerate(labels):  # one scatter per chromosome (a handful), not per feature
            sel = self.chromosome == label
            p = self.position[sel] - self.position[sel].min()
            self.x_[sel] = offset + p
            ax.scatter(self.x_[sel], self.values[sel], s=4, color="tab:blue" if k % 2 == 0 else "tab:gray")
            ticks.append(offset + p.max() / 2.0)
            offset += p.max() + max(p.max() * 0.02, 1.0)
        for j in np.argsort(-self.values, kind="stable")[:annotate]:
            ax.annotate(
                self.feature_names[j],
                (self.x_[j], self.values[j]),
                fontsize=7,
                xytext=(2, 2),
                textcoords="offset points",
            )
        ax.set_xticks(ticks, labels, fontsize=7)
        ax.set_xlabel("chromosome")
        ax.set_ylabel(self.ylabel)
        if title:
            ax.set_title(title)
        self.figure_.tight_layout()
        return self

"""Display of how per-feature importances moved during training (the Lightning callback's drift figure)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes

from torchxplain.viz._base import ArrayLike, Display, as_numpy, resolve_names, top_order


class DriftDisplay(Display):
    """One line per feature: its importance at each explained epoch.

    Args:
        epochs: ``T`` epoch numbers.
        importance: ``(T, n)`` importance per epoch and feature (e.g. mean ``|attribution|`` on a probe batch).
        feature_names: ``n`` names (default ``x0, x1, ...``).
        ylabel: what the importance is.

    Attributes:
        shown_: ``(shown,)`` feature indices drawn: the largest at the last epoch, largest first.
    """

    shown_: np.ndarray

    def __init__(
        self,
        epochs: Sequence[int] | ArrayLike,
        importance: ArrayLike,
        feature_names: Sequence[str] | None = None,
        ylabel: str = "mean |attribution| on the probe",
    ) -> None:
        self.epochs = as_numpy(epochs, "epochs", ndim=1).astype(int)
        self.importance = as_numpy(importance, "importance", ndim=2)
        if self.importance.shape[0] != self.epochs.shape[0]:
            raise ValueError(
                f"importance must be (len(epochs)={self.epochs.shape[0]}, n), got shape {self.importance.shape}"
            )
        self.feature_names = resolve_names(feature_names, self.importance.shape[1])
        self.ylabel = ylabel

    def plot(self, ax: Axes | None = None, *, max_features: int = 10, title: str | None = None) -> DriftDisplay:
        """Draw the ``max_features`` features largest at the last epoch (none without epochs); returns ``self``."""
        last = self.importance[-1] if len(self.epochs) else np.zeros(0)
        self.shown_ = top_order(last, max_features)[::-1]
        ax = self._start(ax, (7.0, 4.0))
        for j in self.shown_:
            ax.plot(self.epochs, self.importance[:, j], marker="o", label=self.feature_names[j])
        ax.set_xlabel("epoch")
        ax.set_ylabel(self.ylabel)
        ax.set_title(title or "Attribution drift")
        if len(self.shown_):
            ax.legend(fontsize="small", loc="best")
        self.figure_.tight_layout()
        return self

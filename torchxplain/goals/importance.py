"""``GlobalImportance``: global scores with posterior uncertainty, shared by every GOALS backend."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

if TYPE_CHECKING:
    import pandas as pd

    from torchxplain.viz import ImportanceDisplay, ManhattanDisplay

REDUCTIONS = ("mean", "abs_mean", "mean_abs")


def _central_quantile(level: float) -> float:
    """``q`` with ``P(|Z| <= q) = level`` for a standard normal ``Z``."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    return math.sqrt(2.0) * float(torch.special.erfinv(torch.tensor(level, dtype=torch.float64)))


@dataclass(frozen=True)
class GlobalImportance:
    """Global variable importance with its posterior uncertainty (backend-agnostic).

    Attributes:
        mean: ``(J,)`` posterior mean of the signed global score ``mean_i delta_ij`` (output units per shift).
        score: ``(J,)`` the statistic selected by ``reduction`` and used for ranking: the signed mean
            (``"mean"``), its magnitude (``"abs_mean"``) or the mean magnitude of the local scores
            (``"mean_abs"``).
        variance: ``(J,)`` posterior variance of the signed mean, or ``None`` when it is not available.
        covariance: ``(S, S)`` covariance of the signed means of ``covariance_features``, or ``None``.
        covariance_features: ``(S,)`` feature indices the covariance refers to, or ``None``.
        reduction: one of ``"mean"``, ``"abs_mean"``, ``"mean_abs"``.
        feature_names: optional names of the J features.

    The sign convention is GOALS's ``delta = f(x) - f(x + xi e_j)``; rankings use ``|score|``.
    """

    mean: Tensor
    score: Tensor
    variance: Tensor | None = None
    covariance: Tensor | None = None
    covariance_features: Tensor | None = None
    reduction: str = "mean"
    feature_names: Sequence[str] | None = None

    def __post_init__(self) -> None:
        if self.reduction not in REDUCTIONS:
            raise ValueError(f"reduction must be one of {REDUCTIONS}, got {self.reduction!r}")
        if self.mean.ndim != 1 or self.score.shape != self.mean.shape:
            raise ValueError(
                f"mean and score must be 1-D of equal length, got {tuple(self.mean.shape)} "
                f"and {tuple(self.score.shape)}"
            )
        if self.variance is not None and self.variance.shape != self.mean.shape:
            raise ValueError(f"variance must have shape {tuple(self.mean.shape)}, got {tuple(self.variance.shape)}")
        if (self.covariance is None) != (self.covariance_features is None):
            raise ValueError("covariance and covariance_features must be given together")
        if self.covariance is not None:
            s = self.covariance_features.numel()
            if self.covariance.shape != (s, s):
                raise ValueError(f"covariance must have shape ({s}, {s}), got {tuple(self.covariance.shape)}")
        if self.feature_names is not None and len(self.feature_names) != self.mean.numel():
            raise ValueError(f"feature_names has {len(self.feature_names)} names, expected {self.mean.numel()}")

    @property
    def n_features(self) -> int:
        """Number of features J."""
        return self.mean.numel()

    @property
    def sd(self) -> Tensor | None:
        """``(J,)`` posterior standard deviation of the signed mean (``None`` without variances)."""
        return None if self.variance is None else self.variance.clamp_min(0).sqrt()

    @property
    def z(self) -> Tensor | None:
        """``(J,)`` z-scores ``|mean| / sd`` (``None`` without variances)."""
        sd = self.sd
        return None if sd is None else self.mean.abs() / sd

    @property
    def ranking(self) -> Tensor:
        """``(J,)`` feature indices from the largest ``|score|`` to the smallest (stable on ties)."""
        return torch.argsort(self.score.abs(), descending=True, stable=True)

    def interval(self, level: float = 0.95) -> tuple[Tensor, Tensor]:
        """Central Gaussian credible interval ``(lower, upper)``, each ``(J,)``, in the units of ``score``.

        For ``"mean"`` it is ``mean +- q sd``; for ``"abs_mean"`` it is the image of that interval under
        ``|.|`` (so it has the same posterior coverage). Not available for ``"mean_abs"``.
        """
        sd = self.sd
        if sd is None or self.reduction == "mean_abs":
            raise ValueError(
                f"no interval for reduction={self.reduction!r} without variances; use 'mean' or 'abs_mean'"
            )
        q = _central_quantile(level)
        lower, upper = self.mean - q * sd, self.mean + q * sd
        if self.reduction == "abs_mean":
            straddles = (lower <= 0) & (upper >= 0)
            lo, hi = torch.minimum(lower.abs(), upper.abs()), torch.maximum(lower.abs(), upper.abs())
            return torch.where(straddles, torch.zeros_like(lo), lo), hi
        return lower, upper

    def names(self) -> list[str]:
        """Feature names (``x0, x1, ...`` when none were given)."""
        return list(self.feature_names) if self.feature_names is not None else [f"x{j}" for j in range(self.n_features)]

    def to_frame(self, level: float = 0.95) -> pd.DataFrame:
        """A pandas DataFrame, one row per feature by rank: mean, score, sd, z, interval, rank."""
        import pandas as pd

        order = self.ranking.cpu()
        data: dict[str, Any] = {
            "feature": [self.names()[int(j)] for j in order],
            "index": order.numpy(),
            "rank": range(1, self.n_features + 1),
            "mean": self.mean.detach().cpu()[order].double().numpy(),
            "score": self.score.detach().cpu()[order].double().numpy(),
        }
        if self.variance is not None:
            data["sd"] = self.sd.detach().cpu()[order].double().numpy()
            data["z"] = self.z.detach().cpu()[order].double().numpy()
            if self.reduction != "mean_abs":
                lower, upper = self.interval(level)
                data["lower"] = lower.detach().cpu()[order].double().numpy()
                data["upper"] = upper.detach().cpu()[order].double().numpy()
        return pd.DataFrame(data)

    def plot(self, top: int = 20, level: float = 0.95, ax: Any = None) -> ImportanceDisplay:
        """Horizontal bars of the ``top`` features by ``|score|`` with ``level`` intervals when available.

        Returns the :class:`~torchxplain.viz.ImportanceDisplay` (``figure_``, ``ax_``, ``intervals_drawn_``);
        nothing is shown.
        """
        from torchxplain.viz import ImportanceDisplay

        if top < 1:
            raise ValueError(f"top must be a positive integer, got {top}")
        lower, upper = (
            self.interval(level) if self.variance is not None and self.reduction != "mean_abs" else (None, None)
        )
        display = ImportanceDisplay(
            self.score,
            lower,
            upper,
            self.names(),
            xlabel=f"GOALS global score ({self.reduction})",
            interval_label=f"{level:.0%} interval",
        )
        return display.plot(ax=ax, max_features=top)

    def plot_manhattan(
        self,
        chromosome: Sequence[Any],
        position: Sequence[float] | Tensor | None = None,
        statistic: str = "z",
        ax: Any = None,
        annotate: int = 5,
    ) -> ManhattanDisplay:
        """Manhattan-style plot of ``statistic`` (``"z"`` or ``"score"``) over chromosomes.

        Args:
            chromosome: length-J chromosome labels, in genome order.
            position: optional length-J positions within chromosomes (order within a chromosome).
            statistic: ``"z"`` (``|mean|/sd``) or ``"score"`` (``|score|``).
            annotate: label this many top features.

        Returns the :class:`~torchxplain.viz.ManhattanDisplay` (``figure_``, ``ax_``).
        """
        from torchxplain.viz import ManhattanDisplay

        if len(chromosome) != self.n_features:
            raise ValueError(f"chromosome has {len(chromosome)} labels, expected {self.n_features}")
        if statistic == "z":
            if self.z is None:
                raise ValueError("statistic='z' needs variances; use statistic='score'")
            values = self.z
        elif statistic == "score":
            values = self.score.abs()
        else:
            raise ValueError(f"statistic must be 'z' or 'score', got {statistic!r}")
        ylabel = "|mean| / sd" if statistic == "z" else "|score|"
        return ManhattanDisplay(values, chromosome, position, self.names(), ylabel).plot(ax=ax, annotate=annotate)

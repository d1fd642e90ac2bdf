"""``GlobalImportance``: global scores with posterior uncertainty, shared by every GOALS backend."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import torch
from torch import Tensor

from torchxplain._core import check_int, check_number

if TYPE_CHECKING:
    import pandas as pd

    from torchxplain.viz._importance import ImportanceDisplay, ManhattanDisplay

REDUCTIONS = ("mean", "abs_mean", "mean_abs")
Reduction = Literal["mean", "abs_mean", "mean_abs"]
# What each statistic is, for labels and captions.
STATISTICS = {
    "mean": "signed mean of the local scores",
    "abs_mean": "|mean of the local scores|",
    "mean_abs": "mean |local score| (plug-in; no posterior interval)",
}


def check_reduction(reduction: object) -> Reduction:
    """``reduction`` if it is one of :data:`REDUCTIONS`, else a ``ValueError`` naming the choices."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {list(REDUCTIONS)}, got {str(reduction)[:40]!r}")
    return reduction  # type: ignore[return-value]


def select_score(reduction: Reduction, mean: Tensor, mean_abs: Tensor) -> Tensor:
    """The ranking statistic of ``reduction`` from the ``(J,)`` signed mean and mean magnitude."""
    return {"mean": mean, "abs_mean": mean.abs(), "mean_abs": mean_abs}[reduction]


def check_covariance_features(features: Any, n_features: int) -> Tensor | None:
    """``covariance_features`` as a ``(S,)`` long tensor of distinct indices in ``[0, J)`` (``None`` passes)."""
    if features is None:
        return None
    t = torch.as_tensor(features)
    if t.is_floating_point() or t.dtype == torch.bool or t.ndim > 1:
        raise TypeError(f"covariance_features must be a sequence of feature indices (ints), got {features!r:.60}")
    t = t.long().reshape(-1)
    if t.numel() == 0 or bool((t < 0).any()) or bool((t >= n_features).any()):
        raise ValueError(f"covariance_features must be indices in [0, {n_features}), got {t.tolist()[:10]}")
    if t.unique().numel() != t.numel():
        raise ValueError(f"covariance_features must not repeat a feature, got {t.tolist()[:10]}")
    return t


def _central_quantile(level: float) -> float:
    """``q`` with ``P(|Z| <= q) = level`` for a standard normal ``Z``."""
    level = check_number(level, "level", greater_than=0, less_than=1, hint="e.g. 0.95")
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

    ``mean_abs`` is a plug-in statistic (the mean magnitude of the posterior-mean local scores) with no
    closed-form posterior, so it has no interval and no z-score; its frame reports the signed mean's
    uncertainty under explicit names (``mean_sd``, ``mean_z``). The sign convention is GOALS's
    ``delta = f(x) - f(x + xi e_j)``; rankings use ``|score|``.

    Example:
        >>> import torch
        >>> from torchxplain.goals import GlobalImportance
        >>> mean = torch.tensor([-0.8, 0.1])
        >>> imp = GlobalImportance(mean, mean, torch.tensor([0.01, 0.04]), feature_names=("a", "b"))
        >>> imp.to_frame()[["feature", "rank", "mean", "sd"]]
          feature  rank  mean   sd
        0       a     1  -0.8  0.1
        1       b     2   0.1  0.2
    """

    mean: Tensor
    score: Tensor
    variance: Tensor | None = None
    covariance: Tensor | None = None
    covariance_features: Tensor | None = None
    reduction: Reduction = "mean"
    feature_names: Sequence[str] | None = None

    def __post_init__(self) -> None:
        check_reduction(self.reduction)
        if self.mean.ndim != 1 or self.score.shape != self.mean.shape:
            raise ValueError(
                f"mean and score must be 1-D of equal length, got {tuple(self.mean.shape)} "
                f"and {tuple(self.score.shape)}"
            )
        if self.variance is not None and self.variance.shape != self.mean.shape:
            raise ValueError(f"variance must have shape {tuple(self.mean.shape)}, got {tuple(self.variance.shape)}")
        if (self.covariance is None) != (self.covariance_features is None):
            raise ValueError("covariance and covariance_features must be given together")
        if self.covariance is not None and self.covariance_features is not None:
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

    def has_intervals(self) -> bool:
        """Whether the ranking statistic has posterior intervals (``"mean"``/``"abs_mean"`` with variances)."""
        return self.variance is not None and self.reduction != "mean_abs"

    def to_frame(self, level: float = 0.95) -> pd.DataFrame:
        """A pandas DataFrame, one row per feature by rank.

        Columns: ``feature``, ``index``, ``rank``, ``mean`` (signed), ``score`` (the ranking statistic) and,
        with variances, for ``"mean"``/``"abs_mean"``: ``sd``, ``z = |mean|/sd`` (the statistic's own z),
        ``lower``, ``upper`` (the ``level`` interval of ``score``); for ``"mean_abs"``: ``mean_sd`` and
        ``mean_z``, the signed mean's sd and z (the score itself has neither).
        """
        import pandas as pd

        order = self.ranking.cpu()

        def col(t: Tensor) -> Any:
            return t.detach().cpu()[order].double().numpy()

        data: dict[str, Any] = {
            "feature": [self.names()[int(j)] for j in order],
            "index": order.numpy(),
            "rank": range(1, self.n_features + 1),
            "mean": col(self.mean),
            "score": col(self.score),
        }
        sd, z = self.sd, self.z
        if sd is not None and z is not None:
            prefix = "" if self.has_intervals() else "mean_"
            data[prefix + "sd"], data[prefix + "z"] = col(sd), col(z)
        if self.has_intervals():
            lower, upper = self.interval(level)
            data["lower"], data["upper"] = col(lower), col(upper)
        return pd.DataFrame(data)

    def caption(self, level: float = 0.95) -> str:
        """What :meth:`plot` draws, in words (for figure captions)."""
        what = f"GOALS global importance: {STATISTICS[self.reduction]}"
        if self.has_intervals():
            return f"{what}, with {level:.0%} posterior intervals"
        if self.reduction == "mean_abs":
            return what
        return f"{what} (no posterior variances, so no intervals)"

    def plot(self, top: int = 20, level: float = 0.95, ax: Any = None, title: str | None = None) -> ImportanceDisplay:
        """Horizontal bars of the ``top`` features by ``|score|``, with ``level`` posterior intervals whenever
        the statistic has them (:meth:`has_intervals`); the x label names the statistic and the interval.

        Returns the :class:`~torchxplain.viz.ImportanceDisplay` (``figure_``, ``ax_``, ``intervals_drawn_``);
        nothing is shown. :meth:`caption` says in words what was drawn.
        """
        from torchxplain.viz._importance import ImportanceDisplay

        check_int(top, "top", 1, hint="the number of features drawn")
        lower, upper = self.interval(level) if self.has_intervals() else (None, None)
        display = ImportanceDisplay(
            self.score,
            lower,
            upper,
            self.names(),
            xlabel=f"GOALS: {STATISTICS[self.reduction]}",
            interval_label=f"{level:.0%} interval",
        )
        return display.plot(ax=ax, max_features=top, title=title)

    def plot_manhattan(
        self,
        chromosome: Sequence[Any],
        position: Sequence[float] | Tensor | None = None,
        statistic: Literal["z", "score"] = "z",
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
        from torchxplain.viz._importance import ManhattanDisplay

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

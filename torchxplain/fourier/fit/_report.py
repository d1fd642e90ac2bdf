"""What a black-box fit did and how good it is: :class:`FitReport`, and :class:`FitQualityWarning` when below target."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch import Tensor

TargetMetric = Literal["shap", "hybrid"]
LOWER_BOUND_Z = 1.96
"""The SHAP target is met when the estimate minus this many standard errors reaches it (a one-sided 97.5% lower
bound). At 1.28 (one-sided 90%) GB1's forest on single bits reported "met" at 0.9997 ± 0.0063 where 200 rows gave
0.9896: the held-out rows' R² is skewed (a few rows carry the error), so the bound must be wide."""


class FitQualityWarning(UserWarning):
    """A fitted spectrum missed ``target_r2`` on its held-out check (the message says what to change)."""


def r2_score(y: Tensor, pred: Tensor) -> float:
    """Coefficient of determination; ``nan`` when ``y`` is constant and the prediction is not exact."""
    total = float(((y - y.mean()) ** 2).sum())
    resid = float(((y - pred) ** 2).sum())
    return 1.0 - resid / total if total > 0 else (1.0 if resid == 0 else float("nan"))


@dataclass(frozen=True)
class FitReport:
    """What :func:`~torchxplain.fit_sparse_fourier` did.

    Attributes:
        method: the route that produced the spectrum: ``"tabulate"`` (every level combination queried: exact on
            them), ``"hybrid"`` (a sparse fit on hybrid samples), or a cube method (``"exact"``, ``"hashing"``,
            ``"regression"``).
        reason: why it was used (``method="auto"``'s choice, or "requested").
        n_features: ``n``. k: the requested Walsh-term cap (``None``: as many as the target needs).
        n_terms: terms in the returned spectrum. max_degree: the degree cap (``None``: the default ladder's).
        n_queries: queries of ``f`` spent on the fit (bounded by ``n_queries``).
        n_validation_queries: further queries spent on the held-out R² checks.
        wall_time_s: seconds for the fit, the model's own time included; validation_time_s: seconds for the final
            R² checks. model_time_s: of ``wall_time_s``, the seconds spent inside the model (the rest is the fit's
            own work). cpu_time_s, model_cpu_time_s: the same in process CPU seconds (a loaded machine inflates wall
            time, not these).
        r2_uniform: R² against ``f`` on uniform inputs of the cube (``exact``: from Parseval on the whole cube).
        r2_eval: R² on ``eval_data`` (``None`` without it).
        r2_hybrid: R² on fresh held-out hybrid points ``(x_S, b_{~S})`` (``None`` without a background): where
            interventional SHAP evaluates the model, so the headline number whenever a background is given.
        r2_shap: the SHAP values' R² on held-out rows, estimated from the permutation paths of the hybrid check
            (``None`` without a background); ``r2_shap_se`` its standard error over the held-out rows. The SHAP
            target is met when ``r2_shap - 1.96 r2_shap_se`` (a one-sided 97.5% lower bound) reaches it, never on
            the estimate alone.
        r2_background: R² on the background rows (``None`` without a background).
        target_r2: the target the fit was held to (``None``: not checked).
        target_metric: what ``target_r2`` applies to: ``"shap"`` (``r2_shap``; with a background) or
            ``"hybrid"`` (``r2_hybrid``); without a background the uniform R².
        n_players: players of the hybrid points (``None`` without a background).
        stages: the escalation ladder, one dict per attempt (method, size, samples, R²).
        params: method parameters (levels and grid, the held-out check, hash sizes, ...).
        stopped: why the fit stopped where it did (target met, query budget, two stages without gain, ...).
        players: what ``groups="auto"`` found (``None`` when the players were given).
        domain: the rows the estimate was measured on and the rows the values hold for (each column's range over
            ``data`` and background; outside it a value is taken as the nearest end of the range, and the
            explainer warns with a :class:`FitQualityWarning`); ``None`` for a fit without a background.
        route: the router's candidates, each ``{"method", "exact", "seconds", "model_rows", "note"}`` with its
            predicted seconds (empty when the method was requested).
    """

    method: str
    reason: str
    n_features: int
    k: int | None
    n_terms: int
    max_degree: int | None
    n_queries: int
    n_validation_queries: int
    wall_time_s: float
    validation_time_s: float
    r2_uniform: float | None
    r2_eval: float | None
    r2_hybrid: float | None = None
    r2_shap: float | None = None
    r2_shap_se: float | None = None
    r2_background: float | None = None
    target_r2: float | None = None
    target_metric: TargetMetric = "shap"
    n_players: int | None = None
    stages: tuple[dict[str, Any], ...] = ()
    params: dict[str, Any] = field(default_factory=dict)
    model_time_s: float | None = None
    cpu_time_s: float | None = None
    model_cpu_time_s: float | None = None
    stopped: str | None = None
    players: str | None = None
    route: tuple[dict[str, Any], ...] = ()
    domain: str | None = None

    @property
    def headline(self) -> tuple[str, float | None]:
        """``(name, value)`` of the headline R²: hybrid points with a background, else uniform inputs."""
        if self.r2_hybrid is not None:
            return "held-out hybrid points", self.r2_hybrid
        return "uniform inputs", self.r2_uniform

    @property
    def checked(self) -> tuple[str, float | None]:
        """``(name, value)`` of the R² that ``target_r2`` applies to."""
        if self.r2_hybrid is None:
            return "uniform inputs", self.r2_uniform
        if self.target_metric == "shap":
            return "the SHAP values (estimated on held-out rows)", self.r2_shap
        return "held-out hybrid points", self.r2_hybrid

    @property
    def met_target(self) -> bool | None:
        """Whether the checked R² reached ``target_r2`` (``None`` when there is no target or no R²); for the SHAP
        values, whether its one-sided 97.5% lower bound did (``r2_shap - 1.96 r2_shap_se``)."""
        value = self.checked[1]
        if self.target_r2 is None or value is None:
            return None
        if self.r2_hybrid is not None and self.target_metric == "shap" and self.r2_shap_se is not None:
            value -= LOWER_BOUND_Z * self.r2_shap_se
        return value >= self.target_r2

    def __str__(self) -> str:
        if self.method == "enumerate":
            lines = [f"FourierShap: method='enumerate' ({self.reason})", f"  players: {self.players or self.n_players}"]
            return "\n".join(lines + self._route_lines())

        def r2(value: float | None) -> str:
            return "not computed" if value is None else f"{value:.6f}"

        name, value = self.headline
        verdict = {None: "", True: "met", False: "BELOW TARGET"}[self.met_target]
        target = "" if self.met_target is None else f"  target_r2={self.target_r2} on {self.checked[0]}: {verdict}"
        cap = "" if self.max_degree is None else f", degree <= {self.max_degree}"
        lines = [
            f"fit_sparse_fourier: method={self.method!r} ({self.reason})",
            f"  R^2 on {name}: {r2(value)}"
            + ("" if self.r2_shap is None else f"; estimated R^2 of the SHAP values: {r2(self.r2_shap)}")
            + ("" if self.r2_shap_se is None else f" ± {self.r2_shap_se:.4f}"),
            *([target] if target else []),
            *([f"  domain: {self.domain}"] if self.domain else []),
            f"  terms: {self.n_terms} (k={self.k} requested{cap}) on n={self.n_features} features"
            + ("" if self.n_players is None else f", {self.n_players} players"),
            f"  queries: {self.n_queries:,} for the fit, {self.n_validation_queries:,} for validation",
            f"  wall time: {self.wall_time_s:.3f} s fit"
            + ("" if self.model_time_s is None else f" ({self.model_time_s:.3f} s in the model)")
            + (
                ""
                if self.cpu_time_s is None
                else f"; CPU {self.cpu_time_s:.3f} s ({self.model_cpu_time_s:.3f} in the model)"
            )
            + f", {self.validation_time_s:.3f} s validation",
            *([f"  stopped: {self.stopped}"] if self.stopped else []),
            *([f"  players: {self.players}"] if self.players else []),
        ]
        extra = [
            (label, v)
            for label, v in (
                ("uniform inputs", self.r2_uniform),
                ("the background", self.r2_background),
                ("eval_data", self.r2_eval),
            )
            if v is not None and label != name
        ]
        if extra:
            lines.append("  R^2 on " + "; on ".join(f"{label}: {r2(v)}" for label, v in extra))
        for stage in self.stages:
            lines.append("  stage: " + ", ".join(f"{key}={_fmt(value)}" for key, value in stage.items()))
        lines.append("  parameters: " + ", ".join(f"{key}={value}" for key, value in self.params.items()))
        return "\n".join(lines + self._route_lines())

    def _route_lines(self) -> list[str]:
        """The router's candidates with their predicted seconds."""
        lines = []
        for c in self.route:
            if c.get("seconds") is None:
                lines.append(f"  candidate {c['method']}: out ({c['note']})")
            else:
                rows = "" if c.get("model_rows") is None else f", {c['model_rows']:,} model rows"
                lines.append(f"  candidate {c['method']}: {c['seconds']:.3g} s predicted ({c['note']}{rows})")
        return lines


def fitted_range(input_dtype: torch.dtype, *tables: Tensor | None) -> Tensor:
    """``(2, p)`` float64 ``[low; high]`` of each column over the rows of ``tables`` (``None`` entries skipped),
    taken in ``input_dtype`` (the precision an encoder compares in): the domain of a fit held to those rows."""
    given = [t for t in tables if t is not None]
    low = torch.stack([t.to(input_dtype).amin(0).double() for t in given]).amin(0)
    high = torch.stack([t.to(input_dtype).amax(0).double() for t in given]).amax(0)
    return torch.stack((low, high))


def domain_note(domain: Tensor | None, check: str, unit: str, over: str) -> str:
    """:attr:`FitReport.domain`: what the estimate covers (``check``: e.g. "hybrids of 64 held-out rows of data
    with the background") and where the values hold — within ``domain`` ``(2, p)`` ``[low; high]``, each ``unit``'s
    range ``over`` the fitted rows (``None``: every row, e.g. a fit on the whole cube); constant units are named."""
    if domain is None:
        return f"the estimate covers {check}; the fit holds for every row"
    constant = (domain[0] == domain[1]).nonzero()[:, 0].tolist()
    shown = ", ".join(str(c) for c in constant[:6]) + (", ..." if len(constant) > 6 else "")
    flat = f"; {unit}s constant there, at index {shown}, have no fitted effect" if constant else ""
    return (
        f"the estimate covers {check}; the values hold for rows whose every {unit} lies within its range over "
        f"{over}{flat}. Outside it a value is taken as the nearest end of the range, and the explainer warns "
        "(FitQualityWarning)"
    )


def enumeration_report(n_features: int, n_players: int, players: str | None, reason: str) -> FitReport:
    """The report of an explainer that fits nothing and enumerates coalitions through the model
    (``method="enumerate"``): no terms, no queries until values are asked for."""
    return FitReport(
        method="enumerate",
        reason=reason,
        n_features=n_features,
        k=None,
        n_terms=0,
        max_degree=None,
        n_queries=0,
        n_validation_queries=0,
        wall_time_s=0.0,
        validation_time_s=0.0,
        r2_uniform=None,
        r2_eval=None,
        n_players=n_players,
        players=players,
    )


def _fmt(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def warn_if_below_target(report: FitReport, advice: str) -> None:
    """Issue a :class:`FitQualityWarning` when the checked R² missed ``target_r2`` (never a silent bad fit)."""
    if report.met_target is not False:
        return
    name, value = report.checked
    others = [(n, v) for n, v in (report.headline, ("the SHAP values", report.r2_shap)) if v is not None and n != name]
    also = "".join(f"; R^2 on {n}: {v:.4f}" for n, v in others if not name.startswith(n))
    warnings.warn(
        f"the fitted spectrum reached R^2 = {value:.4f} on {name}{also}, below target_r2={report.target_r2} "
        f"(method={report.method!r}, {report.n_terms} terms, {report.n_queries:,} queries, "
        f"{report.wall_time_s:.1f} s). SHAP values of this surrogate may be off. {advice}",
        FitQualityWarning,
        stacklevel=3,
    )

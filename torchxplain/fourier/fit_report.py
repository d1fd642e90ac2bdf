"""What a black-box fit did and how good it is: :class:`FitReport`, and :class:`FitQualityWarning` when below target."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

from torch import Tensor


class FitQualityWarning(UserWarning):
    """A fitted spectrum missed ``target_r2`` on its headline held-out R² (the message says what to change)."""


def r2_score(y: Tensor, pred: Tensor) -> float:
    """Coefficient of determination; ``nan`` when ``y`` is constant and the prediction is not exact."""
    total = float(((y - y.mean()) ** 2).sum())
    resid = float(((y - pred) ** 2).sum())
    return 1.0 - resid / total if total > 0 else (1.0 if resid == 0 else float("nan"))


@dataclass(frozen=True)
class FitReport:
    """What :func:`~torchxplain.fourier.fit_sparse_fourier` did.

    Attributes:
        method: the method that produced the spectrum (``"exact"``, ``"hashing"``, ``"regression"``, ``"hybrid"``).
        reason: why it was used (``method="auto"``'s choice and escalation, or "requested").
        n_features: ``n``. k: the requested Walsh-term cap (``None``: as many as the target needs).
        n_terms: terms in the returned spectrum. max_degree: the degree cap (``None``: the default ladder's).
        n_queries: queries of ``f`` spent on the fit (bounded by ``n_queries``).
        n_validation_queries: further queries spent on the held-out R² checks.
        wall_time_s: seconds for the fit; validation_time_s: seconds for the final R² checks.
        r2_uniform: R² against ``f`` on uniform inputs of the cube (``exact``: from Parseval on the whole cube).
        r2_eval: R² on ``eval_data`` (``None`` without it).
        r2_hybrid: R² on fresh held-out hybrid points ``(x_S, b_{~S})`` (``None`` without a background): where
            interventional SHAP evaluates the model, so the headline number whenever a background is given.
        r2_shap: the SHAP values' R² on held-out rows, estimated from the permutation paths of the hybrid check
            (:mod:`~torchxplain.fourier.hybrid_check`; ``None`` without a background).
        r2_background: R² on the background rows (``None`` without a background).
        target_r2: the target the headline R² was held to (``None``: not checked).
        n_players: players of the hybrid points (``None`` without a background).
        stages: the escalation ladder, one dict per attempt (method, size, samples, R²).
        params: method parameters (hash sizes, delays, refit queries, solver, basis, ...).
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
    r2_background: float | None = None
    target_r2: float | None = None
    n_players: int | None = None
    stages: tuple[dict[str, Any], ...] = ()
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def headline(self) -> tuple[str, float | None]:
        """``(name, value)`` of the headline R²: hybrid points with a background, else uniform inputs."""
        if self.r2_hybrid is not None:
            return "held-out hybrid points", self.r2_hybrid
        return "uniform inputs", self.r2_uniform

    @property
    def met_target(self) -> bool | None:
        """Whether the headline R² (and the estimated SHAP R², when there is one) reached ``target_r2``
        (``None`` when there is no target or no R²)."""
        value = self.headline[1]
        if self.target_r2 is None or value is None:
            return None
        return value >= self.target_r2 and (self.r2_shap is None or self.r2_shap >= self.target_r2)

    def __str__(self) -> str:
        def r2(value: float | None) -> str:
            return "not computed" if value is None else f"{value:.6f}"

        name, value = self.headline
        verdict = {None: "", True: f" (target {self.target_r2} met)", False: f" (BELOW target {self.target_r2})"}
        cap = "" if self.max_degree is None else f", degree <= {self.max_degree}"
        lines = [
            f"fit_sparse_fourier: method={self.method!r} ({self.reason})",
            f"  R^2 on {name}: {r2(value)}{verdict[self.met_target]}"
            + ("" if self.r2_shap is None else f"; estimated R^2 of the SHAP values: {r2(self.r2_shap)}"),
            f"  terms: {self.n_terms} (k={self.k} requested{cap}) on n={self.n_features} features"
            + ("" if self.n_players is None else f", {self.n_players} players"),
            f"  queries: {self.n_queries:,} for the fit, {self.n_validation_queries:,} for validation",
            f"  wall time: {self.wall_time_s:.3f} s fit, {self.validation_time_s:.3f} s validation",
            f"  R^2 on uniform inputs: {r2(self.r2_uniform)}; on the background: {r2(self.r2_background)}; "
            f"on eval_data: {r2(self.r2_eval)}",
        ]
        for stage in self.stages:
            lines.append("  stage: " + ", ".join(f"{key}={_fmt(value)}" for key, value in stage.items()))
        lines.append("  parameters: " + ", ".join(f"{key}={value}" for key, value in self.params.items()))
        return "\n".join(lines)


def _fmt(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def warn_if_below_target(report: FitReport, advice: str) -> None:
    """Issue a :class:`FitQualityWarning` when the headline R² missed ``target_r2`` (never a silent bad fit)."""
    if report.met_target is not False:
        return
    name, value = report.headline
    shap = "" if report.r2_shap is None else f" (estimated R^2 of its SHAP values: {report.r2_shap:.4f})"
    warnings.warn(
        f"the fitted spectrum reached R^2 = {value:.4f} on {name}{shap}, below target_r2={report.target_r2} "
        f"(method={report.method!r}, {report.n_terms} terms, {report.n_queries:,} queries, "
        f"{report.wall_time_s:.1f} s). SHAP values of this surrogate may be off. {advice}",
        FitQualityWarning,
        stacklevel=3,
    )

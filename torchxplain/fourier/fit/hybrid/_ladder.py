"""Fitting where SHAP looks: a ladder of stages over hybrid samples, held to a target on held-out rows.

Stage ``s`` holds ``FIRST_SAMPLES · 2^s`` hybrid samples (each stage queries only the new ones: earlier samples
are kept) and allows terms up to degree ``min(2 + s, cap)`` — kept at the previous stage's degree when the higher
one's design would not fit the memory budget; its pool is every term active on enough samples and
its selection (:mod:`._regression`) starts from the previous stage's terms. After each stage the held-out check
(:mod:`._checks`) scores the surrogate. The ladder stops at the first stage that meets the :class:`Target`, when
the next stage would exceed the query budget, when two stages in a row gained nothing, or — only with a
``time_budget`` — when the next stage is predicted to overrun it. Every decision but the last counts queries and
terms, never seconds, so the same seed gives the same spectrum on any machine at any load.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from torchxplain._core import parse_memory
from torchxplain.fourier.fit._keys import TermKeys
from torchxplain.fourier.fit._levels import PlayerLevels
from torchxplain.fourier.fit._oracle import Oracle
from torchxplain.fourier.fit._report import LOWER_BOUND_Z, TargetMetric
from torchxplain.fourier.fit._walsh import UnitWalsh
from torchxplain.fourier.fit.hybrid._checks import HeldOut
from torchxplain.fourier.fit.hybrid._regression import TermFit, select_terms
from torchxplain.fourier.fit.hybrid._sampler import HybridSampler
from torchxplain.fourier.fit.hybrid._terms import PointDesign, TermPool, count_subsets
from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.values import ValuePlan

FIRST_SAMPLES = 16384
"""Hybrid samples of the first stage; each stage doubles them."""
DEFAULT_MAX_DEGREE = 4
"""Degree cap of the ladder when ``max_degree`` is not given (players per term)."""
MIN_GAIN = 1e-4
"""A stage that raises the target's R² by less than this gained nothing."""


@dataclass(frozen=True)
class Target:
    """The held-out R² a fit is held to: ``metric`` ``"shap"`` (the estimated R² of the SHAP values, the default)
    or ``"hybrid"`` (the surrogate's R² on the check's hybrid points), and its ``value`` (``None``: no target)."""

    value: float | None
    metric: TargetMetric = "shap"

    def score(self, stage: dict[str, Any]) -> float:
        return float(stage["r2_shap" if self.metric == "shap" else "r2"])

    def met(self, stage: dict[str, Any]) -> bool:
        """Hybrid: the R² reaches the value; SHAP: so does its one-sided 97.5% lower bound (over rows), never the
        estimate alone."""
        if self.value is None:
            return False
        if self.metric == "hybrid":
            return stage["r2"] >= self.value
        return stage["r2_shap"] - LOWER_BOUND_Z * stage["r2_shap_se"] >= self.value


def closed_form(spectrum: FourierSpectrum, x: Tensor, background: Tensor, groups: Tensor, m: int) -> Tensor:
    """``(R, m)`` Shapley values per player of validated bool rows (a plan straight away: no re-validation)."""
    singles = m == groups.numel()
    plan = ValuePlan(spectrum, background.to(spectrum.dtype), None if singles else groups, m)
    return plan.shapley(x.to(spectrum.dtype))


def score(check: HeldOut, surrogate: Tensor, spectrum: FourierSpectrum) -> dict[str, float]:
    """``{"r2", "r2_shap", "r2_shap_se"}`` of a surrogate (its values on the check's points, and its spectrum)."""
    phi_h = closed_form(spectrum, check.rows, check.background, check.players, check.m)
    shap, se = check.shap_r2(surrogate, phi_h)
    return {"r2": check.r2(surrogate), "r2_shap": shap, "r2_shap_se": se}


@dataclass(frozen=True)
class LadderResult:
    """The best stage's fit and spectrum, every stage's summary, and why the ladder stopped."""

    fit: TermFit
    spectrum: FourierSpectrum
    stages: list[dict[str, Any]]
    stopped: str


class Ladder:
    """The ladder of one fit (module docstring).

    Args:
        oracle: the black box; levels: the players' levels; sampler: hybrids of the fit rows with the background.
        check: the held-out check; target: what the fit is held to.
        max_degree: the degree cap (``None``: :data:`DEFAULT_MAX_DEGREE`); max_queries: the fit's query budget.
        generator: seeds the samples.
        deadline: a ``time.perf_counter()`` value the ladder must not plan past (``None``: no time limit).
    """

    def __init__(
        self,
        oracle: Oracle,
        levels: PlayerLevels,
        sampler: HybridSampler,
        check: HeldOut,
        target: Target,
        *,
        max_degree: int | None,
        max_queries: int,
        generator: torch.Generator,
        deadline: float | None,
    ) -> None:
        self.oracle, self.levels, self.sampler, self.check, self.target = oracle, levels, sampler, check, target
        self.codec = TermKeys.for_levels(levels)
        cap = DEFAULT_MAX_DEGREE if max_degree is None else max_degree
        self.cap = max(1, min(cap, levels.m, self.codec.max_degree()))
        self.fixed_degree = max_degree is not None
        self.max_queries, self.generator, self.deadline = max_queries, generator, deadline
        self.walsh = UnitWalsh(levels)
        self.check_design = PointDesign(levels, self.codec, check.points)
        self.groups = sampler.groups
        self.active = torch.zeros(0, 1, dtype=torch.long, device=levels.device)  # the samples' active units
        self.y = torch.zeros(0, dtype=torch.float64, device=levels.device)

    def run(self) -> LadderResult:
        stages: list[dict[str, Any]] = []
        best: tuple[float, TermFit, FourierSpectrum] | None = None
        previous: TermFit | None = None
        size = min(FIRST_SAMPLES, self.max_queries)
        if size < 2 * (self.levels.n_units + 1):
            raise ValueError(
                f"n_queries leaves {self.max_queries:,} queries for the hybrid fit, but it needs at least "
                f"{2 * (self.levels.n_units + 1):,} (two per level of the players, {self.levels.n_units} levels "
                "besides the references); raise n_queries"
            )
        stopped = "largest stage done"
        while True:
            degree = self.cap if self.fixed_degree else min(self.cap, 2 + len(stages))
            start = time.perf_counter()
            model_before = self.oracle.seconds
            new = self.sampler.sample(size - int(self.y.numel()), self.generator)
            active = _stack_units(self.active, self.levels.active_units(new), self.levels.n_units)
            floor = stages[-1]["degree"] if stages else 1  # a stage never goes below the degree before it
            entries = count_subsets(active, self.levels.n_units, degree)
            if entries > pool_entry_limit():
                degree = max(_affordable(active, self.levels.n_units, degree), floor)
                entries = count_subsets(active, self.levels.n_units, degree)
                if stages and entries > pool_entry_limit():  # not even the last degree fits: stop before querying
                    stopped = (
                        f"memory budget (the next stage's design would hold {entries:,} (sample, term) entries, "
                        f"over the {pool_entry_limit():,} that tx.settings.max_memory allows; raise max_memory)"
                    )
                    break
            self.active = active
            self.y = torch.cat((self.y, self.oracle(new)))
            pool = TermPool(self.codec, active, degree)
            warm = None if previous is None else _warm_start(pool, previous)
            fit = select_terms(pool, self.y, warm)
            spectrum = _clean(fit.spectrum(self.walsh))
            seconds = time.perf_counter() - start
            model_seconds = self.oracle.seconds - model_before
            scores = self.score(fit, spectrum)
            stages.append(
                {
                    "method": "hybrid",
                    "samples": int(self.y.numel()),
                    "degree": degree,
                    "pool": len(pool),
                    "terms": int(fit.keys.numel()),
                    "walsh_terms": len(spectrum),
                    **scores,
                    "seconds": round(seconds - model_seconds, 3),
                    "model_seconds": round(model_seconds, 3),
                }
            )
            value = self.target.score(stages[-1])
            if best is None or value > best[0]:
                best = (value, fit, spectrum)
            previous = fit
            if self.target.met(stages[-1]):
                stopped = "target met"
                break
            if (
                len(stages) >= 3
                and max(self.target.score(s) for s in stages[-2:]) < self.target.score(stages[-3]) + MIN_GAIN
            ):
                stopped = "two stages without gain"
                break
            next_size = 2 * size
            if next_size > self.max_queries:
                stopped = (
                    f"query budget (the next stage needs {next_size:,} fit queries, the budget is {self.max_queries:,})"
                )
                break
            if self.deadline is not None:
                predicted = 2.0 * seconds
                left = self.deadline - time.perf_counter()
                if predicted > left:
                    stopped = (
                        f"time budget (next stage predicted to take {predicted:.0f} s, {max(left, 0.0):.0f} s left)"
                    )
                    break
            size = next_size
        assert best is not None
        return LadderResult(best[1], best[2], stages, stopped)

    def score(self, fit: TermFit, spectrum: FourierSpectrum) -> dict[str, float]:
        """``{"r2", "r2_shap", "r2_shap_se"}`` of a fit on the held-out check."""
        return score(self.check, fit.predict_on(self.check_design), spectrum)


def _stack_units(old: Tensor, new: Tensor, pad: int) -> Tensor:
    """Rows of active units of two batches, padded to a common width with ``pad``."""
    width = max(old.shape[1], new.shape[1])

    def widen(units: Tensor) -> Tensor:
        extra = units.new_full((units.shape[0], width - units.shape[1]), pad)
        return torch.cat((units, extra), 1)

    return torch.cat((widen(old), widen(new)))


def pool_entry_limit() -> int:
    """Most (sample, term) entries a stage's pool may enumerate: half the memory budget at 24 bytes each."""
    return parse_memory() // 48


def _affordable(active: Tensor, n_units: int, degree: int) -> int:
    """The stage's degree, lowered while its pool's entries exceed :func:`pool_entry_limit`."""
    while degree > 1 and count_subsets(active, n_units, degree) > pool_entry_limit():
        degree -= 1
    return degree


def _warm_start(pool: TermPool, previous: TermFit) -> Tensor:
    """The new pool's indices of the degree-one terms and of the previous stage's terms."""
    known = pool.positions(previous.keys)
    ones = (pool.degrees == 1).nonzero()[:, 0]
    return torch.unique(torch.cat((ones, known[known >= 0])))


def _clean(spectrum: FourierSpectrum) -> FourierSpectrum:
    """Drop the rounding-level amplitudes of an expansion (exact cancellations leave ~1e-17)."""
    top = float(spectrum.amplitudes.abs().max()) if len(spectrum) else 0.0
    return spectrum.prune(threshold=1e-12 * top)

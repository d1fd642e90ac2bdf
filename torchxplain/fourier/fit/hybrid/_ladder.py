"""Fitting where SHAP looks: an escalation ladder over hybrid samples, held to a target held-out R².

``method="hybrid"`` samples hybrid points (:mod:`~torchxplain.fourier.fit.hybrid._sampler`), codes them in the
identifiable player basis (:mod:`~torchxplain.fourier.fit.hybrid._basis`) and fits terms by sparse regression
(:mod:`~torchxplain.fourier.fit.hybrid._regression`). Stage ``s`` of the ladder allows ``256 · 2^s`` terms at degree
``min(2 + s, cap)`` on ``SAMPLES_PER_COLUMN`` samples per term (earlier samples are kept, so the queries are
only the last stage's; the largest stage is bounded by the memory budget, its Gram matrix being ``columns²``).
It stops at the first stage that meets the :class:`Target` on the held-out check
(:mod:`~torchxplain.fourier.fit.hybrid._checks`), when the query or time budget would be exceeded by the next stage,
or when two stages in a row gained nothing; the best stage is returned. For ``method="exact"`` the same check
picks the smallest ``k`` that meets the target.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from torchxplain._core import parse_memory
from torchxplain.fourier.fit._oracle import Oracle
from torchxplain.fourier.fit._report import LOWER_BOUND_Z, TargetMetric
from torchxplain.fourier.fit.hybrid._basis import PlayerBasis
from torchxplain.fourier.fit.hybrid._checks import PathValidation
from torchxplain.fourier.fit.hybrid._regression import TermFit, fit_terms
from torchxplain.fourier.fit.hybrid._sampler import HybridSampler
from torchxplain.fourier.spectrum._spectrum import FourierSpectrum
from torchxplain.fourier.values._plan import ValuePlan

SAMPLES_PER_COLUMN = 16
"""Hybrid samples per allowed term (fewer overfit: the held-out R² drops)."""
FIRST_COLUMNS = 256
"""Terms allowed at the first stage; each stage doubles it."""
MAX_COLUMNS = 8192
"""Most terms of any stage (a stage costs about ``SAMPLES_PER_COLUMN × columns³`` flops)."""
DEFAULT_MAX_DEGREE = 4
"""Degree cap of the ladder when ``max_degree`` is not given (players per term)."""
MIN_GAIN = 1e-4
"""A stage that raises the target's R² by less than this gained nothing."""
STAGE_GROWTH = 8.0
"""Cost factor of the next stage (twice the terms, twice the samples) used to respect the time budget."""


@dataclass(frozen=True)
class Budget:
    """Query and time limits of one fit (``None``: unlimited)."""

    max_queries: int | None
    deadline: float | None  # time.perf_counter() value

    def queries_left(self, used: int) -> int | None:
        return None if self.max_queries is None else self.max_queries - used

    def time_left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.perf_counter()


class Scorer:
    """Scores a spectrum on the held-out paths: ``(R² on hybrids, estimated R² of the SHAP values)``; the last
    spectra's scores are remembered (the report re-checks the spectrum a stage already scored)."""

    def __init__(self, validation: PathValidation) -> None:
        self.validation = validation
        self._seen: list[tuple[FourierSpectrum, dict[str, float]]] = []

    def __call__(self, spectrum: FourierSpectrum) -> dict[str, float]:
        """``{"r2": hybrid R², "r2_shap": estimated SHAP R², "r2_shap_se": its standard error}``."""
        for seen, scores in self._seen:
            if _same(seen, spectrum):
                return scores
        shap, se = self.validation.shap_r2(spectrum, _closed_form)
        scores = {"r2": self.validation.r2(spectrum), "r2_shap": shap, "r2_shap_se": se}
        self._seen = [*self._seen[-3:], (spectrum, scores)]
        return scores


def _same(a: FourierSpectrum, b: FourierSpectrum) -> bool:
    return (
        len(a) == len(b)
        and torch.equal(a.frequencies, b.frequencies)
        and torch.equal(a.amplitudes.to(torch.float64), b.amplitudes.to(torch.float64))
    )


def _closed_form(spectrum: FourierSpectrum, x: Tensor, background: Tensor, groups: Tensor) -> Tensor:
    """``(R, m)`` Shapley values per player of validated rows (a plan straight away: no re-validation). When no
    frequency has two bits in one player (every spectrum of a one-hot fit), a player's parity differs exactly
    when its one bit does, so the grouped values are the group sums of the singleton ones (the cheaper kernel)."""
    m = int(groups.max()) + 1 if groups.numel() else 0
    x, background = x.to(spectrum.dtype), background.to(spectrum.dtype)
    per_player = spectrum.frequencies.to(torch.float32) @ torch.nn.functional.one_hot(groups, m).to(torch.float32)
    if m < groups.numel() and len(spectrum) and float(per_player.max()) > 1:
        return ValuePlan(spectrum, background, groups, m).shapley(x)
    singles = ValuePlan(spectrum, background, None, groups.numel()).shapley(x)
    return singles if m == groups.numel() else singles.new_zeros(x.shape[0], m).index_add_(1, groups, singles)


@dataclass(frozen=True)
class Target:
    """The held-out R² a fit is held to: ``metric`` ``"shap"`` (the estimated R² of the SHAP values, the default)
    or ``"hybrid"`` (the R² of the surrogate on hybrid points), and its ``value`` (``None``: no target)."""

    value: float | None
    metric: TargetMetric = "shap"

    def met(self, stage: dict[str, Any]) -> bool:
        """Hybrid: the R² reaches the value; SHAP: so does its one-sided 90% lower bound (over rows)."""
        if self.value is None:
            return False
        if self.metric == "hybrid":
            return stage["r2"] >= self.value
        return stage["r2_shap"] - LOWER_BOUND_Z * stage["r2_shap_se"] >= self.value


def _stop_reason(stages: list[dict[str, Any]], target: Target) -> str | None:
    if target.met(stages[-1]):
        return "target met"
    key = "r2_shap" if target.metric == "shap" else "r2"
    if len(stages) >= 3 and max(s[key] for s in stages[-2:]) < stages[-3][key] + MIN_GAIN:
        return "two stages without gain"
    return None


def fit_hybrid(
    oracle: Oracle,
    sampler: HybridSampler,
    basis: PlayerBasis,
    score: Scorer,
    *,
    k: int | None,
    max_degree: int | None,
    budget: Budget,
    target: Target,
    generator: torch.Generator,
) -> tuple[FourierSpectrum, list[dict[str, Any]], str]:
    """Run the ladder (module docstring).

    Returns:
        ``(spectrum of the best stage, stages, why the ladder stopped)``; each stage is a dict with
        ``columns``, ``degree``, ``samples``, ``terms``, ``r2`` (held-out hybrids), ``r2_shap`` (estimated
        R² of the SHAP values), ``r2_shap_se`` and ``seconds`` (the fit's, without the check).
    """
    n_slots = int(torch.unique(basis.unit_slot).numel()) if basis.n_units else 0
    cap = max(1, min(max_degree if max_degree is not None else DEFAULT_MAX_DEGREE, max(n_slots, 1)))
    last_columns = MAX_COLUMNS if k is None else min(MAX_COLUMNS, max(4 * k, FIRST_COLUMNS))
    # the Gram matrix and its factor (float64, three copies at most) stay within the memory budget
    last_columns = max(FIRST_COLUMNS, min(last_columns, int((parse_memory() / 24) ** 0.5)))
    device = score.validation.z.device
    z = torch.zeros(0, basis.n_features, dtype=torch.bool, device=device)
    y = torch.zeros(0, dtype=torch.float64, device=device)
    stages: list[dict[str, Any]] = []
    best: tuple[float, FourierSpectrum] | None = None
    columns, why = FIRST_COLUMNS, "largest stage done"
    oracle.phase = "hybrid"
    while True:
        degree = cap if max_degree is not None else min(cap, 2 + len(stages))
        want = SAMPLES_PER_COLUMN * columns - z.shape[0]
        left = budget.queries_left(oracle.rows)
        if left is not None and want > left:
            if stages:
                why = "query budget"
                break
            minimum = 2 * (basis.n_units + 1)
            if left < minimum:
                raise ValueError(
                    f"n_queries leaves {left:,} queries for the hybrid fit, but it needs at least {minimum:,} "
                    f"(two per unit of the basis, {basis.n_units} units); raise n_queries"
                )
            want = left  # the first stage uses what there is
        start = time.perf_counter()
        if want > 0:
            new = sampler.sample(want, generator)
            z, y = torch.cat((z, new)), torch.cat((y, oracle(new)))
        fit: TermFit = fit_terms(basis.unit_rows(z), y, basis, degree, columns, k if k is not None else 2**62)
        spectrum = _clean(fit.spectrum(basis))
        seconds = time.perf_counter() - start  # the fit's own cost: it grows with the stages, the check's does not
        scores = score(spectrum)
        stages.append(
            {
                "method": "hybrid",
                "columns": columns,
                "degree": degree,
                "samples": int(z.shape[0]),
                "terms": len(spectrum),
                **scores,
                "seconds": round(seconds, 3),
            }
        )
        value = scores["r2_shap" if target.metric == "shap" else "r2"]
        if best is None or value > best[0]:
            best = (value, spectrum)
        stop = _stop_reason(stages, target)
        if stop is not None:
            why = stop
            break
        if columns >= last_columns:
            break
        time_left = budget.time_left()
        if time_left is not None and STAGE_GROWTH * seconds > time_left:
            why = "time budget"
            break
        columns *= 2
    assert best is not None
    return best[1], stages, why


def _clean(spectrum: FourierSpectrum) -> FourierSpectrum:
    """Drop the rounding-level amplitudes of an expansion (exact cancellations leave ~1e-17)."""
    top = float(spectrum.amplitudes.abs().max()) if len(spectrum) else 0.0
    return spectrum.prune(threshold=1e-12 * top)


def pick_k_exact(
    frequencies: Tensor, amplitudes: Tensor, score: Scorer, k: int | None, target: Target
) -> tuple[FourierSpectrum, list[dict[str, Any]]]:
    """The exact spectrum cut to ``k`` terms, or (``k=None``) to the smallest power-of-two ``k >= 64`` whose
    held-out hybrid R² reaches the target (every term if none does).

    Args:
        frequencies: ``(K, n)`` bool, ordered by decreasing ``|amplitude|``; amplitudes: ``(K,)`` float64.
    """
    total = frequencies.shape[0]
    if k is not None:
        spectrum = FourierSpectrum(frequencies[:k], amplitudes[:k])
        return spectrum, [{"method": "exact", "k": min(k, total), **score(spectrum)}]
    stages = []
    size = min(64, total)
    while True:
        spectrum = FourierSpectrum(frequencies[:size], amplitudes[:size])
        stages.append({"method": "exact", "k": size, **score(spectrum)})
        if size >= total or target.met(stages[-1]):
            return spectrum, stages
        size = min(2 * size, total)


def hashing_fallback(
    run: Callable[[int, int | None], FourierSpectrum],
    plan_queries: Callable[[int, int | None], int | None],
    oracle: Oracle,
    sizes: tuple[int, ...],
    score: Scorer,
    best: FourierSpectrum,
    stages: list[dict[str, Any]],
    target: Target,
    budget: Budget,
) -> tuple[FourierSpectrum, str]:
    """After a missed ladder: the sparse WHT by hashing (exact for exactly sparse models such as trees).

    Args:
        run: ``run(k, query budget)`` fits by hashing on the cube.
        plan_queries: ``plan_queries(k, query budget)``: the queries that fit needs (``None``: it does not fit).
        sizes: the ``k`` to try in order; each must fit the query budget and the time budget at the measured
            seconds per query.

    Returns:
        ``(the best spectrum by held-out hybrid R², its method)``; the attempts are appended to ``stages``.
    """
    key = "r2_shap" if target.metric == "shap" else "r2"
    best_r2, method = max(s[key] for s in stages), "hybrid"
    for size in sizes:
        left = budget.queries_left(oracle.rows)
        needed = plan_queries(size, left)
        time_left = budget.time_left()
        if needed is None or (time_left is not None and needed * oracle.seconds_per_row() > time_left):
            break
        start = time.perf_counter()
        spectrum = _clean(run(size, left))
        scores = score(spectrum)
        seconds = round(time.perf_counter() - start, 3)
        stages.append({"method": "hashing", "k": size, "queries": needed, **scores, "seconds": seconds})
        if stages[-1][key] > best_r2:
            best, best_r2, method = spectrum, stages[-1][key], "hashing"
        if target.met(stages[-1]):
            break
    return best, method


def advice(why: str, k: int | None, n_queries: int | None, time_budget: float | None) -> str:
    """What to change when the ladder stopped for ``why`` below the target."""
    if why == "query budget":
        return f"The query budget ran out: raise n_queries (now {n_queries:,})."
    if why == "time budget":
        return f"The time budget ran out: raise time_budget (now {time_budget} s), or fit on a GPU (device=)."
    if k is not None:
        return f"Raise k (now {k}), or pass k=None to let the fit size itself."
    if why == "largest stage done":
        return (
            "The largest stage the memory budget allows ran: raise max_memory (or tx.settings.max_memory) for "
            "more terms, or pass data= with rows closer to the ones you explain."
        )
    return (
        "More terms and samples stopped helping: the model is not sparse on these hybrids. Pass data= with fewer "
        "rows closer to the ones you explain, raise max_degree, or explain few players exactly."
    )

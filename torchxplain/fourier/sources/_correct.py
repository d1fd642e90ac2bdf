"""Values to a stated accuracy, with standard errors: :class:`Correct`.

An additive surrogate is fitted once for all rows on hybrids of rows like the explained ones (``data``) with the
background, and every explained row gets an unbiased Monte Carlo correction of what the surrogate misses — paired
coalitions of one (row, background row) pair per model row, control variates refined per pair from the row's earlier
rounds — until its standard errors meet the tolerance (:mod:`~torchxplain.fourier.fit.residual`). Pairs and rows
that are cheaper to enumerate than to sample are exact. ``target_r2`` sets the tolerance from the values' scale
(measured by a pilot on ``data``): meeting it on every row gives an expected R² against the exact values of at least
``1 - (1 - target_r2) / 2``. ``explain(x).stderr`` holds every value's standard error.

Shapley values only (Banzhaf values and interactions: ``method='enumerate'`` or a fit), against a background set
(not per-row baselines), at the inputs themselves (not relaxed ones); nothing to save (it queries the model).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import torch
from torch import Tensor

from torchxplain._core.validation import check_int, check_number
from torchxplain.fourier.encoding import BinaryEncoder, RawEncoder
from torchxplain.fourier.fit import CorrectedPlan, FitReport, Oracle
from torchxplain.fourier.sources._base import BlackBoxSource, check_queries
from torchxplain.fourier.sources._built import Built
from torchxplain.fourier.sources._fit import check_target_r2
from torchxplain.fourier.sources._outputs import single_output
from torchxplain.fourier.sources._problem import Problem

REFUSALS = {
    "paired": (
        "method='correct' averages over a background set; per-row baselines (one baseline row per input row) need a "
        "spectrum: pass background= (the rows to average over), or fit one (method='fit')"
    ),
    "interaction_values": (
        "interaction values need a spectrum or enumeration; method='correct' estimates Shapley values with standard "
        "errors: use method='enumerate' (exact, few players) or method='fit'"
    ),
    "save": (
        "an explainer with method='correct' holds no spectrum to save (it queries the model); save the model, or "
        "fit a spectrum (method='fit') to save the explainer"
    ),
    "relaxed": "relaxed=True explains a spectrum's multilinear extension; method='correct' holds no spectrum",
    "spectrum": "an explainer with method='correct' estimates values through the model: it holds no spectrum",
}


class CorrectedValues:
    """Values to a tolerance through the model (a :class:`~torchxplain.fourier.sources._built.Provider`).

    Args:
        oracle: the model's queries; plan: the correction built for the constructor's background and players;
        binary: the codes are bits (cast to bool).
    """

    route = "correct"

    def __init__(self, oracle: Oracle, plan: CorrectedPlan, binary: bool) -> None:
        self.oracle, self.built, self.binary = oracle, plan, binary

    def plan(self, background_codes: Tensor, groups: Tensor | None, m: int, column: int = 0) -> CorrectedPlan:
        """The correction against ``background_codes`` for these players (the built one when they are its own)."""
        codes = background_codes.bool() if self.binary else background_codes
        players = torch.arange(codes.shape[1], device=codes.device) if groups is None else groups
        same = codes.shape == self.built.background.shape and bool((codes == self.built.background).all())
        if same and m == self.built.m and bool((players == self.built.players).all()):
            return self.built
        return self.built.against(codes, players, m)

    def evaluate(self, codes: Tensor) -> Tensor:
        """``(R,)`` the model at encoded rows (bits, or raw rows)."""
        return self.oracle(codes.bool() if self.binary else codes)

    def refusal(self, what: str) -> str | None:
        """Why ``what`` cannot be served (module docstring)."""
        return REFUSALS.get(what)


@dataclasses.dataclass(frozen=True)
class Correct(BlackBoxSource):
    """An additive surrogate fitted once and an unbiased per-row correction to a tolerance (module docstring).

    Args:
        target_r2: the R² against the exact values the tolerance is set for (ignored when ``tolerance`` is given).
        tolerance: the root mean square standard error of a row's values, in the values' units.
        budget: most model rows per explained row (a row that reaches it stops with its standard errors as they
            are).
        fit_samples: paired samples of the surrogate's fit (two model rows each).
        batch_size: model rows per call of the model; dtype: dtype of the query tensors.
    """

    names: ClassVar[tuple[str, ...]] = ("correct",)
    title: ClassVar[str] = "tx.fourier.Correct (method='correct')"
    summary: ClassVar[str] = (
        "Shapley values to a stated accuracy with standard errors: an additive surrogate fitted once for all rows, "
        "then per row an unbiased Monte Carlo correction of what it misses until the row's standard errors meet "
        "the tolerance (pairs and rows cheaper to enumerate are exact)"
    )

    target_r2: float | None = 0.999
    tolerance: float | None = None
    budget: int = 200_000
    fit_samples: int = 16_384
    batch_size: int = 4096
    dtype: torch.dtype | None = None

    def __post_init__(self) -> None:
        check_target_r2(self.target_r2)
        if self.tolerance is not None:
            check_number(self.tolerance, "tolerance", greater_than=0.0)
        if self.tolerance is None and self.target_r2 is None:
            raise ValueError("method='correct' needs a tolerance= or a target_r2= to stop at; pass one of them")
        check_int(self.budget, "budget", minimum=1)
        check_int(self.fit_samples, "fit_samples", minimum=1)
        check_queries(self.batch_size, self.dtype)

    def plan(self, problem: Problem) -> tuple[CorrectedPlan, Oracle]:
        """The correction for ``problem`` and the oracle it queries: the surrogate fitted on ``problem``'s data
        (else its background) and the pilot run, once per problem (the router's price and the build share it)."""

        def make() -> tuple[CorrectedPlan, Oracle]:
            dtype = problem.dtype if self.dtype is None else self.dtype
            oracle = Oracle(problem.model, problem.n_features, problem.device, dtype, self.batch_size, problem.target)
            oracle.phase = "values"
            binary = not problem.continuous
            codes = problem.background.bool() if binary else problem.background
            pool = problem.background if problem.data is None else problem.data
            plan = CorrectedPlan.build(
                oracle,
                codes,
                pool.bool() if binary else pool,
                problem.players.index,
                problem.players.m,
                target_r2=self.target_r2,
                tolerance=self.tolerance,
                budget=self.budget,
                fit_samples=self.fit_samples,
                seed=problem.seed,
                query_dtype=None if binary else dtype,
            )
            return plan, oracle

        return problem.kept(self, make)

    def build(self, problem: Problem, reason: str) -> Built:
        """Hold the correction (:meth:`plan`) for ``problem``."""
        p = problem.n_features
        binary = not problem.continuous
        encoder: BinaryEncoder = BinaryEncoder(p) if binary else RawEncoder(p)
        codes = problem.background.bool() if binary else problem.background
        players = problem.players
        plan, oracle = self.plan(problem)
        assert plan.report is not None
        measured = plan.report
        report = FitReport(
            method="correct",
            reason=reason,
            n_features=p,
            k=None,
            n_terms=0,
            max_degree=None,
            n_queries=measured.n_queries,
            n_validation_queries=0,
            wall_time_s=oracle.seconds,
            validation_time_s=0.0,
            r2_uniform=None,
            r2_eval=None,
            target_r2=self.target_r2 if self.tolerance is None else None,
            n_players=players.m,
            params={
                "tolerance (RMS standard error per row)": measured.tolerance,
                "value scale (variance)": measured.scale,
                "surrogate odd-part R²": round(measured.r2_odd, 4),
                "predicted model rows per row": round(min(measured.forecast, self.budget)),
                "budget (model rows per row)": self.budget,
                "pairs enumerated when 2^d - 2 <=": measured.exact_pair_rows,
            },
            model_time_s=oracle.seconds,
            model_cpu_time_s=oracle.cpu_seconds,
            stopped="built: every row stops at the tolerance or its budget",
            players=players.description,
        )
        return Built(
            encoder=encoder,
            background=problem.background,
            codes=codes,
            spectra=[],
            provider=CorrectedValues(oracle, plan, binary),
            outputs=single_output(problem.target, "model output"),
            groups=players.ids,
            names=problem.names,
            report=report,
        )

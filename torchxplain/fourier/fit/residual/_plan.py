"""The value provider of a black box explained to a stated accuracy: :class:`CorrectedPlan`.

Built once for (model, background, players): the additive surrogate is fitted on rows like the explained ones
(:func:`~._additive.fit_additive`), then a pilot correction on a few of those rows measures the values' scale and
the correction's variance per model row. A target R² becomes a tolerance on each row's root mean square standard
error, ``sqrt((1 - target_r2) · SAFETY · scale)``: meeting it on every row gives an expected R² of at least
``1 - (1 - target_r2) · SAFETY`` against the exact values. The pilot's variance per model row also says which pairs
are cheaper to enumerate (``2^d - 2`` coalitions) than to sample to that tolerance. Where the outer sizes of the
pairs (:class:`~._estimate.CorrectionOptions`' ``strata_rows``) would be cheap enough, a second pilot runs with them
and without the per-pair regression, and they are kept only where the model rows it predicts to the tolerance (their
fixed cost plus the sampled rows) are at most :data:`REFIT_PREMIUM` times what the first pilot predicts (near the
budget, :data:`REFIT_SHARE`, they are kept, with the regression).

``shapley(x)`` has the value-plan interface of the explainer (``(Q, m)``); :meth:`CorrectedPlan.explain` adds the
standard errors, the model rows spent and the rounds. Banzhaf values and interactions are not estimated here.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from torchxplain.fourier.fit._enumerate import pair_sizes
from torchxplain.fourier.fit.residual._additive import AdditiveModel, fit_additive
from torchxplain.fourier.fit.residual._estimate import (
    STRATA_FROM,
    CorrectionOptions,
    Estimate,
    correct,
    known_sizes,
    round_weights,
    strata_limit,
)

SAFETY = 0.6
"""The tolerance of a target R² is set for an error variance of this fraction of what the target allows."""
PILOT_ROWS = 32
"""Rows of the pilot correction (from the fit's pool)."""
PILOT_ROUNDS = 48
"""Rounds of the pilot correction (its per-round variances become the round weights of every row)."""
MAX_WEIGHT = 10.0
"""The largest round weight, the first round's being one (:func:`weights_of`)."""
STRATA_SHARE = 0.25
"""The outer sizes of a row's pairs are queried when they cost at most this share of the model rows the pilot
predicts per row (:class:`~._estimate.CorrectionOptions`' ``strata_rows``)."""
REFIT_SHARE = 0.5
"""Where the pilot predicts more than this share of the budget per row, the per-pair regression runs even with
the outer sizes (breast cancer's MLP: without it 36 of 50 rows spent the budget short of the tolerance, with it 11;
well within the budget its refits cost more CPU than the model rows they save, :func:`~._estimate.regresses`)."""
REFIT_PREMIUM = 1.25
"""Without the per-pair regression, the outer sizes are chosen where the pilot with them predicts at most this many
times the model rows of the pilot without them, which refits (the refits cost our CPU per model row: on tanh40's
default call 0.71 µs per model row with them, 0.46 without; on sgemm's MLP, whose rows cost 3 µs, the outer sizes
took 1.8 times the model rows)."""
OUTER_PILOT_ROWS = 16
"""Rows of the pilot with the outer sizes (the first of the pilot's)."""
HORIZON = 4
"""Model rows to the tolerance are predicted up to this many budgets (past the budget, where a row would stop
short, they say how short)."""
FIT_SAMPLES = 16_384
"""Paired samples of the additive surrogate's fit (two model rows each)."""


@dataclass(frozen=True)
class PlanReport:
    """What building the plan measured: the surrogate's fit (``r2_odd``, its ``n_queries``), the pilot's value
    ``scale`` (variance of the values over rows and players), its ``rows_per_unit`` (model rows per row that bring
    a row's mean squared standard error to 1 in the values' squared units), the resulting ``tolerance`` (RMS
    standard error per row), ``exact_pair_rows``, the model rows spent (``n_queries``) and ``forecast``: the model
    rows per row that the design the plan runs is predicted to spend to the tolerance (:func:`rows_to` on its pilot,
    the outer sizes' fixed rows included; at most :data:`HORIZON` budgets)."""

    r2_odd: float
    scale: float
    rows_per_unit: float
    tolerance: float | None
    target_r2: float | None
    exact_pair_rows: int
    n_queries: int
    forecast: float


def weights_of(variance: Tensor) -> tuple[float, ...]:
    """Round weights from a pilot's per-round variances: their running minimum (the control variates only get
    better), smoothed over neighbouring rounds, inverted, scaled to start at one and capped at
    :data:`MAX_WEIGHT` (a row's standard errors are estimated from its own rounds: weights that put nearly all the
    mass on a few rounds leave too few to estimate them; a tiny binary game whose pair games the control variates
    fit exactly reached 1 : 7,400 and intervals half as wide as the truth)."""
    if variance.numel() == 0 or not bool((variance > 0).any()):
        return ()
    v = variance.clamp_min(float(variance[variance > 0].min()))
    v = torch.cummin(v, 0).values
    kernel = torch.ones(1, 1, 5, dtype=v.dtype, device=v.device) / 5
    smooth = torch.nn.functional.conv1d(torch.nn.functional.pad(v[None, None], (2, 2), mode="replicate"), kernel)[0, 0]
    return tuple((smooth[0] / smooth).clamp(max=MAX_WEIGHT).tolist())


def outer_rows(pool: Tensor, background: Tensor, players: Tensor, m: int, predicted: float) -> int:
    """``strata_rows`` for rows like ``pool`` that spend ``predicted`` model rows each: where the outer sizes of
    the pool rows' pairs cost at most :data:`STRATA_SHARE` of them on average, three times that (the outer sizes
    take at most a third of ``strata_rows``), else ``0`` (none; the per-pair regression then runs,
    :func:`~._estimate.regresses`)."""
    sizes = pair_sizes(pool, background, players, m)
    cost = float((2 * sizes * (sizes >= STRATA_FROM)).sum(1).double().mean()) if sizes.numel() else 0.0
    limit = int(predicted * STRATA_SHARE)
    return 3 * limit if 0 < cost <= limit else 0


@dataclass(frozen=True)
class Trial:
    """A pilot with the outer sizes (:func:`outer_pilot`): the model rows per row it predicts to the tolerance
    (``rows``: the outer sizes' fixed part plus the sampled rows), the model rows it spent ``(R,)`` and the options
    it tried."""

    rows: float
    model_rows: Tensor
    options: CorrectionOptions

    def plain(self, pilot: Estimate) -> float:
        """What the plain ``pilot`` (no outer sizes, the per-pair regression; its first rows are this trial's)
        predicts per row on the same rows, with the same round weights."""
        k = self.model_rows.shape[0]
        same = Estimate(
            pilot.values[:k], pilot.standard_errors[:k], pilot.model_rows[:k], pilot.rounds[:k], pilot.round_variance
        )
        return rows_to(same, torch.zeros_like(same.model_rows), self.options)


def outer_pilot(
    query: Callable[[Tensor], Tensor],
    rows: Tensor,
    background: Tensor,
    players: Tensor,
    m: int,
    additive: AdditiveModel | None,
    options: CorrectionOptions,
    seed: int,
    query_dtype: torch.dtype | None,
) -> Trial:
    """Run :data:`PILOT_ROUNDS` rounds of ``options`` (its outer sizes and regression, no enumeration, rounds
    alike) on pilot rows ``rows`` ``(R, n)`` and predict the model rows per row to ``options.tolerance`` with its
    round weights: the outer sizes' rows are a fixed cost per row; only the sampled rows scale with the inverse
    squared tolerance."""
    assert options.tolerance is not None
    run = correct(
        query,
        rows,
        background,
        players,
        m,
        additive=additive,
        # an infinite tolerance stops every row after min_rounds rounds, with the final run's outer sizes
        options=replace(
            options,
            tolerance=math.inf,
            min_rounds=PILOT_ROUNDS,
            exact_pair_rows=0,
            exact_row_rows=0,
            round_weights=(),
            seed=seed,
        ),
        query_dtype=query_dtype,
    )
    sizes = pair_sizes(rows, background, players, m)
    fixed = known_sizes(sizes, sizes >= 2, strata_limit(options))[2]
    return Trial(rows_to(run, fixed, options), run.model_rows, options)


def rows_to(run: Estimate, fixed: Tensor, options: CorrectionOptions) -> float:
    """Model rows per row, on average over a pilot ``run``'s rows, that its design spends to meet
    ``options.tolerance`` (RMS) with its round weights: the per-round variance is the pilot's (the last repeats:
    the control variates only get better), scaled per row to its own standard errors; each row pays the model rows
    per round it paid in the pilot, on top of the ``fixed`` ``(R,)`` rows of its known sizes (the rows to the
    tolerance, past the budget where a row would stop short)."""
    assert options.tolerance is not None
    measured = run.round_variance[: int(run.rounds.median())]
    if not bool((measured > 0).any()):
        return float(fixed.to(torch.float64).mean())
    measured = torch.cummin(measured.clamp_min(float(measured[measured > 0].min())), 0).values
    cost = (run.model_rows - fixed).to(torch.float64) / run.rounds.clamp(min=1)
    horizon = int(HORIZON * options.budget / max(float(cost.min()), 1.0)) + 1
    t = torch.arange(horizon, device=measured.device)
    v = measured[t.clamp(max=measured.numel() - 1)]
    w = round_weights(options.round_weights, 0, horizon, measured.device)
    weighted = (w.square() * v).cumsum(0) / w.cumsum(0).square()  # a row's se² after t + 1 rounds, per unit
    alike = v.cumsum(0) / (t + 1).to(torch.float64).square()  # the same with rounds alike (the pilot's)
    taken = run.rounds.clamp(min=1, max=horizon)
    unit = run.standard_errors.square().mean(1) / alike[taken - 1]
    # the first round whose standard error meets the tolerance, on the running minimum (a decreasing curve)
    best = torch.cummin(weighted, 0).values
    needed = torch.searchsorted(-best, -(options.tolerance**2) / unit.clamp_min(1e-300)) + 1
    needed = needed.clamp(min=options.min_rounds)
    spent = torch.where(run.rounds > 0, fixed + needed * cost, fixed.to(torch.float64))
    return float(spent.to(torch.float64).mean())


class CorrectedPlan:
    """Shapley values of a black box with standard errors, for any rows (module docstring).

    Args:
        query: the model, ``(N, n)`` rows -> ``(N,)`` float64.
        background: ``(D, n)`` rows; players: ``(n,)`` int64 player of each column; m: the number of players.
        additive: the fitted additive surrogate (``None``: none).
        options: the correction's options (tolerance, budget, design).
        report: what building it measured (``None`` when built by hand).
        query_dtype: the dtype ``query`` casts real rows to (``None``: none known; :func:`~._estimate.correct`).
    """

    def __init__(
        self,
        query: Callable[[Tensor], Tensor],
        background: Tensor,
        players: Tensor,
        m: int,
        additive: AdditiveModel | None,
        options: CorrectionOptions,
        report: PlanReport | None = None,
        query_dtype: torch.dtype | None = None,
    ) -> None:
        self.query, self.background, self.players, self.m = query, background, players, m
        self.query_dtype = query_dtype
        self.additive, self.options, self.report = additive, options, report
        self.last: Estimate | None = None

    @classmethod
    def build(
        cls,
        query: Callable[[Tensor], Tensor],
        background: Tensor,
        pool: Tensor,
        players: Tensor,
        m: int,
        *,
        target_r2: float | None = 0.999,
        tolerance: float | None = None,
        budget: int | None = None,
        fit_samples: int = FIT_SAMPLES,
        seed: int = 0,
        query_dtype: torch.dtype | None = None,
    ) -> CorrectedPlan:
        """Fit the surrogate, run the pilot and set the tolerance.

        Args:
            query, background, players, m: as the constructor's.
            pool: ``(R, n)`` rows like the explained ones (e.g. training rows); the fit and the pilot use them.
            target_r2: the R² against the exact values the tolerance is set for (ignored with ``tolerance``).
            tolerance: the RMS standard error per row, in the values' units (``None``: from ``target_r2``).
            budget: most model rows per explained row (``None``: :class:`CorrectionOptions`' default).
            fit_samples: paired samples of the surrogate's fit.
            seed: seeds the fit, the pilot and the correction.
            query_dtype: the dtype ``query`` casts real rows to (``None``: none known).
        """
        additive = fit_additive(query, pool, background, players, m, samples=fit_samples, seed=seed)
        base = CorrectionOptions(seed=seed) if budget is None else CorrectionOptions(seed=seed, budget=budget)
        pilot_rows = pool[: min(PILOT_ROWS, pool.shape[0])]
        slots = min(base.slots, background.shape[0])
        pilot_budget = 2 * slots * PILOT_ROUNDS
        pilot = correct(
            query,
            pilot_rows,
            background,
            players,
            m,
            additive=additive,
            options=replace(base, budget=pilot_budget, seed=seed + 1, strata_rows=0),
            query_dtype=query_dtype,
        )
        # rounds that half the pilot's rows reached: rows with enumerated pairs run more, cheaper rounds, and a
        # tail of those few rows' variances would set the weights of every row's late rounds
        weights = weights_of(pilot.round_variance[: int(pilot.rounds.median())])
        values, se2 = pilot.values, pilot.standard_errors.square()
        scale = max(float(values.var()) - float(se2.mean()), float(additive.scale), 1e-300)
        spent = pilot.model_rows.to(torch.float64).clamp(min=1.0)
        rows_per_unit = float((se2.mean(1) * spent).mean())
        if tolerance is None and target_r2 is not None:
            tolerance = math.sqrt((1.0 - target_r2) * SAFETY * scale)
        per_pair = rows_per_unit / max(tolerance or 0.0, 1e-300) ** 2 / background.shape[0]
        # a sampled pair costs at least two rows a round for min_rounds rounds: below that, enumerating is cheaper
        exact_pair_rows = int(min(max(per_pair, 2 * base.min_rounds), 2**16)) if tolerance else 0
        predicted = rows_per_unit / max(tolerance or 0.0, 1e-300) ** 2 if tolerance else float(base.budget)
        # near the budget the model rows the refits save are accuracy: keep them (else the engine's rule)
        refit = predicted > base.budget * REFIT_SHARE
        options = replace(
            base,
            tolerance=tolerance,
            criterion="rms",
            exact_pair_rows=exact_pair_rows,
            exact_row_rows=int(min(predicted, base.budget)),
            strata_rows=0 if tolerance else None,
            round_weights=weights,
            regression=True if refit else None,
        )
        spent_rows = int(pilot.model_rows.sum())
        strata = outer_rows(pilot_rows, background, players, m, min(predicted, base.budget)) if tolerance else 0
        if strata and refit:  # near the budget (breast cancer's MLP, 50 rows: 11 short of the tolerance, else 15)
            options = replace(options, strata_rows=strata)
        forecast = rows_to(pilot, torch.zeros_like(pilot.model_rows), options) if tolerance else float(base.budget)
        if strata and not refit:  # measured: the outer sizes without refits against the refits without them
            outer = replace(options, strata_rows=strata, regression=False)
            trial = outer_pilot(
                query, pilot_rows[:OUTER_PILOT_ROWS], background, players, m, additive, outer, seed + 2, query_dtype
            )
            spent_rows += int(trial.model_rows.sum())
            if trial.rows <= REFIT_PREMIUM * trial.plain(pilot):
                options, forecast = replace(outer, regression=None), trial.rows
        n_queries = additive.n_queries + spent_rows + pilot_rows.shape[0] + background.shape[0]
        report = PlanReport(
            additive.r2_odd, scale, rows_per_unit, tolerance, target_r2, exact_pair_rows, n_queries, forecast
        )
        return cls(query, background, players, m, additive, options, report, query_dtype)

    def explain(self, x: Tensor) -> Estimate:
        """Values, standard errors, model rows and rounds of rows ``x`` ``(Q, n)``; a :class:`UserWarning` names
        the rows that spent their budget before their standard errors met the tolerance."""
        self.last = correct(
            self.query,
            x,
            self.background,
            self.players,
            self.m,
            additive=self.additive,
            options=self.options,
            query_dtype=self.query_dtype,
        )
        tolerance = self.options.tolerance
        if tolerance is not None and x.shape[0]:
            rms = self.last.standard_errors.square().mean(1).sqrt()
            short = (rms > tolerance * (1 + 1e-9)).nonzero()[:, 0]
            if short.numel():
                warnings.warn(
                    f"{short.numel()} of {x.shape[0]} rows (first: row {int(short[0])}) spent their budget of "
                    f"{self.options.budget:,} model rows before their standard errors met the tolerance "
                    f"{tolerance:.3g} (largest RMS standard error {float(rms.max()):.3g}); their standard errors "
                    "say how far they are: raise budget= for tighter values",
                    UserWarning,
                    stacklevel=2,
                )
        return self.last

    def shapley(self, x: Tensor, relaxed: bool = False) -> Tensor:
        """``(Q, m)`` Shapley values of rows ``x`` (``relaxed`` inputs are refused upstream)."""
        return self.estimate(x, "shapley")[0]

    def estimate(self, x: Tensor, kind: str) -> tuple[Tensor, Tensor]:
        """``(values, standard errors)``, each ``(Q, m)`` in the rows' float dtype (float64 for codes that are
        not floats); ``kind`` must be ``"shapley"``."""
        if kind != "shapley":
            raise ValueError(_NOT_HERE.format(what="Banzhaf values" if kind == "banzhaf" else f"{kind} values"))
        estimate = self.explain(x)
        dtype = x.dtype if x.is_floating_point() else torch.float64
        return estimate.values.to(dtype), estimate.standard_errors.to(dtype)

    def banzhaf(self, x: Tensor) -> Tensor:
        """Not estimated by the correction."""
        raise ValueError(_NOT_HERE.format(what="Banzhaf values"))

    def interactions(self, x: Tensor) -> Tensor:
        """Not estimated by the correction."""
        raise ValueError(_NOT_HERE.format(what="interaction values"))

    def against(self, background: Tensor, players: Tensor, m: int) -> CorrectedPlan:
        """The same correction (surrogate, tolerance, design) against another background or other players."""
        if background is self.background and players is self.players:
            return self
        additive = None if self.additive is None else self.additive.regrouped(players, m)
        return CorrectedPlan(self.query, background, players, m, additive, self.options, self.report, self.query_dtype)


_NOT_HERE = (
    "{what} of a black box are not estimated by the Monte Carlo correction (method='correct' estimates Shapley "
    "values with standard errors); enumerate (method='enumerate') or fit a spectrum (method='fit') for them"
)

"""The correction: unbiased Shapley values of a black box, with standard errors, for many rows at once in rounds.

For each explained row ``x`` and each background row ``b``, the pair game's values are the sum of an additive
control variate's (exact) and a Monte Carlo estimate of the rest (:mod:`._design`):

    φ̂_i(x) = mean_b [i ∈ Δ_b] (β_{b,i} + (f(x) - f(b) - Σ_{j ∈ Δ_b} β_{b,j}) / d_b)
            + mean over the round's slots of a_i(S) (y - Σ_j β_{b,j} w_j).

``β`` starts as the additive surrogate's ``g_j(x_j) - g_j(b_j)`` (:mod:`._additive`, fitted once for all rows on
other rows) and, with ``regression=True``, is refined per pair by ridge least squares of ``y`` on ``w`` over the
row's own samples of *earlier* rounds only. Each round's estimate is then unbiased given the rounds before it
(whatever ``β`` is), so the mean over rounds is unbiased and the rounds' errors are uncorrelated (a martingale):
the standard error is the root of the summed within-round variances over the number of rounds squared (within a
round the slots are independent given the past; their distinct background rows and stratified sizes make the
estimate of the variance conservative, never optimistic).

Rounds are batched over every row still running; a row stops when its standard errors meet the tolerance (after
``min_rounds`` rounds) or when another round would pass its budget of model rows. Draws are hashes of the row's
values, the round and the slot (:mod:`._hashing`), and every decision counts rounds and rows, never seconds, so
the same seed gives the same values for a row in any batch, chunking or load.

Where they cost a small share of a row's model rows (``strata_rows``), the coalitions of sizes 1 and ``d - 1`` of a
sampled pair are queried once (``2 d`` model rows): their share of the pair's values is exact (``2 Σ_j c_i({j})
r({j})``, the Shapley weights ``c_i`` of the residual's odd part), they start the pair's control variates at the
additive game that matches them (``β_j = y({j}) + Δf / d``: exact for a game of order two, whose odd part is
additive), and the rounds' slots of those sizes are dead, so the rounds estimate the sizes between. Where they fit
as well, the sizes 2 and ``d - 2`` are queried and known too (``2 Σ_{j<k} c_i({j, k}) r({j, k})``).

An optional non-additive ``surrogate`` (a callable with exact values, e.g. a spectrum) is subtracted first: then
the game corrected is that of ``f - g`` and ``φ(g)`` is added back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, rows_per_chunk
from torchxplain.fourier.fit._enumerate import PairGames, differing_players, pair_sizes
from torchxplain.fourier.fit.residual._additive import AdditiveModel, quiet
from torchxplain.fourier.fit.residual._design import Draw, SizeLaw, draw, hybrids, pair_points, size_table
from torchxplain.fourier.fit.residual._hashing import combine, row_keys

Criterion = Literal["max", "rms"]
REFIT_FIRST, REFIT_GROWTH = 4, 1.5
"""The per-pair regression is refitted after rounds 4, 6, 9, 13, ... (each 1.5 times the last)."""
MAX_BLOCK = 8
"""Most rounds drawn and queried together (the stopping rule is checked between blocks)."""
CG_STEPS = 6
"""Conjugate-gradient steps per refit of the per-pair regression, from the last refit's solution (tanh40, 100
rows: 6 steps spent 1% more model rows than exact solves, at 20% less CPU time per row)."""


STRATA_FROM = 4
"""The fewest differing players of a pair whose outer sizes (1 and ``d - 1``) are queried apart (``d = 3`` has no
sizes between: its 6 coalitions are all of them, for which enumeration is there)."""
STRATA2_FROM = 6
"""The fewest differing players of a pair whose next sizes (2 and ``d - 2``) are queried apart too (``d = 5`` has
none between)."""


class Surrogate(Protocol):
    """A non-additive surrogate with exact values: ``g(z)`` at rows and its Shapley values at rows."""

    def __call__(self, z: Tensor) -> Tensor: ...

    def shapley(self, x: Tensor) -> Tensor: ...


@dataclass(frozen=True)
class CorrectionOptions:
    """How far the correction goes.

    Attributes:
        tolerance: stop a row when its standard errors reach this, in the values' units (``None``: run to the
            budget); ``criterion`` says which: ``"max"`` (every value's) or ``"rms"`` (their root mean square over
            the row's players: what an R² target needs).
        budget: most model rows per explained row for the correction (the row's ``f(x)`` and the background's
            shared ``f(b)`` come on top).
        min_rounds: rounds before a row may stop on its tolerance (its standard errors are estimates too).
        slots: pairs per round (distinct background rows; all of them when there are fewer).
        sizes: the law of coalition sizes (:func:`~._design.size_table`).
        regression: refine the additive control variates per pair from the row's earlier rounds (when every
            round takes every background row, ``slots >= D``; a pair of a larger background is drawn too rarely).
            ``None``: on without a tolerance (a fixed budget: the most accurate values for its model rows) or
            without outer sizes (``strata_rows=0``), off with a tolerance and outer sizes (the outer sizes start
            the control variates near where the refits take them; on tanh40's default call the refits cost 30%
            more CPU per row than the 15% of model rows they saved).
        ridge: the per-pair regression's ridge, relative to the mean diagonal of its normal equations.
        exact_pair_rows: a pair whose game has at most this many coalitions besides its endpoints
            (``2^d - 2``) is enumerated through the model instead of sampled (exact, no variance; ``0``: none),
            when a row's enumerated pairs fit its budget.
        exact_row_rows: a row whose every pair can be enumerated for at most this many model rows (``Σ_b 2^d``,
            and within its budget) is exact (``0``: none).
        strata_rows: the most model rows a row spends on the outer sizes of its sampled pairs (``None``: 3/8 of
            its budget without a tolerance, else none; ``0``: none; at most half the budget): where a third of
            it pays for them, the coalitions of sizes 1 and ``d - 1`` of every sampled pair with ``d >= 4``
            (:data:`STRATA_FROM`) are queried once, ``2 d`` model rows; their share of the values is then exact,
            they start the pair's control variates (exact for a game of order two, whose odd part is additive),
            and the rounds sample the sizes between. Where the sizes 2 and ``d - 2`` fit in all of it as well
            (``d (d - 1)`` model rows more per pair with ``d >= 6``), they are known too. (A third: on the
            diabetes MLP, outer sizes that took a quarter of a budget of 8 coalitions per player doubled the
            error; at 32, with the next sizes, they cut it 3.3 times.)
        round_weights: the weight of each round in a row's estimate (the last one repeats beyond them; empty:
            all alike). Fixed in advance, so the weighted mean stays unbiased: a plan sets them to the inverse of
            the variance its pilot measured per round (the control variates improve as the rounds go).
        seed: seeds every draw (with each row's values).
    """

    tolerance: float | None = None
    criterion: Criterion = "max"
    budget: int = 200_000
    min_rounds: int = 16
    slots: int = 64
    sizes: SizeLaw = "uniform"
    regression: bool | None = None
    ridge: float = 0.05
    exact_pair_rows: int = 0
    exact_row_rows: int = 0
    strata_rows: int | None = None
    round_weights: tuple[float, ...] = ()
    seed: int = 0


@dataclass(frozen=True)
class Estimate:
    """Values ``(Q, m)`` float64 and their standard errors ``(Q, m)``, the model rows each row spent on the
    correction ``(Q,)``, its rounds ``(Q,)``, and the variance of one round's estimate, averaged over the rows
    and players that ran it, per round ``(T,)`` (what a plan's round weights come from)."""

    values: Tensor
    standard_errors: Tensor
    model_rows: Tensor
    rounds: Tensor
    round_variance: Tensor


def regresses(options: CorrectionOptions) -> bool:
    """Whether the per-pair regression runs (:class:`CorrectionOptions`' ``regression``)."""
    if options.regression is not None:
        return options.regression
    return options.tolerance is None or options.strata_rows == 0


def strata_limit(options: CorrectionOptions) -> int:
    """The most model rows a row spends on the outer sizes of its pairs (:class:`CorrectionOptions`'
    ``strata_rows``)."""
    limit = options.strata_rows
    if limit is None:
        limit = options.budget * 3 // 8 if options.tolerance is None else 0
    return min(limit, options.budget // 2)


def known_sizes(d: Tensor, sampled: Tensor, limit: int) -> tuple[Tensor, Tensor, Tensor]:
    """Which sampled pairs have their outer sizes known, which their next sizes too, and the model rows that costs
    each row, for pairs of ``d`` ``(Q, D)`` differing players, ``sampled`` ``(Q, D)`` and a row's ``limit``
    (:func:`strata_limit`): ``((Q, D), (Q, D), (Q,))``."""
    strata = sampled & (d >= STRATA_FROM)
    strata &= (2 * (d * strata).sum(1) <= limit // 3)[:, None]  # alone, at most a third of the limit
    outer_rows = 2 * (d * strata).sum(1)
    # the next sizes too where they fit as well: 2 C(d, 2) coalitions more per pair
    strata2 = strata & (d >= STRATA2_FROM)
    strata2 &= (outer_rows + (d * (d - 1) * strata2).sum(1) <= limit)[:, None]
    return strata, strata2, outer_rows + (d * (d - 1) * strata2).sum(1)


def round_weights(weights: tuple[float, ...], t: int, k: int, device: torch.device) -> Tensor:
    """``(k,)`` float64 weights of rounds ``t .. t + k - 1`` (the last given weight repeats; none: ones)."""
    if not weights:
        return torch.ones(k, dtype=torch.float64, device=device)
    index = torch.arange(t, t + k).clamp(max=len(weights) - 1)
    return torch.tensor(weights, dtype=torch.float64)[index].to(device)


def block(t: int, refits: list[int], min_rounds: int) -> int:
    """How many rounds to draw together from round ``t``: one at first, then up to :data:`MAX_BLOCK` (a quarter
    of the rounds so far), never past the next refit or ``min_rounds`` (a function of ``t`` only: the same rows
    stop at the same rounds in any batch)."""
    k = max(1, min(MAX_BLOCK, t // 4))
    for stop in (*refits, min_rounds):
        if t < stop:
            k = min(k, stop - t)
    return k


def refit_rounds(limit: int) -> set[int]:
    """The rounds after which the per-pair regression is refitted (module constants), up to ``limit``."""
    out, t = set(), float(REFIT_FIRST)
    while t <= limit:
        out.add(int(t))
        t *= REFIT_GROWTH
    return out


def correct(
    query: Callable[[Tensor], Tensor],
    x: Tensor,
    background: Tensor,
    players: Tensor,
    m: int,
    *,
    additive: AdditiveModel | None = None,
    surrogate: Surrogate | None = None,
    options: CorrectionOptions = CorrectionOptions(),  # noqa: B008 (frozen, immutable)
    query_dtype: torch.dtype | None = None,
) -> Estimate:
    """Shapley values of ``query`` at rows ``x`` against ``background``, with standard errors (module docstring).

    Args:
        query: the model, ``(N, n)`` rows -> ``(N,)`` float64 (an :class:`~torchxplain.fourier.fit._oracle.Oracle`);
            queried at hybrids that take each player's columns whole from the row or the background row.
        x: ``(Q, n)`` rows; background: ``(D, n)`` (binary codes or raw real rows).
        players: ``(n,)`` int64 player of each column; m: the number of players.
        additive: the control variates' start (``None``: zero).
        surrogate: a non-additive surrogate subtracted first (``None``: none).
        options: tolerance, budget and design (:class:`CorrectionOptions`).
        query_dtype: the dtype ``query`` casts real rows to (``None``: none known); without a ``surrogate``, real
            rows are cast before their hybrids are built, which the query would do to every hybrid (the same values,
            half the bytes for float32).
    """
    device = x.device
    cast = query_dtype if surrogate is None and x.is_floating_point() else None
    game = quiet(query if surrogate is None else _Residual(query, surrogate))  # many small batches: no bars
    table = size_table(m, options.sizes, device)
    f_background = game(background)
    contributions_b = additive.contributions(background) if additive is not None else None
    q_rows, d_rows = x.shape[0], background.shape[0]
    slots = min(options.slots, d_rows)
    per_row = 8 * d_rows * m * 8
    limit = strata_limit(options)
    if limit > 0:  # the outer sizes' values and points; the next sizes' where they may fit
        per_row += 8 * d_rows * m * (2 * x.shape[1] + 1)
        if m * (m - 1) * d_rows <= limit:
            per_row += 8 * d_rows * m * (m - 1) * (x.shape[1] + 1)
    if regresses(options) and slots >= d_rows:  # normal equations, and the rounds buffered between refits
        widest = int(pair_sizes(x, background, players, m).max()) if q_rows else 0
        buffered = options.budget // (2 * slots) * (REFIT_GROWTH - 1) / REFIT_GROWTH + 1
        per_row += 8 * d_rows * widest * (widest + 3) + int(d_rows * (m + 8 * widest + 8) * buffered)
    per_row += 8 * slots * (x.shape[1] * 4 + m * 12)
    values = torch.zeros(q_rows, m, dtype=torch.float64, device=device)
    errors = torch.zeros_like(values)
    model_rows = torch.zeros(q_rows, dtype=torch.long, device=device)
    rounds = torch.zeros_like(model_rows)
    curve_sum = torch.zeros(0, dtype=torch.float64, device=device)
    curve_count = torch.zeros(0, dtype=torch.float64, device=device)
    for a, c in chunk_bounds(q_rows, rows_per_chunk(per_row, q_rows)):
        part = _Rows(game, x[a:c], background, players, m, f_background, options, table, slots, cast)
        part.start(None if additive is None else additive.contributions(x[a:c]), contributions_b)
        part.run()
        values[a:c], errors[a:c], model_rows[a:c], rounds[a:c] = part.result()
        total, count = part.curve()
        width = max(total.numel(), curve_sum.numel())
        curve_sum = torch.nn.functional.pad(curve_sum, (0, width - curve_sum.numel())) + torch.nn.functional.pad(
            total, (0, width - total.numel())
        )
        curve_count = torch.nn.functional.pad(curve_count, (0, width - curve_count.numel())) + torch.nn.functional.pad(
            count, (0, width - count.numel())
        )
    if surrogate is not None:
        values += surrogate.shapley(x).to(torch.float64)
    return Estimate(values, errors, model_rows, rounds, curve_sum / curve_count.clamp(min=1.0))


class _Residual:
    """``f - g`` at rows: the game the correction estimates when a non-additive surrogate is subtracted."""

    def __init__(self, query: Callable[[Tensor], Tensor], surrogate: Surrogate) -> None:
        self.query, self.surrogate = query, surrogate

    @torch.no_grad()  # numbers only: a surrogate with trainable amplitudes would otherwise keep a graph per call
    def __call__(self, z: Tensor) -> Tensor:
        return self.query(z) - self.surrogate(z).to(torch.float64)


class _Rows:
    """The state of one chunk of rows through the rounds."""

    def __init__(
        self,
        game: Callable[[Tensor], Tensor],
        x: Tensor,
        background: Tensor,
        players: Tensor,
        m: int,
        f_background: Tensor,
        options: CorrectionOptions,
        table: Tensor,
        slots: int,
        cast: torch.dtype | None,
    ) -> None:
        self.game, self.x, self.background, self.players, self.m = game, x, background, players, m
        # hybrids select entries on their bits: rows and background need one dtype (the binary route passes
        # float rows with bool background bits)
        cast = cast or torch.promote_types(x.dtype, background.dtype)
        self.x_query, self.background_query = x.to(cast), background.to(cast)
        identity = players.numel() == m and bool((players == torch.arange(m, device=players.device)).all())
        self.columns = None if identity else players  # hybrids skip a gather when column j is player j
        self.options, self.table, self.slots = options, table, slots
        q_rows, d_rows = x.shape[0], background.shape[0]
        device = x.device
        self.keys = row_keys(x, options.seed)
        self.differ = differing_players(
            x.repeat_interleave(d_rows, 0), background.repeat(q_rows, 1), players, m
        ).reshape(q_rows, d_rows, m)
        self.d = self.differ.sum(2)
        self.f_x = game(x)
        self.delta_f = self.f_x[:, None] - f_background[None, :]  # (Q, D)
        self.sum = torch.zeros(q_rows, m, dtype=torch.float64, device=device)
        self.variance = torch.zeros_like(self.sum)
        self.weight = torch.zeros(q_rows, dtype=torch.float64, device=device)  # Σ_t w_t of each row
        self.curve_sum: list[Tensor] = []  # per round: Σ over rows and players of the round's variance
        self.curve_count: list[Tensor] = []
        self.model_rows = torch.zeros(q_rows, dtype=torch.long, device=device)
        self.rounds = torch.zeros(q_rows, dtype=torch.long, device=device)
        cost = 2 ** self.d.clamp(max=62) * (self.d >= 2)  # model rows to enumerate each pair
        whole = cost.sum(1) <= min(options.exact_row_rows, options.budget)  # rows cheaper to enumerate outright
        cheap = (self.d >= 2) & (cost - 2 <= options.exact_pair_rows)
        paid = (cost * cheap).sum(1) <= options.budget  # a row enumerates its cheap pairs within its budget
        self.enumerated = (cheap & paid[:, None]) | ((self.d >= 2) & whole[:, None])
        self.sampled = (self.d >= 2) & ~self.enumerated
        self.pair_values = torch.zeros(q_rows, d_rows, m, dtype=torch.float64, device=device)
        if bool(self.enumerated.any()):
            q_index, b_index = self.enumerated.nonzero().unbind(1)
            games = PairGames(x[q_index], background[b_index], players, m)
            self.pair_values[q_index, b_index] = games.shapley(game(games.points))
            self.model_rows.index_add_(0, q_index, 2 ** self.d[q_index, b_index])
        self.regression = regresses(options) and slots >= d_rows
        self.strata, self.strata2, _ = known_sizes(self.d, self.sampled, strata_limit(options))
        self.levels = self.strata.to(torch.int64) + self.strata2.to(torch.int64)  # sizes known at each end
        self.outer = torch.zeros(q_rows, d_rows, m, dtype=torch.float64, device=device)  # y of {j}, per pair
        self.outer2: Tensor | None = None  # y of {j, k}, per pair (Q, D, m, m), where any pair has them
        if bool(self.strata.any()):
            self._query_outer()
        if bool(self.strata2.any()):
            self._query_outer2()
        live_pairs = self.sampled.sum(1)
        self.cost = 2 * ((live_pairs * slots + d_rows - 1) // d_rows)  # model rows of one round, per row
        self.active = live_pairs > 0

    def _query_outer(self) -> None:
        """The odd parts (less the line) of the pairs' coalitions ``{j}``, paired with ``Δ∖{j}``, into ``outer``."""
        q_index, b_index = self.strata.nonzero().unbind(1)
        pair, member = self.differ[q_index, b_index].nonzero().unbind(1)
        q_index, b_index = q_index[pair], b_index[pair]
        take = self._column_players()[None, :] == member[:, None]
        self.outer[q_index, b_index, member] = self._known_odd(q_index, b_index, take, 1)

    def _column_players(self) -> Tensor:
        """``(n,)`` the player of each column."""
        return torch.arange(self.m, device=self.x.device) if self.columns is None else self.columns

    def _query_outer2(self) -> None:
        """The odd parts (less the line) of the pairs' coalitions ``{j, k}``, paired with ``Δ∖{j, k}``, into
        ``outer2`` (symmetric in ``j, k``; zero on the diagonal and off the pair's differing players)."""
        q_rows, d_rows, m = self.differ.shape
        q_index, b_index = self.strata2.nonzero().unbind(1)
        on = self.differ[q_index, b_index]
        upper = torch.ones(m, m, dtype=torch.bool, device=on.device).triu(1)
        pair, j, k = (on[:, :, None] & on[:, None, :] & upper).nonzero().unbind(1)
        q_index, b_index = q_index[pair], b_index[pair]
        columns = self._column_players()[None, :]
        take = (columns == j[:, None]) | (columns == k[:, None])
        y = self._known_odd(q_index, b_index, take, 2)
        self.outer2 = torch.zeros(q_rows, d_rows, m, m, dtype=torch.float64, device=on.device)
        self.outer2[q_index, b_index, j, k] = y
        self.outer2[q_index, b_index, k, j] = y

    def _known_odd(self, q_index: Tensor, b_index: Tensor, take: Tensor, size: int) -> Tensor:
        """``(E,)`` the odd parts less the line of coalitions of ``size`` players (columns ``take`` ``(E, n)``) of
        pairs ``(q_index, b_index)``, each queried with its complement (two model rows, counted)."""
        values = self.game(pair_points(self.x_query, self.background_query, q_index, b_index, take))
        e = q_index.numel()
        d = self.d[q_index, b_index].to(torch.float64)
        line = (2.0 * size - d) / (2.0 * d)  # the line's odd part at s = size
        self.model_rows.index_add_(0, q_index, torch.full_like(q_index, 2))
        return (values[:e] - values[e:]) / 2 - line * self.delta_f[q_index, b_index]

    def start(self, contributions_x: Tensor | None, contributions_b: Tensor | None) -> None:
        """The control variates' start: the additive surrogate's per-pair differences (zero without one), or on
        pairs whose outer sizes are known, the additive game that matches them (``β_j = y({j}) + Δf / d``: a game of
        order two is that game plus even terms)."""
        on = self.differ.to(torch.float64)
        if contributions_x is None or contributions_b is None:
            self.beta0 = torch.zeros_like(on)
        else:
            self.beta0 = (contributions_x[:, None, :] - contributions_b[None, :, :]) * on
        if bool(self.strata.any()):
            from_outer = (self.outer + (self.delta_f / self.d.clamp(min=1))[..., None]) * on
            self.beta0 = torch.where(self.strata[..., None], from_outer, self.beta0)
        self.beta = self.beta0.clone()
        self.beta0_sum = self.beta0.sum(2)  # (Q, D) Σ over the pair's differing players (β is zero elsewhere)
        self.beta_sum = self.beta0_sum.clone()
        self.known = self.exact_part(torch.arange(self.x.shape[0], device=self.x.device))
        if self.regression:
            # the per-pair regression runs over the pair's differing players only: their indices (Q, D, w), padded
            widest = int(self.d.max()) if self.d.numel() else 0
            # a pair whose members are every player keeps them in order: the refit then takes the coalitions as
            # they are, without a gather
            self.natural = widest == self.m
            if self.natural:
                self.members = torch.arange(self.m, device=self.x.device).expand_as(self.differ)
            else:
                order = torch.sort(self.differ.to(torch.int8), dim=2, descending=True, stable=True).indices
                self.members = order[..., :widest]
            self.member_on = torch.gather(self.differ, 2, self.members)
            q_rows, d_rows, w = self.members.shape
            # float32: the regression only steers the control variates, which keep the estimate unbiased for any β
            self.gram = torch.zeros(q_rows, d_rows, w, w, dtype=torch.float32, device=self.x.device)
            self.moment = torch.zeros(q_rows, d_rows, w, dtype=torch.float32, device=self.x.device)
            self.solution = torch.zeros_like(self.moment)
            # rounds since the last refit: (ids, coalitions, s/d, targets), each (A, D, n, ...) with n rounds
            self.buffer: list[tuple[Tensor, Tensor, Tensor, Tensor]] = []

    def exact_part(self, ids: Tensor) -> Tensor:
        """``(A, m)`` the known part of the estimate: the background mean over pairs of
        ``[i ∈ Δ_b] (β_{b,i} + (f(x) - f(b) - Σ_{Δ_b} β_b) / d_b)``, or of the pair's values where it was
        enumerated."""
        beta, on, d = self.beta[ids], self.differ[ids].to(torch.float64), self.d[ids]
        rest = (self.delta_f[ids] - self.beta_sum[ids]) / d.clamp(min=1).to(torch.float64)
        known = torch.where(self.enumerated[ids][..., None], self.pair_values[ids], (beta + rest[..., None]) * on)
        strata = self.strata[ids]
        if bool(strata.any()):
            # the outer sizes' share, 2 Σ_j c_i({j}) r({j}) with c_i({i}) = 1/d, c_i({j}) = -1/(d (d-1)) and the
            # residual r({j}) = y({j}) - β_j + Σβ / d (a coalition and its complement weigh alike on odd parts)
            dd = d.clamp(min=2).to(torch.float64)[..., None]
            r = (self.outer[ids] - beta + self.beta_sum[ids][..., None] / dd) * on
            share = 2.0 * (r / dd - (r.sum(2, keepdim=True) - r) / (dd * (dd - 1.0))) * on
            known = known + share * strata[..., None]
        strata2 = self.strata2[ids]
        if self.outer2 is not None and bool(strata2.any()):
            # the next sizes' share, 2 Σ_{j<k} c_i({j, k}) r({j, k}) with c_i = 1/(d (d-1)) when i is j or k, else
            # -2/(d (d-1) (d-2)), and r({j, k}) = y({j, k}) - β_j - β_k + 2 Σβ / d
            eye = torch.eye(on.shape[2], dtype=torch.bool, device=on.device)
            both = (on[..., :, None] * on[..., None, :]).masked_fill_(eye, 0.0)
            sums = self.beta_sum[ids][..., None, None]
            r2 = (self.outer2[ids] - beta[..., :, None] - beta[..., None, :] + 2.0 * sums / dd[..., None]) * both
            rho = r2.sum(3)
            total = rho.sum(2, keepdim=True) / 2.0
            share = 2.0 * (rho / (dd * (dd - 1.0)) - 2.0 * (total - rho) / (dd * (dd - 1.0) * (dd - 2.0))) * on
            known = known + share * strata2[..., None]
        return known.mean(1)

    def run(self) -> None:
        """Rounds until every row met its tolerance or spent its budget, in blocks of rounds (:func:`block`)."""
        refits = sorted(refit_rounds(self.options.budget))
        t = 0
        while bool(self.active.any()):
            ids = self.active.nonzero()[:, 0]
            k = block(t, refits if self.regression else [], self.options.min_rounds)
            self._rounds(ids, t, k)
            t += k
            if self.regression and t in refits:
                self._refit(ids)
            self.active[ids] = self._continues(ids, t)

    def _rounds(self, ids: Tensor, t: int, k: int) -> None:
        """Rounds ``t .. t + k - 1`` of the rows ``ids``, drawn and queried together."""
        a_rows, device = ids.numel(), self.x.device
        keys = combine(self.keys[ids][:, None], torch.arange(t, t + k, device=device)[None, :]).reshape(-1)
        rows = ids.repeat_interleave(k)
        # a row takes the rounds of the block its budget pays for (the last block may be cut short)
        afford = ((self.options.budget - self.model_rows[ids]) // self.cost[ids].clamp(min=1)).clamp(max=k)
        taken = (torch.arange(k, device=device)[None, :] < afford[:, None]).reshape(-1)
        sample = draw(
            keys,
            self.differ[rows],
            self.slots,
            self.table,
            self.options.sizes,
            self.sampled[rows] & taken[:, None],
            self.levels[rows],
        )
        slots = sample.background.shape[1]
        live = sample.live.reshape(-1).nonzero()[:, 0]
        odd = torch.zeros(a_rows * k * slots, dtype=torch.float64, device=device)
        if live.numel():
            values = self.game(hybrids(self.x_query[rows], self.background_query, sample, self.columns, live))
            odd[live] = (values[: live.numel()] - values[live.numel() :]) / 2
        delta_f = torch.gather(self.delta_f[rows], 1, sample.background)  # (A k, R)
        y = odd.reshape(-1, slots) - sample.line * delta_f
        every = slots == self.background.shape[0]  # slot j is background row j (slot_backgrounds)
        # y - Σ_j w_j β_j with w_j = inside_j - (s/d) on_j; β is zero off the pair's differing players, so
        # Σ_j on_j β_j is the pair's Σ β on live slots. In the layout (A, k, R, m) β broadcasts over the block's
        # rounds when slot j is background row j.
        inside = sample.inside.to(torch.float64).view(a_rows, k, slots, self.m)
        beta = self.beta[ids][:, None] if every else self._slot_beta(self.beta, rows, sample.background, a_rows, k)
        beta_sum = torch.gather(self.beta_sum[rows], 1, sample.background)  # (A k, R)
        resid = y - (inside * beta).sum(3).view(-1, slots) + sample.ratio * beta_sum
        # Σ_k a_ik r_k and Σ_k a_ik² r_k² as batched products (a = on·N + inside·(P - N); inside ⊆ on; N and P
        # are zero on dead slots, so on may be the pair's differing players: per row, shared by the block's rounds)
        low = sample.negative * resid
        high = sample.positive * resid
        by_inside = inside.view(-1, slots, self.m).transpose(1, 2) @ torch.stack(
            (high - low, high.square() - low.square()), 2
        )  # (A k, m, 2)
        by_on = self._by_pairs(torch.stack((low, low.square()), 2), ids, sample, a_rows, k)  # (A k, m, 2)
        mean = (by_on[..., 0] + by_inside[..., 0]) / slots
        square = by_on[..., 1] + by_inside[..., 1]
        spread = (square - slots * mean.square()) / (slots * (slots - 1)) if slots > 1 else 0 * mean
        w_t = round_weights(self.options.round_weights, t, k, device)
        weight = (taken.reshape(a_rows, k).to(torch.float64) * w_t).reshape(-1, 1)
        # sums over the block's rounds as one product per row: a reduction over the middle axis of (A, k, m) rounds
        # differently for different A, and a row's values must not depend on the rows beside it
        weights = weight.view(a_rows, 1, k)
        self.sum[ids] += (weights @ mean.view(a_rows, k, self.m))[:, 0]
        self.sum[ids] += weight.reshape(a_rows, k).sum(1, keepdim=True) * self.known[ids]
        self.variance[ids] += (weights.square() @ spread.view(a_rows, k, self.m))[:, 0]
        self.weight[ids] += weight.reshape(a_rows, k).sum(1)
        self.rounds[ids] += afford
        ran = taken.reshape(a_rows, k).to(torch.float64)
        self.curve_sum.append((spread.reshape(a_rows, k, self.m).mean(2) * ran).sum(0))
        self.curve_count.append(ran.sum(0))
        self.model_rows[ids] += 2 * sample.live.reshape(a_rows, -1).sum(1)
        if self.regression:  # slot j is background row j: one sample per pair and round, kept for the refit
            # the target of the regression is the residual of the start β_0: y - Σ_j w_j β_0j
            beta0_sum = self.beta0_sum[ids][:, None].expand(-1, k, -1).reshape(-1, slots)
            fitted0 = (inside * self.beta0[ids][:, None]).sum(3).view(-1, slots)
            target = (y - fitted0 + sample.ratio * beta0_sum) * sample.live
            ratio = sample.ratio
            self.buffer.append(
                (
                    ids,
                    sample.inside.reshape(a_rows, k, slots, self.m).transpose(1, 2),
                    ratio.reshape(a_rows, k, slots).transpose(1, 2),
                    target.reshape(a_rows, k, slots).transpose(1, 2),
                )
            )

    def _slot_beta(self, beta: Tensor, rows: Tensor, background: Tensor, a_rows: int, k: int) -> Tensor:
        """``(A, k, R, m)`` the control variates of each slot's pair (slots that draw their background rows)."""
        index = background[:, :, None].expand(-1, -1, self.m)
        return torch.gather(beta[rows], 1, index).view(a_rows, k, -1, self.m)

    def _by_pairs(self, terms: Tensor, ids: Tensor, sample: Draw, a_rows: int, k: int) -> Tensor:
        """``(A k, m, c)``: ``Σ_slots on_i · terms`` for ``terms`` ``(A k, R, c)`` zero on dead slots, with ``on``
        the slot's pair's differing players: one product per row over the block's rounds when slot j is
        background row j, else one per (row, round)."""
        slots, c = terms.shape[1], terms.shape[2]
        if slots == self.background.shape[0]:
            on, groups = self.differ[ids], k  # (A, R, m)
        else:
            on, groups = sample.on, 1  # (A k, R, m)
        right = terms.view(-1, groups, slots, c).transpose(1, 2).reshape(-1, slots, groups * c)
        out = on.to(torch.float64).transpose(1, 2) @ right  # (., m, groups c)
        return out.view(-1, self.m, groups, c).transpose(1, 2).reshape(-1, self.m, c)

    def _refit(self, ids: Tensor) -> None:
        """``β = β_0 + g`` with ``(G + λ I) g ≈ h`` (:data:`CG_STEPS` steps from the last ``g``) per pair of the
        running rows over the pair's differing players, from the rounds so far (the rounds since the last refit
        enter ``G`` and ``h`` here, as one batched product per pair)."""
        # every buffered round ran a superset of today's rows (rows only stop): keep their part
        at = [torch.searchsorted(part[0], ids) for part in self.buffer]
        members, on_bool = self.members[ids], self.member_on[ids]  # (A, D, w)
        inside = torch.cat([part[1][i] for part, i in zip(self.buffer, at)], 2)  # (A, D, n, m)
        c = torch.cat([part[2][i] for part, i in zip(self.buffer, at)], 2).to(torch.float32)  # (A, D, n)
        y = torch.cat([part[3][i] for part, i in zip(self.buffer, at)], 2).to(torch.float32)  # (A, D, n)
        self.buffer = []
        # the features w = I - (s/d) on over the pair's members (zero on dead slots: no I, s/d = 0), then one
        # batched product for Σ w wᵀ and Σ w y (float32: the regression only steers β)
        on = on_bool.to(torch.float32)
        if not self.natural:
            inside = torch.gather(inside, 3, members[:, :, None, :].expand(-1, -1, inside.shape[2], -1))
        features = inside.to(torch.float32).sub_(c[..., None] * on[:, :, None, :])
        w = members.shape[2]
        products = features.transpose(2, 3) @ torch.cat((features, y[..., None]), 3)  # (A, D, w, w + 1)
        every = ids.numel() == self.gram.shape[0]  # every row still runs (ids is then 0..Q-1): no index copies
        if every:
            self.gram += products[..., :w]
            self.moment += products[..., w]
        else:
            self.gram.index_add_(0, ids, products[..., :w])
            self.moment.index_add_(0, ids, products[..., w])
        gram, moment = (self.gram, self.moment) if every else (self.gram[ids], self.moment[ids])
        d = self.d[ids].clamp(min=1).to(torch.float32)
        ridge = self.options.ridge * gram.diagonal(dim1=2, dim2=3).sum(2) / d + 1e-12
        # a few conjugate-gradient steps from the last refit's solution instead of a factor per pair: the
        # equations change little between refits, and an approximate β only steers (the estimate stays unbiased)
        solved = conjugate_gradient(gram, ridge, moment, self.solution[ids], CG_STEPS) * on
        solved = torch.where(solved.isfinite().all(2, keepdim=True), solved, 0.0)  # float32 trouble: keep β_0
        self.solution[ids] = solved
        gap = solved.to(torch.float64)
        if not self.natural:
            gap = torch.zeros_like(self.beta0[ids]).scatter_add_(2, members, gap)
        self.beta[ids] = self.beta0[ids] + gap
        self.beta_sum[ids] = self.beta[ids].sum(2)
        self.known[ids] = self.exact_part(ids)

    def _continues(self, ids: Tensor, t: int) -> Tensor:
        """Which of the running rows ``ids`` take more rounds (at least one more fits their budget)."""
        options = self.options
        room = self.model_rows[ids] + self.cost[ids] <= options.budget
        if options.tolerance is None or t < options.min_rounds:
            return room
        se = self.variance[ids].sqrt() / self.weight[ids].clamp(min=1e-300)[:, None]
        spread = se.amax(1) if options.criterion == "max" else se.square().mean(1).sqrt()
        return room & (spread > options.tolerance)

    def result(self) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """``(values, standard errors, model rows, rounds)`` of the chunk."""
        w = self.weight.clamp(min=1e-300)[:, None]
        values = torch.where(self.rounds[:, None] > 0, self.sum / w, self.known)
        return values, self.variance.sqrt() / w, self.model_rows, self.rounds

    def curve(self) -> tuple[Tensor, Tensor]:
        """Per round: the summed variance of the rows' round estimates (averaged over players) and how many rows
        ran it."""
        if not self.curve_sum:
            empty = torch.zeros(0, dtype=torch.float64, device=self.x.device)
            return empty, empty
        return torch.cat(self.curve_sum), torch.cat(self.curve_count)


def conjugate_gradient(a: Tensor, ridge: Tensor, b: Tensor, x: Tensor, steps: int) -> Tensor:
    """``steps`` Jacobi-preconditioned conjugate-gradient steps on ``(a + ridge I) x = b`` from ``x``, batched.

    Args:
        a: ``(..., w, w)`` symmetric positive semi-definite; ridge: ``(...)`` positive; b, x: ``(..., w)`` the
            right-hand side and the start.
    """
    shift = ridge[..., None]
    inverse = 1.0 / (a.diagonal(dim1=-2, dim2=-1) + shift).clamp_min(1e-30)
    r = b - (a @ x[..., None])[..., 0] - shift * x
    z = r * inverse
    p = z.clone()
    rz = (r * z).sum(-1)
    for _ in range(steps):  # a handful of steps, each batched over every system
        ap = (a @ p[..., None])[..., 0] + shift * p
        alpha = rz / (p * ap).sum(-1).clamp_min(1e-30)
        x = x + alpha[..., None] * p
        r = r - alpha[..., None] * ap
        z = r * inverse
        rz_next = (r * z).sum(-1)
        p = z + (rz_next / rz.clamp_min(1e-30))[..., None] * p
        rz = rz_next
    return x

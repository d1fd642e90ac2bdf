"""The surrogate fitted once for all rows: an additive model of the players, fitted on the odd part of pair games.

``g(z) = Σ_j g_j(z_j)``, one function per player, each a sum over the player's columns of a small basis: the
indicators of the column's values when it has at most :data:`MAX_LEVELS` of them (binary bits, one-hot columns,
codes), else hat functions at :data:`KNOTS` quantiles of the column (continuous features; linear between knots,
flat beyond the end ones). Why additive (measured; ``benchmarks/_blackbox_surrogates.py``): in the game of a pair
``(x, b)`` an additive ``g`` is the control variate ``u_b(S) = Σ_{j ∈ S} β_j`` with ``β_j = g_j(x_j) - g_j(b_j)``, so
its exact Shapley values cost nothing and its value at every sample is one masked sum, cheaper than any model; the
correction refines these ``β`` per pair from the row's own samples (:mod:`._estimate`).

The fit sees only what the correction will see: for pairs of rows like the explained ones and background rows, a
coalition and its complement, the odd part ``y = (f(x_S, b_{~S}) - f(b_S, x_{~S})) / 2 - (2s - d)/(2d) (f(x) - f(b))``
regressed on ``Σ_j w_j (g_j(x_j) - g_j(b_j))`` with ``w_j = [j ∈ S] - s/d`` (:mod:`._design`): the even part of each
game, which Shapley values never see, is not fitted, and the line between the endpoints is known.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, rows_per_chunk, settings
from torchxplain.fourier.fit._enumerate import differing_players
from torchxplain.fourier.fit.residual._design import draw, size_table
from torchxplain.fourier.fit.residual._hashing import combine, row_keys

MAX_LEVELS = 32
"""A column with at most this many distinct values (in the pool and background) gets one indicator per value."""
KNOTS = 12
"""Hat functions per continuous column (at equally spaced quantiles of the pool and background)."""
COALITIONS = 4
"""Coalitions (each with its complement) per sampled pair of the fit."""
RCOND = 1e-10
"""Eigenvalues of the fit's normal equations below this fraction of the largest are dropped (a column's
indicators sum to one, so the differences ``B(x) - B(b)`` have a null direction per column)."""


def quiet(query: Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    """``query`` without progress bars (the fit and the correction query many small batches)."""

    def call(z: Tensor) -> Tensor:
        with settings.using(show_progress=False):
            return query(z)

    return call


@dataclass(frozen=True)
class ColumnBasis:
    """The basis of every column: ``levels`` ``(n_l, L)`` values of the level columns ``level_columns`` (padded
    with NaN), ``knots`` ``(n_k, K)`` of the continuous columns ``knot_columns``; ``column`` ``(n_basis,)`` the
    column of each basis function (level columns first, then knot columns)."""

    level_columns: Tensor
    levels: Tensor
    knot_columns: Tensor
    knots: Tensor
    column: Tensor

    @staticmethod
    def of(table: Tensor) -> ColumnBasis:
        """The basis of the columns of ``table`` ``(N, n)`` (pool and background rows)."""
        device, values = table.device, table.to(torch.float64)
        level_cols, level_sets, knot_cols = [], [], []
        for j in range(values.shape[1]):  # once per column at construction: distinct values differ in count
            distinct = torch.unique(values[:, j])
            if distinct.numel() <= MAX_LEVELS:
                level_cols.append(j)
                level_sets.append(distinct)
            else:
                knot_cols.append(j)
        width = max((v.numel() for v in level_sets), default=0)
        levels = torch.full((len(level_sets), width), float("nan"), dtype=torch.float64, device=device)
        for row, distinct in enumerate(level_sets):
            levels[row, : distinct.numel()] = distinct
        knot_index = torch.tensor(knot_cols, dtype=torch.long, device=device)
        grid = torch.linspace(0.0, 1.0, KNOTS, dtype=torch.float64, device=device)
        knots = torch.quantile(values[:, knot_index], grid, dim=0).T.contiguous() if knot_cols else grid[:0, None]
        level_index = torch.tensor(level_cols, dtype=torch.long, device=device)
        valid = ~torch.isnan(levels)
        column = torch.cat(
            (level_index[:, None].expand(-1, width)[valid], knot_index.repeat_interleave(knots.shape[1]))
        )
        return ColumnBasis(level_index, levels, knot_index, knots, column)

    @property
    def size(self) -> int:
        return int(self.column.numel())

    def __call__(self, z: Tensor) -> Tensor:
        """``(N, n_basis)`` float64 basis functions at rows ``z`` ``(N, n)``."""
        z = z.to(torch.float64)
        parts = []
        if self.level_columns.numel():
            hit = z[:, self.level_columns, None] == self.levels[None]
            parts.append(hit[:, ~torch.isnan(self.levels)].to(torch.float64))
        if self.knot_columns.numel():
            k = self.knots[None]
            at = torch.minimum(torch.maximum(z[:, self.knot_columns, None], k[..., :1]), k[..., -1:])
            left = torch.cat((k[..., :1] - 1.0, k[..., :-1]), -1)
            right = torch.cat((k[..., 1:], k[..., -1:] + 1.0), -1)
            up = (at - left) / (k - left).clamp_min(1e-12)
            down = (right - at) / (right - k).clamp_min(1e-12)
            parts.append(torch.minimum(up, down).clamp(0.0, 1.0).reshape(z.shape[0], -1))
        return torch.cat(parts, 1) if parts else z.new_zeros(z.shape[0], 0, dtype=torch.float64)


@dataclass(frozen=True)
class AdditiveModel:
    """A fitted additive surrogate: ``basis``, ``coefficients`` ``(n_basis,)``, the ``players`` ``(n,)`` of the
    columns and their number ``m``, and what the fit measured: ``r2_odd`` (R² of the fitted odd parts on the fit's
    own samples), ``scale`` (the variance of its Shapley values over the pool's rows and the players: the values'
    scale), ``n_queries`` (model rows spent)."""

    basis: ColumnBasis
    coefficients: Tensor
    players: Tensor
    m: int
    r2_odd: float
    scale: float
    n_queries: int

    def regrouped(self, players: Tensor, m: int) -> AdditiveModel:
        """The same function with other players (a sum over columns is additive over any grouping of them)."""
        return replace(self, players=players, m=m)

    def contributions(self, z: Tensor) -> Tensor:
        """``(N, m)`` float64 ``g_j(z_j)`` per player at rows ``z`` ``(N, n)``."""
        owner = self.players[self.basis.column]
        out = torch.zeros(z.shape[0], self.m, dtype=torch.float64, device=z.device)
        for a, c in chunk_bounds(z.shape[0], rows_per_chunk(8 * max(self.basis.size, 1) * 2, z.shape[0])):
            out[a:c] = torch.zeros(c - a, self.m, dtype=torch.float64, device=z.device).index_add_(
                1, owner, self.basis(z[a:c]) * self.coefficients
            )
        return out

    def shapley(self, x: Tensor, background: Tensor) -> Tensor:
        """``(Q, m)`` exact interventional Shapley values of the surrogate: ``g_j(x_j) - mean_b g_j(b_j)``."""
        return self.contributions(x) - self.contributions(background).mean(0)


def fit_additive(
    query: Callable[[Tensor], Tensor],
    pool: Tensor,
    background: Tensor,
    players: Tensor,
    m: int,
    *,
    samples: int,
    seed: int,
) -> AdditiveModel:
    """Fit the additive surrogate on ``samples`` paired samples (``2 · samples`` model rows, plus one per pool
    row drawn and one per background row).

    Args:
        query: the model, ``(N, n)`` rows -> ``(N,)`` float64.
        pool: ``(R, n)`` rows like the ones to be explained (kept apart from the explained rows by the caller,
            so that the correction stays independent of the fit); background: ``(D, n)``.
        players: ``(n,)`` int64 player of each column; m: the number of players.
        samples: paired coalitions to draw (``COALITIONS`` per pair of rows).
        seed: seeds the pairs and coalitions.
    """
    device = pool.device
    query = quiet(query)  # a handful of small batches of queries: no progress bar per batch
    basis = ColumnBasis.of(torch.cat((pool, background)))
    n_pairs = max(1, samples // COALITIONS)
    keys = row_keys(torch.arange(n_pairs, device=device, dtype=torch.float64)[:, None], seed)
    pick_x = combine(keys, 11) % pool.shape[0]
    pick_b = combine(keys, 12) % background.shape[0]
    used_x, x_slot = torch.unique(pick_x, return_inverse=True)
    fx, fb = query(pool[used_x]), query(background)
    x, b = pool[used_x][x_slot], background[pick_b]
    differ = differing_players(x, b, players, m)[:, None, :]  # (P, 1, m): each pair a row with one background
    delta = basis(x) - basis(b)  # (P, n_basis)
    table = size_table(m, "uniform", device)
    rows_, targets = [], []
    for c in range(COALITIONS):  # a handful of rounds; each is batched over every pair
        sample = draw(combine(keys, 100 + c), differ, 1, table)
        live = sample.live.reshape(-1).nonzero()[:, 0]
        if live.numel() == 0:
            continue
        take = sample.inside[live, 0][:, players]
        values = query(torch.cat((torch.where(take, x[live], b[live]), torch.where(take, b[live], x[live]))))
        odd = (values[: live.numel()] - values[live.numel() :]) / 2
        y = odd - sample.line[live, 0] * (fx[x_slot[live]] - fb[pick_b[live]])
        w = sample.inside[live, 0].to(torch.float64) - sample.ratio[live, 0, None] * sample.on[live, 0]  # (L, m)
        rows_.append(w[:, players[basis.column]] * delta[live])
        targets.append(y)
    n_queries = 2 * sum(int(t.numel()) for t in targets) + int(used_x.numel()) + background.shape[0]
    if not rows_:
        coefficients = torch.zeros(basis.size, dtype=torch.float64, device=device)
        return AdditiveModel(basis, coefficients, players, m, 1.0, 0.0, n_queries)
    design, y = torch.cat(rows_), torch.cat(targets)
    values, vectors = torch.linalg.eigh(design.T @ design)
    keep = values > RCOND * float(values.max().clamp_min(1e-300))
    inverse = torch.where(keep, 1.0 / values.clamp_min(1e-300), 0.0)
    coefficients = vectors @ (inverse * (vectors.T @ (design.T @ y)))
    resid = y - design @ coefficients
    total = float(((y - y.mean()) ** 2).sum())
    r2_odd = 1.0 - float((resid**2).sum()) / total if total > 0 else 1.0
    model = AdditiveModel(basis, coefficients, players, m, r2_odd, 0.0, n_queries)
    phi = model.shapley(pool[: min(pool.shape[0], 512)], background)
    return replace(model, scale=float(phi.var()) if phi.numel() > 1 else 0.0)

"""Held-out checks of a fit where SHAP looks: the SHAP values' R² on held-out rows, calibrated.

For each held-out row ``x`` a few background rows ``b`` are drawn without replacement; the game of each pair
``(x, b)`` is *enumerated* when the pair differs in at most :data:`EXACT_MAX_PLAYERS` players (``2^d`` queries,
:class:`~torchxplain.fourier.fit._enumerate.PairGames`) and estimated by antithetic permutation paths otherwise.
Averaging the pair values of the residual ``e = h - f`` over a row's pairs estimates ``φ(e) = φ(h) - φ(f)``
without bias; with the closed-form ``φ(h)`` this gives ``φ(f) ≈ φ(h) - φ̂(e)`` and

    R²_SHAP ≈ 1 - Σ φ(e)² / Σ (φ(f) - mean)²,

both sums corrected for the variance of the pair average (between-pair spread, with the finite-population factor
``1 - P/|D|``, plus the paths' own variance). With every pair exact and every background row drawn the estimate
is the exact R² on those rows; its standard error (jackknife over rows) is then the rows' sampling error only.
The held-out rows are not used by the fit when the data has rows to spare.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain.fourier.fit._enumerate import PairGames, differing_players
from torchxplain.fourier.fit._report import r2_score

EXACT_MAX_PLAYERS = 10
"""Pairs differing in at most this many players are enumerated (``<= 1024`` queries); others take paths."""
PATH_PAIRS = 8
"""Antithetic pairs of permutation orders per path-estimated pair (``2 · PATH_PAIRS`` orders)."""
PAIRS_PER_ROW = 4
"""Background rows per held-out row."""
MIN_ROWS, MAX_ROWS = 64, 1024
"""Bounds on the held-out rows (the R² of few rows depends much on which rows they are)."""
ROUNDING = 1e-9
"""Pair values of the residual below this fraction of the model's largest value are rounding: with SHAP values
that do not vary over the rows, such a surrogate is exact on the check (R² = 1, as ``r2_score`` of a constant)."""


def cheapest_exact() -> int:
    """The most differing players for which enumerating a pair (``2^d`` queries) costs no more than its paths
    (``2 · PATH_PAIRS · (d + 1)``)."""
    d = 1
    while 2 ** (d + 1) <= 2 * PATH_PAIRS * (d + 2):
        d += 1
    return d


@dataclass(frozen=True)
class _PathBlock:
    """Pairs estimated by paths: ``pairs (p,)``, their differing players ``members (p, d)``, the orders
    ``(p, 2K, d)`` (positions into ``members``) and the rows ``start..stop`` of their points."""

    pairs: Tensor
    members: Tensor
    orders: Tensor
    start: int
    stop: int


class HeldOut:
    """Held-out rows, their pair games and the model's values there (queried once, at construction).

    Args:
        rows: ``(R, n)`` bool candidate held-out rows; background: ``(D, n)`` bool.
        players: ``(n,)`` int64 player index per feature; m: the number of players.
        budget: queries the check may spend (it takes :data:`MIN_ROWS` rows at least).
        generator: seeds the rows, pairs and orders.
        query: the model on bool points -> float64.
        exact_max_players: pairs differing in at most this many players are enumerated, others take paths
            (default :data:`EXACT_MAX_PLAYERS`; :func:`cheapest_exact` enumerates only where that costs fewer
            queries than paths).
    """

    def __init__(
        self,
        rows: Tensor,
        background: Tensor,
        players: Tensor,
        m: int,
        budget: int,
        generator: torch.Generator,
        query: Callable[[Tensor], Tensor],
        exact_max_players: int = EXACT_MAX_PLAYERS,
    ) -> None:
        device = rows.device
        self.m, self.n_background, self.background, self.players = m, background.shape[0], background, players
        self.exact_max = exact_max_players
        pairs = min(PAIRS_PER_ROW, background.shape[0])
        pilot = self._draw(rows, background, min(32, rows.shape[0]), pairs, generator)[1]
        cost = self._cost(differing_players(pilot[0], pilot[1], players, m).sum(1), self.exact_max)
        cost = cost.to(torch.float64).mean()
        n_rows = int(min(MAX_ROWS, rows.shape[0], max(MIN_ROWS, budget // max(float(cost) * pairs, 1.0))))
        self.rows, (x, b) = self._draw(rows, background, n_rows, pairs, generator)
        self.pairs = pairs
        sizes = differing_players(x, b, players, m).sum(1)
        exact = sizes <= self.exact_max
        self.exact_pairs = exact.nonzero()[:, 0]
        self.games = PairGames(x[exact], b[exact], players, m)
        parts = [self.games.points]
        self.path_blocks: list[_PathBlock] = []
        start = self.games.n_queries
        differ = differing_players(x, b, players, m)
        for d in torch.unique(sizes[~exact]).tolist():
            which = ((sizes == d) & ~exact).nonzero()[:, 0]
            members = torch.sort(differ[which].to(torch.int8), dim=1, descending=True, stable=True).indices[:, :d]
            keys = torch.rand(which.numel(), PATH_PAIRS, d, generator=generator, device=device).argsort(-1)
            orders = torch.cat((keys, keys.flip(-1)), 1)  # antithetic: each order and its reverse
            ranks = orders.argsort(-1)
            steps = torch.arange(d + 1, device=device)
            inside = ranks[:, :, None, :] < steps[None, None, :, None]  # (p, 2K, d + 1, d)
            on = torch.zeros(which.numel(), 2 * PATH_PAIRS * (d + 1), m, dtype=torch.bool, device=device)
            on.scatter_(2, members[:, None, :].expand(-1, on.shape[1], -1), inside.reshape(which.numel(), -1, d))
            take = on[:, :, players]
            points = torch.where(take, x[which, None], b[which, None]).reshape(-1, x.shape[1])
            self.path_blocks.append(_PathBlock(which, members, orders, start, start + points.shape[0]))
            parts.append(points)
            start += points.shape[0]
        self.points = torch.cat(parts)
        self.values = query(self.points)

    @staticmethod
    def _cost(sizes: Tensor, exact_max: int) -> Tensor:
        exact = sizes <= exact_max
        return torch.where(exact, 2 ** sizes.clamp(max=exact_max), 2 * PATH_PAIRS * (sizes + 1))

    @staticmethod
    def _draw(
        rows: Tensor, background: Tensor, n_rows: int, pairs: int, generator: torch.Generator
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """``n_rows`` distinct rows and, for each, ``pairs`` distinct background rows: ``(rows, (x, b))``."""
        device = rows.device
        pick = torch.randperm(rows.shape[0], generator=generator, device=device)[:n_rows]
        chosen = rows[pick]
        keys = torch.rand(n_rows, background.shape[0], generator=generator, device=device)
        partners = keys.argsort(1)[:, :pairs]
        return chosen, (chosen.repeat_interleave(pairs, 0), background[partners.reshape(-1)])

    @property
    def n_queries(self) -> int:
        return int(self.points.shape[0])

    @property
    def all_exact(self) -> bool:
        return not self.path_blocks

    def describe(self) -> str:
        """How the check was made (for the report)."""
        paths = sum(int(block.pairs.numel()) for block in self.path_blocks)
        how = "every pair enumerated" if not paths else f"{paths} of {self.rows.shape[0] * self.pairs} pairs by paths"
        return f"{self.rows.shape[0]} held-out rows x {self.pairs} background rows ({how}, {self.n_queries:,} queries)"

    def _pair_values(self, values: Tensor) -> tuple[Tensor, Tensor]:
        """``(P, m)`` pair Shapley values of a function given on :attr:`points` and ``(P, m)`` the variance of
        each (zero for enumerated pairs)."""
        total = self.rows.shape[0] * self.pairs
        out = torch.zeros(total, self.m, dtype=torch.float64, device=values.device)
        var = torch.zeros_like(out)
        out[self.exact_pairs] = self.games.shapley(values[: self.games.n_queries])
        for block in self.path_blocks:
            p, orders, d = block.pairs.numel(), block.orders, block.members.shape[1]
            games = values[block.start : block.stop].reshape(p, orders.shape[1], d + 1)
            gains = games[:, :, 1:] - games[:, :, :-1]  # the player orders[:, :, t] joins at step t
            per_order = torch.zeros(p, orders.shape[1], d, dtype=torch.float64, device=values.device)
            per_order.scatter_(2, orders, gains)
            antithetic = (per_order[:, :PATH_PAIRS] + per_order[:, PATH_PAIRS:]) / 2  # (p, K, d)
            local_mean = antithetic.mean(1)
            local_var = antithetic.var(1) / PATH_PAIRS if PATH_PAIRS > 1 else torch.zeros_like(local_mean)
            out[block.pairs] = out[block.pairs].scatter_add(1, block.members, local_mean)
            var[block.pairs] = var[block.pairs].scatter_add(1, block.members, local_var)
        return out, var

    def r2(self, surrogate: Tensor) -> float:
        """Pointwise R² of the surrogate's values on the check points against the model's."""
        return r2_score(self.values, surrogate)

    def shap_r2(self, surrogate: Tensor, phi_h: Tensor) -> tuple[float, float]:
        """Estimated SHAP R² of the surrogate (module docstring) and its jackknife standard error over rows.

        Args:
            surrogate: ``(V,)`` the surrogate's values on :attr:`points`.
            phi_h: ``(R, m)`` its closed-form Shapley values at :attr:`rows` against the whole background.
        """
        n_rows, pairs = self.rows.shape[0], self.pairs
        error, error_var = self._pair_values(surrogate.to(torch.float64) - self.values)
        error, error_var = error.reshape(n_rows, pairs, self.m), error_var.reshape(n_rows, pairs, self.m)
        mean = error.mean(1)
        spread = error.var(1) if pairs > 1 else torch.zeros_like(mean)
        fraction = pairs / self.n_background
        noise = spread / pairs * (1.0 - fraction) + error_var.mean(1) * fraction / pairs
        squared = (mean**2 - noise).sum(1)  # per row, unbiased Σ_i φ_i(e)²
        phi_f = phi_h.to(torch.float64) - mean
        spread_f = ((phi_f - phi_f.mean()) ** 2 - noise).sum(1)
        big_e, big_t = float(squared.sum()), float(spread_f.sum())
        if big_t <= 0:  # the model's SHAP values do not vary over the rows (a constant model, one background row)
            exact = float(error.abs().max()) <= ROUNDING * max(float(self.values.abs().max()), 1e-300)
            return (1.0, 0.0) if exact else (float("nan"), float("nan"))
        leave_out = 1.0 - (big_e - squared) / (big_t - spread_f).clamp_min(1e-300)
        se = math.sqrt(float((n_rows - 1) / n_rows * ((leave_out - leave_out.mean()) ** 2).sum()))
        return min(1.0, 1.0 - big_e / big_t), se

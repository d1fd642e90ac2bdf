"""Enumeration: exact interventional SHAP values through the model itself, the library's reference.

The interventional Shapley value of a row ``x`` is the background mean of the Shapley values of the single-row
games ``v_b(S) = f(x_S, b_{~S})``. In the game of a pair ``(x, b)`` only the players on which ``x`` and ``b``
differ matter (the others are null), so each pair costs ``2^d`` queries for its ``d`` differing players, and its
Shapley values are one product of the ``2^d`` game values with a fixed ``(2^d, d)`` weight matrix. Pairs are
grouped by ``d`` and queried in batches on the model's device. :class:`PairGames` holds the games of a set of
pairs (also the held-out check of a fit, :mod:`~torchxplain.fourier.fit.hybrid._checks`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, rows_per_chunk
from torchxplain.fourier.spectrum import index_bits
from torchxplain.fourier.values import TableKind, coalition_weights

MAX_DIFFERING = 20
"""Most differing players a pair may have to be enumerated (``2^20`` queries for one pair)."""
SPARSE_COLUMNS = 4
"""A pair's hybrids copy the background row and set only the columns where the rows differ when fewer than
``1 / SPARSE_COLUMNS`` of the entries differ (one-hot rows); otherwise every entry is selected by its bit."""
CHUNK_POINTS = 1 << 17
"""Most hybrids built and queried per chunk of rows (below the memory budget too): a block that stays in cache
(building every row's points at once streamed them through memory twice: 1.3x slower on a 10-feature MLP)."""


def differing_players(x: Tensor, b: Tensor, players: Tensor, m: int) -> Tensor:
    """``(P, m)`` bool: the players on which the paired rows ``x[p]`` and ``b[p]`` (``(P, n)`` bool) differ."""
    out = torch.zeros(x.shape[0], m, dtype=torch.bool, device=x.device)
    for a, c in chunk_bounds(x.shape[0], rows_per_chunk(8 * x.shape[1], x.shape[0])):
        ones = torch.zeros(c - a, m, dtype=torch.int32, device=x.device)
        ones.index_add_(1, players, (x[a:c] != b[a:c]).to(torch.int32))
        out[a:c] = ones > 0
    return out


@lru_cache(maxsize=32)
def _code_bits(d: int, device: torch.device) -> Tensor:
    """``(d, 2^d)`` bool: row ``i`` holds bit ``i`` of every coalition code ``0 .. 2^d - 1`` (:func:`index_bits`,
    transposed so that a gather of rows takes a player's bit for every code)."""
    return index_bits(torch.arange(2**d, device=device), d).T.contiguous()


def hybrid_points(take: Tensor, x: Tensor, b: Tensor) -> Tensor:
    """``x`` where ``take`` (an integer tensor of 0s and 1s) is 1, else ``b``, broadcast; exact copies of entries.

    Floating entries are selected on their bits (``b ^ ((x ^ b) & -take)``): about twice as fast as
    :func:`torch.where` on a broadcast mask on CPU."""
    bits = {torch.float64: torch.int64, torch.float32: torch.int32}.get(x.dtype)
    if bits is None or b.dtype != x.dtype:
        return torch.where(take.bool(), x, b)
    xb, bb = x.view(bits), b.view(bits)
    return (bb ^ ((xb ^ bb) & -take.to(bits))).view(x.dtype)


@dataclass(frozen=True)
class GameBlock:
    """The pairs of one size ``d``: ``pairs (p,)`` indices, ``members (p, d)`` their differing players (the game's
    player ``i`` is ``members[:, i]``), and the rows ``start..stop`` of their ``p · 2^d`` points."""

    pairs: Tensor
    members: Tensor
    start: int
    stop: int


class PairGames:
    """The games of pairs ``(x[p], b[p])``: every coalition of each pair's differing players, as points.

    Args:
        x, b: ``(P, n)`` bool paired rows (or raw real rows: a hybrid takes each feature from one of them).
        players: ``(n,)`` int64 player index per feature; m: the number of players.

    Attributes:
        points: ``(Σ_p 2^{d_p}, n)`` hybrids in the rows' dtype, block by block (:class:`GameBlock`).
        n_queries: their number.
    """

    def __init__(self, x: Tensor, b: Tensor, players: Tensor, m: int) -> None:
        self.n_pairs, self.m, self.device = x.shape[0], m, x.device
        differ = differing_players(x, b, players, m)
        sizes = differ.sum(1)
        n = x.shape[1]
        self.points = torch.empty(int((2**sizes).sum()), n, dtype=x.dtype, device=x.device)
        blocks, start = [], 0
        for d in torch.unique(sizes).tolist():
            pairs = (sizes == d).nonzero()[:, 0]
            members = torch.sort(differ[pairs].to(torch.int8), dim=1, descending=True, stable=True).indices[:, :d]
            # each column's bit in the coalition code: its player's position among the pair's members (none: d)
            code = torch.int64 if x.dtype in (torch.float64, torch.int64) else torch.int32
            position = torch.full((pairs.numel(), m), d, dtype=code, device=x.device)
            position.scatter_(1, members, torch.arange(d, dtype=code, device=x.device).expand(pairs.numel(), -1))
            column_bit = position[:, players]
            codes = torch.arange(2**d, dtype=code, device=x.device)
            entry = 5 * code.itemsize  # the mask, its negation, two bitwise results and the point, per entry
            for a, c in chunk_bounds(pairs.numel(), rows_per_chunk(2**d * n * entry, pairs.numel())):
                out = self.points[start + a * 2**d : start + c * 2**d].view(c - a, 2**d, n)
                xs, bs = x[pairs[a:c]], b[pairs[a:c]]
                pair, column = torch.nonzero(xs != bs, as_tuple=True)  # as differing_players
                if pair.numel() * SPARSE_COLUMNS > xs.numel():  # most columns differ: every entry by its bit
                    take = (codes[None, :, None] >> column_bit[a:c, None, :]) & 1  # (p, 2^d, n): 1 takes x
                    out.copy_(hybrid_points(take, xs[:, None], bs[:, None]))
                    continue
                # few columns differ (one-hot rows): copy b, then set only the differing columns by their bits
                out.copy_(bs[:, None, :].expand(-1, 2**d, -1))
                take = _code_bits(d, x.device).index_select(0, column_bit[a:c][pair, column])  # (E, 2^d)
                out.permute(0, 2, 1)[pair, column] = torch.where(take, xs[pair, column, None], bs[pair, column, None])
            blocks.append(GameBlock(pairs, members, start, start + pairs.numel() * 2**d))
            start += pairs.numel() * 2**d
        self.blocks = tuple(blocks)
        self.n_queries = int(self.points.shape[0])

    def shapley(self, values: Tensor) -> Tensor:
        """``(P, m)`` float64 Shapley values of the pair games of a function given by its ``values`` on
        :attr:`points`."""
        return self.values(values, "shapley")

    def values(self, values: Tensor, kind: TableKind) -> Tensor:
        """``(P, m)`` Shapley or Banzhaf, or ``(P, m, m)`` pairwise interaction values of the pair games (the
        players a pair does not differ in are null: they take no value and change no other)."""
        shape = (self.n_pairs, self.m) if kind != "interactions" else (self.n_pairs, self.m, self.m)
        out = torch.zeros(shape, dtype=torch.float64, device=self.device)
        for block in self.blocks:
            d = block.members.shape[1]
            if d == 0:
                continue
            games = values[block.start : block.stop].to(torch.float64).reshape(block.pairs.numel(), 2**d)
            weights = coalition_weights(kind, d).to(self.device)
            local = (games @ weights.reshape(2**d, -1)).reshape(block.pairs.numel(), *weights.shape[1:])
            if kind != "interactions":
                out[block.pairs] = out[block.pairs].scatter_add(1, block.members, local)
                continue
            rows = block.members[:, :, None].expand(-1, d, d)
            cols = block.members[:, None, :].expand(-1, d, d)
            flat = (rows * self.m + cols).reshape(block.pairs.numel(), -1)
            target = out[block.pairs].reshape(block.pairs.numel(), -1)
            out[block.pairs] = target.scatter_add(1, flat, local.reshape(block.pairs.numel(), -1)).reshape(
                -1, self.m, self.m
            )
        return out


def pair_sizes(x: Tensor, background: Tensor, players: Tensor, m: int) -> Tensor:
    """``(Q, D)`` int64: how many players each (row, background row) pair differs in."""
    out = torch.zeros(x.shape[0], background.shape[0], dtype=torch.long, device=x.device)
    for a, c in chunk_bounds(x.shape[0], rows_per_chunk(8 * background.shape[0] * x.shape[1], x.shape[0])):
        xr = x[a:c].repeat_interleave(background.shape[0], 0)
        out[a:c] = differing_players(xr, background.repeat(c - a, 1), players, m).sum(1).reshape(c - a, -1)
    return out


def enumeration_queries(x: Tensor, background: Tensor, players: Tensor, m: int) -> int:
    """How many queries :func:`enumerate_shapley` needs: ``Σ`` over (row, background row) pairs of ``2^d``."""
    return int((2 ** pair_sizes(x, background, players, m)).sum())


def enumerate_shapley(
    query: Callable[[Tensor], Tensor], x: Tensor, background: Tensor, players: Tensor, m: int
) -> Tensor:
    """``(Q, m)`` exact interventional Shapley values of ``query`` at rows ``x`` against ``background``."""
    return enumerate_values(query, x, background, players, m, "shapley")


def enumerate_values(
    query: Callable[[Tensor], Tensor], x: Tensor, background: Tensor, players: Tensor, m: int, kind: TableKind
) -> Tensor:
    """``(Q, m)`` exact interventional Shapley or Banzhaf values, or ``(Q, m, m)`` pairwise Shapley interactions,
    of ``query`` at rows ``x`` against ``background``.

    Args:
        query: the model, ``(N, n)`` bool -> ``(N,)`` float64 (an :class:`~torchxplain.fourier.fit._oracle.Oracle`).
        x: ``(Q, n)`` bool rows; background: ``(D, n)`` bool (or both raw real rows, for a query on raw points).
        players: ``(n,)`` int64 player index per feature; m: the number of players.

    Raises:
        ValueError: a pair differs in more than :data:`MAX_DIFFERING` players.
    """
    q_rows, d_rows = x.shape[0], background.shape[0]
    sizes = pair_sizes(x, background, players, m)
    widest = int(sizes.max()) if sizes.numel() else 0
    if widest > MAX_DIFFERING:
        raise ValueError(
            f"a (row, background row) pair differs in {widest} players; enumeration is exact but costs 2^d "
            f"queries per pair and stops at d = {MAX_DIFFERING}: group the features into fewer players, or fit a "
            "spectrum instead (method='auto')"
        )
    out = torch.zeros((q_rows, m) if kind != "interactions" else (q_rows, m, m), dtype=torch.float64, device=x.device)
    cost = torch.cumsum((2**sizes).sum(1), 0)  # points up to each row
    budget = min(CHUNK_POINTS, rows_per_chunk(4 * (x.shape[1] + m), int(cost[-1]) if q_rows else 1))
    a = 0
    while a < q_rows:
        done = int(cost[a - 1]) if a else 0
        c = max(a + 1, int(torch.searchsorted(cost, done + budget, right=True)))
        xr = x[a:c].repeat_interleave(d_rows, 0)
        games = PairGames(xr, background.repeat(c - a, 1), players, m)
        pair_values = games.values(query(games.points), kind)
        out[a:c] = pair_values.reshape(c - a, d_rows, *pair_values.shape[1:]).mean(1)
        a = c
    return out


class EnumerationPlan:
    """Values by enumeration through the model, with the interface the explainer's value path expects of a plan.

    Args:
        query: the model on bool points (an :class:`~torchxplain.fourier.fit._oracle.Oracle`), or on raw points.
        background: ``(D, n)`` binary background (any dtype); groups: ``(n,)`` player index per feature
            (``None``: singletons); m: the number of players.
        binary: the rows are binary codes (cast to bool); ``False``: raw real rows, queried as they are (a hybrid
            takes each feature whole from the row or the background row).
        query_dtype: the dtype ``query`` casts raw rows to (``None``: none known); raw rows are cast before their
            hybrids are built, which the query would do to every hybrid (the same values, half the bytes for
            float32).
    """

    def __init__(
        self,
        query: Callable[[Tensor], Tensor],
        background: Tensor,
        groups: Tensor | None,
        m: int,
        binary: bool = True,
        query_dtype: torch.dtype | None = None,
    ) -> None:
        self.query, self.binary, self.m = query, binary, m
        self.cast = None if binary else query_dtype
        self.background = background.bool() if binary else background.to(self.cast or background.dtype)
        self.groups = torch.arange(background.shape[1], device=background.device) if groups is None else groups

    def _values(self, xq: Tensor, kind: TableKind) -> Tensor:
        rows = xq.bool() if self.binary else xq.to(self.cast or xq.dtype)
        out = enumerate_values(self.query, rows, self.background, self.groups, self.m, kind)
        return out.to(xq.dtype)

    def shapley(self, xq: Tensor, relaxed: bool = False) -> Tensor:
        """``(Q, m)`` exact Shapley values of binary queries (``relaxed`` inputs are refused upstream)."""
        return self._values(xq, "shapley")

    def banzhaf(self, xq: Tensor) -> Tensor:
        """``(Q, m)`` exact Banzhaf values."""
        return self._values(xq, "banzhaf")

    def interactions(self, xq: Tensor) -> Tensor:
        """``(Q, m, m)`` exact pairwise Shapley interaction index (zero diagonal)."""
        return self._values(xq, "interactions")

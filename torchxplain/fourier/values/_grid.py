r"""The level-grid kernel: exact values of any spectrum when the players are few and take few levels.

Interventional values of a row ``x`` depend on the spectrum ``h`` only through the coalition values
``v_x(S) = mean_b h(x_S, b_{~S})``, and each of those only through the players' *levels* (their bit patterns) in
``x`` and in the background. With levels ``L_g`` per player (those of the background and of the queries seen so
far), the kernel evaluates ``h`` once on the grid ``Π_g L_g`` — per player the table
``(-1)^{<r, ℓ>}`` of its levels ``ℓ`` against the distinct restrictions ``r`` of the frequencies to its bits, one
tensor-mode product per player — then one table over ``Π_g (L_g + 1)`` whose extra level per player means "the
background row's": its entries are the background means ``M_S[ℓ_S] = mean_b h(ℓ_S, b_{~S})`` of every coalition
``S`` at once (``|D| · Π_g (1 + L_g)`` gathers). A query is then ``2^m`` gathers and one product with a fixed
``(2^m, m)`` weight matrix (Shapley, Banzhaf) or ``(2^m, m·m)`` (pairwise interactions), independent of ``k`` and
``|D|``. The tables grow when queries bring levels the background lacks.

It suits spectra tabulated from a black box (GB1's four sites: 160,000 terms, ``21⁴·40`` table entries, a few
microseconds per row) where the dense and small-support kernels pay per term.
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, parse_memory, rows_per_chunk
from torchxplain.fourier.spectrum import WORD_BITS, FourierSpectrum, pack_rows, unique_rows
from torchxplain.fourier.values._weights import TableKind

GRID_MAX_PLAYERS = 14
"""Most players the grid kernel handles (a query gathers ``2^m`` coalition values)."""
_RESTRICTION_MAX = 2**22
"""Largest dense tensor of amplitudes over the players' restrictions (beyond it ``h`` is evaluated directly)."""


@lru_cache(maxsize=64)
def coalition_weights(kind: TableKind, m: int) -> Tensor:
    """``(2^m, m)`` (first order) or ``(2^m, m, m)`` (interactions) float64 ``W``: ``value = v @ W`` for coalition
    values ``v`` indexed by bitmask (bit ``g`` = player ``g``)."""
    coalitions = torch.arange(2**m)
    member = ((coalitions[:, None] >> torch.arange(m)) & 1).bool()
    size = member.sum(1)
    fact = [math.factorial(s) for s in range(m + 1)]
    if kind == "banzhaf":
        return torch.where(member, 1.0, -1.0).to(torch.float64) / 2 ** (m - 1)
    if kind == "shapley":
        w = torch.tensor([fact[s] * fact[m - s - 1] / fact[m] for s in range(m)] + [0.0], dtype=torch.float64)
        return torch.where(member, w[(size - 1).clamp(min=0)][:, None], -w[size][:, None])
    # pairwise Shapley interaction index: Σ_{T ⊆ N∖{i,j}} w(|T|) Δ_ij v(T), w(t) = t!(m-t-2)!/(m-1)!
    w = torch.tensor(
        [fact[t] * fact[max(m - t - 2, 0)] / fact[m - 1] for t in range(m)] + [0.0] * 2, dtype=torch.float64
    )
    both = member[:, :, None] & member[:, None, :]
    neither = ~member[:, :, None] & ~member[:, None, :]
    one = member[:, :, None] ^ member[:, None, :]
    rest = size[:, None, None] - both.to(torch.long) * 2 - one.to(torch.long)  # |T| of each term's base set
    sign = torch.where(one, -1.0, 1.0)
    weight = sign * w.to(torch.float64)[rest.clamp(min=0)]
    off = ~torch.eye(m, dtype=torch.bool)[None]
    return torch.where((both | neither | one) & off, weight, 0.0)


class GridKernel:
    """The grid kernel of one (spectrum, background, players): tables built on demand (module docstring).

    Args:
        spectrum: ``k`` frequencies on ``n`` features.
        background: ``(D, n)`` binary background (any dtype).
        groups: ``(n,)`` int64 player index per feature in ``0..m-1`` (``None``: one player per feature).
        m: the number of players.
    """

    def __init__(self, spectrum: FourierSpectrum, background: Tensor, groups: Tensor | None, m: int) -> None:
        device = background.device
        players = torch.arange(spectrum.n_features, device=device) if groups is None else groups.to(device)
        self.m, self.device, self.dtype = m, device, spectrum.dtype
        order = torch.argsort(players, stable=True)
        self.bits = list(torch.split(order, torch.bincount(players, minlength=m).tolist()))
        self.frequencies = spectrum.frequencies.to(device)
        self.amplitudes = spectrum.amplitudes.to(device=device, dtype=torch.float64)
        self.background = background.bool()
        words = [max(1, -(-bits.numel() // WORD_BITS)) for bits in self.bits]  # pack_rows' width per player
        self.keys: list[Tensor] = [torch.zeros(0, w, dtype=torch.long, device=device) for w in words]
        self.levels: list[Tensor] = [torch.zeros(0, b.numel(), dtype=torch.bool, device=device) for b in self.bits]
        self.tables: Tensor | None = None
        self._add_levels(self.background)

    @staticmethod
    def fits(m: int) -> bool:
        """Whether ``m`` players are few enough for the kernel."""
        return m <= GRID_MAX_PLAYERS

    def grid_size(self, queries: Tensor | None = None) -> int:
        """``Π_g L_g`` over the levels known (and those ``queries`` would add)."""
        return math.prod(self._sizes(queries))

    def table_bytes(self, queries: Tensor | None = None) -> int:
        """Peak bytes of building the tables (with the levels ``queries`` would add): ``h`` on the grid with two
        mode-product copies of it, and the coalition table over ``Π_g (1 + L_g)`` (float64)."""
        sizes = self._sizes(queries)
        return 8 * (3 * math.prod(sizes) + math.prod(1 + s for s in sizes))

    def _sizes(self, queries: Tensor | None) -> list[int]:
        """``L_g`` per player, with the levels ``queries`` would add."""
        sizes = [lv.shape[0] for lv in self.levels]
        if queries is not None:
            for g, bits in enumerate(self.bits):
                new = ~_member(pack_rows(queries.bool()[:, bits]), self.keys[g])
                sizes[g] += int(torch.unique(pack_rows(queries.bool()[new][:, bits]), dim=0).shape[0])
        return sizes

    def restriction_count(self) -> int:
        """Multiply-adds per grid point of evaluating ``h`` there: ``Σ_g R_g`` (the distinct restrictions of the
        frequencies to each player's bits) when their product is small, else ``k · n`` (direct evaluation)."""
        counts = [int(unique_rows(self.frequencies[:, bits])[0].shape[0]) for bits in self.bits]
        if math.prod(counts) <= _RESTRICTION_MAX:
            return sum(counts)
        return int(self.frequencies.shape[0] * self.frequencies.shape[1])

    def table_entries(self) -> int:
        """``Π_g (1 + L_g)``: the coalition table's entries (each averaged over the background once)."""
        return math.prod(1 + lv.shape[0] for lv in self.levels)

    def values(self, xq: Tensor, kind: TableKind) -> Tensor:
        """``(Q, m)`` Shapley/Banzhaf or ``(Q, m, m)`` interaction values of binary queries ``xq``, in the
        spectrum's dtype."""
        bits = xq.bool()
        if self._add_levels(bits) or self.tables is None:
            self.tables = self._star_table()
        codes = self._codes(bits)
        sizes = torch.tensor([lv.shape[0] for lv in self.levels], dtype=torch.long, device=self.device)
        strides = _strides((sizes + 1).tolist(), self.device)
        masks = (torch.arange(2**self.m, device=self.device)[:, None] >> torch.arange(self.m, device=self.device)) & 1
        star = int((sizes * strides).sum())  # every player from the background
        weights = coalition_weights(kind, self.m).to(self.device)
        out = torch.empty(xq.shape[0], weights[0].numel(), dtype=torch.float64, device=self.device)
        step = rows_per_chunk(16 * 2**self.m, xq.shape[0])
        for a, b in chunk_bounds(xq.shape[0], step):
            delta = ((codes[a:b] - sizes) * strides).to(torch.float64)  # what taking a player from x changes
            index = (delta @ masks.T.to(torch.float64)).round().long() + star  # (q, 2^m) cells of the star table
            out[a:b] = self.tables[index] @ weights.reshape(2**self.m, -1)
        return out.reshape(xq.shape[0], *weights.shape[1:]).to(self.dtype)

    # --- tables --------------------------------------------------------------------------------------
    def _add_levels(self, rows: Tensor) -> bool:
        """Append the levels of ``rows`` the kernel lacks; whether any was new."""
        added = False
        for g, bits in enumerate(self.bits):
            keys = pack_rows(rows[:, bits])
            new = ~_member(keys, self.keys[g])
            if bool(new.any()):
                fresh, first = _first_rows(keys[new])
                self.keys[g] = torch.cat((self.keys[g], fresh))
                self.levels[g] = torch.cat((self.levels[g], rows[new][first][:, bits]))
                added = True
        return added

    def _codes(self, rows: Tensor) -> Tensor:
        codes = torch.empty(rows.shape[0], self.m, dtype=torch.long, device=self.device)
        for g, bits in enumerate(self.bits):
            codes[:, g] = _index_in(pack_rows(rows[:, bits]), self.keys[g])
        return codes

    def _grid(self) -> Tensor:
        """``h`` on ``Π_g L_g`` (float64): amplitudes scattered over the players' restrictions, then one
        mode product per player with its ``(L_g, R_g)`` character table."""
        restrictions, index = [], torch.zeros(self.frequencies.shape[0], dtype=torch.long, device=self.device)
        for bits in self.bits:
            local, inverse, _ = unique_rows(self.frequencies[:, bits])
            restrictions.append(local)
            index = index * local.shape[0] + inverse
        sizes = [r.shape[0] for r in restrictions]
        if math.prod(sizes) > min(_RESTRICTION_MAX, parse_memory() // 8):  # priced: else evaluate h directly
            return self._grid_direct()
        grid = torch.zeros(math.prod(sizes), dtype=torch.float64, device=self.device)
        grid = grid.index_add_(0, index, self.amplitudes).reshape(sizes)
        for g, local in enumerate(restrictions):
            characters = 1.0 - 2.0 * torch.remainder(self.levels[g].double() @ local.double().T, 2.0)
            grid = torch.tensordot(characters, grid.movedim(g, 0), dims=([1], [0])).movedim(0, g)
        return grid

    def _grid_direct(self) -> Tensor:
        """``h`` on the grid by evaluating the spectrum at every grid point (chunked)."""
        sizes = [lv.shape[0] for lv in self.levels]
        total = math.prod(sizes)
        spectrum = FourierSpectrum.trusted(self.frequencies, self.amplitudes)
        out = torch.empty(total, dtype=torch.float64, device=self.device)
        n = self.frequencies.shape[1]
        for a, b in chunk_bounds(total, rows_per_chunk(8 * (n + self.frequencies.shape[0]), total)):
            flat = torch.arange(a, b, device=self.device)
            points = torch.zeros(b - a, n, dtype=torch.float64, device=self.device)
            for g in range(self.m - 1, -1, -1):
                points[:, self.bits[g]] = self.levels[g][flat % sizes[g]].to(torch.float64)
                flat = flat // sizes[g]
            out[a:b] = spectrum.evaluate_unchecked(points)
        return out.reshape(sizes)

    def _star_table(self) -> Tensor:
        """``E`` over ``Π_g (L_g + 1)`` (flattened): entry ``(ℓ'_1, …, ℓ'_m)`` with ``ℓ'_g = L_g`` meaning "the
        background row's level" is ``mean_b h(ℓ' with b's levels filled in)``, the coalition value of every
        coalition and query level at once."""
        grid = self._grid().reshape(-1)
        sizes = [lv.shape[0] for lv in self.levels]
        grid_strides = _strides(sizes, self.device)
        background, _, weight = _distinct(self._codes(self.background))
        weight = weight.to(torch.float64) / self.background.shape[0]
        cells = math.prod(s + 1 for s in sizes)
        table = torch.empty(cells, dtype=torch.float64, device=self.device)
        step = rows_per_chunk(16 * background.shape[0] * self.m, cells)
        for a, b in chunk_bounds(cells, step):
            digits = mixed_radix_digits(torch.arange(a, b, device=self.device), [s + 1 for s in sizes])  # (c, m)
            star = digits == torch.tensor(sizes, device=self.device)
            chosen = torch.where(star[:, None, :], background[None], digits[:, None, :])  # (c, D', m)
            table[a:b] = grid[(chosen * grid_strides).sum(-1)] @ weight
        return table


def _strides(sizes: list[int], device: torch.device) -> Tensor:
    """Row-major strides of a tensor of shape ``sizes`` (the last axis fastest)."""
    strides = torch.ones(len(sizes), dtype=torch.long, device=device)
    for g in range(len(sizes) - 2, -1, -1):
        strides[g] = strides[g + 1] * sizes[g + 1]
    return strides


def mixed_radix_digits(flat: Tensor, sizes: list[int]) -> Tensor:
    """``(N, len(sizes))`` mixed-radix digits of flat indices into a row-major grid of shape ``sizes`` (the last
    axis varies fastest)."""
    out = torch.zeros(flat.numel(), len(sizes), dtype=torch.long, device=flat.device)
    rest = flat.clone()
    for g in range(len(sizes) - 1, -1, -1):
        out[:, g] = rest % sizes[g]
        rest = rest // sizes[g]
    return out


def _distinct(codes: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Distinct rows of ``codes`` ``(D, m)`` with their counts: ``(rows, inverse, counts)``."""
    return torch.unique(codes, dim=0, return_inverse=True, return_counts=True)


def _member(keys: Tensor, known: Tensor) -> Tensor:
    """``(N,)`` bool: which packed rows ``keys`` ``(N, w)`` are among ``known`` ``(K, w)``."""
    if known.shape[0] == 0:
        return torch.zeros(keys.shape[0], dtype=torch.bool, device=keys.device)
    return _index_in(keys, known, missing=-1) >= 0


def _index_in(keys: Tensor, known: Tensor, missing: int | None = None) -> Tensor:
    """Row index of each packed key in ``known`` (``missing`` where absent; every key present otherwise)."""
    if keys.shape[1] == 1:  # one word per row (players of <= 62 bits): a sorted search
        order = torch.argsort(known[:, 0])
        ordered = known[order, 0]
        pos = torch.searchsorted(ordered, keys[:, 0]).clamp(max=max(ordered.numel() - 1, 0))
        hit = ordered[pos] == keys[:, 0]
        return torch.where(hit, order[pos], -1 if missing is None else missing)
    _, inverse = torch.unique(torch.cat((known, keys)), dim=0, return_inverse=True)
    lookup = torch.full((int(inverse.max()) + 1,), -1 if missing is None else missing, device=keys.device)
    lookup[inverse[: known.shape[0]]] = torch.arange(known.shape[0], device=keys.device)
    return lookup[inverse[known.shape[0] :]]


def _first_rows(keys: Tensor) -> tuple[Tensor, Tensor]:
    """Distinct packed rows of ``keys`` in order of first appearance, and their first positions."""
    if keys.shape[1] == 1:
        _, inverse = torch.unique(keys[:, 0], return_inverse=True)
    else:
        _, inverse = torch.unique(keys, dim=0, return_inverse=True)
    first = torch.full((int(inverse.max()) + 1,), keys.shape[0], dtype=torch.long, device=keys.device)
    first.scatter_reduce_(0, inverse, torch.arange(keys.shape[0], device=keys.device), reduce="amin")
    first = torch.sort(first).values
    return keys[first], first

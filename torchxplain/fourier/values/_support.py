"""The small-support kernel: per support family, a table of values over the query patterns on its support.

For a family ``U`` (:mod:`~torchxplain.fourier.values._families`), the values its frequencies give the players
in ``U`` depend on a query only through its pattern ``x|U`` and on the background only through the Walsh
moments of the background patterns on ``U`` (:mod:`~torchxplain.fourier.values._weights`). So, once per
(spectrum, background, players):

1. :class:`SupportLayout`: the families, a player *slot* per feature of each family (features of one player
   share a slot), each frequency's per-slot bit masks, and the moments ``m_U(s) = Σ_b (-1)^{<s, b|U>}`` — the
   Walsh–Hadamard transform of the histogram of background patterns on ``U``;
2. :func:`build_tables`: the Walsh coefficients of every slot's value, scattered from every (frequency, subset of
   its players) pair, and one transform per family to the table ``T_U[p, slot]`` over all ``2^|U|`` patterns.

A query is then explained by gathering one row per family and adding it into the players
(:func:`explain`). Costs: build ``O(Σ_f 2^{d_f}·d_f + Σ_U |U|·2^|U|·2^{|U|/2} + |D|·Σ_U |U|)``, explain
``O(Q·Σ_U |U|)`` (``|U|²`` for interactions) — independent of ``|D|``, ``n`` and ``k``. Families of equal size
are batched as tensor ops; every intermediate is chunked to the memory budget in force.
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, parse_memory, progress
from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.values._families import SupportFamilies, support_families
from torchxplain.fourier.values._weights import TableKind, TableSpec, order, padded_walsh_weights, spec_of

_CPU_BLOCK = 2**21  # gathered entries per block of queries on a CPU (measured best of 2^17..2^23)
_CUDA_BLOCK = 2**26
_GEMM_SPEEDUP = 10  # multiply-adds of a product per gathered element, in time (patterns by GEMM or by gathers)
_CPU_PAIRS = 2**15  # (frequency, subset) pairs per chunk of the table build on a CPU (measured best of 2^12..2^19)
_SMALL_PAIRS = 2**17  # up to this many padded pairs, the whole build is one chunk
SHOW_PROGRESS_PAIRS = 2**23  # a table build of this many (frequency, subset) pairs shows a bar (about a second)


def walsh(x: Tensor, dim: int) -> Tensor:
    """Unnormalised Walsh–Hadamard transform along ``dim`` (length ``2^u``; bit ``j`` of an index = feature ``j``).

    On a CPU, ``H_u = H_a ⊗ H_b`` (``a + b = u``): two matrix products with ``2^a``- and ``2^b``-sized Hadamard
    matrices, each one large GEMM, instead of ``u`` butterfly passes. On CUDA, the ``u`` butterfly passes (exact
    additions, whatever the TF32 setting of matrix products).
    """
    size = x.shape[dim]
    u = size.bit_length() - 1
    moved = x.movedim(dim, -1)
    if x.is_cuda:
        return butterfly(moved.reshape(-1, size)).reshape(moved.shape).movedim(-1, dim)
    a, b = u // 2, u - u // 2
    y = (moved.reshape(-1, 2**b) @ _hadamard(b, x.dtype, x.device)).view(-1, 2**a, 2**b).transpose(1, 2)
    y = (y.reshape(-1, 2**a) @ _hadamard(a, x.dtype, x.device)).view(-1, 2**b, 2**a).transpose(1, 2)
    return y.reshape(moved.shape).movedim(-1, dim)


def butterfly(x: Tensor) -> Tensor:
    """The Walsh–Hadamard transform of the rows of ``x`` (``(r, 2^u)``) by ``u`` butterfly passes."""
    size = x.shape[1]
    for j in range(size.bit_length() - 1):
        pair = x.view(x.shape[0], -1, 2, 2**j)
        x = torch.stack([pair[:, :, 0] + pair[:, :, 1], pair[:, :, 0] - pair[:, :, 1]], dim=2).view(-1, size)
    return x


@functools.lru_cache(maxsize=64)
def _hadamard(u: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """The ``2^u × 2^u`` Sylvester Hadamard matrix (cached; read-only)."""
    idx = torch.arange(2**u, device=device)
    ones = torch.bitwise_and(idx[:, None], idx[None, :])
    parity = torch.zeros_like(ones)
    for j in range(u):
        parity ^= torch.bitwise_and(torch.bitwise_right_shift(ones, j), 1)
    return (1 - 2 * parity).to(dtype)


class SupportLayout:
    """The background- and amplitude-independent structure of the small-support kernel, plus the moments.

    Args:
        spectrum: the spectrum (frequencies and dtype are used; amplitudes enter :func:`build_tables`).
        background: ``(B, n)`` validated binary background in the spectrum's dtype.
        groups: ``(n,)`` player id per feature (``None``: singletons).
        m: number of players.
        families: precomputed :func:`support_families` of ``spectrum.frequencies`` (computed when ``None``).
    """

    def __init__(
        self,
        spectrum: FourierSpectrum,
        background: Tensor,
        groups: Tensor | None,
        m: int,
        families: SupportFamilies | None = None,
    ) -> None:
        device = background.device
        freq = spectrum.frequencies.to(device)
        self.families = support_families(freq) if families is None else families
        self.m, self.n_background, self.dtype = m, background.shape[0], background.dtype
        self.classes = self.families.size_classes()
        members, sizes = self.families.members.to(device), self.families.sizes.to(device)
        self.members, self.sizes = members, sizes
        players = members.clamp(min=0) if groups is None else groups.to(device)[members.clamp(min=0)]
        players = torch.where(members >= 0, players, m)  # padding is the dummy player m
        self.slot, self.slot_player = _slots(players, m)
        family = self.families.family.to(device)
        rows = torch.argsort(family, stable=True)[int((family < 0).sum()) :]  # by family: local scatters
        fam = family[rows]
        width = members.shape[1]
        rows_members = members.index_select(0, fam)
        linear = rows[:, None] * freq.shape[1] + rows_members.clamp(min=0)
        on = freq.reshape(-1).take(linear) & (rows_members >= 0)  # a flat take: 2-D advanced indexing is slow
        bit = torch.bitwise_left_shift(on.long(), torch.arange(width, device=device))
        self.rows, self.fam = rows, fam
        self.local = bit.sum(1)  # each frequency's support as a bit mask over its family's features
        self.blocks = torch.zeros_like(bit).scatter_add_(1, self.slot.index_select(0, fam), bit)  # per-slot masks
        self.n_blocks = (self.blocks > 0).sum(1, dtype=torch.int64)
        local_bits = torch.bitwise_left_shift(torch.ones_like(members), torch.arange(width, device=device))
        self.slot_mask = torch.zeros_like(members).scatter_add_(1, self.slot, torch.where(members >= 0, local_bits, 0))
        pattern_sizes = torch.bitwise_left_shift(torch.ones_like(sizes), sizes)
        self.moment_offset = torch.cumsum(pattern_sizes, 0) - pattern_sizes
        self.moments = _moments(background, members, self.classes, self.moment_offset)

    def gathers_per_query(self, kind: TableKind | TableSpec) -> int:
        """Table entries one query gathers: ``Σ_U |U|`` (``|U|²`` for interactions)."""
        return sum((stop - start) * u ** order(kind) for u, start, stop in self.classes)


def _slots(players: Tensor, m: int) -> tuple[Tensor, Tensor]:
    """Slot of each family feature (first-occurrence rank of its player) and the player of each slot."""
    if players.numel() == 0:
        return players, players
    same = players[:, :, None] == players[:, None, :]
    first = same.to(torch.int8).argmax(2)  # first feature of the family with the same player
    is_first = first == torch.arange(players.shape[1], device=players.device)
    slot = (torch.cumsum(is_first.long(), 1) - 1).gather(1, first)
    return slot, torch.full_like(players, m).scatter_(1, slot, players)


def _moments(background: Tensor, members: Tensor, classes: list[tuple[int, int, int]], offset: Tensor) -> Tensor:
    """Walsh moments of the background patterns of every family, flat: family ``U`` at ``offset[U]``."""
    total = int(offset[-1] + 2 ** int(classes[-1][0])) if classes else 0
    hist = background.new_zeros(total)
    rows_per = max(1, parse_memory() // max(8 * 4 * members.numel(), 1))
    columns = background.T.contiguous()  # feature-major: a family's features are row gathers
    for u, start, stop in classes:
        feats = members[start:stop, :u].flatten()
        weights = _powers(u, members.device).to(background.dtype)[None, :, None]
        for b0, b1 in chunk_bounds(background.shape[0], rows_per):
            bits = columns[:, b0:b1].index_select(0, feats).view(stop - start, u, b1 - b0)
            index = (bits * weights).sum(1).long() + offset[start:stop, None]
            hist.index_add_(0, index.flatten(), background.new_ones(index.numel()))
    parts = [
        walsh(hist[int(offset[start]) : int(offset[start]) + (stop - start) * 2**u].view(stop - start, 2**u), 1)
        for u, start, stop in classes
    ]
    return torch.cat([p.flatten() for p in parts]) if parts else hist


def _powers(u: int, device: torch.device) -> Tensor:
    return torch.bitwise_left_shift(torch.ones(u, dtype=torch.long, device=device), torch.arange(u, device=device))


def _holding(x: Tensor, d: int, *blocks: int) -> Tensor:
    """The columns of ``x`` (``(r, 2^d)``, column = subset bit mask) whose subsets hold all of ``blocks``, as a
    strided ``(r, 2, ..., 2)`` view (one axis per other block), so arithmetic on it makes one contiguous pass."""
    view = x.view(x.shape[0], *([2] * d))
    for j in sorted(blocks):  # bit j of the subset index is axis d - j of the view (later axes first)
        view = view.select(d - j, 1)
    return view


def build_tables(layout: SupportLayout, amplitudes: Tensor, kind: TableKind | TableSpec) -> list[Tensor]:
    """The tables of every family, one tensor per size class: ``T_U[p]`` (order 0), ``T_U[slot, p]`` (order 1)
    or ``T_U[slot, slot', p]`` (order 2, zero diagonal).

    The Walsh coefficient of slot ``g`` at pattern ``e = f ⊕ f_S`` collects ``F̂_g(S)``, which is ``F̂(d, |S|, 0)``
    when ``g`` is one of ``e``'s blocks and ``F̂(d, |S|, 1)`` when ``g ∈ S``. Which slots are ``e``'s blocks
    depends on ``e`` alone, so the first case is one scalar per (family, pattern) times a fixed mask, and only
    the pairs ``g ∈ S`` (and, for pairs, ``g, h ∈ S``) are scattered one by one.

    Frequencies are processed by the number ``d`` of players they touch, so the ``2^d`` subsets of each are one
    strided tensor; a small spectrum is one pass with every frequency padded to the largest ``d`` (the subsets
    that take a padded block weigh nothing), which saves a pass per degree where calls, not work, are the cost.

    Args:
        layout: the prepared families and moments.
        amplitudes: ``(k,)`` amplitudes of the spectrum the layout was made for.
        kind: ``"shapley"``, ``"banzhaf"``, ``"interactions"`` or a :class:`TableSpec`.

    Returns:
        For each size class ``(u, start, stop)`` of ``layout.classes``: ``(stop - start, [u, [u,]] 2^u)``.
    """
    spec = spec_of(kind)
    r, dtype = spec.order, layout.dtype
    device, sizes = layout.local.device, layout.sizes
    width = torch.bitwise_left_shift(sizes, sizes)  # u·2^u per family: the first-order layout
    offset = torch.cumsum(width, 0) - width
    pair_width = torch.bitwise_left_shift(sizes * sizes, sizes)
    pair_offset = torch.cumsum(pair_width, 0) - pair_width
    scalar = torch.zeros(layout.moments.shape[0], dtype=dtype, device=device)  # laid out like the moments
    single = torch.zeros(int(width.sum()) if r >= 1 else 0, dtype=dtype, device=device)
    double = torch.zeros(int(pair_width.sum()) if r == 2 else 0, dtype=dtype, device=device)
    amp = amplitudes.to(device=device, dtype=dtype)[layout.rows] * (spec.scale / layout.n_background)
    cache = _CPU_PAIRS if device.type == "cpu" else _CUDA_BLOCK
    groups = _degree_groups(layout.n_blocks, r, cache)
    work = [
        (d, sel[c0:c1])
        for d, sel, step in groups
        for c0, c1 in chunk_bounds(sel.numel(), max(1, min(parse_memory() // (2**d * 8 * 8), step)))
    ]
    pairs = sum(rows.numel() * 2**d for d, rows in work)
    for d, rows in progress(work, show=None if pairs >= SHOW_PROGRESS_PAIRS else False, desc=f"{spec.name} tables"):
        hat = padded_walsh_weights(spec, d, dtype, device)  # (degree, |S|, how many fixed in S)
        size = torch.bitwise_and(
            torch.bitwise_right_shift(torch.arange(2**d, device=device)[:, None], torch.arange(d, device=device)), 1
        ).sum(1)
        degree = layout.n_blocks[rows]
        blocks = layout.blocks[rows]
        slots = torch.argsort((blocks == 0).to(torch.int8), dim=1, stable=True)[:, :d]  # the non-empty first
        subset = blocks.new_zeros(rows.numel(), 2**d)
        picked = blocks.gather(1, slots)
        for j in range(d):  # all 2^d unions of blocks; bit j of the subset index is block j
            subset[:, 2**j : 2 ** (j + 1)] = subset[:, : 2**j] + picked[:, j : j + 1]
        fam = layout.fam[rows]
        u = sizes[fam][:, None]
        moment_at = layout.moment_offset[fam][:, None]
        vals = (amp[rows] * torch.pow(2.0, -degree.to(dtype)))[:, None] * layout.moments[moment_at + subset]
        weights = hat[degree[:, None], size[None, :]]  # (c, 2^d, r + 1)
        if not bool((degree == d).all()):  # padded rows: the subsets that take a padded block weigh nothing
            inside = torch.arange(2**d, device=device)[None, :] < torch.bitwise_left_shift(1, degree)[:, None]
            weights = weights * inside[..., None]
        pattern = layout.local[rows][:, None] - subset  # f ⊕ f_S
        scalar.index_add_(0, (moment_at + pattern).flatten(), (vals * weights[..., 0]).flatten())
        if r == 0:
            continue
        at, weighted = offset[fam][:, None] + pattern, vals * weights[..., 1]
        shifted = torch.bitwise_left_shift(slots, u)
        for j in range(d):  # the subsets holding block j: a strided view, no gather
            index = _holding(at, d, j) + shifted[:, j].view(-1, *([1] * (d - 1)))  # one pass, contiguous
            single.index_add_(0, index.flatten(), _holding(weighted, d, j).flatten())
        if r == 2:
            at, weighted = pair_offset[fam][:, None] + pattern, vals * weights[..., 2]
            for j in range(d):
                for h in range(j + 1, d):
                    base, value = _holding(at, d, j, h), _holding(weighted, d, j, h).flatten()
                    for g1, g2 in ((j, h), (h, j)):
                        cell = torch.bitwise_left_shift(slots[:, g1] * u[:, 0] + slots[:, g2], u[:, 0])
                        double.index_add_(0, (base + cell.view(-1, *([1] * (d - 2)))).flatten(), value)
    return [_assemble(layout, scalar, single, double, offset, pair_offset, c, r) for c in layout.classes]


def _degree_groups(n_blocks: Tensor, r: int, cache: int) -> list[tuple[int, Tensor, int]]:
    """``[(d, rows, rows per chunk), ...]``: the frequencies touching at least ``r`` players by their number ``d``,
    a few families per chunk so their coefficients stay in cache across the slot passes — or, for a small
    spectrum, all in one chunk padded to the largest ``d`` (calls, not work, are its cost)."""
    degrees = [d for d in torch.unique(n_blocks).tolist() if d >= r]
    if not degrees:
        return []
    every = torch.nonzero(n_blocks >= r).flatten()
    if every.numel() * 2 ** degrees[-1] <= _SMALL_PAIRS:
        return [(degrees[-1], every, every.numel())]
    return [(d, torch.nonzero(n_blocks == d).flatten(), max(1, cache // 2**d)) for d in degrees]


def _assemble(
    layout: SupportLayout,
    scalar: Tensor,
    single: Tensor,
    double: Tensor,
    offset: Tensor,
    pair_offset: Tensor,
    size_class: tuple[int, int, int],
    r: int,
) -> Tensor:
    """One size class's Walsh coefficients from the three scattered parts, transformed to tables."""
    u, start, stop = size_class
    count, patterns = stop - start, 2**u
    mo = int(layout.moment_offset[start])
    g = scalar[mo : mo + count * patterns].view(count, 1, patterns)
    if r == 0:
        return walsh(g, -1)
    o = int(offset[start])
    v = single[o : o + count * u * patterns].view(count, u, patterns)
    index = torch.arange(patterns, device=g.device)
    beta = (torch.bitwise_and(index, layout.slot_mask[start:stop, :u, None]) != 0).to(g.dtype)  # e's blocks
    if r == 1:
        return walsh(beta * g + v, -1)
    po = int(pair_offset[start])
    w = double[po : po + count * u * u * patterns].view(count, u, u, patterns)
    bj, bl = beta[:, :, None], beta[:, None, :]
    coeff = bj * bl * g[:, None] + bl * v[:, :, None] + bj * v[:, None, :] + w
    coeff = coeff * (1.0 - torch.eye(u, dtype=g.dtype, device=g.device))[:, :, None]
    return walsh(coeff, -1)


def explain(layout: SupportLayout, tables: list[Tensor], xq: Tensor, kind: TableKind | TableSpec) -> Tensor:
    """Values of binary queries ``xq`` (``(Q, n)``) from the tables: ``(Q,)`` (order 0), ``(Q, m)`` (order 1) or
    ``(Q, m, m)`` (order 2).

    Each query gathers one table entry per family slot (at its pattern on the family's features) and adds it
    into the slot's player; queries run along the last axis so every step is a contiguous row operation.
    """
    r, m, q = order(kind), layout.m, xq.shape[0]
    out = xq.new_empty(q, (m + 1) ** r)  # every row is written once, chunk by chunk
    per_query = max(1, layout.gathers_per_query(kind) + xq.shape[1])
    block = min(parse_memory() // (4 * xq.element_size()), _CUDA_BLOCK if xq.is_cuda else _CPU_BLOCK)
    step = max(1, block // per_query)
    # Patterns by one product costs n·M multiply-adds per query; by gathers, a transpose of the query (n) and
    # a few passes over the Σ|U| gathered bits. The product wins unless there are very many families.
    n, families = xq.shape[1], len(layout.families)
    product = not xq.is_cuda and families * n <= _GEMM_SPEEDUP * (n + 3 * layout.gathers_per_query("shapley"))
    classes = []
    for (u, start, stop), table in zip(layout.classes, tables):
        players = layout.slot_player[start:stop, :u]
        if r == 0:
            target = torch.zeros_like(players[:, :1])
        elif r == 1:
            target = players
        else:
            target = players[:, :, None] * (m + 1) + players[:, None, :]
        feats = layout.members[start:stop, :u]
        if product:
            weights = xq.new_zeros(stop - start, xq.shape[1])
            weights.scatter_(1, feats, _powers(u, xq.device).to(xq.dtype).expand(stop - start, -1))
            classes.append((u, weights, target.flatten(), table))
        else:
            classes.append((u, feats.flatten(), target.flatten(), table))
    gather = any(not weights.is_floating_point() for _, weights, _, _ in classes)
    for q0, q1 in chunk_bounds(q, step):
        # feature-major rows of bytes for gathering features (the queries are validated 0/1)
        xt = xq[q0:q1].T.to(torch.uint8).contiguous() if gather else None
        acc = xq.new_zeros((m + 1) ** r, q1 - q0)
        for u, weights, target, table in classes:
            if xt is None or weights.is_floating_point():
                pattern = (weights @ xq[q0:q1].T).long()  # exact: sums of distinct powers of two below 2^16
            else:
                bits = xt.index_select(0, weights).view(-1, u, q1 - q0)
                narrow = torch.uint8 if u <= 8 else torch.int16 if u <= 15 else torch.int32
                pattern = bits[:, 0].to(narrow)
                for j in range(1, u):  # one pass per slot over narrow integers: cheaper than a product of wide rows
                    pattern |= bits[:, j].to(narrow) << j
                pattern = pattern.long()
            cells = table.view(table.shape[0], -1, 2**u)
            vals = cells.gather(2, pattern[:, None, :].expand(-1, cells.shape[1], -1))
            acc.index_add_(0, target, vals.view(-1, q1 - q0))
        out[q0:q1] = acc.T
    if r == 0:
        return out[:, 0]
    if r == 1:
        return out[:, :m]
    return out.view(q, m + 1, m + 1)[:, :m, :m]

"""The pair route of the leaf values: (row, background rows) followed down the trees, for deep leaves.

A pair ``(x, b)`` reaches a node's subtree in the interventional game only while no player fails on both sides:
with ``F`` the players whose conditions so far ``x`` fails and ``G`` those ``b`` fails, the leaves below need
``F ∩ G = ∅`` (a failed condition must come from the other row), and both sets only grow down the tree. So each
row is followed level by level together with the bit mask of the background rows it still pairs with
(:func:`~torchxplain.fourier.trees._leaves.frontiers` gives both sides' patterns at every node): going to a child
whose split's player ``x`` fails there, the background rows that fail it too drop out, and a row whose mask empties
stops. At a leaf each remaining pair adds its game's values in closed form
(:mod:`~torchxplain.fourier.trees._leaf_games`), visiting only the set bits of the masks and patterns
(:func:`bit_batches`): the row's ``F`` once per (row, leaf) with its pairs' weights summed, each background row's ``G``
once per pair. The work follows the (row, node) visits where some background row can still pair — as
interventional TreeSHAP's walk, but for 64 background rows per word — instead of the ``2^d`` patterns of the dense
tables, which deep leaves (random forests at their default depth) cannot afford. (Measured on a default
``RandomForestRegressor(100)``, 25 features, 100 rows against 100 background rows: 9.4 million (row, leaf)
entries, 30 million pairs, 35 and 83 million bits of ``F`` and ``G``; (leaf, ``F``) classes are only half the
entries, a third at 1,000 rows, so tabulating per pattern would not pay: each pair's ``G`` side must still reach
every row of its class.)

Up to :data:`PLAYER_BITS` players the patterns are kept over players (bit ``i`` for player ``i``, the same on every
path; int32 up to 30 players, else int64) rather than over each path's slots. A pattern's values are then linear in
its bits, so the pairs' weights are only summed per (row, piece of the pattern) into accumulators of ``2^width``
values per piece (:func:`piece_shape`: pieces of at most :data:`PIECE_BITS` bits) and turned into players' values
once, by one product with the bits of every piece value: no pattern's bits are listed, and a pair costs a few
gathers and one scatter per piece instead of about eleven operations per set bit (1.3x on the whole call of the
forest above). A background row's pieces and ``|G|`` at a leaf do not depend on the row it pairs with, so a level
with :data:`CELL_PAIRS` pairs or more per (leaf, background row) cell computes them once per cell
(:class:`LevelPieces`) and a pair gathers them: about a dozen pairs share a cell on the forest above at 1,000 rows
(3% off its whole call: 23.5 s against 24.3 s, one thread).

Memory: the live (node, row, mask) entries of one level, whose chunks of rows, background rows (:data:`WORDS`
words of 64 per pass) and trees the caller sizes with :func:`pair_values`' visit counts; a level's leaf games, taken
in ranges of entries whose words fit the budget, their pairs listed in batches that fit it (:data:`LIST_BYTES`
each; :func:`bit_batches`) and added in parts that fit it (:data:`PAIR_BYTES`), so that no pair is counted before
it is listed; the accumulators, per row
(:func:`accumulator_bytes`), which the caller keeps across tree ranges and reads once per chunk of rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import lru_cache

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, parse_memory
from torchxplain.fourier.trees._leaves import FeatureCodes, LeafTable, Slots, Traversal, frontiers, pattern_dtype

WORDS = 4
"""Background rows per pass: ``64 · WORDS``."""
PLAYER_BITS = 62
"""Up to this many players the patterns are kept over players (bit ``i`` for player ``i``) instead of a path's
slots, so that the leaf games accumulate per (row, pattern piece) (:func:`_add_pieces`)."""
PIECE_BITS = 10
"""The most bits of a pattern piece: the accumulators hold at most ``2^10`` patterns (8 KiB) per piece and row.
Measured on a default ``RandomForestRegressor(100)`` (25 players), 1,000 rows against 100 background rows, one
thread: three pieces of 9 bits (12 KiB per row) took 25.1 s, two of 13 bits (128 KiB per row) 26.0 s; the smaller
accumulators also leave room for one per worker thread (``LeafPlan._pair_values``)."""
INDEX_LIMIT = 2**31
"""Rows and nodes are int32 (half the walk's traffic) where the flat indices they make stay below this."""
TAIL_WORDS = 1024
"""Words left in :func:`bit_batches` below which it tests all their 64 bits in one pass (``64 ×`` this many)."""
PAIR_BYTES = 64
"""Bytes of the leaf games' temporaries per (row, background row) pair and per set bit of its patterns over slots
(indices, positions and weights of :func:`_add_pieces` and :func:`_add_slots`)."""
LIST_BYTES = 32
"""Bytes per pair of listing the set bits of the masks (:func:`bit_batches`' lists and their concatenation)."""
CELL_PAIRS = 3
"""Pairs per (leaf row, background row) cell of a level from which it tabulates the cells (:class:`LevelPieces`):
a cell costs about what three pairs save by reading it. Measured on a default ``RandomForestRegressor(100)``
against 100 background rows: about 12 pairs per cell at 1,000 rows, 1 at 100 (where tabulating every level cost
0.4 s of 3.3 s in the grid)."""
CELL_BYTES = 72
"""Bytes per (leaf row, background row) cell of a level's :class:`LevelPieces` with their temporaries (the pattern,
its pieces and ``|G|``, three int64 offsets and the cell's weight row)."""


@dataclass(frozen=True)
class PairLeaves:
    """What the leaves and levels of a tree range need for the pair route.

    Attributes:
        value: ``(L_range,)`` leaf values (tree weights included), in the traversal's leaf order.
        players: ``(L_range, D)`` the slots' players, ``m`` (a spare column) past a leaf's slots.
        n_slots: ``(L_range,)`` each leaf's number of slots.
        inner: per level, ``(width_t,)`` each internal row's position among the level's internal nodes (``-1`` at
            leaves).
        leaf: per level, ``(width_t,)`` each leaf row's position in the leaf order (``-1`` at internal nodes).
        child_bit: per level ``t >= 1``, ``(width_t,)`` the bit of the parent's player (the one a row can newly
            fail at this node).
    """

    value: Tensor
    players: Tensor
    n_slots: Tensor
    inner: list[Tensor]
    leaf: list[Tensor]
    child_bit: list[Tensor]
    inner_bit: list[Tensor]
    by_player: bool


def pair_leaves(table: LeafTable, slot: Slots, plan: Traversal, player: Tensor, m: int) -> PairLeaves:
    """The :class:`PairLeaves` of a traversal; ``player`` ``(p,)`` the player of each feature."""
    device = table.left.device
    rows = slot.leaf_of_node[plan.leaves]
    players = slot.players[rows]
    players = torch.where(players >= 0, players, m)
    by_player = m <= PLAYER_BITS
    if by_player:
        # at least 32 bits: the pieces' offsets and flat indices are computed in the patterns' dtype
        one = torch.ones((), dtype=torch.promote_types(pattern_dtype(m), torch.int32), device=device)
        bits = [one.bitwise_left_shift(player[table.feature[n], None].to(one.dtype)) for n in plan.inner_nodes]
    else:
        bits = plan.inner_bit
    inner, leaf, child_bit = [], [], [torch.zeros(0, dtype=bits[0].dtype if bits else torch.int64, device=device)]
    for level, (inner_rows, leaf_rows, leaf_index) in enumerate(zip(plan.inner_rows, plan.leaf_rows, plan.leaf_index)):
        width = inner_rows.numel() + leaf_rows.numel()
        position = torch.full((width,), -1, dtype=torch.int32, device=device)
        position[inner_rows] = torch.arange(inner_rows.numel(), dtype=torch.int32, device=device)
        at = torch.full((width,), -1, dtype=torch.int32, device=device)
        at[leaf_rows] = leaf_index.to(torch.int32)
        inner.append(position)
        leaf.append(at)
        if level + 1 < len(plan.inner_rows):
            bit = bits[level].flatten()
            child_bit.append(torch.cat([bit, bit]))
    value = table.value[plan.leaves]
    return PairLeaves(value, players, slot.n_slots[rows], inner, leaf, child_bit, bits, by_player)


_PIECES = (torch.arange(64)[:, None] // 16 == torch.arange(4)).double() * torch.pow(2.0, torch.arange(64) % 16)[:, None]
"""``(64, 4)``: bit ``i`` of a word weighs ``2^(i mod 16)`` in its 16-bit piece ``i // 16``."""


def _pack(bits: Tensor) -> Tensor:
    """``(R, B)`` bool -> ``(R, ⌈B/64⌉)`` int64 words (bit ``i`` of word ``w`` is column ``64 w + i``): each word's
    four 16-bit pieces by one product with :data:`_PIECES` (sums below ``2^16``: exact in float32), then joined."""
    rows, width = bits.shape
    words = (width + 63) // 64
    padded = torch.zeros(rows, words * 64, dtype=torch.float32, device=bits.device)
    padded[:, :width] = bits
    pieces = (padded.view(rows * words, 64) @ _PIECES.to(padded)).to(torch.int64)
    joined = pieces[:, 0] | pieces[:, 1] << 16 | pieces[:, 2] << 32 | pieces[:, 3] << 48
    return joined.view(rows, words)


def accumulator(q: int, m: int, device: torch.device) -> Tensor:
    """The zeroed accumulator of :func:`pair_values` for ``q`` rows and ``m`` players (:func:`accumulator_bytes`
    per row): ``(n, 2^width, q)`` over the pieces of the patterns (:func:`piece_shape`) up to :data:`PLAYER_BITS`
    players (the rows of one piece value side by side: a leaf's entries list rows in order, and many share a
    background row's piece, so their scatters land close together), else ``(q, m + 1)`` (column ``m`` takes the
    slots' padding)."""
    if m <= PLAYER_BITS:
        n, bits = piece_shape(m)
        return torch.zeros(n, 1 << bits, q, dtype=torch.float64, device=device)
    return torch.zeros(q, m + 1, dtype=torch.float64, device=device)


def accumulated(acc: Tensor, m: int) -> Tensor:
    """``(q, m)`` float64 the values an :func:`accumulator` holds: over pieces, one product with the bits of every
    piece value."""
    if acc.dim() == 2:
        return acc[:, :m]
    n, size, q = acc.shape
    values = _piece_tables(size.bit_length() - 1, acc.device)[0].T @ acc  # (n, width, q)
    return values.reshape(-1, q)[:m].T


def pair_values(
    table: LeafTable,
    plan: Traversal,
    leaves: PairLeaves,
    rows: FeatureCodes,
    background: FeatureCodes,
    weights: tuple[Tensor, Tensor],
    acc: Tensor,
) -> tuple[int, int, int]:
    """Add the values of every (row, background row) pair of a tree range to the :func:`accumulator` ``acc`` of
    the rows and return the (row, node) visits, the most entries alive at one level and the (row, background row,
    leaf) pairs.

    Args:
        table, plan, leaves: the tree range.
        rows, background: the coded rows ``(p, Q)`` and at most ``64 · WORDS`` background rows ``(p, B)``.
        weights: ``(g, h)`` tables indexed ``[|G|, |F|]`` (:func:`~torchxplain.fourier.trees._leaf_games.weight_tables`)
            already divided by the background's full size.
    """
    q, n_bg = rows.code.shape[1], background.code.shape[1]
    device = rows.code.device
    full = _pack(torch.ones(1, n_bg, dtype=torch.bool, device=device))[0]
    small = max(plan.widest * max(q, n_bg), acc.numel()) < INDEX_LIMIT
    index = torch.int32 if small else torch.int64
    width = plan.inner_rows[0].numel() + plan.leaf_rows[0].numel()
    node = torch.arange(width, dtype=index, device=device).repeat_interleave(q)
    x = torch.arange(q, dtype=index, device=device).repeat(width)
    mask = full.expand(node.numel(), -1).clone()
    visits, peak, pairs, listed = 0, 0, 0, 0
    walk = replace(plan, inner_bit=leaves.inner_bit)
    dtype = walk.inner_bit[0].dtype if walk.inner_bit else torch.int64
    sides = frontiers(table, walk, rows, dtype), frontiers(table, walk, background, dtype)
    for level, (fx, fb) in enumerate(zip(*sides)):
        if not node.numel():
            break
        if level:  # the previous level's entries at both children: drop the background rows that now meet x
            bit = leaves.child_bit[level]
            fails = (fb & bit[:, None]) != 0  # (width, B): background rows failing the new player here
            stay = ~_pack(fails)  # rows x keeps where it fails the player (all where it does not: the first half)
            stay = torch.cat([torch.full_like(stay, -1), stay])
            x_fails = (fx.view(-1).index_select(0, torch.add(x, node, alpha=q)) & bit.index_select(0, node)) != 0
            mask &= stay.index_select(0, torch.add(node, x_fails, alpha=fb.shape[0]))
            alive = mask[:, 0].clone()  # any word set: or'ed word by word (Tensor.any over the words takes 1.7x)
            for w in range(1, mask.shape[1]):
                alive |= mask[:, w]
            alive = alive != 0
        else:
            alive = torch.ones_like(node, dtype=torch.bool)
        leaf = leaves.leaf[level].to(index).index_select(0, node)
        is_leaf = leaf >= 0
        at = torch.nonzero(alive & is_leaf).flatten()
        inner = torch.nonzero(alive & ~is_leaf).flatten()
        visits += at.numel() + inner.numel()
        peak = max(peak, at.numel() + inner.numel())
        if at.numel():
            on, xs, ls, masks = (t.index_select(0, at) for t in (node, x, leaf, mask))
            per_entry = pairs / listed if listed else 64.0 * mask.shape[1]  # every bit set until pairs are seen
            pairs += _leaf_games(fx, on, xs, ls, masks, leaves, weights, acc, fb, plan.leaf_rows[level], per_entry)
            listed += at.numel()
        k = leaves.inner[level].to(index).index_select(0, node.index_select(0, inner))
        node = torch.cat([k, k + plan.inner_rows[level].numel()])
        x, mask = (torch.cat([t, t]) for t in (x.index_select(0, inner), mask.index_select(0, inner)))
    return visits, peak, pairs


def _leaf_games(
    fx: Tensor,
    node: Tensor,
    x: Tensor,
    leaf: Tensor,
    masks: Tensor,
    leaves: PairLeaves,
    weights: tuple[Tensor, Tensor],
    acc: Tensor,
    fb: Tensor,
    leaf_rows: Tensor,
    per_entry: float,
) -> int:
    """The leaf games of one level's leaf entries (frontier rows ``node``, rows ``x``, leaves ``leaf``, background
    masks ``masks`` ``(E, W)``): their pairs listed (:func:`bit_batches` over the masks' words) in batches that fit
    an eighth of the budget (:data:`LIST_BYTES` each), then added in parts within another eighth (:data:`PAIR_BYTES`
    per pair, and per bit of its patterns over slots): by :func:`_add_pieces` (patterns over players; the level's
    background cells tabulated once its pairs, estimated from the first batch, reach :data:`CELL_PAIRS` per cell of
    its ``leaf_rows``), else by :func:`_add_slots`. The entries are taken in ranges whose words fit the first eighth
    (a batch holds at most one pass of a bit per word beyond its share), sized from ``per_entry``, the pairs per
    entry expected, to list in one batch: fewer, larger operations than ranges sized for every bit set (on the first
    20 trees of a default ``RandomForestRegressor(100)``, one thread: 4.30 s against 4.42 s at 1,000 rows against
    100 background rows, 4.40 s against 4.60 s at 100 against 1,000). Returns the number of pairs."""
    words = masks.shape[1]
    budget = parse_memory() // 8
    per_pair = PAIR_BYTES * (1 if leaves.by_player else leaves.players.shape[1] + 1)
    pair_step = max(1, budget // per_pair)
    most = max(1, budget // LIST_BYTES)
    list_step = max(1, min(most // words, int(pair_step / (2 * max(per_entry, 1.0)))))
    pairs = 0
    pieces: LevelPieces | None = None

    def add(part: slice, word: Tensor, bit: Tensor) -> None:
        nonlocal pieces
        if leaves.by_player:
            cells = leaf_rows.numel() * fb.shape[1]
            # the level's pairs, estimated as this part's pairs per entry times its entries, against its cells
            if pieces is None and word.numel() * node.numel() >= CELL_PAIRS * cells * (part.stop - part.start):
                pieces = _level_pieces(fb, leaf_rows, acc, weights[0].shape[1])
            _add_pieces(fx, fb, node[part], x[part], leaf[part], masks[part], word, bit, leaves, weights, acc, pieces)
            return
        entry = _entries(word, words)
        column = bit + 64 * (word - entry * words)
        _add_slots(fx, fb, node[part], x[part], column, leaf[part], entry, leaves, weights, acc)

    for lo, hi in chunk_bounds(node.numel(), list_step):
        for word, bit in bit_batches(masks[lo:hi].reshape(-1), min(most, pair_step)):
            pairs += word.numel()
            for a, c in chunk_bounds(word.numel(), pair_step):  # each pair once: the F side is linear in them
                add(slice(lo, hi), word[a:c], bit[a:c])
    return pairs


def bit_batches(words: Tensor, most: int) -> Iterator[tuple[Tensor, Tensor]]:
    """The set bits of ``(N,)`` int64 ``words`` as ``(index, position)`` pairs (bit ``position`` of
    ``words[index]``), in batches of at most ``max(most, N)`` pairs, plus at most ``64 · TAIL_WORDS``: the lowest set
    bit taken off each word in turn, the words still nonzero kept, so the work follows the set bits, not the word
    width; a batch closes before a pass that would take it past ``most`` (a pass lists one bit of each word left);
    the last :data:`TAIL_WORDS` words (the long tail of the words with most bits) are tested at all 64 positions at
    once instead of one pass per bit."""
    index = torch.nonzero(words).flatten()
    left = words.index_select(0, index)
    found: list[Tensor] = []
    at: list[Tensor] = []
    count = 0
    while index.numel():
        if index.numel() <= TAIL_WORDS:
            word, position = torch.nonzero((left[:, None] >> torch.arange(64, device=left.device)) & 1).unbind(1)
            found.append(index.index_select(0, word))
            at.append(position.to(torch.int32))
            break
        if found and count + index.numel() > most:
            yield torch.cat(found), torch.cat(at)
            found, at, count = [], [], 0
        low = left & -left
        count += index.numel()
        found.append(index)
        at.append(torch.frexp(low.float()).exponent - 1)  # a power of two (2^63 too) is exact in float32
        left = left ^ low
        keep = torch.nonzero(left).flatten()
        index, left = index.index_select(0, keep), left.index_select(0, keep)
    if found:
        yield torch.cat(found), torch.cat(at)


def _entries(word: Tensor, words: int) -> Tensor:
    """The entry of each listed mask word (``word = W · entry + w`` for masks of ``W`` words): a shift where ``W`` is
    a power of two."""
    return word >> (words.bit_length() - 1) if words & (words - 1) == 0 else word // words


def set_bits(words: Tensor) -> tuple[Tensor, Tensor]:
    """All the set bits of ``(N,)`` int64 ``words`` as ``(index, position)`` pairs, in one batch of
    :func:`bit_batches`."""
    for batch in bit_batches(words, 64 * words.numel()):
        return batch
    empty = torch.zeros(0, dtype=torch.int64, device=words.device)
    return empty, empty


def _add_slots(
    fx: Tensor,
    fb: Tensor,
    node: Tensor,
    x: Tensor,
    b: Tensor,
    leaf: Tensor,
    entry: Tensor,
    leaves: PairLeaves,
    weights: tuple[Tensor, Tensor],
    out: Tensor,
) -> None:
    """Each pair's leaf game in closed form, patterns over slots: pair ``i`` is (row ``x[entry[i]]``, background
    row ``b[i]``) at leaf ``leaf[entry[i]]`` (frontier row ``node[entry[i]]``). The row's ``F`` (one per entry)
    takes the sum of its pairs' ``−g`` weights once, each background row's ``G`` its ``h`` weight, added to ``out``
    ``(Q, m + 1)`` at ``(x, player)`` bit by bit (only the set bits are visited)."""
    g, h = weights
    n_entries = node.numel()
    f = fx.view(-1).index_select(0, torch.add(x, node, alpha=fx.shape[1]))  # (E,)
    gb = fb.view(-1).index_select(0, torch.add(b, node.index_select(0, entry), alpha=fb.shape[1]))  # (P,)
    f_entry, f_slot = set_bits(f)
    g_pair, g_slot = set_bits(gb)
    nb = torch.bincount(f_entry, minlength=n_entries)
    a = torch.bincount(g_pair, minlength=gb.numel())
    scale = leaves.value.index_select(0, leaf)
    cell = torch.add(nb.index_select(0, entry), a, alpha=g.shape[1])
    w_h = h.view(-1).index_select(0, cell) * scale.index_select(0, entry)
    w_g = torch.zeros(n_entries, dtype=g.dtype, device=g.device)
    w_g.scatter_add_(0, entry, g.view(-1).index_select(0, cell))
    w_g *= -scale
    flat = out.view(-1)
    width, depth = out.shape[1], leaves.players.shape[1]
    players = leaves.players.view(-1)
    row_at, slot_at = x * width, leaf * depth  # per entry: where its row's values and its leaf's players start
    at_f = players.index_select(0, slot_at.index_select(0, f_entry) + f_slot)
    flat.index_add_(0, row_at.index_select(0, f_entry) + at_f, w_g.index_select(0, f_entry))
    row_at, slot_at = row_at.index_select(0, entry), slot_at.index_select(0, entry)  # per pair
    at_g = players.index_select(0, slot_at.index_select(0, g_pair) + g_slot)
    flat.index_add_(0, row_at.index_select(0, g_pair) + at_g, w_h.index_select(0, g_pair))


@dataclass(frozen=True)
class LevelPieces:
    """The background side of one level's leaf games over players, per (leaf row, background row) cell.

    Attributes:
        row: ``(width_t,)`` int64 the first cell of each leaf row of the level (``position · B``; 0 at internal
            rows).
        offsets: per piece of the patterns (:func:`piece_shape`), ``(L_t · B,)`` int64 where the cell's pattern
            piece starts in the flat :func:`accumulator` (``(k · 2^width + piece) · Q``).
        cell: ``(L_t · B,)`` int64 the cell's ``|G|`` times the weight tables' row length.
    """

    row: Tensor
    offsets: list[Tensor]
    cell: Tensor


def _level_pieces(fb: Tensor, leaf_rows: Tensor, acc: Tensor, row_length: int) -> LevelPieces:
    """The :class:`LevelPieces` of a level from its background fail patterns ``fb`` ``(width_t, B)`` and leaf rows
    ``leaf_rows`` ``(L_t,)``, for the accumulator ``acc`` ``(n, 2^width, Q)``: computed once per cell instead of
    once per pair (about a dozen pairs share each cell on the default ``RandomForestRegressor(100)`` at 1,000
    rows)."""
    n_bg = fb.shape[1]
    n, size, q = acc.shape
    split, count = _pieces(fb.index_select(0, leaf_rows).view(-1), n, size.bit_length() - 1)
    offsets = [torch.add(piece.long() * q, k * size * q) for k, piece in enumerate(split)]
    row = torch.zeros(fb.shape[0], dtype=torch.int64, device=fb.device)
    row[leaf_rows] = torch.arange(0, leaf_rows.numel() * n_bg, n_bg, device=fb.device)
    return LevelPieces(row, offsets, count.long() * row_length)


def _add_pieces(
    fx: Tensor,
    fb: Tensor,
    node: Tensor,
    x: Tensor,
    leaf: Tensor,
    masks: Tensor,
    word: Tensor,
    bit: Tensor,
    leaves: PairLeaves,
    weights: tuple[Tensor, Tensor],
    out: Tensor,
    pieces: LevelPieces | None,
) -> None:
    """Each pair's leaf game in closed form, patterns over players: pair ``i`` is bit ``bit[i]`` of mask word
    ``word[i]`` (of the entries' ``(E, W)`` ``masks``), i.e. row ``x[e]`` with background row ``64 w + bit[i]`` at
    leaf ``leaf[e]`` (frontier row ``node[e]``) for ``word[i] = W e + w``. The row's ``F`` (one per entry) takes
    the sum of its pairs' ``−g`` weights once, each background row's ``G`` its ``h`` weight, each added to ``out``
    ``(n, 2^width, Q)`` (:func:`accumulator`) at each of its pieces' values and its row, so no bit is listed. The
    background side is read from the level's ``pieces`` where given, else from each pair's pattern in ``fb``."""
    g, h = weights
    n_entries, words = masks.shape
    n, size, q = out.shape
    entry = _entries(word, words)
    f = fx.view(-1).index_select(0, torch.add(x, node, alpha=fx.shape[1]))  # (E,)
    f_pieces, nb = _pieces(f, n, size.bit_length() - 1)
    if pieces is None:
        column = bit + 64 * (word - entry * words)
        gb = fb.view(-1).index_select(0, torch.add(column, node.index_select(0, entry), alpha=fb.shape[1]))
        g_pieces, a = _pieces(gb, n, size.bit_length() - 1)
        cell = torch.add(nb.index_select(0, entry), a, alpha=g.shape[1])
    else:
        first = pieces.row.index_select(0, node)[:, None] + torch.arange(0, 64 * words, 64, device=node.device)
        cells = first.view(-1).index_select(0, word) + bit  # (P,)
        cell = pieces.cell.index_select(0, cells) + nb.index_select(0, entry)
    scale = leaves.value.index_select(0, leaf)
    w_h = h.view(-1).index_select(0, cell) * scale.index_select(0, entry)
    w_g = torch.zeros(n_entries, dtype=g.dtype, device=g.device)
    w_g.scatter_add_(0, entry, g.view(-1).index_select(0, cell))
    w_g *= -scale
    flat = out.view(-1)
    start = x.long()  # int64: scatter_add_'s index (about half index_add_'s time)
    for k, piece in enumerate(f_pieces):
        flat.scatter_add_(0, torch.add(start, piece, alpha=q).add_(k * size * q), w_g)
    start = start.index_select(0, entry)
    for k in range(n):
        if pieces is None:
            at = torch.add(start, g_pieces[k], alpha=q).add_(k * size * q)
        else:
            at = pieces.offsets[k].index_select(0, cells).add_(start)
        flat.scatter_add_(0, at, w_h)


def piece_shape(m: int) -> tuple[int, int]:
    """The number of pieces and their width in bits (at most :data:`PIECE_BITS`, as even as they come) that cover
    the patterns of ``m`` players."""
    n = max(1, -(-m // PIECE_BITS))
    return n, max(1, -(-m // n))


def accumulator_bytes(m: int) -> int:
    """Bytes per row of the pattern accumulators of :func:`pair_values` for ``m`` players (none past
    :data:`PLAYER_BITS`)."""
    n, width = piece_shape(m)
    return 8 * n << width if m <= PLAYER_BITS else 0


@lru_cache(maxsize=8)
def _piece_tables(width: int, device: torch.device) -> tuple[Tensor, Tensor]:
    """``(2^width, width)`` float64 the bits of every piece pattern and ``(2^width,)`` int64 their numbers of set
    bits."""
    bits = (torch.arange(1 << width, device=device)[:, None] >> torch.arange(width, device=device) & 1).double()
    return bits, bits.sum(1).long()


def _pieces(patterns: Tensor, n: int, width: int) -> tuple[list[Tensor], Tensor]:
    """The ``n`` pieces of ``width`` bits of ``patterns`` (lowest first) and the patterns' numbers of set bits."""
    low = (1 << width) - 1
    pieces = [patterns & low] + [(patterns >> (width * i)) & low for i in range(1, n)]
    table = _piece_tables(width, patterns.device)[1]
    count = table.index_select(0, pieces[0])
    for piece in pieces[1:]:
        count += table.index_select(0, piece)
    return pieces, count

"""Exact interventional Shapley and Banzhaf values of tree ensembles from leaf patterns, without Fourier terms.

**One leaf.** A leaf's game for a (row, background row) pair is closed-form in the sets ``F`` (players the row
fails) and ``G`` (players the background row fails), zero unless they are disjoint
(:mod:`~torchxplain.fourier.trees._leaf_games`): ``h(|G|, |F|)`` on ``G``, ``−g(|G|, |F|)`` on ``F``, times the
leaf value.

**Sums over the background (dense form).** ``|G|`` depends on the background row alone and ``|F|`` on the row
alone, so with ``N_q`` background rows of satisfied pattern ``q`` (``q`` is ``U`` minus ``G``, ``d = |U|``):

    value on j ∈ F:   −(v/|D|) G[F],                 G[m]  = Σ_{q ⊇ m} N_q g(d − |q|, |m|)
    value on j ∉ F:   (v/|D|) (H[F] − H↑[F ∪ {j}]),  H[m]  = Σ_{q ⊇ m} N_q h(d − |q|, |m|),
                                                      H↑[m] = Σ_{q ⊇ m} N_q h(d − |q|, |m| − 1)

(``H[F] − H↑[F ∪ {j}]`` sums over the ``q ⊇ F`` that fail ``j``). The three arrays over all ``2^d`` patterns are
built once per background by *emission* — every distinct background pattern ``q`` adds its weight to each of its
``2^{|q|}`` sub-patterns — or by the ranked superset-sum transform (``d (d + 1) 2^d``), whichever is cheaper. The
background enters as counts of its patterns per leaf, taken during its traversal without holding the patterns
(:func:`~torchxplain.fourier.trees._leaves.fail_counts`); the rows of pattern 0 at a leaf are those that reach it, so
the same counts give the background's mean output (:meth:`LeafPlan.mean_output`, the explainer's base value). A row
then costs its fail patterns (:func:`~torchxplain.fourier.trees._leaves.fail_patterns`) and one gather per (leaf,
player) — from each leaf's table of slot values when the rows outnumber its patterns, else from the three arrays —
or, from 800 rows on, one gather per *unit* of leaves (:mod:`~torchxplain.fourier.trees._leaf_units`; tables of at
most :func:`unit_bits` bits, deeper leaves one by one). Rows enter only through their patterns and the background
only through its histogram: the cost grows with rows + background, not their product. A leaf with more than
:data:`MAX_DENSE_SLOTS` players sums its game over the (row, background row) pairs directly.

**Pair form.** Deep forests (many leaves of many players: random forests at their default depth) make ``2^d`` per
leaf dear; :mod:`~torchxplain.fourier.trees._leaf_pairs` follows each row down the trees with the background rows it
can still pair with instead. :meth:`LeafPlan._route` prices both forms for the call's rows and background (the
pair form from a probe of its visits and pairs, the dense form's emission from its first trees) and takes the
cheaper.

Memory: trees are taken in chunks whose arrays fit half of ``tx.settings.max_memory`` (the plan keeps them between
calls when one chunk holds them all), rows in chunks whose patterns and gathers fit it; the pair form sizes its
chunks from the probe's peak of live entries, within each worker thread's share of the budget on the CPU.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, parse_memory
from torchxplain._core.settings import MIN_MEMORY, max_memory
from torchxplain._core.threads import cpu_workers, run_split
from torchxplain.fourier.trees._leaf_games import Kind, popcount, weight_tables
from torchxplain.fourier.trees._leaf_pairs import (
    CELL_BYTES,
    WORDS,
    accumulated,
    accumulator,
    accumulator_bytes,
    pair_leaves,
    pair_values,
)
from torchxplain.fourier.trees._leaf_units import MAX_UNIT_BITS, UnitGroup, unit_groups, unit_roots
from torchxplain.fourier.trees._leaves import (
    FeatureCodes,
    LeafTable,
    Slots,
    Traversal,
    fail_counts,
    fail_patterns,
    pattern_dtype,
    predict,
    slots,
    traversal,
)

MAX_DENSE_SLOTS = 22
"""Leaves with more players than this take the pair form (a dense array holds ``2^d`` patterns)."""
WALK_BYTES = 1 << 23
"""Live entries of the pair form's walk per tree range (:data:`ENTRY_BYTES` each): a level's entries near the
processor's caches."""
ENTRY_BYTES = 8 * (WORDS + 4)
"""Bytes of one live entry of the pair form's walk (its frontier row, row, leaf and masks, and their copies)."""
CACHE_BYTES = 1 << 25
"""Rows per chunk of the dense form: their patterns and gathers stay near the processor's caches."""
EMIT_NS = 5.3
"""Nanoseconds per sub-pattern emitted by :func:`_emit` (measured on a default ``RandomForestRegressor(100)``'s
first 10 trees, one thread: 10.1, 6.1 and 5.1 against 100, 1,000 and 10,000 background rows)."""
RANKED_NS = 1.4
"""Nanoseconds per element (``d (d + 1)`` per table entry) of the ranked transform :func:`_ranked` (same trees:
11.4 s for 8.3e9 elements). Chosen against the emission by these prices, it took those trees' tables at 10,000
background rows, their background counts included, from 16.0 to 12.9 s (at 100 and 1,000 rows the emission
stays)."""
UNIT_BYTES = 1 << 26
"""Rows per chunk of the unit form, priced at its traversal, patterns, output rows and one unit's gathers per row (a
pass gathers at most ``2^17`` values, however many rows: pricing a whole group's gathers per row made chunks of 232
rows on LightGBM 500, 15% slower at 10,000 rows than the 690 of this pricing, XGBoost 100 × 6, 100 × 8 and 100 × 10
9-12%; 32 and 128 MiB within 3% of 64)."""


@dataclass
class _Group:
    """The leaves of one tree chunk with ``d`` players (rows ``start..stop`` of the chunk's leaf block), and their
    background arrays for one kind of value.

    Attributes:
        players: ``(L_d, d)`` the slots' players; scale: ``(L_d,)`` ``v / |D|``.
        arrays: ``(3, L_d · 2^d)`` ``G, H, H↑`` times each leaf's scale (dense form), or ``None`` for the pair
            form, which keeps the background's fail patterns ``background`` ``(L_d, B)`` instead.
        table: ``(L_d, d, 2^d)`` every slot's value at every fail pattern, scale included (built from the arrays
            when rows outnumber patterns), or ``None``.
    """

    d: int
    start: int
    stop: int
    players: Tensor
    scale: Tensor
    arrays: Tensor | None
    background: Tensor | None
    table: Tensor | None = None

    @property
    def n_leaves(self) -> int:
        return self.stop - self.start


def _emit(counts: Tensor, d: int, kind: Kind, dtype: torch.dtype) -> Tensor:
    """The ``(3, L · 2^d)`` arrays ``G, H, H↑`` of ``L`` leaves from the background's counts of fail patterns
    ``(L · 2^d,)`` (entry ``2^d i + F``: the rows of pattern ``F`` at leaf ``i``, :func:`fail_counts`).

    Distinct satisfied patterns ``q`` with ``k`` bits are taken ``k`` at a time: their ``2^k`` sub-patterns are
    built by doubling (``2^k`` entries, one ``or`` each) from the bit positions, and each array gains
    ``N_q · w(|q|, |sub|)`` by ``scatter_add_`` (measured: 2.5 ns per entry against ``index_add_``'s 4.3)."""
    size, full = counts.numel(), (1 << d) - 1
    n_leaves, device = size >> d, counts.device
    found = torch.nonzero(counts).flatten()
    count = counts[found].to(dtype)
    found ^= full  # fail pattern F -> satisfied pattern q = U \ F, within each leaf's block
    q = found & full
    k = popcount(q)
    g, h = weight_tables(kind, d, dtype)
    emission, ranked = _form_costs(k, d, size)
    if emission > ranked:  # many satisfied patterns: the ranked sums are cheaper
        return _ranked(found, count, k, n_leaves, d, g, h, dtype)
    out = torch.zeros(3, size, dtype=dtype, device=device)
    shifts = torch.ones(d, dtype=torch.int64, device=device) << torch.arange(d, device=device)
    k, order = torch.sort(k, stable=True)  # patterns by number of bits: each size one slice
    found, count = found[order], count[order]
    # the set bits of every pattern, in order: row-major nonzero lists exactly k of them per pattern
    ones = shifts[torch.nonzero((found & full)[:, None] & shifts)[:, 1]]
    start = listed = 0
    for size_k, n in enumerate(torch.bincount(k, minlength=d + 1).tolist()):
        if not n:
            continue
        bits = ones[listed : listed + n * size_k].view(n, size_k)
        base, weight = found[start : start + n] & ~full, count[start : start + n, None]  # leaf blocks; counts
        start, listed = start + n, listed + n * size_k
        s = popcount(torch.arange(1 << size_k, device=device))
        weights = torch.stack([g[d - size_k, s], h[d - size_k, s], h[d - size_k, (s - 1).clamp(min=0)] * (s >= 1)])
        step = max(1, min(parse_memory(), CACHE_BYTES) // (64 << size_k))
        for a, b in chunk_bounds(n, step):
            index = torch.empty(b - a, 1 << size_k, dtype=torch.int64, device=device)
            index[:, 0] = base[a:b]  # sub-pattern 0
            for j in range(size_k):  # sub-patterns with bit j: those without it, or'ed with the j-th set bit
                torch.bitwise_or(index[:, : 1 << j], bits[a:b, j, None], out=index[:, 1 << j : 2 << j])
            index = index.reshape(-1)
            for i in range(3):
                out[i].scatter_add_(0, index, (weight[a:b] * weights[i]).reshape(-1))
    return out


def _form_costs(k: Tensor, d: int, size: int) -> tuple[float, float]:
    """Nanoseconds of :func:`_emit`'s two forms for ``size`` table entries of ``d`` players whose distinct
    background patterns satisfy ``k`` ``(N,)`` players each: the emission (``2^k`` sub-patterns per pattern at
    :data:`EMIT_NS`) and the ranked transform (``d (d + 1)`` per entry at :data:`RANKED_NS`)."""
    emitted = int((torch.ones_like(k) << k).sum()) if k.numel() else 0
    return EMIT_NS * emitted, RANKED_NS * d * (d + 1) * size


def _ranked(
    found: Tensor, count: Tensor, k: Tensor, n_leaves: int, d: int, g: Tensor, h: Tensor, dtype: torch.dtype
) -> Tensor:
    """:func:`_emit`'s arrays by the ranked superset-sum transform: ``S[m, r] = Σ_{q ⊇ m, |q| = r} N_q``."""
    device = found.device
    ranked = torch.zeros(n_leaves << d, d + 1, dtype=dtype, device=device)
    ranked[found, k] = count
    view = ranked.view(n_leaves, 1 << d, d + 1)
    for i in range(d):  # superset sums, one bit at a time: patterns without bit i gain those with it
        pair = view.view(n_leaves, 1 << (d - 1 - i), 2, 1 << i, d + 1)
        pair[:, :, 0] += pair[:, :, 1]
    m = torch.arange(1 << d, device=device)
    s = popcount(m)
    a = d - torch.arange(d + 1, device=device)  # |A| for each rank r = |q|
    wg = g[a[None, :], s[:, None]]  # (2^d, d + 1)
    wh = h[a[None, :], s[:, None]]
    wu = h[a[None, :], (s - 1).clamp(min=0)[:, None]] * (s >= 1)[:, None]
    out = torch.stack([(view * w).sum(2) for w in (wg, wh, wu)])
    return out.reshape(3, -1)


class LeafPlan:
    """Exact interventional values of one explained output of a tree ensemble against one background (module
    docstring): the value provider of the leaf route.

    Each chunk of trees takes the dense form (tables over fail patterns; cost ``Σ_leaves 2^d`` once, then ``d``
    gathers per row and leaf) or the pair form (:mod:`~torchxplain.fourier.trees._leaf_pairs`; cost the pairs'
    visits, ``Q · |D| ·`` visits per pair and tree, measured on a probe), whichever the cost model prices lower.

    Args:
        table: the output's :class:`~torchxplain.fourier.trees._leaves.LeafTable`.
        background: ``(B, p)`` raw background rows (category ids in categorical columns).
        groups: ``(p,)`` int64 player of each feature (``0..m-1``), or ``None``: one player per feature.
        m: number of players.
        dtype: the dtype values come back in (computation is float64).
        description: the model, for messages.
    """

    def __init__(
        self,
        table: LeafTable,
        background: Tensor,
        groups: Tensor | None,
        m: int,
        dtype: torch.dtype = torch.float64,
        description: str = "the model",
    ) -> None:
        device = table.left.device
        self.table, self.m, self.dtype = table, m, dtype
        player = groups.to(device) if groups is not None else torch.arange(table.n_features, device=device)
        self._player = player
        self.slots: Slots = slots(table, player, description)
        self.background = background.to(device)
        self._codes = table.codes(self.background)
        self._chunks = self._tree_chunks()
        self._cache: dict[tuple[Kind, int], list[_Group]] = {}
        self._schedules: dict[int, Traversal] = {}
        self._rows: dict[int, Tensor] = {}  # per tree chunk, rows of ``slots.leaves`` in its leaf-block order
        self._unit_cache: dict[tuple[Kind, int, int, int], tuple[Traversal, list[UnitGroup], list[_Group]]] = {}
        self._visits: tuple[float, float, float] | None = None  # the pair form's probe (:meth:`_probe`)
        self._emitted: float | None = None  # nanoseconds of the dense tables' emission per entry (:meth:`_emission`)
        self._reached: dict[int, Tensor] = {}  # per tree chunk, Σ leaf value × background rows reaching the leaf
        self.route = "dense"
        """The form the last call took (``"dense"`` or ``"pairs"``)."""
        self.reason = "no call yet"
        """Why the last call took its form: both forms' prices, or why the pair form was not priced."""

    # --- the public provider interface --------------------------------------------------------------------
    def shapley(self, x: Tensor, relaxed: bool = False) -> Tensor:
        """``(Q, m)`` interventional Shapley values of raw rows ``x`` ``(Q, p)``."""
        if relaxed:
            raise ValueError("relaxed=True explains a spectrum's extension; tree leaves have none")
        return self._values("shapley", x)

    def banzhaf(self, x: Tensor) -> Tensor:
        """``(Q, m)`` interventional Banzhaf values of raw rows ``x`` ``(Q, p)``."""
        return self._values("banzhaf", x)

    def predict(self, x: Tensor) -> Tensor:
        """``(Q,)`` the ensemble's output at raw rows ``x`` (float64): :func:`outputs`."""
        return leaf_outputs(self.table, x)

    def mean_output(self) -> Tensor:
        """``()`` float64 the ensemble's mean output over the background: from the counts of its fail patterns where
        every tree chunk's were taken (a leaf's rows of pattern 0 are the rows that reach it), else by descending
        the background through the trees."""
        if len(self._reached) < len(self._chunks):
            return leaf_outputs(self.table, self.background).mean()
        reached = torch.stack(list(self._reached.values())).sum()
        return self.table.offset + reached / self.background.shape[0]

    # --- chunks of trees -------------------------------------------------------------------------------------
    def _tree_chunks(self) -> list[tuple[int, int]]:
        """Tree ranges of the dense form whose arrays fit half the budget, each at least one tree: per leaf of at
        most :data:`MAX_DENSE_SLOTS` players its three arrays, the ranked transform's ``d + 1`` columns and its
        slot table's ``d`` rows over ``2^d`` patterns; per deeper leaf its background patterns; and per leaf its
        background fail patterns."""
        d = self.slots.n_slots.double()
        per_leaf = torch.where(
            d <= MAX_DENSE_SLOTS,
            8 * (2 * d + 4) * torch.pow(2.0, d.clamp(max=MAX_DENSE_SLOTS)),
            8.0 * self.background.shape[0],
        ) + 16 * (self.background.shape[0] + 1)
        return _ranges(self._per_tree(per_leaf), parse_memory() / 2)

    def _per_tree(self, per_leaf: Tensor) -> list[float]:
        """``(L,)`` float64 values per leaf of ``slots.leaves`` summed per tree: ``n_trees`` floats."""
        total = torch.zeros(self.table.n_trees, dtype=torch.float64, device=per_leaf.device)
        return total.index_add_(0, self.table.tree[self.slots.leaves], per_leaf).tolist()

    def _pair_chunks(self, rows: int, peak: float) -> list[tuple[int, int]]:
        """Tree ranges of the pair form for ``rows`` rows per chunk: their frontiers (rows and one pass of background
        rows, three buffers each) and a level's background cells (:data:`CELL_BYTES` per leaf and background row)
        within a quarter of the budget, and their live entries (``peak`` per row and tree, at :data:`ENTRY_BYTES`
        each) within :data:`WALK_BYTES`, so that a level's entries stay near the caches."""
        table = self.table
        widths = torch.bincount(table.tree * (table.max_depth + 1) + table.depth)
        widths = torch.nn.functional.pad(widths, (0, table.n_trees * (table.max_depth + 1) - widths.numel()))
        widest = widths.view(table.n_trees, -1).max(1).values.double()
        n_pass = min(self.background.shape[0], 64 * WORDS)
        frontier = (48.0 * (rows + n_pass) + CELL_BYTES * n_pass) * widest / (parse_memory() / 4)
        walk = ENTRY_BYTES * peak * rows / WALK_BYTES
        return _ranges(frontier.clamp(min=walk).tolist(), 1.0)

    def _schedule(self, chunk: int) -> Traversal:
        """The traversal of dense tree chunk ``chunk``, its leaves ordered by number of players (groups
        contiguous)."""
        if chunk not in self._schedules:
            first, last = self._chunks[chunk]
            self._schedules[chunk], self._rows[chunk] = self._traversal(first, last)
        return self._schedules[chunk]

    def _traversal(self, first: int, last: int) -> tuple[Traversal, Tensor]:
        """The traversal of trees ``first..last-1`` and the rows of ``slots.leaves`` in its leaf order (by number
        of players)."""
        lo, hi = int(self.table.tree_start[first]), int(self.table.tree_start[last])
        leaves = self.slots.leaves
        rows = torch.nonzero((leaves >= lo) & (leaves < hi)).flatten()
        rows = rows[torch.argsort(self.slots.n_slots[rows], stable=True)]
        return traversal(self.table, self.slots, (first, last), leaves[rows]), rows

    def _background_counts(self, plan: Traversal, n_slots: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """The background's counts of fail patterns at the leaves of ``plan`` (ordered by their numbers of players
        ``n_slots``: those of the dense form first, counted; the deeper keep their patterns): the counts, the deeper
        leaves' patterns and each counted leaf's offset (:func:`~torchxplain.fourier.trees._leaves.fail_counts`)."""
        dense = n_slots[n_slots <= MAX_DENSE_SLOTS]
        entries = torch.ones_like(dense) << dense
        offset = torch.cumsum(entries, 0) - entries
        counts, background = fail_counts(
            self.table, plan, self._codes, offset, int(entries.sum()), pattern_dtype(self.slots.max_slots)
        )
        return counts, background, offset

    def _groups(self, kind: Kind, chunk: int) -> list[_Group]:
        """The leaf groups of tree chunk ``chunk`` with their background arrays (cached when all chunks fit)."""
        key = (kind, chunk)
        if key in self._cache:
            return self._cache[key]
        plan = self._schedule(chunk)
        rows = self._rows[chunk]
        table, slot = self.table, self.slots
        n_slots = slot.n_slots[rows]
        counts, background, offset = self._background_counts(plan, n_slots)
        value = table.value[plan.leaves]
        # the background's mean output from the same counts: each leaf's value times the rows that reach it
        # (pattern 0), summed per chunk; :meth:`mean_output` adds the chunks
        reached = torch.cat([counts[offset], (background == 0).sum(1)]).double()
        self._reached[chunk] = (value * reached).sum()
        scale = value / self.background.shape[0]
        sizes = torch.bincount(n_slots, minlength=slot.max_slots + 1).tolist()
        groups, start = [], 0
        for d, count in enumerate(sizes):
            stop = start + count
            if d == 0 or count == 0:  # a constant tree moves no player
                start = stop
                continue
            players = slot.players[rows[start:stop], :d]
            if d <= MAX_DENSE_SLOTS:
                first = int(offset[start])
                arrays = _emit(counts[first : first + (count << d)], d, kind, torch.float64)
                arrays.view(3, count, 1 << d).mul_(scale[start:stop, None])
                group = _Group(d, start, stop, players, scale[start:stop], arrays, None)
            else:
                deep = background[start - offset.numel() : stop - offset.numel()].long()
                group = _Group(d, start, stop, players, scale[start:stop], None, deep)
            groups.append(group)
            start = stop
        if len(self._chunks) == 1:
            self._cache[key] = groups
        return groups

    # --- the cost model ----------------------------------------------------------------------------------------
    def _route(self, x: Tensor) -> tuple[str, str]:
        """``"dense"`` or ``"pairs"`` for ``Q = len(x)`` rows, whichever is priced lower in nanoseconds, one thread,
        and why (:attr:`reason`).

        Dense: ``40`` per table entry (``Σ 2^d``), the background's emission (:func:`_emit`, measured on the first
        trees by :meth:`_emission` where it decides) and ``2.5`` per (background row, node) of its traversal; per row
        ``8`` per node and ``1`` per (leaf, slot). Pairs (:meth:`_probe`): per pass of up to ``64 · WORDS`` background
        rows ``22 + 4`` per word for each (row, node) visit, and ``49`` per (row, background row, leaf) pair. Fitted
        on a default ``RandomForestRegressor(100)`` (25 players), one thread, whole calls (priced in brackets): the
        dense form 40 s (42) at 1,000 rows against 100 background rows, 111 s (113) at 10,000 against 100, 97 s (85)
        at 1,000 against 1,000, 159 s (157) at 10,000 against 1,000, 138 s (166) at 100 against 10,000, 154 s (173)
        at 1,000 against 10,000, 227 s (245) at 10,000 against 10,000 (there the emission is priced at its bound:
        the probe's counts do not fit the default budget); the pairs 24 s (24) at 1,000 against 100,
        23 s (20) at 100 against 1,000 and 214 s (204) at 100 against 10,000, which the earlier pricing (one pass,
        a pair per visit, no emission) took.
        """
        if any(key[1] == 0 for key in self._cache):
            return "dense", "the background's dense tables are built already (rows cost the same either way)"
        if not x.shape[0]:
            return "dense", "no rows"
        d = self.slots.n_slots.double()
        q, n_bg = x.shape[0], self.background.shape[0]
        n_nodes, n_trees = self.table.n_nodes, self.table.n_trees
        entries = float(torch.pow(2.0, d.clamp(max=MAX_DENSE_SLOTS)).sum())
        dense = 40.0 * entries + 2.5 * n_bg * n_nodes + q * (8.0 * n_nodes + float(d.sum()))
        if bool((d > MAX_DENSE_SLOTS).any()):
            dense = float("inf")
        if dense < 1e7:  # small either way: no probe
            return "dense", f"the dense form is priced at {dense / 1e9:.2g} s, too little to price the pair form"
        visits, _, pairs = self._probe(x)
        passes, words = -(-n_bg // (64 * WORDS)), -(-min(n_bg, 64 * WORDS) // 64)
        paired = q * n_trees * (passes * visits * (22.0 + 4.0 * words) + 49.0 * pairs * n_bg)
        # the emission costs between nothing and the ranked transform: measured only where the bounds disagree
        most = dense + self._ranked_bound() * entries
        if paired >= dense and most > paired:
            dense = most = dense + self._emission() * entries
        form = "dense" if dense <= paired else "pairs"
        if dense == float("inf"):
            priced = f"leaves of more than {MAX_DENSE_SLOTS} players have no dense tables"
        else:
            span = f"{dense / 1e9:.3g} s" if most == dense else f"{dense / 1e9:.3g} to {most / 1e9:.3g} s"
            priced = f"priced {paired / 1e9:.3g} s for the pair form against {span} for the dense form"
        return form, f"{priced} ({q:,} rows against {n_bg:,} background rows, one thread)"

    def _ranked_bound(self) -> float:
        """Nanoseconds per table entry of the ranked transform at every leaf (``d (d + 1)`` per entry at
        :data:`RANKED_NS`): the most :func:`_emit` costs."""
        d = self.slots.n_slots.double().clamp(max=MAX_DENSE_SLOTS)
        entries = torch.pow(2.0, d)
        return RANKED_NS * float((d * (d + 1) * entries).sum()) / float(entries.sum())

    def _emission(self) -> float:
        """Nanoseconds per table entry of :func:`_emit` on the background's patterns (per number of players the
        cheaper of its forms, :func:`_form_costs`), measured on the first two trees whose counts and background
        patterns fit half the budget (priced as the dense form's tree chunks price them); where not even the first
        tree's fit, the bound :meth:`_ranked_bound`."""
        if self._emitted is None:
            d = self.slots.n_slots.double()
            per_leaf = 8 * torch.pow(2.0, d.clamp(max=MAX_DENSE_SLOTS)) + 16 * (self.background.shape[0] + 1)
            cost = self._per_tree(per_leaf)[:2]
            trees = _ranges(cost, parse_memory() / 2)[0][1] if cost[0] <= parse_memory() / 2 else 0
            if not trees:
                self._emitted = self._ranked_bound()
                return self._emitted
            plan, rows = self._traversal(0, trees)
            n_slots = self.slots.n_slots[rows]
            counts, _, offset = self._background_counts(plan, n_slots)
            emitted, start = 0.0, 0
            for k, count in enumerate(torch.bincount(n_slots[: offset.numel()], minlength=1).tolist()):
                size = count << k
                found = torch.nonzero(counts[start : start + size]).flatten()
                emitted += min(_form_costs(popcount(~found & ((1 << k) - 1)), k, size))
                start += size
            self._emitted = emitted / max(counts.numel(), 1)
        return self._emitted

    def _probe(self, x: Tensor) -> tuple[float, float, float]:
        """The pair form measured on up to 4 rows against the first ``64 · WORDS`` background rows on the first 8
        trees: (row, node) visits and peak live entries per (row, tree), and pairs per (row, tree, background row)."""
        if self._visits is None:
            trees = min(self.table.n_trees, 8)
            plan, _ = self._traversal(0, trees)
            few_x, few_b = x[: min(4, x.shape[0])], self.background[: 64 * WORDS]
            leaves = pair_leaves(self.table, self.slots, plan, self._player, self.m)
            weights = weight_tables("shapley", max(self.slots.max_slots, 1))
            scratch = accumulator(few_x.shape[0], self.m, x.device)
            codes = self.table.codes(few_x), self.table.codes(few_b)
            visits, peak, pairs = pair_values(self.table, plan, leaves, *codes, weights, scratch)
            per = max(1, few_x.shape[0] * trees)
            self._visits = (visits / per, peak / per, pairs / per / few_b.shape[0])
        return self._visits

    # --- values ----------------------------------------------------------------------------------------------
    def _values(self, kind: Kind, x: Tensor) -> Tensor:
        device = self.table.left.device
        x = x.to(device)
        out = torch.zeros(self.m, x.shape[0], dtype=torch.float64, device=device)
        self.route, self.reason = self._route(x)
        if self.route == "pairs":
            self._pair_values(kind, x, out)
        else:
            for chunk in range(len(self._chunks)):
                self._dense_values(kind, chunk, x, out)
        return out.T.to(self.dtype)

    def _dense_values(self, kind: Kind, chunk: int, x: Tensor, out: Tensor) -> None:
        """Tree chunk ``chunk``'s values at rows ``x`` by the dense tables, added to ``out`` ``(m, Q)``: per leaf,
        or per unit of leaves when the rows are many enough to pay for the units' tables."""
        height = unit_height(x.shape[0])
        if height:
            self._unit_values(kind, chunk, x, out, height)
            return
        groups = self._groups(kind, chunk)
        plan = self._schedule(chunk)
        for group in groups:
            if group.table is None and group.arrays is not None and (1 << group.d) <= x.shape[0]:
                group.table = _slot_table(group)
        per_row = 8 * (plan.leaves.numel() + 3 * plan.widest) + max([24 * g.n_leaves * g.d for g in groups] + [0])
        step = max(1, min(x.shape[0], min(parse_memory(), CACHE_BYTES) // max(per_row, 1)))
        for a, b in chunk_bounds(x.shape[0], step):
            patterns = fail_patterns(self.table, plan, self.table.codes(x[a:b]))
            part_out = out if b - a == x.shape[0] else torch.zeros(self.m, b - a, dtype=out.dtype, device=out.device)
            for group in groups:
                part = self._leaves_per_pass(group, b - a)
                for lo in range(group.start, group.stop, part):
                    hi = min(lo + part, group.stop)
                    self._accumulate(kind, group, lo, hi, patterns[lo:hi], part_out)
            if part_out is not out:  # a contiguous buffer: index_add_ into a strided slice costs 4x as much
                out[:, a:b] += part_out

    def _pair_values(self, kind: Kind, x: Tensor, out: Tensor) -> None:
        """The values at rows ``x`` by the pair form, added to ``out`` ``(m, Q)``: chunks of rows whose accumulators
        (:func:`~torchxplain.fourier.trees._leaf_pairs.accumulator`) and live entries fit half the budget, read
        once per chunk; within one, ranges of trees (:meth:`_pair_chunks`: frontiers in a quarter) and passes of
        ``64 · WORDS`` background rows (each level's leaf games in the last quarter).

        On the CPU the ranges of trees are dealt out in turn to ``torch.get_num_threads()`` threads
        (:func:`~torchxplain._core.threads.run_split`), each with its own accumulator and an equal share of the
        budget for all of the above; the accumulators are added in thread order, so a given thread count gives
        the same values at any load (another count differs only by rounding). The walk's operations are too small
        for torch's intra-op threads to pay. Measured on a default ``RandomForestRegressor(100)``, 1,000 rows
        against 100 background rows, two cores, wall time: its first 20 trees 4.6 s on one thread, 4.0 s with two
        intra-op threads, 2.8 s with two workers; all 100 trees 25.1 s on one thread, 17.5 s with two workers."""
        peak = self._probe(x)[1]
        g, h = weight_tables(kind, max(self.slots.max_slots, 1))
        n_bg = self.background.shape[0]
        weights = (g / n_bg, h / n_bg)
        workers = min(cpu_workers(x.device, self.table.n_trees), parse_memory() // MIN_MEMORY)
        with max_memory(parse_memory() // workers):  # each worker's share, in the context the workers copy
            per_row = accumulator_bytes(self.m) + ENTRY_BYTES * max(peak, 1.0)
            row_step = max(1, min(x.shape[0], int(parse_memory() / 2 // per_row)))
            row_step = -(-x.shape[0] // -(-x.shape[0] // row_step))  # chunks of even size: none left nearly empty
            trees = self._pair_chunks(row_step, max(peak, 1.0))
            workers = min(workers, len(trees))
            for a, c in chunk_bounds(x.shape[0], row_step):
                codes = self.table.codes(x[a:c])

                def work(worker: int, a: int = a, c: int = c, codes: FeatureCodes = codes) -> Tensor:
                    acc = accumulator(c - a, self.m, x.device)
                    for first, last in trees[worker::workers]:
                        self._pair_range(first, last, codes, weights, acc)
                    return acc

                accs = run_split(work, workers)
                for other in accs[1:]:
                    accs[0] += other
                out[:, a:c] += accumulated(accs[0], self.m).T

    def _pair_range(
        self, first: int, last: int, codes: FeatureCodes, weights: tuple[Tensor, Tensor], acc: Tensor
    ) -> None:
        """Add trees ``first..last-1``'s pair values at rows ``codes`` to the accumulator ``acc``, in passes of
        ``64 · WORDS`` background rows."""
        plan, _ = self._traversal(first, last)
        leaves = pair_leaves(self.table, self.slots, plan, self._player, self.m)
        for lo, hi in chunk_bounds(self.background.shape[0], 64 * WORDS):
            background = FeatureCodes(
                self._codes.code[:, lo:hi],
                None if self._codes.missing is None else self._codes.missing[:, lo:hi],
                None if self._codes.zero is None else self._codes.zero[:, lo:hi],
            )
            pair_values(self.table, plan, leaves, codes, background, weights, acc)

    def _units(
        self, kind: Kind, chunk: int, height: int, x_rows: int
    ) -> tuple[Traversal, list[UnitGroup], list[_Group]]:
        """The units of tree chunk ``chunk`` for a call of ``x_rows`` rows (tables of at most :func:`unit_bits`
        bits): the traversal that stops at their roots (then at the leaves too deep for a unit), their tables, and
        those leaves' groups (rows shifted past the units'); cached when all chunks fit."""
        most = unit_bits(x_rows)
        key = (kind, chunk, height, most)
        if key in self._unit_cache:
            return self._unit_cache[key]
        groups = self._groups(kind, chunk)
        plan = self._schedule(chunk)
        table, slot = self.table, self.slots
        offset = torch.zeros(table.n_nodes, dtype=torch.int64, device=table.left.device)
        leaf_d = torch.zeros_like(offset)
        parts, base = [], 0
        for group in groups:
            if group.d > most or group.arrays is None:
                continue
            values = group.table if group.table is not None else _slot_table(group)
            nodes = plan.leaves[group.start : group.stop]
            offset[nodes] = base + torch.arange(nodes.numel(), device=nodes.device) * (group.d << group.d)
            leaf_d[nodes] = group.d
            parts.append(values.reshape(-1))
            base += values.numel()
        flat = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.float64, device=table.left.device)
        first, last = self._chunks[chunk]
        nodes = torch.arange(int(table.tree_start[first]), int(table.tree_start[last]), device=table.left.device)
        roots = unit_roots(table, slot, nodes, height, most)
        # leaves of one slot-less tree (a constant) and leaves too deep for a unit keep their own paths
        units = roots[(table.left[roots] >= 0) | (leaf_d[roots] > 0)]
        unit_tables = [
            _by_size(g, self.m) for g in unit_groups(table, slot, units, height, (flat, offset, leaf_d), self.m)
        ]
        # the terminal block lists each width's units together, so a group's root patterns are one slice of rows
        units = units[torch.cat([g.rows for g in unit_tables])] if unit_tables else units
        listed = 0
        for i, g in enumerate(unit_tables):
            rows = torch.arange(listed, listed + g.rows.numel(), device=g.rows.device)
            unit_tables[i] = dataclasses.replace(g, rows=rows)
            listed += g.rows.numel()
        deep = [g for g in groups if g.d > most]
        first_deep = deep[0].start if deep else plan.leaves.numel()
        shift = units.numel() - first_deep
        deep = [dataclasses.replace(g, start=g.start + shift, stop=g.stop + shift) for g in deep]
        terminals = torch.cat([units, plan.leaves[first_deep:]])
        stop = torch.zeros(table.n_nodes, dtype=torch.bool, device=table.left.device)
        stop[units] = True
        found = (traversal(table, slot, (first, last), terminals, stop), unit_tables, deep)
        if len(self._chunks) == 1:
            self._unit_cache[key] = found
        return found

    def _unit_values(self, kind: Kind, chunk: int, x: Tensor, out: Tensor, height: int) -> None:
        """Tree chunk ``chunk``'s values at rows ``x`` by units (:mod:`~torchxplain.fourier.trees._leaf_units`)."""
        plan, units, deep = self._units(kind, chunk, height, x.shape[0])
        widest = max([g.table.shape[1] for g in units] + [1])
        per_row = 8 * (plan.leaves.numel() + 3 * plan.widest + self.m + 1) + 24 * widest
        step = max(1, min(x.shape[0], min(parse_memory(), UNIT_BYTES) // max(per_row, 1)))
        # per group: its decision weights in int16 (tables of at most 10 bits), splits and columns per unit
        steps = [
            (g.weights.to(torch.int16), (g.weights > 0).sum(1).tolist(), (g.players < self.m).sum(1).tolist())
            for g in units
        ]
        narrow = pattern_dtype(self.slots.max_slots)
        state_dtype = torch.promote_types(torch.int16, narrow)
        for g in deep:
            if g.table is None and g.arrays is not None and (1 << g.d) <= x.shape[0]:
                g.table = _slot_table(g)
        for a, b in chunk_bounds(x.shape[0], step):
            # the chunk's values gather in a contiguous buffer (row m takes the units' padding columns): adding
            # rows into a strided slice of ``out`` costs four times as much
            padded = torch.zeros(self.m + 1, b - a, dtype=torch.float64, device=x.device)
            codes = self.table.codes(x[a:b])
            patterns = fail_patterns(self.table, plan, codes, narrow)
            for group, (weights, n_keys, n_columns) in zip(units, steps, strict=True):
                first = int(group.rows[0])
                part = max(1, (1 << 17) // (group.table.shape[1] * (b - a)))
                for lo in range(0, len(n_keys), part):
                    hi = min(lo + part, len(n_keys))
                    # units sorted by splits, then columns: the part's first has the most splits; past a unit's
                    # own splits and columns the padding is skipped where the whole part has it
                    k, width = n_keys[lo], max(n_columns[lo:hi])
                    state = patterns[first + lo : first + hi]
                    if k:
                        keys = group.keys[lo:hi, :k].reshape(-1)
                        right = self.table.goes_right(keys, codes).view(hi - lo, k, -1)
                        # the decisions weighted past the root's pattern (the group's patterns are one slice of
                        # rows), summed in int16 (same-dtype products: mixed ones take a slow path)
                        packed = (right.to(torch.int16) * weights[lo:hi, :k, None]).sum(1, dtype=state_dtype)
                        state = packed.add_(state)
                    index = state.long()[:, None, :].expand(-1, width, -1)  # a copy only for a part without splits
                    values = torch.gather(group.table[lo:hi, :width], 2, index)
                    padded.index_add_(0, group.players[lo:hi, :width].reshape(-1), values.reshape(-1, b - a))
            for g in deep:
                part = self._leaves_per_pass(g, b - a)
                for lo in range(g.start, g.stop, part):
                    hi = min(lo + part, g.stop)
                    self._accumulate(kind, g, lo, hi, patterns[lo:hi].long(), padded[: self.m])
            out[:, a:b] += padded[: self.m]

    def _leaves_per_pass(self, group: _Group, rows: int) -> int:
        """Leaves of ``group`` per pass over ``rows`` rows: gathers that stay in cache, or for the pair form its
        ``(leaves, rows, background)`` products within the budget."""
        if group.background is None:
            return max(1, (1 << 17) // (group.d * rows))
        per_leaf = 8 * rows * (4 * self.background.shape[0] + 3 * group.d)
        return max(1, min(parse_memory(), CACHE_BYTES) // per_leaf)

    def _accumulate(self, kind: Kind, group: _Group, lo: int, hi: int, fail: Tensor, out: Tensor) -> None:
        """Add the values of the group's leaves ``lo..hi`` (rows of the chunk's leaf block) at rows with fail
        patterns ``fail`` ``(hi - lo, Q)`` to ``out`` ``(m, Q)``."""
        d, q = group.d, fail.shape[1]
        at = slice(lo - group.start, hi - group.start)
        if group.table is not None:
            values = torch.gather(group.table[at], 2, fail[:, None, :].expand(-1, d, -1))
        elif group.arrays is not None:  # −G[F] on the failed slots, H[F] − H↑[F ∪ {j}] on the others
            bit = (torch.ones(d, dtype=torch.int64, device=fail.device) << torch.arange(d, device=fail.device))[:, None]
            index = (torch.arange(lo - group.start, hi - group.start, device=fail.device)[:, None] << d) | fail
            g_at = group.arrays[0].take(index)[:, None, :]
            h_at = group.arrays[1].take(index)[:, None, :]
            up = group.arrays[2].take(index[:, None, :] | bit)
            values = torch.where((fail[:, None, :] & bit) != 0, g_at.neg(), h_at - up)
        else:
            values = self._pairs(kind, group, at, fail) * group.scale[at, None, None]
        out.index_add_(0, group.players[at].reshape(-1), values.reshape(-1, q))

    @staticmethod
    def _pairs(kind: Kind, group: _Group, at: slice, fail: Tensor) -> Tensor:
        """The pair form: ``(L, d, Q)`` values of leaves ``at`` of the group, summed over every (row, background
        row) pair of each leaf."""
        assert group.background is not None
        d, background = group.d, group.background[at]  # (L, B) background fail patterns
        g, h = weight_tables(kind, d, torch.float64)
        bit = torch.ones(d, dtype=torch.int64, device=fail.device) << torch.arange(d, device=fail.device)
        cover = (fail[:, :, None] & background[:, None, :]) == 0  # (L_d, Q, B): x satisfies what b fails
        a = popcount(background)[:, None, :]
        b = popcount(fail)[:, :, None]
        w_g = g[a, b] * cover
        w_h = h[a, b] * cover
        b_fails = ((background[:, :, None] & bit) != 0).double()  # (L_d, B, d)
        alpha = torch.bmm(w_h, b_fails).transpose(1, 2)  # (L_d, d, Q)
        beta = w_g.sum(2)[:, None, :]
        failed = ((fail[:, None, :] & bit[None, :, None]) != 0).double()
        return alpha - failed * (alpha + beta)


def _by_size(group: UnitGroup, m: int) -> UnitGroup:
    """The group's units sorted by number of splits, then of columns, most first (a unit's own splits and
    columns lead its keys and columns)."""
    columns = (group.players < m).sum(1)
    order = torch.argsort((group.weights > 0).sum(1) * (columns.max() + 1) + columns, descending=True, stable=True)
    return UnitGroup(
        group.b,
        group.rows[order],
        group.keys[order],
        group.weights[order],
        group.players[order],
        group.table[order],
    )


def _slot_table(group: _Group) -> Tensor:
    """``(L_d, d, 2^d)`` the value of every slot at every fail pattern from the (scaled) dense arrays: slot
    ``j`` takes ``−G[F]`` where ``F`` fails it, else ``H[F] − H↑[F ∪ {j}]``, written into the halves of the
    patterns split at bit ``j`` (two passes per entry)."""
    assert group.arrays is not None
    d, n = group.d, group.n_leaves
    scaled = group.arrays.view(3, n, 1 << d)
    values = torch.empty(n, d, 1 << d, dtype=scaled.dtype, device=scaled.device)
    for j in range(d):
        split = (n, 1 << (d - 1 - j), 2, 1 << j)  # patterns as (high bits, bit j, low bits)
        slot = values[:, j].view(split)
        torch.sub(scaled[1].view(split)[:, :, 0], scaled[2].view(split)[:, :, 1], out=slot[:, :, 0])
        torch.neg(scaled[0].view(split)[:, :, 1], out=slot[:, :, 1])
    return values


def leaf_outputs(table: LeafTable, x: Tensor) -> Tensor:
    """``(Q,)`` float64 output of the ensemble at raw rows ``x`` ``(Q, p)``, descended tree by tree in row chunks
    (``(T, Q_chunk)`` node ids and decisions within the memory budget)."""
    out = torch.empty(x.shape[0], dtype=torch.float64, device=table.left.device)
    step = max(1, parse_memory() // max(1, 32 * table.n_trees + 24 * table.n_features))
    for a, b in chunk_bounds(x.shape[0], step):
        out[a:b] = predict(table, table.codes(x[a:b].to(out.device)))
    return out


def _ranges(costs: list[float], budget: float) -> list[tuple[int, int]]:
    """Consecutive ranges of items whose summed ``costs`` stay within ``budget`` (each at least one item)."""
    ranges, start, used = [], 0, 0.0
    for item, cost in enumerate(costs):
        if item > start and used + cost > budget:
            ranges.append((start, item))
            start, used = item, 0.0
        used += cost
    ranges.append((start, len(costs)))
    return ranges


def unit_height(rows: int) -> int:
    """The height of the units for a call of ``rows`` rows: leaves alone for a few rows (the units' tables would
    cost more than they save), sibling leaves from 800 rows, subtrees of two levels from 2,500, of three from 5,000
    (measured on XGBoost 100 × 6, LightGBM's and random-forest defaults at 1,000 and 10,000 rows: two levels halve the
    time at 10,000; with tables capped at :func:`unit_bits` bits, three levels save another 2-10% at 5,000 and 10,000
    rows on XGBoost 100 × 6 and 100 × 10, LightGBM 100 and 500, HistGradientBoosting, CatBoost and
    GradientBoostingRegressor, four none)."""
    return 0 if rows < 800 else 1 if rows < 2500 else 2 if rows < 5000 else 3


def unit_bits(rows: int) -> int:
    """The most bits of a unit's table for a call of ``rows`` rows, about ``log2(rows) − 4``: a table's ``2^b``
    states must serve enough rows to pay for themselves (measured at 1,000 rows on XGBoost 100 × 10, 100 × 8 and
    LightGBM 500 trees: units of up to 10 bits 13-25% slower than of up to 5, the deeper leaves taken one by one;
    at 10,000 rows 9 and 10 bits equal on XGBoost 100 × 6, LightGBM 100 and HistGradientBoosting)."""
    return min(MAX_UNIT_BITS, max(1, rows.bit_length() - 5))

"""The cost model that picks a kernel: predicted seconds of the dense and the small-support form.

Both kernels are exact; they differ in cost. The dense two-GEMM form costs ``Θ(Q·|D|·k·n_active)`` (products of
``n_active``-wide matrices plus a few elementwise steps per (query, background row, frequency)); the
small-support kernel pays a build once per (spectrum, background, players) — searching the support families,
``Σ_f 2^{d_f}`` (frequency, player subset) pairs and ``Σ_f d_f 2^{d_f - 1}`` (pair, player) entries scattered,
one Walsh–Hadamard transform per family — and then ``Σ_U |U|`` gathered entries per query, independent of
``|D|``, ``n`` and ``k``. ``d_f`` counts the *players* a frequency touches. The rates below were measured on
this project's CPU machines (one thread) and set from the usual GEMM/launch figures for CUDA; they only need to
be right to a small factor, since the two costs differ by orders of magnitude away from the crossover.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal, get_args

import torch
from torch import Tensor

from torchxplain.fourier.values._families import MAX_FAMILY_SIZE, SupportFamilies
from torchxplain.fourier.values._weights import TableKind, TableSpec, order

Kernel = Literal["auto", "gemm", "small_support", "grid"]

MAX_SUPPORT = MAX_FAMILY_SIZE
"""Largest number of features the small-support kernel tabulates in one family (``2^16`` patterns)."""


def check_kernel(kernel: object) -> None:
    """Raise ``ValueError`` unless ``kernel`` is one of :data:`Kernel`'s options."""
    if kernel not in get_args(Kernel):
        raise ValueError(f"kernel must be one of {list(get_args(Kernel))}, got {str(kernel)[:40]!r}")


@dataclass(frozen=True)
class Rates:
    """Seconds per unit of work on one device type (one CPU thread, or one GPU)."""

    flop: float  # a multiply-add of the dense kernel's matrix products (counted as 2 flops)
    elementwise: float  # one elementwise step per (query, background row, frequency)
    pair: float  # one (frequency, player subset) pair of the table build
    entry: float  # one scattered (pair, player) entry of the table build
    key: float  # one subset key or packed feature of the family search
    gather: float  # one gathered table entry per query
    launch: float  # a fixed cost per tensor operation (interpreter and kernel launch)


RATES = {
    "cpu": Rates(flop=2.5e-11, elementwise=6e-10, pair=1.5e-8, entry=8e-9, key=1e-7, gather=5e-9, launch=1e-5),
    "cuda": Rates(flop=1e-13, elementwise=2e-12, pair=2e-10, entry=1e-10, key=1e-9, gather=5e-11, launch=2e-5),
}


@dataclass(frozen=True)
class Workload:
    """The sizes a kernel's cost depends on.

    Attributes:
        k: frequencies; n: features; n_active: features in some frequency; background: ``|D|``;
        players: ``m``; grouped: whether players are groups of features.
        player_degrees: histogram of ``d_f``, the number of players each frequency touches (index = ``d_f``).
        max_degree: the largest number of *features* in a frequency (bounds the family sizes).
        max_degree_count: how many frequencies have ``max_degree`` features (each is a family of its own).
    """

    k: int
    n: int
    n_active: int
    background: int
    players: int
    grouped: bool
    player_degrees: tuple[int, ...]
    max_degree: int
    max_degree_count: int

    def pairs(self, kind: TableKind | TableSpec) -> tuple[float, float]:
        """``(Σ_f 2^{d_f}, Σ_f entries)``: the build's (frequency, subset) pairs and scattered entries."""
        r = order(kind)
        pairs = entries = 0.0
        for d, count in enumerate(self.player_degrees):
            if d >= r:
                pairs += count * 2.0**d
                if r >= 1:
                    entries += count * d * 2.0 ** (d - 1)
                if r == 2:
                    entries += count * d * (d - 1) * 2.0**d / 4
        return pairs, entries


@dataclass(frozen=True)
class FamilyWork:
    """What the support families add to the small-support kernel's cost.

    Attributes:
        families: number of families; sizes: histogram of ``|U|`` (index = size); keys: ``Σ_U 2^|U|``.
    """

    families: int
    sizes: tuple[int, ...]

    @property
    def keys(self) -> int:
        return sum(c * 2**u for u, c in enumerate(self.sizes))

    def gathers(self, kind: TableKind | TableSpec) -> int:
        """Table entries gathered per query: ``Σ_U |U|^order``."""
        return sum(c * u ** order(kind) for u, c in enumerate(self.sizes))

    def table_elements(self, kind: TableKind | TableSpec) -> int:
        """Entries of the tables: ``Σ_U |U|^order 2^|U|``."""
        return sum(c * u ** order(kind) * 2**u for u, c in enumerate(self.sizes))

    def transform_flops(self, kind: TableKind | TableSpec) -> float:
        """Flops of the per-family Walsh–Hadamard transforms (two Kronecker factors each)."""
        return sum(
            c * u ** order(kind) * 2.0**u * 2.0 * (2 ** (u // 2) + 2 ** (u - u // 2)) for u, c in enumerate(self.sizes)
        )


def workload(frequencies: Tensor, feats: Tensor, groups: Tensor | None, players: int, background: int) -> Workload:
    """The :class:`Workload` of a spectrum with feature lists ``feats`` (``(k, D)``, padded with ``n``)."""
    k, n = frequencies.shape
    degrees = (feats < n).sum(1, dtype=torch.int64)  # an explicit dtype: bool sums are slow otherwise
    if groups is None:
        player_degree = degrees
    else:
        owner = torch.cat([groups.to(feats.device), groups.new_full((1,), -1).to(feats.device)])[feats]
        owner = owner.sort(dim=1).values
        distinct = torch.cat([owner[:, :1] >= 0, (owner[:, 1:] != owner[:, :-1]) & (owner[:, 1:] >= 0)], dim=1)
        player_degree = distinct.sum(1, dtype=torch.int64)
    max_degree = int(degrees.max()) if k else 0
    return Workload(
        k=k,
        n=n,
        n_active=int((torch.bincount(feats.flatten(), minlength=n + 1)[:n] > 0).sum()),
        background=background,
        players=players,
        grouped=groups is not None,
        player_degrees=tuple(torch.bincount(player_degree, minlength=1).tolist()),
        max_degree=max_degree,
        max_degree_count=int((degrees == max_degree).sum()),
    )


def family_work(families: SupportFamilies) -> FamilyWork:
    """The :class:`FamilyWork` of found families."""
    return FamilyWork(len(families), tuple(torch.bincount(families.sizes, minlength=1).tolist()))


def gemm_seconds(work: Workload, queries: int, kind: TableKind, device_type: str) -> float:
    """Predicted seconds of the dense kernel for ``queries`` queries."""
    rate = RATES.get(device_type, RATES["cuda"])
    triples = float(queries) * work.background * work.k
    if order(kind) == 2:
        per = 2 * work.players**2 * rate.flop + (work.players + 4) * rate.elementwise
    elif work.grouped:
        per = 4 * work.players * rate.flop + (work.players + 10) * rate.elementwise
    else:
        per = 4 * work.n_active * rate.flop + 6 * rate.elementwise
    return triples * per


def index_seconds(work: Workload, queries: int, max_order: int, device_type: str) -> float:
    """Predicted seconds of the dense interaction-index kernel (every order ``0..max_order`` in one pass): per
    (query, background row, frequency touching ``d`` players) a few steps per order and ``2 d^{t-1}`` for the
    Khatri–Rao powers of orders ``t ≥ 2``."""
    rate = RATES.get(device_type, RATES["cuda"])
    per_row = 0.0
    for d, count in enumerate(work.player_degrees):
        d = max(d, 1)
        steps = max_order + 6 + (2 * d ** (max_order - 1) + 2 * d if max_order >= 2 else 0)
        per_row += count * steps * rate.elementwise
    return float(queries) * work.background * per_row


def small_support_seconds(
    work: Workload, families: FamilyWork | None, queries: int, kind: TableKind | TableSpec, device_type: str
) -> tuple[float, float]:
    """Predicted ``(build, explain)`` seconds of the small-support kernel.

    Without ``families`` (not searched yet) the family terms are lower bounds: the search itself, and one
    family per frequency of the largest degree.
    """
    rate = RATES.get(device_type, RATES["cuda"])
    pairs, entries = work.pairs(kind)
    search = rate.key * (work.k * work.max_degree / 8.0 + (families.keys if families else 0))
    build = search + rate.pair * pairs + rate.entry * entries + rate.launch * 40 * max(1, work.max_degree)
    if families is not None:
        build += rate.flop * families.transform_flops(kind) + rate.gather * work.background * families.gathers(
            "shapley"
        )
        gathers = families.gathers(kind)
    else:
        gathers = work.max_degree_count * work.max_degree ** order(kind)
    explain = queries * (gathers * rate.gather + work.n * rate.elementwise) + rate.launch * 10
    return build, explain


def grid_seconds(
    grid: int, restrictions: int, table_entries: int, work: Workload, queries: int, kind: TableKind, device_type: str
) -> tuple[float, float]:
    """Predicted ``(build, explain)`` seconds of the level-grid kernel (:mod:`~torchxplain.fourier.values._grid`):
    ``h`` on the grid (``grid · restrictions`` multiply-adds), the coalition table (``table_entries`` cells, each
    gathered from every background row), and per query ``2^m`` gathers and one small product."""
    rate = RATES.get(device_type, RATES["cuda"])
    coalitions = 2.0**work.players
    build = rate.flop * 2.0 * grid * restrictions + rate.flop * 2.0 * grid * coalitions + rate.launch * coalitions * 4
    width = work.players ** order(kind)
    explain = queries * coalitions * (rate.gather + 2.0 * width * rate.flop) + rate.launch * coalitions
    return build + rate.gather * table_entries * work.background, explain


def report(work: Workload, families: FamilyWork | None) -> dict[str, object]:
    """JSON-able summary of the sizes the costs were predicted from."""
    out: dict[str, object] = asdict(work)
    if families is not None:
        out["families"] = families.families
        out["family_sizes"] = list(families.sizes)
    return out

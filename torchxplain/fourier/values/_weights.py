r"""The small-support kernel's closed form: value weights in the Walsh basis of one frequency's players.

For a frequency ``f`` touching players ``P_f`` (``d = |P_f|``), a query ``x`` and a background row ``b``, let
``A = {g ∈ P_f : <f_g, x> ≢ <f_g, b> (mod 2)}``. Every game value here is, for a tuple ``T`` of ``r`` players
(``r = 0``: the empty tuple, ``1``: one player, ``2``: a pair), ``c · a_f (-1)^{<f,x>} · F(A)`` with
``F(A) = [T ⊆ A] w(|A|)`` summed over the background and scaled by ``c / |D|``: Shapley ``w(c) = [c odd]/c``,
Banzhaf ``w(c) = [c = 1]`` (``c = 2``), the pairwise interaction index ``w(c) = [c even]/(c - 1)`` (``c = 4``),
and every index of the interaction family at order ``t``, ``w(c) = (-1)^c W(c, t)`` (``c = 1``) with ``W`` the
per-term weight of :mod:`~torchxplain.fourier.values.interactions._weights` (its derivation takes the background
row's sign; ``(-1)^{<f,b>} = (-1)^{<f,x>} (-1)^{|A|}`` moves it to the query's). A :class:`TableSpec` names one.

Expanding ``F`` in the Walsh basis of the ``2^d`` player parities, ``F̂(S) = Σ_A F(A) (-1)^{|A∩S|}`` depends
only on ``d``, ``|S|`` and how many of ``T`` lie in ``S`` — the tables below — and summing over the
background turns ``(-1)^{|A∩S|}`` into the Walsh moment ``m(f_S) = Σ_b (-1)^{<f_S, b>}`` times
``(-1)^{<f_S, x>}``, where ``f_S`` is ``f`` restricted to the players in ``S``. So

    value_T(x) = c/|D| Σ_f a_f 2^{-d} Σ_{S ⊆ P_f} F̂_T(S) m(f_S) (-1)^{<f ⊕ f_S, x>},

a sum of Walsh functions of ``x`` on the support of ``f``: tabulated over the patterns of a family's
support by one Walsh–Hadamard transform (:mod:`~torchxplain.fourier.values._support`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from fractions import Fraction
from math import comb
from typing import Literal

import torch
from torch import Tensor

from torchxplain.fourier.values.interactions._weights import weight

TableKind = Literal["shapley", "banzhaf", "interactions"]
MAX_PLAYERS = 16
"""Most players one frequency touches in a table (the small-support kernel's largest family)."""


@dataclass(frozen=True)
class TableSpec:
    """One kind of small-support table.

    Specs compare (and hash) by name and order.

    Attributes:
        name: what it holds, e.g. ``"shapley"`` or ``"k-SII order 1 of 2"``; unique per weights.
        order: ``r``, the size of the player tuples (0, 1 or 2).
        weights: ``w(c)`` for ``c = 0..MAX_PLAYERS``, exact.
        scale: the constant ``c`` (the values are ``c / |D|`` times the closed form).
    """

    name: str
    order: int
    weights: tuple[Fraction, ...] = field(compare=False)  # the name says which: hashing them every call is slow
    scale: float = field(compare=False)


def _fractions(w: object) -> tuple[Fraction, ...]:
    return tuple(Fraction(w(c)) for c in range(MAX_PLAYERS + 1))  # type: ignore[operator]


SPECS: dict[str, TableSpec] = {
    "shapley": TableSpec("shapley", 1, _fractions(lambda c: Fraction(1, c) if c % 2 else 0), 2.0),
    "banzhaf": TableSpec("banzhaf", 1, _fractions(lambda c: int(c == 1)), 2.0),
    "interactions": TableSpec(
        "interactions", 2, _fractions(lambda c: Fraction(1, c - 1) if c >= 2 and c % 2 == 0 else 0), 4.0
    ),
}


@functools.lru_cache(maxsize=256)
def index_spec(index: str, t: int, max_order: int) -> TableSpec:
    """The table of an interaction index at order ``t`` (``0 ≤ t ≤ min(2, max_order)``) of ``max_order``."""
    weights = tuple((-1) ** c * weight(index, c, t, max_order) for c in range(MAX_PLAYERS + 1))
    return TableSpec(f"{index} order {t} of {max_order}", t, weights, 1.0)


def spec_of(kind: TableKind | TableSpec) -> TableSpec:
    """The :class:`TableSpec` of a kind's name (``"shapley"``, ``"banzhaf"``, ``"interactions"``) or itself."""
    return kind if isinstance(kind, TableSpec) else SPECS[kind]


def order(kind: TableKind | TableSpec) -> int:
    """The tuple size: 1 for first-order values, 2 for pairwise interactions (0 for an index's empty set)."""
    return spec_of(kind).order


@functools.cache
def _walsh_weights(spec: TableSpec, d: int) -> tuple[tuple[float, ...], ...]:
    """``F̂[t][σ]``: ``t = |S|``, ``σ`` = how many of the ``order`` fixed players lie in ``S``."""
    r = spec.order
    table = []
    for t in range(d + 1):
        row = []
        for sigma in range(r + 1):
            rest, inside = d - r, t - sigma  # the other players of f, and how many of them are in S
            total = Fraction(0)
            if 0 <= inside <= rest:
                for c in range(r, d + 1):
                    w = spec.weights[c]
                    if w:
                        total += w * sum(
                            (-1) ** (sigma + j) * comb(inside, j) * comb(rest - inside, c - r - j)
                            for j in range(0, c - r + 1)
                        )
            row.append(float(total))
        table.append(tuple(row))
    return tuple(table)


@functools.lru_cache(maxsize=512)
def walsh_weights(kind: TableKind | TableSpec, d: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """``(d + 1, order + 1)`` table of ``F̂`` for a frequency touching ``d`` players: entry ``[t, σ]`` is the
    weight of a subset ``S`` of ``t`` players holding ``σ`` of the value's ``order`` players (cached;
    read-only)."""
    return torch.tensor(_walsh_weights(spec_of(kind), d), dtype=dtype, device=device).reshape(d + 1, -1)


@functools.lru_cache(maxsize=256)
def padded_walsh_weights(kind: TableKind | TableSpec, d: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """``(d + 1, d + 1, order + 1)``: :func:`walsh_weights` of every degree ``0..d`` (zero past each degree), for
    frequencies of several degrees padded to ``d`` blocks (cached; read-only)."""
    r = order(kind)
    out = torch.zeros(d + 1, d + 1, r + 1, dtype=dtype, device=device)
    for e in range(r, d + 1):
        out[e, : e + 1] = walsh_weights(kind, e, dtype, device)
    return out

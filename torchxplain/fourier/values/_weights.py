r"""The small-support kernel's closed form: value weights in the Walsh basis of one frequency's players.

For a frequency ``f`` touching players ``P_f`` (``d = |P_f|``), a query ``x`` and a background row ``b``, let
``A = {g ∈ P_f : <f_g, x> ≢ <f_g, b> (mod 2)}``. The value of player ``g`` is
``c_f · a_f (-1)^{<f,x>} · F(A)`` with ``F(A) = [g ∈ A] w(|A|)`` for first-order values (Shapley
``w(c) = [c odd]/c``, Banzhaf ``w(c) = [c = 1]``, ``c_f = 2/|D|`` summed over the background) and
``F(A) = [g, h ∈ A] w2(|A|)`` for the pairwise interaction index (``w2(c) = [c even]/(c - 1)``, ``c_f = 4/|D|``).
Expanding ``F`` in the Walsh basis of the ``2^d`` player parities, ``F̂(S) = Σ_A F(A) (-1)^{|A∩S|}`` depends
only on ``d``, ``|S|`` and how many of ``g`` (``h``) lie in ``S`` — the tables below — and summing over the
background turns ``(-1)^{|A∩S|}`` into the Walsh moment ``m(f_S) = Σ_b (-1)^{<f_S, b>}`` times
``(-1)^{<f_S, x>}``, where ``f_S`` is ``f`` restricted to the players in ``S``. So

    value_g(x) = c_f Σ_f a_f 2^{-d} Σ_{S ⊆ P_f} F̂_g(S) m(f_S) (-1)^{<f ⊕ f_S, x>},

a sum of Walsh functions of ``x`` on the support of ``f``: tabulated over the patterns of a family's
support by one Walsh–Hadamard transform (:mod:`~torchxplain.fourier.values._support`).
"""

from __future__ import annotations

import functools
from math import comb
from typing import Literal

import torch
from torch import Tensor

TableKind = Literal["shapley", "banzhaf", "interactions"]

SCALE = {"shapley": 2.0, "banzhaf": 2.0, "interactions": 4.0}
"""The constant ``c_f · |D|`` of each kind."""


def order(kind: TableKind) -> int:
    """1 for first-order values, 2 for pairwise interactions."""
    return 2 if kind == "interactions" else 1


def _weight(kind: TableKind, c: int) -> float:
    if kind == "shapley":
        return 1.0 / c if c % 2 else 0.0
    if kind == "banzhaf":
        return 1.0 if c == 1 else 0.0
    return 1.0 / (c - 1) if c % 2 == 0 and c >= 2 else 0.0


@functools.cache
def _walsh_weights(kind: TableKind, d: int) -> tuple[tuple[float, ...], ...]:
    """``F̂[t][σ]``: ``t = |S|``, ``σ`` = how many of the ``order(kind)`` fixed players lie in ``S``."""
    r = order(kind)
    table = []
    for t in range(d + 1):
        row = []
        for sigma in range(r + 1):
            rest, inside = d - r, t - sigma  # the other players of f, and how many of them are in S
            total = 0.0
            if 0 <= inside <= rest:
                for c in range(r, d + 1):
                    w = _weight(kind, c)
                    if w:
                        total += w * sum(
                            (-1) ** (sigma + j) * comb(inside, j) * comb(rest - inside, c - r - j)
                            for j in range(0, c - r + 1)
                        )
            row.append(total)
        table.append(tuple(row))
    return tuple(table)


@functools.lru_cache(maxsize=256)
def walsh_weights(kind: TableKind, d: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """``(d + 1, order + 1)`` table of ``F̂`` for a frequency touching ``d`` players: entry ``[t, σ]`` is the
    weight of a subset ``S`` of ``t`` players holding ``σ`` of the value's ``order(kind)`` players (cached;
    read-only)."""
    return torch.tensor(_walsh_weights(kind, d), dtype=dtype, device=device)

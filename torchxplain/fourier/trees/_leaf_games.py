"""The game of one leaf for one (row, background row) pair, in closed form.

A leaf with value ``v`` whose path conditions on players ``U`` contributes to the hybrid ``(x_S, b_{~S})`` exactly
when every player's condition holds on the row it is taken from. With ``F`` the players whose condition ``x``
fails and ``G`` those ``b`` fails, the pair's game is ``v [G ⊆ S][F ∩ S = ∅]`` when ``F ∩ G = ∅`` (else the leaf
is out of reach and the game is zero): ``x`` must supply ``G``, ``b`` must supply ``F``. Its Shapley values are
``v·h(|G|, |F|)`` on ``G`` and ``−v·g(|G|, |F|)`` on ``F``, with ``h(a, b) = (a−1)! b!/(a+b)!`` and
``g(a, b) = a! (b−1)!/(a+b)!``; its Banzhaf values ``±v / 2^{|G|+|F|−1}``; every other player gets 0. (Each is a
unanimity-style game: a player of ``G`` is pivotal exactly when it completes ``G`` before any of ``F`` enters.)
"""

from __future__ import annotations

from math import factorial
from typing import Literal

import torch
from torch import Tensor

Kind = Literal["shapley", "banzhaf"]


def weight_tables(kind: Kind, d: int, dtype: torch.dtype = torch.float64) -> tuple[Tensor, Tensor]:
    """``(g, h)``, each ``(d + 1, d + 1)`` indexed ``[a, b]``: the leaf game's value on a player of ``F`` (``g``,
    negated) and of ``A`` (``h``) when ``|A| = a``, ``|F| = b`` (zero where the player set is empty)."""
    g = torch.zeros(d + 1, d + 1, dtype=torch.float64)
    h = torch.zeros(d + 1, d + 1, dtype=torch.float64)
    for a in range(d + 1):
        for b in range(d + 1 - a):
            if kind == "shapley":
                if b >= 1:
                    g[a, b] = factorial(a) * factorial(b - 1) / factorial(a + b)
                if a >= 1:
                    h[a, b] = factorial(a - 1) * factorial(b) / factorial(a + b)
            elif a + b >= 1:
                g[a, b] = 2.0 ** (1 - a - b) if b >= 1 else 0.0
                h[a, b] = 2.0 ** (1 - a - b) if a >= 1 else 0.0
    return g.to(dtype), h.to(dtype)


_M1, _M2, _M4 = 0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F


def popcount(x: Tensor) -> Tensor:
    """Number of set bits of non-negative int64 values below ``2^62`` (elementwise)."""
    x = x - ((x >> 1) & _M1)
    x = (x & _M2) + ((x >> 2) & _M2)
    x = (x + (x >> 4)) & _M4
    return (x * 0x0101010101010101) >> 56 & 0xFF

r"""Per-(pair, frequency) weight tables ``W(c, t)`` of the interaction indices, derived in closed form.

Derivation
----------
The interventional game of a query ``x*`` against a background ``D`` is
``v(S) = (1/|D|) Σ_{b∈D} h(x*_S, b_{~S})`` with ``h(z) = Σ_f a_f (-1)^{<f, z>}``. Fix one background row ``b``
and one frequency ``f``; write ``s = a_f (-1)^{<f, b>}`` and let ``A`` be the set of players ``g`` where the
parity of ``f`` restricted to ``g`` differs between ``x*`` and ``b`` (for singleton players:
``A = {i : f_i = 1, x*_i ≠ b_i}``), ``c = |A|``. Putting player ``g`` into the coalition flips the sign of the
term exactly when ``g ∈ A``, so the term's game is

    ``u(S) = s (-1)^{|S ∩ A|} = s Π_{g∈A} (1 - 2[g∈S]) = Σ_{R ⊆ S∩A} s (-2)^{|R|}``,

i.e. its Möbius transform is ``m(R) = s (-2)^{|R|}`` for ``R ⊆ A`` and ``0`` otherwise. Every index here is
linear in the game and, for ``|T| = t``, a functional ``I(T) = Σ_{R⊇T} ω(|R|, t) m(R)`` whose weight depends on
sizes only (and on the order ``k`` for the order-dependent indices), not on the number of players. For the term
game ``I(T) = 0`` unless ``T ⊆ A``, and then

    ``I(T) = s · W(c, t)``,   ``W(c, t) = Σ_{r=t}^{c} C(c-t, r-t) ω(r, t) (-2)^r``,

so an index of the whole game is ``I(T) = (1/|D|) Σ_{b,f} s_{b,f} W(c_{b,f}, t) Π_{g∈T} dis_{b,f,g}``
(``dis_g = [g ∈ A]``): a per-(pair, frequency) weight looked up by ``(c, t)``. With ``u = c - t`` the sums are

* ``"Moebius"``    ``ω = [r = t]``:                   ``W = (-2)^t``.
* ``"Co-Moebius"`` ``ω = 1`` (``I(T) = Σ_{R⊇T} m(R)``): ``W = (-2)^t (-1)^u``.
* ``"SII"``        ``ω = 1/(r-t+1)``:                  ``W = (-2)^t [u even] / (u+1)``
  (``∫_0^1 (1-2p)^u dp``; order 1 is the paper's Eq. 5, order 2 the pairwise form of the design page).
* ``"BII"``        ``ω = 2^{t-r}``:                    ``W = (-2)^t [u = 0]``.
* ``"STII"`` (order ``k``) lower orders are Möbius; for ``t = k``, ``ω = 1/C(r, k)`` (the Möbius mass of
  ``R`` is split evenly over its ``k``-subsets): ``W = (-2)^k Σ_{j=0}^{u} C(u, j) (-2)^j / C(k+j, k)``.
* ``"k-SII"``      SII aggregated with Bernoulli numbers (``B_1 = -1/2``), ``I(T) = Σ_{S⊇T, |S|≤k}
  B_{|S|-|T|} SII(S)``: ``W = Σ_{j=0}^{min(k,c)-t} C(u, j) B_j W_SII(c, t+j)``.
* ``"FBII"`` (order ``k``) the uniformly weighted least-squares fit of degree ``k``. Tsai et al.'s
  ``ω = [r=t] + [r>k] (-1)^{k-t} 2^{t-r} C(r-t-1, k-t)`` sums to ``W = (-2)^t [c ≤ k]``: the term is a parity
  of ``c`` players, orthogonal under the uniform weights to every polynomial of degree ``< c``.
* ``"FSII"`` (order ``k``) the Shapley-kernel weighted fit with ``E(∅) = v(∅)``, ``E(N) = v(N)``; Tsai et al.'s
  ``ω = [r=t] + [r>k] (-1)^{k-t} t/(k+t) C(k, t) C(r-1, k) / C(r+k-1, k+t)``, summed as above.
* ``"SV"`` / ``"BV"`` are ``"SII"`` / ``"BII"`` at order 1.

Empty set (order 0), exactly as shapiq's ``InteractionValues``: the baseline ``v(∅)`` (``W(c, 0) = 1``) for
``"SV"``, ``"k-SII"``, ``"STII"``, ``"FSII"``, ``"Moebius"``, ``"Co-Moebius"`` (shapiq replaces the
co-Möbius value ``v(N)`` by the baseline) and ``"SII"`` at ``max_order = 1`` (shapiq calls it ``"SV"``);
the index's own value otherwise: ``"SII"`` ``W = [c even]/(c+1)``, ``"BII"``/``"BV"`` ``W = [c = 0]``
(``Σ_S v(S)/2^m``), ``"FBII"`` ``W = [c ≤ k]`` (the fit's intercept).

Efficiency (``Σ_T I(T) = v(N) - v(∅)`` over ``1 ≤ |T| ≤ k``) holds for ``"SV"``, ``"k-SII"``, ``"STII"`` and
``"FSII"``; ``"Moebius"`` at ``k = m`` reconstructs ``v(S) = Σ_{T⊆S} m(T)``.

The tables are computed exactly in rational arithmetic (the alternating sums cancel), then rounded once.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from math import comb
from typing import Literal, get_args

import torch
from torch import Tensor

Index = Literal["k-SII", "STII", "FSII", "FBII", "BII", "SII", "SV", "BV", "Moebius", "Co-Moebius"]
#: The interaction indices ``interaction_values`` computes, by shapiq's names.
INDICES: tuple[str, ...] = get_args(Index)

#: indices whose order-0 entry is the baseline ``v(∅)`` in shapiq (``"SII"`` only at ``max_order = 1``)
_BASELINE_EMPTY = frozenset({"SV", "k-SII", "STII", "FSII", "Moebius", "Co-Moebius"})


def _bernoulli(count: int) -> list[Fraction]:
    """``B_0 .. B_{count-1}`` with ``B_1 = -1/2`` (scipy's and Bordt & von Luxburg's convention)."""
    numbers: list[Fraction] = []
    for j in range(count):
        numbers.append(
            -sum((comb(j + 1, i) * numbers[i] for i in range(j)), Fraction(0)) / (j + 1) if j else Fraction(1)
        )
    return numbers


def _sii(c: int, t: int) -> Fraction:
    u = c - t
    return Fraction((-2) ** t, u + 1) if u >= 0 and u % 2 == 0 else Fraction(0)


def _stii_top(c: int, k: int) -> Fraction:
    u = c - k
    return (-2) ** k * sum((Fraction(comb(u, j) * (-2) ** j, comb(k + j, k)) for j in range(u + 1)), Fraction(0))


def _fsii(c: int, t: int, k: int) -> Fraction:
    if c <= k:
        return Fraction((-2) ** t)
    tail = sum(
        (
            Fraction(comb(c - t, r - t) * (-2) ** (r - t) * comb(r - 1, k), comb(r + k - 1, k + t))
            for r in range(k + 1, c + 1)
        ),
        Fraction(0),
    )
    return (-2) ** t * (1 + (-1) ** (k - t) * Fraction(t, k + t) * comb(k, t) * tail)


def weight(index: str, c: int, t: int, max_order: int) -> Fraction:
    """``W(c, t)``: the weight of one (background row, frequency) term with ``c`` differing players on each
    ``t``-subset of them (see the module docstring), exact.

    Args:
        index: one of :data:`INDICES`.
        c: number of players where the query's and the background row's parities of the frequency differ.
        t: the interaction order, ``0 ≤ t ≤ max_order``.
        max_order: the order ``k`` of the order-dependent indices.
    """
    if t > c:
        return Fraction(0)
    if t == 0:
        if index in _BASELINE_EMPTY or (index == "SII" and max_order == 1):
            return Fraction(1)
        if index == "SII":
            return Fraction(1, c + 1) if c % 2 == 0 else Fraction(0)
        if index in ("BII", "BV"):
            return Fraction(int(c == 0))
        return Fraction(int(c <= max_order))  # FBII's intercept
    u = c - t
    if index == "Moebius" or (index == "STII" and t < max_order):
        return Fraction((-2) ** t)
    if index == "Co-Moebius":
        return Fraction((-2) ** t * (-1) ** u)
    if index in ("SII", "SV"):
        return _sii(c, t)
    if index in ("BII", "BV"):
        return Fraction((-2) ** t * int(u == 0))
    if index == "STII":
        return _stii_top(c, t)
    if index == "FBII":
        return Fraction((-2) ** t * int(c <= max_order))
    if index == "FSII":
        return _fsii(c, t, max_order)
    if index == "k-SII":
        bern = _bernoulli(max_order + 1)
        return sum((comb(u, j) * bern[j] * _sii(c, t + j) for j in range(min(max_order, c) - t + 1)), Fraction(0))
    raise ValueError(f"index must be one of {list(INDICES)}, got {index!r}")


@lru_cache(maxsize=64)
def _table(index: str, max_order: int, c_max: int) -> tuple[tuple[float, ...], ...]:
    return tuple(tuple(float(weight(index, c, t, max_order)) for t in range(max_order + 1)) for c in range(c_max + 1))


def weight_table(
    index: str, max_order: int, c_max: int, dtype: torch.dtype = torch.float64, device: torch.device | str = "cpu"
) -> Tensor:
    """``(c_max + 1, max_order + 1)`` table of :func:`weight` (row ``c``, column ``t``), rounded once from exact.

    Args:
        index: one of :data:`INDICES`.
        max_order: the largest order ``k``.
        c_max: the largest number of differing players any (pair, frequency) can have.
        dtype, device: of the returned tensor.
    """
    return torch.tensor(_table(index, max_order, c_max), dtype=torch.float64).to(device=device, dtype=dtype)

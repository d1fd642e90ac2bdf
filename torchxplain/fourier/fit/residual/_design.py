"""The sample design of the correction: paired coalitions of one (row, background row) pair, one model row each.

The interventional Shapley value of a row ``x`` is the background mean of the Shapley values of the pair games
``v_b(S) = f(x_S, b_{~S})``. In the game of ``(x, b)`` only the ``d`` players on which the two rows differ (``Δ``)
are not null, so the game is one of ``d`` players; its endpoints ``v_b(Δ) = f(x)`` and ``v_b(∅) = f(b)`` are
known (``f(x)``: one model row per explained row; ``f(b)``: the background's, shared by every row).

A coalition ``S ⊆ Δ`` is drawn as Owen's multilinear extension suggests: a probability ``p`` from a law symmetric
about ``1/2`` (uniform by default), then each differing player joins with probability ``p`` (one comparison per
player: no sort). Every coalition of size ``s`` then has the same probability ``q_d(s) / C(d, s)``, with ``q_d`` the
law of ``|S|`` (uniform over ``0..d`` for uniform ``p``), and the Shapley value of player ``i ∈ Δ`` is

    φ_i = (f(x) - f(b)) / d + E[a_i(S) · v_b(S) · [1 <= s <= d - 1]],
    a_i(S) = 1 / (s q_d(s)) if i ∈ S,  -1 / ((d - s) q_d(s)) if not.

(The Shapley weight of ``S`` for ``i ∈ S`` is ``(s-1)!(d-s)!/d! = 1 / (d C(d-1, s-1))``, its probability
``q_d(s) / C(d, s)``; their ratio is ``1 / (s q_d(s))``; likewise ``1 / ((d-s) q_d(s))`` for ``i ∉ S``. The empty
and the full coalition are the endpoints, known: they are never queried.) Three facts make the estimator cheap and calm:

* ``a_i(Δ∖S) = -a_i(S)`` when ``q_d`` is symmetric, so a coalition and its complement, drawn together, give
  ``a_i(S) · (v_b(S) - v_b(Δ∖S)) / 2``: only the odd part of the game, which is all the Shapley value sees;
* ``E[a_i(S) | s] = 0``, so any function of the size may be subtracted from ``v_b(S)`` for free: the odd part of the
  straight line between the endpoints, ``(2s - d) / (2d) · (f(x) - f(b))``, is;
* for any additive game ``u(S) = Σ_{j∈S} β_j`` (a control variate, exact Shapley values ``β``), ``v - u`` is
  estimated instead of ``v``: its odd part minus the line is ``y - Σ_j β_j w_j`` with ``w_j = [j ∈ S] - s/d``.

When the coalitions of sizes 1 and ``d - 1`` of a pair are known (queried once, :mod:`._estimate`), its slots of
those sizes are dead: with the same weights, the rounds then estimate the share of the sizes between.

Every draw is a hash of ``(row key, round, slot, ...)`` (:mod:`._hashing`), so the design of a row is the same in
any batch, chunk or load. Within a round the slots take distinct background rows and their ``p`` are stratified
(slot ``k`` draws its ``p``'s uniform in stratum ``(k + shift) mod R`` of ``R`` equal strata, a random shift per
round: every slot's ``p`` still follows its law).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from torchxplain.fourier.fit.residual._hashing import combine, mix, uniform

SizeLaw = Literal["uniform", "arcsine"]
SIZE_LAWS: tuple[SizeLaw, ...] = ("uniform", "arcsine")
_BETA = {"uniform": 1.0, "arcsine": 0.5}  # p ~ Beta(a, a)

_BACKGROUND, _SIZE, _ORDER, _PLAYERS = 1, 2, 3, 4  # streams of the hash keys
_BITS = {
    torch.float64: torch.int64,
    torch.float32: torch.int32,
    torch.float16: torch.int16,
    torch.bfloat16: torch.int16,
}
"""The integer dtype of each floating dtype's bits (:func:`hybrids` selects entries on their bits)."""


def size_table(m: int, law: SizeLaw, device: torch.device) -> Tensor:
    """``(m + 1, m + 1)`` float64: row ``d`` is ``q_d(s)``, the law of ``|S|`` for ``s = 0..d`` (zero beyond).

    ``p ~ Beta(a, a)`` and ``|S| ~ Binomial(d, p)``: ``q_d(s) = C(d, s) B(s + a, d - s + a) / B(a, a)``;
    ``"uniform"`` is ``a = 1`` (``q_d(s) = 1 / (d + 1)``), ``"arcsine"`` ``a = 1/2`` (more small and large
    coalitions, like the Shapley kernel's square root). Both are symmetric in ``s ↔ d - s``, as the pairing needs.
    """
    a = _BETA[law]
    d = torch.arange(m + 1, dtype=torch.float64, device=device)[:, None]
    s = torch.arange(m + 1, dtype=torch.float64, device=device)[None, :]
    inside = s <= d
    s, rest = s.expand(m + 1, -1), (d - s).clamp_min(0.0)
    log = (
        torch.lgamma(d + 1)
        - torch.lgamma(s + 1)
        - torch.lgamma(rest + 1)
        + torch.lgamma(s + a)
        + torch.lgamma(rest + a)
        - torch.lgamma(d + 2 * a)
        - 2 * math.lgamma(a)
        + math.lgamma(2 * a)
    )
    return torch.where(inside, log.exp(), 0.0)


def _probabilities(u: Tensor, law: SizeLaw) -> Tensor:
    """``p`` from uniforms ``u`` by the law's inverse CDF."""
    return u if law == "uniform" else torch.sin(0.5 * math.pi * u).square()


@dataclass(frozen=True)
class Draw:
    """One round of samples for ``Q`` rows and ``R`` slots.

    A slot's weights are ``a_i(S) = on_i (negative + inside_i (positive - negative))`` and its control variates'
    features ``w_j = inside_j - ratio · on_j``: both are kept as these per-slot scalars and the two indicator
    tensors, never as ``(Q, R, m)`` floats.

    Attributes:
        background: ``(Q, R)`` int64 background row of each slot.
        live: ``(Q, R)`` bool: the slot is queried (its pair is sampled and its coalition is neither empty nor all
            of the pair's differing players: those are the known endpoints).
        on: ``(Q, R, m)`` bool: the pair's differing players, on live slots only.
        inside: ``(Q, R, m)`` bool: the coalition ``S`` (a subset of ``on``).
        size: ``(Q, R)`` int64 ``s``; players: ``(Q, R)`` int64 ``d``.
        positive, negative: ``(Q, R)`` float64 ``1 / (s q_d(s))`` and ``-1 / ((d - s) q_d(s))``.
        ratio: ``(Q, R)`` float64 ``s / d``.
        line: ``(Q, R)`` float64 ``(2s - d) / (2d)``: the odd part of the straight line per unit of ``f(x) - f(b)``.
        (All zero on dead slots.)
    """

    background: Tensor
    live: Tensor
    on: Tensor
    inside: Tensor
    size: Tensor
    players: Tensor
    positive: Tensor
    negative: Tensor
    ratio: Tensor
    line: Tensor


def slot_terms(size: Tensor, d: Tensor, live: Tensor, table: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Per slot ``(positive, negative, ratio, line)`` (:class:`Draw`) of coalitions of sizes ``size`` among ``d``
    players, zero where ``live`` is false.

    Args:
        size, d: ``(...)`` int64; live: ``(...)`` bool; table: :func:`size_table`.
    """
    q_s = table[d, size]
    dd = d.to(torch.float64).clamp_min(1.0)
    ss = size.to(torch.float64)
    on = live.to(torch.float64)
    positive = on / (ss * q_s).clamp_min(1e-300)
    negative = -on / ((dd - ss) * q_s).clamp_min(1e-300)
    return positive, negative, on * ss / dd, on * (2.0 * ss - dd) / (2.0 * dd)


def _scramble(h: Tensor) -> Tensor:
    """One multiply-xorshift of 32-bit words (enough to rank players: their keys differ in the mixed part), in
    place on ``h``."""
    h.mul_(0x2C1B3C6D).bitwise_and_(0xFFFFFFFF)
    return h.bitwise_xor_(h >> 15)


def masked(mask: Tensor, live: Tensor, in_place: bool = False) -> Tensor:
    """``mask & live[..., None]`` for bool ``mask`` ``(..., m)`` and ``live`` ``(...)`` as a product of bytes (a
    broadcast logical and is 4 to 6 times slower on CPU); ``in_place``: into ``mask``."""
    keep = live.view(torch.uint8)[..., None]
    if in_place:
        mask.view(torch.uint8).mul_(keep)
        return mask
    return (mask.view(torch.uint8) * keep).view(torch.bool)


def count(mask: Tensor) -> Tensor:
    """``(...)`` int64: how many entries of ``mask`` ``(..., m)`` bool are true, summed in bytes when ``m < 256`` (a
    sum of bools widens every entry to int64 first: 2.4 times slower at ``(800, 40, 10)``)."""
    if mask.shape[-1] < 256:
        return mask.view(torch.uint8).sum(-1, dtype=torch.uint8).to(torch.int64)
    return mask.sum(-1)


def slot_backgrounds(keys: Tensor, n_background: int, slots: int) -> Tensor:
    """``(Q, R)`` distinct background rows per row (all of them, in order, when ``R`` equals their number)."""
    q_rows = keys.shape[0]
    if slots >= n_background:
        return torch.arange(n_background, device=keys.device).expand(q_rows, -1)
    index = torch.arange(n_background, device=keys.device)
    draws = uniform(combine(combine(keys[:, None], _BACKGROUND), index[None, :]))
    return draws.argsort(1)[:, :slots]


def draw(
    keys: Tensor,
    differ: Tensor,
    slots: int,
    table: Tensor,
    law: SizeLaw = "uniform",
    sampled: Tensor | None = None,
    known: Tensor | None = None,
) -> Draw:
    """One round of the design (module docstring).

    Args:
        keys: ``(Q,)`` int64 keys of (row, round) (:func:`~._hashing.combine` of a row key and the round).
        differ: ``(Q, D, m)`` bool: the players on which each row and each background row differ.
        slots: ``R``, pairs per round (distinct background rows; at most ``D``).
        table: :func:`size_table` of the law in use; law: its name.
        sampled: ``(Q, D)`` bool, the pairs that are sampled at all (``None``: every pair; a pair whose game is
            known otherwise, e.g. enumerated, is a slot without samples).
        known: ``(Q, D)`` int64, how many sizes at each end are known for each pair (``L``: sizes ``1..L`` and
            ``d - L..d - 1``; ``None``: none): the slots of those sizes are dead too (the weights are the law's, so
            the slots' estimate is that of the sizes between).
    """
    q_rows, n_background, m = differ.shape
    device = differ.device
    background = slot_backgrounds(keys, n_background, slots)
    every = background.shape[1] == n_background  # slot j is background row j
    delta = differ if every else torch.gather(differ, 1, background[:, :, None].expand(-1, -1, m))  # (Q, R, m)
    d = count(delta)
    live = d >= 2 if sampled is None else (d >= 2) & torch.gather(sampled, 1, background)
    slots_n = background.shape[1]
    slot = torch.arange(slots_n, device=device)
    slot_keys = combine(keys[:, None], slot[None, :])  # (Q, R)
    # stratified p: slot k's uniform falls in stratum (k + shift) mod R of R equal strata
    shift = combine(keys, _ORDER)[:, None] % slots_n
    order = (slot[None, :] + shift) % slots_n
    p = _probabilities((order.to(torch.float64) + uniform(combine(slot_keys, _SIZE))) / slots_n, law)
    # each differing player joins with probability p (a threshold on its own uniform, no sort), compared on the
    # integer keys: uniform(key) = (key + 1/2) / 2^32 < p exactly when key < ceil(p 2^32 - 1/2) (every step exact
    # in float64), the same coalitions as comparing the uniforms without a float per (slot, player)
    threshold = torch.ceil(p * 2.0**32 - 0.5).to(torch.int64)
    player_keys = _scramble(slot_keys[..., None] ^ mix(torch.arange(m, device=device) + (_PLAYERS << 20)))
    candidates = masked(delta, live)
    inside = (player_keys < threshold[..., None]).logical_and_(candidates)
    size = count(inside)
    low = 1 if known is None else 1 + torch.gather(known, 1, background).to(size.dtype)
    live = live & (size >= low) & (size <= d - low)
    on = masked(candidates, live, in_place=True)
    masked(inside, live, in_place=True)
    positive, negative, ratio, line = slot_terms(size, d, live, table)
    return Draw(background, live, on, inside, size, d, positive, negative, ratio, line)


def hybrids(x: Tensor, background: Tensor, sample: Draw, players: Tensor | None, rows: Tensor) -> Tensor:
    """The live slots' points ``(x_S, b_{~S})``, then their complements ``(b_S, x_{~S})``: ``(2 L, n)``.

    Floating entries are selected on their bits (``b ^ ((x ^ b) & -take)``, and the complement ``x ^ (...)``):
    exact copies of entries, one mask for both halves, faster than :func:`torch.where` on CPU.

    Args:
        x: ``(Q, n)`` rows; background: ``(D, n)`` (the same dtype); players: ``(n,)`` int64 player of each column
            (``None``: column ``j`` is player ``j``).
        rows: ``(L,)`` flat indices ``q * R + k`` of the live slots.
    """
    slots = sample.background.shape[1]
    q_index, k_index = rows // slots, rows % slots
    take = sample.inside[q_index, k_index]  # (L, m)
    if players is not None:
        take = take[:, players]  # (L, n)
    return _points(x[q_index], background[sample.background[q_index, k_index]], take)


def pair_points(x: Tensor, background: Tensor, q: Tensor, b: Tensor, take: Tensor) -> Tensor:
    """The points of coalitions of pairs ``(x[q], background[b])`` (``x`` on the columns ``take``, else the
    background row), then of their complements: ``(2 E, n)``.

    Args:
        x: ``(Q, n)`` rows; background: ``(D, n)`` (the same dtype); q, b: ``(E,)`` int64 row and background row of
            each coalition; take: ``(E, n)`` bool, the columns of its players.
    """
    return _points(x[q], background[b], take)


def _points(xs: Tensor, bs: Tensor, take: Tensor) -> Tensor:
    """``(x_S, b_{~S})`` then ``(b_S, x_{~S})`` for rows ``xs``, ``bs`` ``(L, n)`` and columns ``take`` ``(L, n)``
    bool: ``(2 L, n)``; floating entries selected on their bits (:func:`hybrids`)."""
    bits = _BITS.get(xs.dtype)
    if bits is None:
        return torch.cat((torch.where(take, xs, bs), torch.where(take, bs, xs)))
    xb, bb = xs.view(bits), bs.view(bits)
    mask = (xb ^ bb).bitwise_and_(-take.to(bits))
    out = torch.empty((2, *xs.shape), dtype=bits, device=xs.device)
    torch.bitwise_xor(bb, mask, out=out[0])
    torch.bitwise_xor(xb, mask, out=out[1])
    return out.view(xs.dtype).reshape(-1, xs.shape[1])

"""The sample design of the correction: paired coalitions of one (row, background row) pair, one model row each.

The interventional Shapley value of a row ``x`` is the background mean of the Shapley values of the pair games
``v_b(S) = f(x_S, b_{~S})``. In the game of ``(x, b)`` only the ``d`` players on which the two rows differ (``Δ``)
are not null, so the game is one of ``d`` players; its endpoints ``v_b(Δ) = f(x)`` and ``v_b(∅) = f(b)`` are
known (``f(x)``: one model row per explained row; ``f(b)``: the background's, shared by every row).

For a coalition ``S ⊆ Δ`` of size ``s`` in ``1..d-1``, drawn with probability ``q_d(s)`` and then uniformly among
the ``C(d, s)`` coalitions of that size, the Shapley value of player ``i ∈ Δ`` is

    φ_i = (f(x) - f(b)) / d + E[a_i(S) · v_b(S)],   a_i(S) = 1 / (s q_d(s)) if i ∈ S,  -1 / ((d - s) q_d(s)) if not.

(The Shapley weight of ``S`` for ``i ∈ S`` is ``(s-1)!(d-s)!/d! = 1 / (d C(d-1, s-1))`` and the probability of ``S``
is ``q_d(s) / C(d, s)``; their ratio is ``1 / (s q_d(s))``; likewise ``1 / ((d-s) q_d(s))`` for ``i ∉ S``.)
Three facts make the estimator cheap and calm:

* ``a_i(Δ∖S) = -a_i(S)`` when ``q_d`` is symmetric, so a coalition and its complement, drawn together, give
  ``a_i(S) · (v_b(S) - v_b(Δ∖S)) / 2``: only the odd part of the game, which is all the Shapley value sees;
* ``E[a_i(S) | s] = 0``, so any function of the size may be subtracted from ``v_b(S)`` for free: the odd part of the
  straight line between the endpoints, ``(2s - d) / (2d) · (f(x) - f(b))``, is;
* for any additive game ``u(S) = Σ_{j∈S} β_j`` (a control variate, exact Shapley values ``β``), ``v - u`` is
  estimated instead of ``v``: its odd part minus the line is ``y - Σ_j β_j w_j`` with ``w_j = [j ∈ S] - s/d``.

Every draw is a hash of ``(row key, round, slot, ...)`` (:mod:`._hashing`), so the design of a row is the same in
any batch, chunk or load. Within a round the slots take distinct background rows and their sizes are stratified
(one uniform per slot, spread over the slots).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from torchxplain.fourier.fit.residual._hashing import combine, mix, uniform

SizeLaw = Literal["uniform", "kernel", "sqrt"]
SIZE_LAWS: tuple[SizeLaw, ...] = ("uniform", "kernel", "sqrt")

_BACKGROUND, _SIZE, _ORDER, _PLAYERS = 1, 2, 3, 4  # streams of the hash keys


def size_table(m: int, law: SizeLaw, device: torch.device) -> Tensor:
    """``(m + 1, m + 1)`` float64: row ``d`` is ``q_d(s)`` for ``s = 0..m`` (zero outside ``1..d-1``).

    ``"uniform"``: every size alike; ``"kernel"``: the Shapley kernel's ``∝ 1 / (s (d - s))``; ``"sqrt"``: its
    square root. Each law is symmetric in ``s ↔ d - s``, as the pairing needs.
    """
    d = torch.arange(m + 1, dtype=torch.float64, device=device)[:, None]
    s = torch.arange(m + 1, dtype=torch.float64, device=device)[None, :]
    inside = (s >= 1) & (s <= d - 1)
    product = (s * (d - s)).clamp_min(1.0)
    raw = {"uniform": torch.ones_like(product), "kernel": 1.0 / product, "sqrt": product.rsqrt()}[law]
    weights = torch.where(inside, raw, 0.0)
    return weights / weights.sum(1, keepdim=True).clamp_min(1e-300)


@dataclass(frozen=True)
class Draw:
    """One round of samples for ``Q`` rows and ``R`` slots.

    Attributes:
        background: ``(Q, R)`` int64 background row of each slot.
        live: ``(Q, R)`` bool: the slot's pair differs in at least two players (others have no interior).
        inside: ``(Q, R, m)`` bool: the coalition ``S`` (a subset of the pair's differing players).
        size: ``(Q, R)`` int64 ``s``; players: ``(Q, R)`` int64 ``d``.
        weights: ``(Q, R, m)`` float64 ``a_i(S)`` (zero off the differing players and on dead slots).
        features: ``(Q, R, m)`` float64 ``w_j = [j ∈ S] - s/d`` on the differing players, else zero.
        line: ``(Q, R)`` float64 ``(2s - d) / (2d)``: the odd part of the straight line per unit of ``f(x) - f(b)``.
    """

    background: Tensor
    live: Tensor
    inside: Tensor
    size: Tensor
    players: Tensor
    weights: Tensor
    features: Tensor
    line: Tensor


def coalition_terms(
    inside: Tensor, delta: Tensor, size: Tensor, d: Tensor, table: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """The weights ``a_i(S)`` ``(..., m)``, the control variates' features ``w_j = [j ∈ S] - s/d`` ``(..., m)`` and
    the line's factor ``(2s - d) / (2d)`` ``(...)`` of coalitions ``inside`` of sizes ``size`` among the players
    ``delta`` (``d`` of them; all zero where ``delta`` is empty).

    Args:
        inside, delta: ``(..., m)`` bool; size, d: ``(...)`` int64; table: :func:`size_table`.
    """
    q_s = table[d, size]
    dd = d.to(torch.float64).clamp_min(1.0)
    ss = size.to(torch.float64)
    on = delta.to(torch.float64)
    positive = 1.0 / (ss * q_s).clamp_min(1e-300)
    negative = -1.0 / ((dd - ss) * q_s).clamp_min(1e-300)
    weights = (negative[..., None] + inside * (positive - negative)[..., None]) * on
    features = (inside.to(torch.float64) - (ss / dd)[..., None]) * on
    line = torch.where(delta.any(-1), (2.0 * ss - dd) / (2.0 * dd), 0.0)
    return weights, features, line


def _scramble(h: Tensor) -> Tensor:
    """One multiply-xorshift of 32-bit words (enough to rank players: their keys differ in the mixed part)."""
    h = (h * 0x2C1B3C6D) & 0xFFFFFFFF
    return h ^ (h >> 15)


def _ranks(keys: Tensor) -> Tensor:
    """The rank of each key along the last dimension (one sort and one scatter)."""
    order = keys.argsort(-1)
    steps = torch.arange(keys.shape[-1], device=keys.device).expand_as(order)
    return torch.empty_like(order).scatter_(-1, order, steps)


def slot_backgrounds(keys: Tensor, n_background: int, slots: int) -> Tensor:
    """``(Q, R)`` distinct background rows per row (all of them, in order, when ``R`` equals their number)."""
    q_rows = keys.shape[0]
    if slots >= n_background:
        return torch.arange(n_background, device=keys.device).expand(q_rows, -1)
    index = torch.arange(n_background, device=keys.device)
    draws = uniform(combine(combine(keys[:, None], _BACKGROUND), index[None, :]))
    return draws.argsort(1)[:, :slots]


def draw(keys: Tensor, differ: Tensor, slots: int, table: Tensor, sampled: Tensor | None = None) -> Draw:
    """One round of the design (module docstring).

    Args:
        keys: ``(Q,)`` int64 keys of (row, round) (:func:`~._hashing.combine` of a row key and the round).
        differ: ``(Q, D, m)`` bool: the players on which each row and each background row differ.
        slots: ``R``, pairs per round (distinct background rows; at most ``D``).
        table: :func:`size_table` of the law in use.
        sampled: ``(Q, D)`` bool, the pairs that are sampled at all (``None``: every pair; a pair whose game is
            known otherwise, e.g. enumerated, is a slot without samples).
    """
    q_rows, n_background, m = differ.shape
    device = differ.device
    background = slot_backgrounds(keys, n_background, slots)
    delta = torch.gather(differ, 1, background[:, :, None].expand(-1, -1, m))  # (Q, R, m)
    d = delta.sum(2)
    live = d >= 2 if sampled is None else (d >= 2) & torch.gather(sampled, 1, background)
    slot = torch.arange(background.shape[1], device=device)
    slot_keys = combine(keys[:, None], slot[None, :])  # (Q, R)
    # stratified sizes: slot k's uniform falls in stratum order[k] of R equal strata
    order = _ranks(combine(slot_keys, _ORDER))
    u = (order.to(torch.float64) + uniform(combine(slot_keys, _SIZE))) / background.shape[1]
    cdf = table.cumsum(1)[d]  # (Q, R, m + 1)
    size = torch.searchsorted(cdf, u[..., None].contiguous(), right=True)[..., 0].clamp(min=1)
    size = torch.minimum(size, (d - 1).clamp(min=1))
    # a uniform coalition of that size among the differing players: the players of the smallest keys
    player_keys = _scramble(slot_keys[..., None] ^ mix(torch.arange(m, device=device) + (_PLAYERS << 20)))
    player_keys = player_keys + (~delta).to(torch.int64) * (1 << 32)  # the others last
    inside = (_ranks(player_keys) < size[..., None]) & delta & live[..., None]
    weights, features, line = coalition_terms(inside, delta & live[..., None], size, d, table)
    return Draw(background, live, inside, size, d, weights, features, line)


def hybrids(x: Tensor, background: Tensor, sample: Draw, players: Tensor, rows: Tensor) -> tuple[Tensor, Tensor]:
    """The live slots' points ``(x_S, b_{~S})`` and their complements ``(b_S, x_{~S})``, ``(L, n)`` each.

    Args:
        x: ``(Q, n)`` rows; background: ``(D, n)``; players: ``(n,)`` int64 player of each column.
        rows: ``(L,)`` flat indices ``q * R + k`` of the live slots.
    """
    slots = sample.background.shape[1]
    q_index, k_index = rows // slots, rows % slots
    take = sample.inside[q_index, k_index][:, players]  # (L, n)
    xs, bs = x[q_index], background[sample.background[q_index, k_index]]
    return torch.where(take, xs, bs), torch.where(take, bs, xs)

r"""The batched kernel: every interaction index of orders ``0..k`` from one pass over (query, background, frequency).

A frequency ``f`` can only make a player differ if it touches the player, so the work is done in each frequency's
*local* coordinates: its ``d_f`` support players ``P_f``. Frequencies are processed in groups of equal ``d``
(a loop over the distinct support sizes, at most the degree + 1). For a block of queries, frequencies and
background rows the kernel builds

* ``D[q, f, b, j]`` — does the parity of ``f`` on player ``P_f[j]`` differ between query ``q`` and row ``b``;
* ``c = Σ_j D`` and the weights ``w_t = s_{b,f} · W(c, t)`` (a gather from
  :func:`~torchxplain.fourier.values.interactions._weights.weight_table`);
* ``L_t[q, f, j_1..j_t] = Σ_b w_t Π_i D[.., j_i]`` — one batched GEMM over ``b`` of the ``(t-1)``-fold
  Khatri–Rao power of ``D`` with ``D``;

and scatters ``L_t`` into the dense ``(Q, m^t)`` output at the players ``(P_f[j_1], ..., P_f[j_t])``. Entries with a
repeated player are zeroed at the end. Cost ``Θ(Q·|D|·Σ_f d_f^t)`` for order ``t`` instead of ``Θ(Q·|D|·k·m^t)``;
blocks are sized so every intermediate fits ``parse_memory()``.
"""

from __future__ import annotations

import itertools

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, parse_memory, progress
from torchxplain.fourier.values._background import BackgroundTerm
from torchxplain.fourier.values._gemm import _layout, _parity_bits
from torchxplain.fourier.values.interactions._weights import weight_table


def _support_players(frequencies: Tensor, groups: Tensor | None, m: int) -> tuple[Tensor, Tensor]:
    """``(k, m)`` int64 players of each frequency, touched ones first (ascending), and ``(k,)`` how many it touches."""
    if groups is None:
        touched = frequencies
    else:
        counts = torch.zeros(frequencies.shape[0], m, device=frequencies.device)
        touched = counts.index_add_(1, groups.to(frequencies.device), frequencies.to(counts.dtype)) > 0
    order = torch.argsort((~touched).to(torch.int8), dim=1, stable=True)  # touched (0) before untouched (1)
    return order, touched.sum(1)


def _local_bits(rows: Tensor, freq: Tensor, players: Tensor, layout: Tensor | None) -> Tensor:
    """``(R, kc, d)`` parity of each frequency on each of its local players, for each row."""
    if layout is None:  # a singleton player's parity is its bit where f is on (0 on padding, which f is off)
        return rows[:, players] * freq.gather(1, players)[None]
    bits = _parity_bits(rows, freq, layout)  # (R, kc, m)
    return bits.gather(2, players[None].expand(rows.shape[0], -1, -1))


def _flat_targets(players: Tensor, m: int, order: int) -> Tensor:
    """``(kc, d^order)`` flat index ``Σ_i P[j_i] m^{order-i}`` of every local tuple in the ``m^order`` output."""
    kc, d = players.shape
    flat = players
    for _ in range(order - 1):
        flat = (flat[:, :, None] * m + players[:, None, :]).reshape(kc, -1)
    return flat


def _distinct_mask(m: int, order: int, device: torch.device) -> Tensor:
    """``(m,)*order`` bool: True where all ``order`` player indices differ."""
    mask = torch.ones((m,) * order, dtype=torch.bool, device=device)
    idx = torch.arange(m, device=device)
    for a, b in itertools.combinations(range(order), 2):
        shape_a, shape_b = [1] * order, [1] * order
        shape_a[a], shape_b[b] = m, m
        mask &= idx.view(shape_a) != idx.view(shape_b)
    return mask


def _block_sizes(q_rows: int, b_rows: int, k: int, per_triple: int, per_row_freq: int, budget: int) -> tuple[int, ...]:
    """Chunk sizes (frequencies, queries, background rows) whose intermediates fit ``budget`` elements:
    ``q·b·kc·per_triple`` for the block and ``(B + q)·kc·per_row_freq`` for the parity bits."""
    kc = max(1, min(k, budget // max(b_rows * (per_triple + per_row_freq), 1)))
    if kc * b_rows * (per_triple + per_row_freq) > budget:  # one frequency against all rows is already too much
        return 1, 1, max(1, min(b_rows, budget // (per_triple + per_row_freq)))
    spare = budget - kc * b_rows * per_row_freq
    return kc, max(1, min(q_rows, spare // (kc * (b_rows * per_triple + per_row_freq)))), b_rows


def _accumulate(
    out: dict[int, Tensor],
    q0: int,
    q1: int,
    bits_q: Tensor,
    bits_b: Tensor,
    signed: Tensor,
    table: Tensor,
    targets: list[Tensor],
) -> None:
    """Add one block's ``Σ_b w_t Π D`` to every order of ``out`` (rows ``q0:q1``).

    ``bits_q`` ``(kc, q, d)`` and ``bits_b`` ``(kc, b, d)`` are local parity bits, ``signed`` ``(kc, 1, b)``.
    With ``D = p_q + p_b - 2 p_q p_b``, ``c`` and order 1 need only products over ``d`` (no ``(kc, q, b, d)``
    tensor); orders ``≥ 2`` build ``D`` and its Khatri–Rao powers.
    """
    kc, q, d = bits_q.shape
    c = bits_q.sum(-1, keepdim=True) + bits_b.sum(-1)[:, None, :] - 2.0 * torch.bmm(bits_q, bits_b.transpose(1, 2))
    c = c.round_().long()  # (kc, q, b) exact small integers
    out[0][q0:q1] += (table[:, 0][c] * signed).sum((0, 2))
    w = table[:, 1][c] * signed  # (kc, q, b)
    per_q = w.sum(-1, keepdim=True)
    weighted_b = torch.bmm(w, bits_b)  # Σ_b w p_b: (kc, q, d)
    first = per_q * bits_q + weighted_b - 2.0 * bits_q * weighted_b
    out[1][q0:q1].index_add_(1, targets[0].reshape(-1), first.transpose(0, 1).reshape(q, -1))
    if len(targets) == 1:
        return
    dis = (bits_q[:, :, None] - bits_b[:, None]).abs_().reshape(kc * q, -1, d)  # batch (kc, q), then b, d
    power = dis
    for t in range(2, len(targets) + 1):
        w = (table[:, t][c] * signed).reshape(kc * q, -1, 1)
        local_t = torch.bmm((power * w).transpose(1, 2), dis)  # (kc·q, d^{t-1}, d)
        dense = out[t][q0:q1].view(q, -1)  # a view: index_add_ writes into out[t]
        dense.index_add_(1, targets[t - 1].reshape(-1), local_t.reshape(kc, q, -1).transpose(0, 1).reshape(q, -1))
        if t < len(targets):
            power = (power[..., :, None] * dis[..., None, :]).reshape(kc * q, dis.shape[1], -1)


def _interaction_values(
    xq: Tensor, term: BackgroundTerm, groups: Tensor | None, m: int, index: str, max_order: int
) -> dict[int, Tensor]:
    """Interaction index ``index`` of orders ``0..max_order`` for validated inputs (the explainer's entry point).

    Args:
        xq: ``(Q, n)`` binary queries in the spectrum's dtype, on the background's device.
        term: the :class:`~torchxplain.fourier.BackgroundTerm` of the spectrum (``k`` frequencies on
            ``n`` binary features; its dtype is the working dtype) against the ``(B, n)`` background, e.g. a
            cached ``ValuePlan.term``.
        groups: ``(n,)`` validated player ids in ``0..m-1``, or ``None`` for one player per feature.
        m: the number of players.
        index: one of :data:`~torchxplain.fourier.values.interactions._weights.INDICES`.
        max_order: ``1 ≤ max_order ≤ m`` (``1`` for ``"SV"``/``"BV"``).

    Returns:
        ``{0: (Q,), 1: (Q, m), 2: (Q, m, m), ...}`` up to ``max_order``; order ``t`` is symmetric and zero where a
        player repeats. Order 0 follows shapiq's empty-set convention for the index.
    """
    bg, spectrum = term.background, term.spectrum
    q_rows, b_rows, k = xq.shape[0], bg.shape[0], len(spectrum)
    device = xq.device
    out = {t: xq.new_zeros((q_rows,) + (m,) * t) for t in range(max_order + 1)}
    if k == 0:
        return out
    players, sizes = _support_players(spectrum.frequencies.to(device), groups, m)
    table = weight_table(index, max_order, int(sizes.max()), xq.dtype, device)
    layout = _layout(term, groups, m)
    budget = parse_memory() // xq.element_size()
    # frequencies touching d players cost d^t per triple: process them by support size (a loop over sizes)
    for size in torch.unique(sizes).tolist():
        chosen = torch.nonzero(sizes == size).flatten()
        d = max(size, 1)  # size-0 frequencies (constants) keep one untouched player: bits 0, order 0 only
        per_triple = max_order + 6 + (2 * d ** (max_order - 1) + 2 * d if max_order >= 2 else 0)
        per_row_freq = 2 * d + (0 if layout is None else m)
        kc, qc, bc = _block_sizes(q_rows, b_rows, chosen.shape[0], per_triple, per_row_freq, budget)
        for f0, f1 in progress(chunk_bounds(chosen.shape[0], kc), desc=f"interactions ({size} players)"):
            ids = chosen[f0:f1]
            freq = spectrum.frequencies[ids].to(device=device, dtype=xq.dtype)
            local = players[ids, :d]
            targets = [_flat_targets(local, m, t) for t in range(1, max_order + 1)]
            bits_b = _local_bits(bg, freq, local, layout).transpose(0, 1)  # (kc, B, d)
            parity = torch.remainder(bg @ freq.T, 2.0)  # s = a_f (-1)^{<f, b>}, (kc, 1, B)
            signed = ((1.0 - 2.0 * parity) * spectrum.amplitudes[ids].to(device)).T[:, None, :]
            for q0, q1 in chunk_bounds(q_rows, qc):
                bits_q = _local_bits(xq[q0:q1], freq, local, layout).transpose(0, 1)  # (kc, q, d)
                for b0, b1 in chunk_bounds(b_rows, bc):
                    _accumulate(out, q0, q1, bits_q, bits_b[:, b0:b1], signed[..., b0:b1], table, targets)
    for t in range(max_order + 1):
        out[t] = out[t] / b_rows
        if t >= 2:
            out[t] = out[t] * _distinct_mask(m, t, device)
    return out

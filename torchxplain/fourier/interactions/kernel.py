r"""The batched kernel: every interaction index of orders ``0..k`` from one pass over (query, background, frequency).

For a block of queries, background rows and frequencies it builds ``dis`` (``(q, b, kc, m)``: does the parity of
the frequency on player ``g`` differ between the query and the background row), ``c = Σ_g dis`` and the weights
``w_t = s · W(c, t)`` (a gather from :func:`~torchxplain.fourier.interactions.weights.weight_table`), then
accumulates ``I_t[q, g_1..g_t] += Σ_{b,f} w_t Π_j dis_{g_j}`` as one batched GEMM per order: the ``(t-1)``-fold
Khatri–Rao power of ``dis`` (``(q, pairs, m^{t-1})``) times ``dis``. Entries with a repeated player are zeroed.
Blocks are sized so the largest per-block intermediate (``≈ 2 m^{k-1} + 3 m`` elements per (query, background
row, frequency)) fits ``parse_memory()``.
"""

from __future__ import annotations

import itertools

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, parse_memory, progress
from torchxplain.fourier.interactions.weights import weight_table
from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.values.background import BackgroundTerm
from torchxplain.fourier.values.gemm import _layout, _parity_bits


def _max_players_touched(spectrum: FourierSpectrum, groups: Tensor | None, m: int) -> int:
    """The largest number of players any one frequency touches (an upper bound on ``c``)."""
    if len(spectrum) == 0:
        return 0
    freq = spectrum.frequencies
    if groups is None:
        return int(freq.sum(1).max())
    incidence = torch.zeros(len(spectrum), m, device=freq.device).index_add_(1, groups.to(freq.device), freq.float())
    return int((incidence > 0).sum(1).max())


def _distinct_mask(m: int, order: int, device: torch.device) -> Tensor:
    """``(m,)*order`` bool: True where all ``order`` player indices differ."""
    mask = torch.ones((m,) * order, dtype=torch.bool, device=device)
    idx = torch.arange(m, device=device)
    for a, b in itertools.combinations(range(order), 2):
        shape_a, shape_b = [1] * order, [1] * order
        shape_a[a], shape_b[b] = m, m
        mask &= idx.view(shape_a) != idx.view(shape_b)
    return mask


def _block_sizes(q_rows: int, b_rows: int, k: int, per_triple: int, budget: int) -> tuple[int, int, int]:
    """Chunk sizes (frequencies, queries, background rows) so ``q·b·kc·per_triple`` elements fit ``budget``."""
    kc = max(1, min(k, budget // max(b_rows * per_triple, 1)))
    if kc * b_rows * per_triple > budget:  # one frequency against the whole background is already too much
        return 1, 1, max(1, min(b_rows, budget // per_triple))
    return kc, max(1, min(q_rows, budget // (kc * b_rows * per_triple))), b_rows


def _interaction_values(
    xq: Tensor, term: BackgroundTerm, groups: Tensor | None, m: int, index: str, max_order: int
) -> dict[int, Tensor]:
    """Interaction index ``index`` of orders ``0..max_order`` for validated inputs (the explainer's entry point).

    Args:
        xq: ``(Q, n)`` binary queries in the spectrum's dtype, on the background's device.
        term: the :class:`~torchxplain.fourier.values.BackgroundTerm` of the spectrum (``k`` frequencies on
            ``n`` binary features; its dtype is the working dtype) against the ``(B, n)`` background, e.g. a
            cached ``ValuePlan.term``.
        groups: ``(n,)`` validated player ids in ``0..m-1``, or ``None`` for one player per feature.
        m: the number of players.
        index: one of :data:`~torchxplain.fourier.interactions.weights.INDICES`.
        max_order: ``1 ≤ max_order ≤ m`` (``1`` for ``"SV"``/``"BV"``).

    Returns:
        ``{0: (Q,), 1: (Q, m), 2: (Q, m, m), ...}`` up to ``max_order``; order ``t`` is symmetric and zero where a
        player repeats. Order 0 follows shapiq's empty-set convention for the index.
    """
    bg, spectrum = term.background, term.spectrum
    q_rows, b_rows, k = xq.shape[0], bg.shape[0], len(spectrum)
    dtype, device = xq.dtype, xq.device
    out = {t: xq.new_zeros((q_rows,) + (m,) * t) for t in range(max_order + 1)}
    if k == 0:
        return out
    table = weight_table(index, max_order, _max_players_touched(spectrum, groups, m), dtype, device)
    freq = spectrum.frequencies.to(device=device, dtype=dtype)
    layout = _layout(term, groups, m)
    per_triple = 2 * m ** max(max_order - 1, 1) + 3 * m + max_order + 4
    kc, qc, bc = _block_sizes(q_rows, b_rows, k, per_triple, parse_memory() // xq.element_size())
    for f0, f1 in progress(chunk_bounds(k, kc), desc="interaction values"):
        bits_b = _parity_bits(bg, freq[f0:f1], layout)  # (B, kc, m)
        signed = term.signed_block(f0, f1)  # (B, kc) s = a_f (-1)^{<f, b>}
        for q0, q1 in chunk_bounds(q_rows, qc):
            bits_q = _parity_bits(xq[q0:q1], freq[f0:f1], layout)  # (q, kc, m)
            for b0, b1 in chunk_bounds(b_rows, bc):
                dis = (bits_q[:, None] - bits_b[None, b0:b1]).abs_().reshape(q1 - q0, -1, m)  # (q, pairs, m)
                counts = dis.sum(-1).long()  # exact small integers
                w = table[counts] * signed[b0:b1].reshape(1, -1, 1)  # (q, pairs, max_order + 1)
                out[0][q0:q1] += w[..., 0].sum(1)
                power = dis.new_ones(q1 - q0, dis.shape[1], 1)  # Khatri–Rao power of dis, order t - 1
                for t in range(1, max_order + 1):
                    contrib = torch.bmm((power * w[..., t : t + 1]).transpose(1, 2), dis)  # (q, m^{t-1}, m)
                    out[t][q0:q1] += contrib.reshape((q1 - q0,) + (m,) * t)
                    if t < max_order:
                        power = (power[..., :, None] * dis[..., None, :]).reshape(q1 - q0, dis.shape[1], -1)
    for t in range(max_order + 1):
        out[t] = out[t] / b_rows
        if t >= 2:
            out[t] = out[t] * _distinct_mask(m, t, device)
    return out

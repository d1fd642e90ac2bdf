r"""The dense kernel: closed forms over every (query, background row, frequency) triple, as batched products.

For a query ``x*``, background point ``x`` and frequency ``f`` let ``dis_{x,f,g}`` be 1 when the parity
of ``f`` restricted to player ``g`` differs between ``x`` and ``x*`` (for singleton players:
``f_i (x_i ⊕ x*_i)``), ``c = Σ_g dis_g`` and ``s = a_f (-1)^{<f,x>}``. Then (paper Eq. 5; the design page):

* Shapley:     ``φ_g   = -(2/|D|) Σ_{x,f} s · w(c) · dis_g``,   ``w(c) = 1/c`` for odd ``c``, else 0;
* Banzhaf:     ``β_g   = -(2/|D|) Σ_{x,f} s · [c = 1] · dis_g``;
* pairwise SII ``Φ_gh  =  (4/|D|) Σ_{x,f} s · w2(c) · dis_g dis_h`` (g ≠ h), ``w2(c) = 1/(c-1)`` for even
  ``c ≥ 2``, else 0.

Singleton players use the two-GEMM form (``C = d Fᵀ``, ``Φ = (S ∘ w(C)) F``); grouped players and
interactions build the ``dis`` tensor chunk by chunk. Cost ``Θ(Q·|D|·k·n)``: right for dense spectra and GPUs.
Every intermediate that grows with ``Q·k`` or ``Q·|D|·k`` is chunked to the memory budget in force
(:func:`torchxplain._core.parse_memory`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, parse_memory
from torchxplain.fourier.values._background import BackgroundTerm

FirstOrder = Literal["shapley", "banzhaf"]

_HALF_EXACT_MAX = 2048  # float16 holds every integer up to 2048 exactly
_CPU_BLOCK = 2**18  # elements per (pairs × frequencies) block: about 1 MiB in float32, cache-resident
_CUDA_BLOCK = 2**26


def _interaction_weight(c: Tensor) -> Tensor:
    even = (torch.remainder(c, 2.0) == 0.0) & (c >= 2.0)
    return torch.where(even, (c - 1.0).clamp_min(1.0).reciprocal(), 0.0)


def _pair_counts(d: Tensor, freq_t: Tensor) -> Tensor:
    """``d @ freq_t`` — exact small integers; on CUDA computed in float16 when that is exact."""
    if d.is_cuda and d.dtype in (torch.float32, torch.float64) and d.shape[1] <= _HALF_EXACT_MAX:
        return (d.half() @ freq_t.half()).to(d.dtype)
    return d @ freq_t


def _signed_query_amplitudes(amplitudes: Tensor, xq: Tensor, freq_t: Tensor) -> Tensor:
    """``(q, kc)`` ``t_{x*,f} = a_f (-1)^{<f, x*>}`` for a block of queries and frequencies."""
    return (1.0 - 2.0 * torch.remainder(xq @ freq_t, 2.0)) * amplitudes


def singleton_gemm(xq: Tensor, term: BackgroundTerm, kind: FirstOrder) -> Tensor:
    """``(Q, n)`` Shapley (``kind="shapley"``) or Banzhaf values of singleton players in the two-GEMM form.

    ``c`` is odd exactly when ``(-1)^{<f,x>} ≠ (-1)^{<f,x*>}``, so ``s · [c odd] = (s - t) / 2`` with
    ``t = a_f (-1)^{<f,x*>}``: the weights cost one subtraction and one division per (pair, frequency).
    Blocks of (queries, background rows, frequencies) are sized to stay cache-resident.
    """
    spectrum = term.spectrum
    q_rows, b_rows, k = xq.shape[0], term.background.shape[0], len(spectrum)
    # features in no frequency are dummies (value 0): leave them out of every product
    active = torch.nonzero(spectrum.frequencies.any(0).to(xq.device)).flatten()
    xq_all, xq, bg, n = xq, xq[:, active], term.background[:, active], active.shape[0]
    amplitudes = spectrum.amplitudes.to(xq.device)
    if n == 0:  # a constant function: every player is a dummy (zeros kept in the amplitudes' graph)
        return xq_all.new_zeros(xq_all.shape) + 0.0 * amplitudes.sum()
    cap = parse_memory() // (4 * xq.element_size())
    elements = min(cap, _CUDA_BLOCK if xq.is_cuda else _CPU_BLOCK)
    bc = max(1, min(b_rows, elements))
    kc = max(1, min(k, elements // bc, cap // (2 * n)))  # a chunk's frequencies as floats (and transposed) fit
    qc = max(1, min(q_rows, elements // (bc * kc)))
    acc = xq.new_zeros(q_rows, n)
    for f0, f1 in chunk_bounds(k, kc):  # the (k, n) frequencies as floats, one chunk at a time
        freq = spectrum.frequencies[f0:f1].to(device=xq.device, dtype=xq.dtype)[:, active]
        freq_t = freq.T.contiguous()
        for q0, q1 in chunk_bounds(q_rows, qc):
            t = _signed_query_amplitudes(amplitudes[f0:f1], xq[q0:q1], freq_t)
            for b0, b1 in chunk_bounds(b_rows, bc):
                d = (xq[q0:q1, None, :] - bg[None, b0:b1, :]).abs_()  # x ⊕ x* on {0,1}
                d2 = d.reshape(-1, n)
                counts = _pair_counts(d2, freq_t)
                s = term.signed_block(f0, f1)[b0:b1]
                w = (s[None] - t[:, None]).reshape(counts.shape)
                w = w / counts.clamp_(min=1.0) if kind == "shapley" else w * (counts == 1.0)
                acc[q0:q1] += ((w @ freq).view_as(d) * d).sum(1)
    return xq_all.new_zeros(xq_all.shape).index_copy(1, active, acc * (-1.0 / b_rows))


def _group_layout(groups: Tensor, m: int, active: Tensor) -> Tensor:
    """``(m, L)`` feature indices of each player's active features, padded with ``n`` (a zero column)."""
    n = groups.shape[0]
    features = torch.nonzero(active).flatten()
    owner = groups[features]
    order = torch.argsort(owner, stable=True)
    features, owner = features[order], owner[order]
    sizes = torch.bincount(owner, minlength=m)
    starts = torch.cumsum(sizes, 0) - sizes
    width = max(int(sizes.max()) if sizes.numel() else 0, 1)
    layout = torch.full((m, width), n, dtype=torch.long, device=groups.device)
    layout[owner, torch.arange(features.shape[0], device=groups.device) - starts[owner]] = features
    return layout


def _parity_bits(rows: Tensor, freq: Tensor, layout: Tensor | None) -> Tensor:
    """``(R, kc, m)`` parity of ``<f_g, x_g>`` for each row, frequency and player (in ``rows.dtype``).

    Singleton players (``layout=None``) need only ``x_i f_i``; groups use one batched product over players of
    the rows' and frequencies' features laid out per player (``layout`` from :func:`_group_layout`).
    """
    if layout is None:
        return rows[:, None, :] * freq[None, :, :]
    pad_rows = torch.cat([rows, rows.new_zeros(rows.shape[0], 1)], dim=1)[:, layout]  # (R, m, L)
    pad_freq = torch.cat([freq, freq.new_zeros(freq.shape[0], 1)], dim=1)[:, layout]  # (kc, m, L)
    counts = torch.bmm(pad_rows.permute(1, 0, 2), pad_freq.permute(1, 2, 0))  # (m, R, kc)
    return torch.remainder(counts, 2.0).permute(1, 2, 0)


def _layout(term: BackgroundTerm, groups: Tensor | None, m: int) -> Tensor | None:
    if groups is None:
        return None
    return _group_layout(groups, m, term.spectrum.frequencies.any(0).to(groups.device))


def _dis_blocks(
    xq: Tensor, term: BackgroundTerm, groups: Tensor | None, m: int
) -> Iterator[tuple[int, int, int, int, int, int, Tensor]]:
    """Yield ``(q0, q1, b0, b1, f0, f1, dis)`` with ``dis`` of shape ``(q, b, kc, m)``."""
    bg, spectrum = term.background, term.spectrum
    q_rows, b_rows, k, n = xq.shape[0], bg.shape[0], len(spectrum), spectrum.n_features
    layout = _layout(term, groups, m)
    elements = parse_memory() // (4 * xq.element_size())
    kc = max(1, min(k, elements // (b_rows * m + n + 1)))
    qc = max(1, min(q_rows, elements // max(kc * b_rows * m, 1)))
    bc = b_rows if kc * b_rows * m <= elements else max(1, elements // (kc * m))
    for f0, f1 in chunk_bounds(k, kc):
        freq = spectrum.frequencies[f0:f1].to(device=xq.device, dtype=xq.dtype)  # one chunk as floats
        bits_b = _parity_bits(bg, freq, layout)
        for q0, q1 in chunk_bounds(q_rows, qc):
            bits_q = _parity_bits(xq[q0:q1], freq, layout)
            for b0, b1 in chunk_bounds(b_rows, bc):
                dis = (bits_q[:, None] - bits_b[None, b0:b1]).abs_()
                yield q0, q1, b0, b1, f0, f1, dis


def grouped_first_order(xq: Tensor, term: BackgroundTerm, groups: Tensor, m: int, kind: FirstOrder) -> Tensor:
    """``(Q, m)`` Shapley or Banzhaf values of grouped players, as batched products (no ``(Q, B, k, m)`` tensor).

    With parity bits ``p`` of each player, ``dis_g = p_q + p_b - 2 p_q p_b``, so ``c = Σ_g dis_g`` and
    ``Σ_{b,f} W dis_g`` reduce to per-frequency products of ``(Q, m)`` and ``(m, B)`` matrices.
    """
    bg, spectrum = term.background, term.spectrum
    q_rows, b_rows, k, n = xq.shape[0], bg.shape[0], len(spectrum), spectrum.n_features
    amplitudes = spectrum.amplitudes.to(xq.device)
    layout = _layout(term, groups, m)
    elements = parse_memory() // (6 * xq.element_size())
    kc = max(1, min(k, elements // (b_rows * (m + 1) + n + 1)))
    qc = max(1, min(q_rows, elements // max(kc * (b_rows + m), 1)))
    out = xq.new_zeros(q_rows, m)
    for f0, f1 in chunk_bounds(k, kc):
        freq = spectrum.frequencies[f0:f1].to(device=xq.device, dtype=xq.dtype)  # one chunk as floats
        bits_b = _parity_bits(bg, freq, layout).permute(1, 0, 2)  # (kc, B, m)
        s_b = term.signed_block(f0, f1).T[:, None, :]  # (kc, 1, B)
        for q0, q1 in chunk_bounds(q_rows, qc):
            bits_q = _parity_bits(xq[q0:q1], freq, layout).permute(1, 0, 2)  # (kc, q, m)
            counts = (
                bits_q.sum(-1, keepdim=True)
                + bits_b.sum(-1)[:, None, :]
                - 2.0 * torch.bmm(bits_q, bits_b.transpose(1, 2))
            )  # (kc, q, B)
            if kind == "shapley":  # s·[c odd] = (s - t)/2 as in the singleton form
                t = _signed_query_amplitudes(amplitudes[f0:f1], xq[q0:q1], freq.T)
                w = (s_b - t.T[:, :, None]) / (2.0 * counts.clamp_(min=1.0))
            else:
                w = s_b * (counts == 1.0)
            per_q = w.sum(-1, keepdim=True)  # (kc, q, 1)
            weighted_b = torch.bmm(w, bits_b)  # (kc, q, m): Σ_b w p_b
            out[q0:q1] += (per_q * bits_q + weighted_b - 2.0 * bits_q * weighted_b).sum(0)
    return out * (-2.0 / b_rows)


def grouped_interactions(xq: Tensor, term: BackgroundTerm, groups: Tensor | None, m: int) -> Tensor:
    """``(Q, m, m)`` pairwise Shapley interaction index (zero diagonal) from chunks of the ``dis`` tensor."""
    out = xq.new_zeros(xq.shape[0], m, m)
    for q0, q1, b0, b1, f0, f1, dis in _dis_blocks(xq, term, groups, m):
        w = _interaction_weight(dis.sum(-1)) * term.signed_block(f0, f1)[None, b0:b1]
        flat = dis.reshape(q1 - q0, -1, m)
        out[q0:q1] += (flat * w.reshape(q1 - q0, -1, 1)).transpose(1, 2) @ flat
    out = out * (4.0 / term.background.shape[0])
    return out * (1.0 - torch.eye(m, dtype=out.dtype, device=out.device))

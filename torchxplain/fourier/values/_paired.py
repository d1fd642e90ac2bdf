r"""Values against per-row baselines (Captum's pairing): input row ``i`` is explained against its reference row ``i``.

Captum's ``baselines`` of shape ``(N, n)`` give each of the ``N`` inputs one reference: the game of query ``x*_i`` is
``v_i(S) = h(x*_{i,S}, b_{i,~S})``, the interventional game against a one-row background. Every index of
:mod:`~torchxplain.fourier.values.interactions._weights` is then a sum over the spectrum's frequencies alone,

    ``I_i(T) = Σ_f s_{i,f} W(c_{i,f}, t) Π_{g∈T} dis_{i,f,g}``,   ``s_{i,f} = a_f (-1)^{<f, b_i>}``,

with ``dis_{i,f,g}`` = 1 where the parity of ``f`` on player ``g`` differs between ``x*_i`` and ``b_i`` and
``c_{i,f} = Σ_g dis_{i,f,g}``: Shapley values are ``"SV"`` at order 1, Banzhaf values ``"BV"``, the pairwise
interaction index ``"SII"`` at order 2. One pass over (row, frequency) pairs, in each frequency's local players
(as the background kernel :mod:`~torchxplain.fourier.values.interactions._kernel` does), costs
``Θ(N · Σ_f d_f^t)`` for order ``t`` — not the ``Θ(N² ...)`` of explaining every input against every reference
row and keeping the diagonal. Blocks of rows and frequencies fit the memory budget in force.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, parse_memory, progress
from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.values._gemm import _group_layout
from torchxplain.fourier.values.interactions._kernel import (
    _distinct_mask,
    _flat_targets,
    _local_bits,
    _support_players,
)
from torchxplain.fourier.values.interactions._weights import weight_table


def paired_indices(
    xq: Tensor, references: Tensor, spectrum: FourierSpectrum, groups: Tensor | None, m: int, index: str, order: int
) -> dict[int, Tensor]:
    """Index ``index`` of orders ``0..order`` of each query against its own reference row.

    Args:
        xq: ``(N, n)`` binary queries in the spectrum's dtype.
        references: ``(N, n)`` binary reference rows, row ``i`` for query ``i`` (same dtype and device).
        spectrum: ``k`` frequencies on the ``n`` binary features.
        groups: ``(n,)`` player index ``0..m-1`` of each binary feature, or ``None`` (one player per feature).
        m: the number of players.
        index: one of :data:`~torchxplain.fourier.values.interactions._weights.INDICES`.
        order: the largest order, ``1 ≤ order ≤ m``.

    Returns:
        ``{0: (N,), 1: (N, m), ..., order: (N, m, ..., m)}`` in the output's units; order ``t ≥ 2`` symmetric and
        zero where a player repeats. Order 0 is the index's empty-set entry (``v(∅) = h(b_i)`` for ``"SV"``).
    """
    rows, device = xq.shape[0], xq.device
    out = {t: xq.new_zeros((rows,) + (m,) * t) for t in range(order + 1)}
    if len(spectrum) == 0 or rows == 0:
        return out
    frequencies = spectrum.frequencies.to(device)
    amplitudes = spectrum.amplitudes.to(device)
    if m == 0:  # no player: every frequency is a constant of the reference, only the empty set gets a value
        weight = weight_table(index, order, 0, xq.dtype, device)[0, 0]
        for f0, f1, q0, q1, freq in _blocks(frequencies, xq, 2):
            signed = (1.0 - 2.0 * torch.remainder(references[q0:q1] @ freq.T, 2.0)) * amplitudes[f0:f1]
            out[0][q0:q1] += weight * signed.sum(1)
        return out
    players, sizes = _support_players(frequencies, groups, m)
    table = weight_table(index, order, int(sizes.max()), xq.dtype, device)
    if groups is None and order == 1:
        return _singleton_first_order(xq, references, frequencies, amplitudes, table, out)
    layout = None if groups is None else _group_layout(groups, m, frequencies.any(0))
    budget = parse_memory() // (2 * xq.element_size())
    for size in torch.unique(sizes).tolist():
        chosen = torch.nonzero(sizes == size).flatten()
        d = max(size, 1)  # constants keep one untouched player: its bits are 0, so only order 0 gets a term
        per_pair = 4 * d + 4 + 2 * sum(d**t for t in range(1, order + 1)) + (0 if layout is None else 2 * m)
        pairs = max(1, budget // per_pair)  # (row, frequency) pairs per block
        kc = max(1, min(chosen.shape[0], pairs // rows))
        qc = max(1, min(rows, pairs // kc))
        for f0, f1 in progress(chunk_bounds(chosen.shape[0], kc), desc=f"paired values ({size} players)"):
            ids = chosen[f0:f1]
            freq = frequencies[ids].to(xq.dtype)
            local = players[ids, :d]
            targets = [_flat_targets(local, m, t).reshape(-1) for t in range(1, order + 1)]
            for q0, q1 in chunk_bounds(rows, qc):
                ref = references[q0:q1]
                dis = (_local_bits(xq[q0:q1], freq, local, layout) - _local_bits(ref, freq, local, layout)).abs_()
                c = dis.sum(-1).round_().long()  # (q, kc) exact small integers
                signed = (1.0 - 2.0 * torch.remainder(ref @ freq.T, 2.0)) * amplitudes[ids]  # s_{i,f}
                out[0][q0:q1] += (table[:, 0][c] * signed).sum(1)
                power = dis  # (q, kc, d^t): the t-fold Khatri–Rao power of dis over each frequency's players
                for t in range(1, order + 1):
                    weighted = power * (table[:, t][c] * signed)[..., None]
                    out[t][q0:q1].view(q1 - q0, -1).index_add_(1, targets[t - 1], weighted.reshape(q1 - q0, -1))
                    if t < order:
                        power = (power[..., :, None] * dis[..., None, :]).reshape(q1 - q0, f1 - f0, -1)
    for t in range(2, order + 1):
        out[t] = out[t] * _distinct_mask(m, t, device)
    return out


def _blocks(frequencies: Tensor, xq: Tensor, products: int) -> Iterator[tuple[int, int, int, int, Tensor]]:
    """Yield ``(f0, f1, q0, q1, freq)``: chunks of the ``(k, n)`` bool frequencies as ``xq``'s floats (never all at
    once) and blocks of rows, sized so a chunk and ``products`` ``(q, kc)`` intermediates fit the memory budget."""
    k, n = frequencies.shape
    rows = xq.shape[0]
    budget = parse_memory() // (2 * xq.element_size())
    kc = max(1, min(k, budget // max(n + products * max(rows, 1), 1)))
    qc = max(1, min(rows, budget // max(products * kc, 1)))
    for f0, f1 in chunk_bounds(k, kc):
        freq = frequencies[f0:f1].to(xq.dtype)
        for q0, q1 in chunk_bounds(rows, qc):
            yield f0, f1, q0, q1, freq


def _singleton_first_order(
    xq: Tensor, references: Tensor, frequencies: Tensor, amplitudes: Tensor, table: Tensor, out: dict[int, Tensor]
) -> dict[int, Tensor]:
    """Orders 0 and 1 of singleton players in two products per block of rows and frequencies: with
    ``d = x* ⊕ b``, the counts are ``c = d Fᵀ`` and the values ``d ∘ ((s · W(c, 1)) F)`` (sums over frequencies)."""
    for f0, f1, q0, q1, freq in _blocks(frequencies, xq, 4):
        ref = references[q0:q1]
        d = (xq[q0:q1] - ref).abs_()
        c = (d @ freq.T).round_().long()  # (q, kc) exact small integers
        signed = (1.0 - 2.0 * torch.remainder(ref @ freq.T, 2.0)) * amplitudes[f0:f1]
        out[0][q0:q1] += (table[:, 0][c] * signed).sum(1)
        out[1][q0:q1] += d * ((table[:, 1][c] * signed) @ freq)
    return out

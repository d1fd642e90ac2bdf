"""Fast Walsh–Hadamard transform and the exact spectrum of a black box from all 2^n queries."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from torchxplain._core import progress

EXACT_MAX_FEATURES = 22
"""Largest ``n`` for which ``method="exact"`` queries all ``2**n`` inputs (4,194,304 queries)."""


def fwht(values: Tensor, dim: int = 0) -> Tensor:
    """Unnormalised fast Walsh–Hadamard transform along ``dim`` (Sylvester order).

    ``out[s] = Σ_t values[t] (-1)^{popcount(s & t)}``: bit ``i`` of the index ``t`` is input feature ``i``
    and bit ``i`` of ``s`` is frequency bit ``i``. Dividing by ``2**b`` gives the amplitudes
    ``a_f = mean_x h(x) (-1)^{<f,x>}`` of :class:`~torchxplain.fourier.spectrum._spectrum.FourierSpectrum`.

    Args:
        values: tensor whose size along ``dim`` is a power of two ``2**b``; other dims are batch dims.
        dim: the transformed dimension.

    Returns:
        Tensor of the same shape and dtype. Cost ``O(b 2**b)`` per batch element, ``b`` vectorised passes.
    """
    size = values.shape[dim]
    if size <= 0 or size & (size - 1):
        raise ValueError(f"fwht needs a power-of-two length along dim {dim}, got {size}")
    moved = values.movedim(dim, -1)
    batch = moved.shape[:-1]
    out = moved.reshape(-1, size)
    half = 1
    while half < size:
        # index = (high, bit, low): combine the two halves that differ only in this bit
        view = out.reshape(out.shape[0], size // (2 * half), 2, half)
        a, b = view[:, :, 0], view[:, :, 1]
        out = torch.stack((a + b, a - b), dim=2).reshape(out.shape[0], size)
        half *= 2
    return out.reshape(*batch, size).movedim(-1, dim)


def index_bits(index: Tensor, n_bits: int) -> Tensor:
    """``(N,)`` integer indices -> ``(N, n_bits)`` bool, bit ``i`` of the index in column ``i``."""
    shifts = torch.arange(n_bits, device=index.device)
    return ((index[:, None] >> shifts) & 1).bool()


def exact_amplitudes(
    query: Callable[[Tensor], Tensor],
    n_features: int,
    device: torch.device,
    batch_size: int,
) -> Tensor:
    """All ``2**n`` amplitudes of ``h`` from all ``2**n`` queries.

    Args:
        query: maps ``(B, n)`` bool inputs to ``(B,)`` float64 outputs.
        n_features: ``n`` (at most :data:`EXACT_MAX_FEATURES`).
        device: where the queries are built.
        batch_size: rows per query batch.

    Returns:
        ``(2**n,)`` float64 amplitudes; entry ``s`` is the frequency with bit ``i`` = bit ``i`` of ``s``.
    """
    total = 1 << n_features
    parts = []
    starts = range(0, total, batch_size)
    for start in progress(starts, desc="exact WHT: querying 2^n inputs", total=len(starts)):
        idx = torch.arange(start, min(start + batch_size, total), device=device)
        parts.append(query(index_bits(idx, n_features)))
    values = torch.cat(parts)
    return fwht(values) / total


def count_low_degree(n_features: int, max_degree: int) -> int:
    """Number of frequencies of degree ``<= max_degree`` on ``n_features`` bits: ``Σ_{r<=d} C(n, r)``."""
    return sum(math.comb(n_features, r) for r in range(min(max_degree, n_features) + 1))


def low_degree_index(n_features: int, max_degree: int, device: torch.device | str = "cpu") -> Tensor:
    """All frequencies of degree ``<= max_degree`` as index tuples.

    Returns:
        ``(count_low_degree(n, d), max(d, 1))`` int64; row ``c`` lists the features of frequency ``c``,
        padded with ``n_features`` (an always-off feature). Row 0 is the constant frequency.
    """
    width = max(min(max_degree, n_features), 1)
    rows = [torch.full((1, width), n_features, dtype=torch.long, device=device)]
    for r in range(1, min(max_degree, n_features) + 1):
        comb = torch.combinations(torch.arange(n_features, device=device), r)
        pad = torch.full((comb.shape[0], width - r), n_features, dtype=torch.long, device=device)
        rows.append(torch.cat((comb, pad), dim=1))
    return torch.cat(rows)


def index_to_bool(index: Tensor, n_features: int) -> Tensor:
    """Index tuples (see :func:`low_degree_index`) -> ``(N, n)`` bool frequencies."""
    out = torch.zeros(index.shape[0], n_features + 1, dtype=torch.bool, device=index.device)
    out.scatter_(1, index, True)
    return out[:, :n_features]


def signs(x: Tensor, frequencies: Tensor) -> Tensor:
    """``(-1)^{<f, x>}`` for rows ``x`` ``(m, n)`` and frequencies ``(K, n)`` -> ``(m, K)`` float64."""
    parity = torch.remainder(x.to(torch.float64) @ frequencies.to(torch.float64).T, 2.0)
    return 1.0 - 2.0 * parity

"""Distinct rows of bool matrices, fast: rows packed into int64 words before ``torch.unique``.

``torch.unique(x, dim=0)`` sorts whole rows and is slow on wide bool matrices; packing 62 bits per word
makes one word per row for ``n <= 62`` (a 1-D unique) and ``ceil(n / 62)`` words otherwise.
"""

from __future__ import annotations

import torch
from torch import Tensor

WORD_BITS = 62
_EXACT_FLOAT_BITS = 52  # float64 holds every integer below 2^53 exactly


def pack_rows(x: Tensor) -> Tensor:
    """``(N, n)`` bool -> ``(N, ceil(n / 62))`` int64 words (bit ``j`` of word ``w`` is column ``62 w + j``)."""
    n = x.shape[1]
    weights = 1 << torch.arange(WORD_BITS, device=x.device)
    words = []
    for start in range(0, max(n, 1), WORD_BITS):
        block, w = x[:, start : start + WORD_BITS], weights[: min(WORD_BITS, n - start)]
        if w.numel() <= _EXACT_FLOAT_BITS:  # one matrix-vector product, exact: every sum is below 2^53
            words.append((block.to(torch.float64) @ w.to(torch.float64)).long())
        else:
            words.append((block.long() * w).sum(1))
    return torch.stack(words, dim=1)


def unique_rows(x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Distinct rows of a bool matrix: ``(rows (U, n) bool, inverse (N,), counts (U,))``, rows sorted by code."""
    packed = pack_rows(x)
    if packed.shape[1] == 1:
        codes, inverse, counts = torch.unique(packed[:, 0], return_inverse=True, return_counts=True)
    else:
        codes, inverse, counts = torch.unique(packed, dim=0, return_inverse=True, return_counts=True)
    first = torch.zeros(codes.shape[0], dtype=torch.long, device=x.device)
    first.scatter_(0, inverse, torch.arange(x.shape[0], device=x.device))  # any row of each code
    return x[first], inverse, counts

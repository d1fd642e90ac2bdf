"""Counter-based random numbers: every draw is a hash of ``(seed, row, round, slot, ...)``.

The correction's draws for a row must not depend on which other rows are explained beside it, on how rows are
chunked, or on when a row stops; a generator consumed in order would tie them to all three. So each uniform is a
hash of integer keys: a row's key is a hash of its own values (:func:`row_keys`, so the same row gets the same draws
in any batch), and the other keys are counters. The mixer is a ``lowbias32``-style xorshift-multiply hash on
32-bit words held in int64 tensors with odd multipliers below ``2^31`` (every product stays below ``2^63``), so
the same keys give the same numbers on every device.
"""

from __future__ import annotations

import torch
from torch import Tensor

MASK32 = 0xFFFFFFFF


def mix(h: Tensor) -> Tensor:
    """A bijective 32-bit finalizer (xorshift, multiply, twice) on int64 tensors of 32-bit words (any shape)."""
    h = h & MASK32
    h = h ^ (h >> 16)
    h = (h * 0x7FEB352D) & MASK32
    h = h ^ (h >> 15)
    h = (h * 0x2C1B3C6D) & MASK32
    return h ^ (h >> 16)


def combine(key: Tensor, other: Tensor | int) -> Tensor:
    """A new 32-bit key from ``key`` and ``other`` (broadcast), order-sensitive."""
    return mix(key ^ mix(torch.as_tensor(other, dtype=torch.int64, device=key.device) + 0x9E3779B9))


def uniform(key: Tensor) -> Tensor:
    """float64 uniforms in ``(0, 1)`` from mixed 32-bit keys (the output of :func:`combine`)."""
    return (key.to(torch.float64) + 0.5) / 2.0**32


def row_keys(x: Tensor, seed: int) -> Tensor:
    """``(Q,)`` int64 32-bit keys: a hash of each row's values (as float64 bits) and of ``seed``.

    Equal rows get equal keys, so a row's draws are the same whichever rows are explained beside it.
    """
    bits = x.to(torch.float64).contiguous().view(torch.int64)
    low, high = bits & MASK32, (bits >> 32) & MASK32
    column = torch.arange(x.shape[1], dtype=torch.int64, device=x.device)
    words = mix(low ^ mix(high ^ mix(column * 0x632BE5AB + 1)))
    return mix(words.sum(1) & MASK32 ^ mix(torch.tensor(seed & MASK32, device=x.device)))

"""Supports as packed keys: the sorted feature indices of a support of at most ``width`` features, each stored as
``index + 1`` in ``bits = bit_length(n)`` bits (0 marks an empty slot) and packed into
``n_words = ceil(width / (63 // bits))`` int64 words.

The key is exact (two supports are equal exactly when their keys are) and short: 8–16 bytes per support for ``n``
in the thousands, where a dense bitmask needs ``n / 8``; the all-zero key is the empty support, so it sorts first.
A tree extraction merges its terms by these keys and the family search matches supports with them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class KeyLayout:
    """How supports of at most ``width`` of ``n`` features pack into int64 words."""

    n: int
    width: int
    bits: int
    per_word: int
    n_words: int

    @classmethod
    def create(cls, n: int, width: int) -> KeyLayout:
        """The layout for ``n`` binary features and supports of at most ``width`` features."""
        bits = max(1, int(n).bit_length())
        per_word = 63 // bits
        width = max(1, width)
        return cls(n=n, width=width, bits=bits, per_word=per_word, n_words=-(-width // per_word))

    def pack(self, rows: Tensor) -> Tensor:
        """``(r, w)`` canonical supports (ascending, empty slots ``= n`` last, ``w <= width``) -> ``(r, n_words)``."""
        w = rows.shape[1]
        codes = torch.where(rows < self.n, rows + 1, torch.zeros_like(rows))
        slot = torch.arange(w, device=rows.device)
        shifted = torch.bitwise_left_shift(codes, self.bits * (slot % self.per_word))  # disjoint fields: sum = or
        if self.n_words == 1:
            return shifted.sum(1, keepdim=True)
        words = torch.zeros(rows.shape[0], self.n_words, dtype=torch.int64, device=rows.device)
        return words.index_add_(1, slot // self.per_word, shifted)

    def shift_up(self, words: Tensor) -> Tensor:
        """``(..., n_words)`` keys with every feature moved up one slot (slot 0 left empty)."""
        span = self.bits * self.per_word
        full = (1 << span) - 1
        up = torch.bitwise_and(torch.bitwise_left_shift(words, self.bits), full)
        if self.n_words > 1:  # the top slot of each word carries into the next word's slot 0
            top = torch.bitwise_right_shift(words[..., :-1], span - self.bits)
            up[..., 1:] |= top
        return up

    def insert(self, words: Tensor, code: Tensor, rank: Tensor) -> Tensor:
        """Keys with feature ``code`` (``(...)`` indices) put at slot ``rank`` and the slots above moved up one."""
        up = self.shift_up(words)
        out = torch.empty_like(words)
        for j in range(self.n_words):
            below = (rank - j * self.per_word).clamp(0, self.per_word)  # slots of word j under the insertion
            low = torch.bitwise_left_shift(torch.ones_like(below), self.bits * below) - 1
            at = ((rank >= j * self.per_word) & (rank < (j + 1) * self.per_word)).long()
            put = torch.bitwise_left_shift((code + 1) * at, self.bits * below)
            slot = torch.bitwise_left_shift(((1 << self.bits) - 1) * at, self.bits * below)
            out[..., j] = (words[..., j] & low) | (up[..., j] & ~low & ~slot) | put
        return out

    def unpack(self, words: Tensor) -> Tensor:
        """``(r, n_words)`` keys -> ``(r, width)`` int64 feature indices, ascending, ``-1`` in empty slots."""
        slot = torch.arange(self.width, device=words.device)
        fields = torch.bitwise_right_shift(words[:, slot // self.per_word], self.bits * (slot % self.per_word))
        return torch.bitwise_and(fields, (1 << self.bits) - 1) - 1


def canonical(rows: Tensor, empty: int, parity: bool) -> Tensor:
    """Sort each row of feature indices (``empty`` marks no feature) and resolve repeated features.

    ``parity=True`` is the Fourier product (``χ_i χ_i = 1``): a feature repeated an even number of times
    vanishes, an odd number leaves it once. ``parity=False`` is the set union (one copy kept).

    Args:
        rows: ``(r, w)`` int64.
        empty: the index marking an empty slot (larger than every feature).
    """
    rows = torch.sort(rows, dim=1).values
    if rows.shape[1] < 2:
        return rows
    repeat = (rows[:, 1:] == rows[:, :-1]) & (rows[:, 1:] < empty)
    if not bool(repeat.any()):
        return rows
    if not parity:
        rows[:, 1:] = torch.where(repeat, torch.full_like(rows[:, 1:], empty), rows[:, 1:])
        return torch.sort(rows, dim=1).values
    position = torch.arange(rows.shape[1], device=rows.device).expand_as(rows)
    starts = torch.cat([torch.ones_like(repeat[:, :1]), ~repeat], dim=1)
    run_start = torch.cummax(torch.where(starts, position, torch.zeros_like(position)), dim=1).values
    last = torch.cat([~repeat, torch.ones_like(repeat[:, :1])], dim=1)
    keep = last & ((position - run_start) % 2 == 0)
    return torch.sort(torch.where(keep, rows, torch.full_like(rows, empty)), dim=1).values


def unique_keys(words: Tensor) -> tuple[Tensor, int]:
    """``(inverse (r,), count)``: dense ids of the distinct rows of ``words``, in ascending key order."""
    if words.shape[0] == 0:
        return torch.zeros(0, dtype=torch.int64, device=words.device), 0
    _, inverse = torch.unique(words[:, 0], return_inverse=True)
    # Further words one at a time with 1-D sorts (torch.unique(dim=0) is far slower on CPU).
    for j in range(1, words.shape[1]):
        _, rank = torch.unique(words[:, j], return_inverse=True)
        _, inverse = torch.unique(inverse * (int(rank.max()) + 1) + rank, return_inverse=True)
    return inverse, int(inverse.max()) + 1


def subsets(layout: KeyLayout, codes: Tensor) -> tuple[Tensor, Tensor]:
    """Every subset of each row's ``p`` ascending candidates, built by doubling from the largest column down.

    A column taken goes to slot 0 of the key and every other feature moves up one, so the keys stay sorted.

    Args:
        codes: ``(r, p)`` ascending features.

    Returns:
        ``(keys (r, 2^p, n_words), taken (r, 2^p))``: each subset's key and its bit mask over the columns.
    """
    r, p = codes.shape
    keys = torch.zeros(r, 1, layout.n_words, dtype=torch.int64, device=codes.device)
    taken = torch.zeros(r, 1, dtype=torch.int64, device=codes.device)
    for j in range(p - 1, -1, -1):
        with_j = layout.shift_up(keys)
        with_j[..., 0] |= codes[:, j, None] + 1
        keys = torch.cat([keys, with_j], dim=1)
        taken = torch.cat([taken, taken + (1 << j)], dim=1)
    return keys, taken

"""Fourier terms of a tree expansion, merged by their support keys (:mod:`~torchxplain.fourier.values._keys`: a
frequency of a tree of depth ``d`` has at most ``d`` features) in a buffer of bounded size."""

from __future__ import annotations

import torch
from torch import Tensor

from torchxplain.fourier.values import unique_keys


class TermBuffer:
    """Terms ``(key words, amplitude, rounding scale, family)`` held in preallocated storage of ``capacity``
    rows and merged by key whenever a new chunk does not fit.

    Merging sums amplitudes and scales (the sum of absolute contributions, for telling an exact cancellation
    from a tiny amplitude) and keeps the smallest family id. When the distinct terms alone fill more than half
    of the storage, it doubles: the result itself is then larger than the budget.
    """

    def __init__(self, n_words: int, capacity: int, device: torch.device) -> None:
        self.capacity = max(1, capacity)
        self.size = 0
        self.merges = 0
        self.words = torch.empty(self.capacity, n_words, dtype=torch.int64, device=device)
        self.amp = torch.empty(self.capacity, dtype=torch.float64, device=device)
        self.scale = torch.empty(self.capacity, dtype=torch.float64, device=device)
        self.family = torch.empty(self.capacity, dtype=torch.int64, device=device)

    def add(self, words: Tensor, amp: Tensor, scale: Tensor, family: Tensor) -> None:
        """Append ``r`` terms: ``(r, n_words)`` keys, ``(r,)`` amplitudes, scales and family ids."""
        rows = words.shape[0]
        if self.size + rows > self.capacity:
            self.merge()
            if self.size + rows > self.capacity or 2 * self.size > self.capacity:
                self._grow(max(2 * self.capacity, self.size + rows))
        stop = self.size + rows
        self.words[self.size : stop] = words
        self.amp[self.size : stop] = amp
        self.scale[self.size : stop] = scale
        self.family[self.size : stop] = family
        self.size = stop

    def merge(self) -> None:
        """Merge the held terms by key, in place."""
        inverse, count = unique_keys(self.words[: self.size])
        words = self.words.new_zeros(count, self.words.shape[1]).index_copy_(0, inverse, self.words[: self.size])
        amp = self.amp.new_zeros(count).index_add_(0, inverse, self.amp[: self.size])
        scale = self.scale.new_zeros(count).index_add_(0, inverse, self.scale[: self.size])
        family = torch.full((count,), torch.iinfo(torch.int64).max, dtype=torch.int64, device=amp.device)
        family.scatter_reduce_(0, inverse, self.family[: self.size], "amin")
        self.family[:count] = family
        self.words[:count], self.amp[:count], self.scale[:count] = words, amp, scale
        self.size = count
        self.merges += 1

    def _grow(self, capacity: int) -> None:
        self.capacity = capacity
        for name in ("words", "amp", "scale", "family"):
            old = getattr(self, name)
            new = old.new_empty((capacity, *old.shape[1:]))
            new[: self.size] = old[: self.size]
            setattr(self, name, new)

    def result(self) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """The merged terms ``(words, amp, scale, family)``, views of the storage (sorted by key)."""
        self.merge()
        n = self.size
        return self.words[:n], self.amp[:n], self.scale[:n], self.family[:n]

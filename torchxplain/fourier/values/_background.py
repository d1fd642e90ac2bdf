"""The background-only part of the closed forms: :class:`BackgroundTerm`, prepared once per (spectrum, background)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, parse_memory, rows_per_chunk
from torchxplain.fourier.spectrum import FourierSpectrum


class BackgroundTerm:
    """One (spectrum, background) pair prepared once and reused across query batches (the paper's "Precompute").

    It holds the background in the spectrum's dtype and, lazily, the ``(B, k)`` signed amplitudes
    ``s_{x,f} = a_f (-1)^{<f, x>}`` of the dense kernel (kept only when they fit a quarter of the memory budget;
    otherwise each block is recomputed from the background). The value functions also cache their
    value plan per player grouping on it (``plans``), so the tables of the
    small-support kernel are built once per term, not once per call.

    Attributes:
        spectrum: the spectrum the term was made for.
        background: ``(B, n)`` binary background in the spectrum's dtype.
        plans: value plans built on this term, keyed by ``(groups, kernel)``.
    """

    def __init__(self, spectrum: FourierSpectrum, background: Tensor) -> None:
        self.spectrum = spectrum
        self.background = background.to(spectrum.dtype)
        self.plans: dict[Any, Any] = {}
        self._signed: Tensor | None = None

    @property
    def signed_amplitudes(self) -> Tensor:
        """``(B, k)`` ``s_{x,f} = a_f (-1)^{<f, x>}`` for every background row ``x`` and frequency ``f``."""
        if self._signed is None:
            return self._compute(0, len(self.spectrum))
        return self._signed

    def mean_output(self) -> Tensor | None:
        """``()`` the spectrum's mean over the background, ``Σ_{x,f} s_{x,f} / B``, where the dense kernel has kept
        the signed amplitudes; ``None`` where it has not (they did not fit, or no dense call ran)."""
        if self._signed is None:
            return None
        return self._signed.sum() / self._signed.shape[0]

    def signed_block(self, f0: int, f1: int) -> Tensor:
        """``(B, f1 - f0)`` columns of :attr:`signed_amplitudes`, cached when the whole matrix fits the budget."""
        cached = self._cached()
        return cached[:, f0:f1] if cached is not None else self._compute(f0, f1)

    def signed_rows(self, b0: int, b1: int) -> Tensor:
        """``(b1 - b0, k)`` rows of :attr:`signed_amplitudes`: from the cache, or only those rows computed."""
        cached = self._cached()
        return cached[b0:b1] if cached is not None else self._compute(0, len(self.spectrum), self.background[b0:b1])

    def _cached(self) -> Tensor | None:
        """The whole ``(B, k)`` matrix when it fits the budget (computed once), else ``None``."""
        if self._signed is None:
            size = self.background.shape[0] * len(self.spectrum) * self.background.element_size()
            if 4 * size <= parse_memory():
                self._signed = self._compute(0, len(self.spectrum))
        return self._signed

    def _compute(self, f0: int, f1: int, rows: Tensor | None = None) -> Tensor:
        """Columns ``f0:f1`` for ``rows`` (default: the background), in chunks of frequencies whose float copy and
        products fit the memory budget (the ``(k, n)`` frequencies as floats were made whole: 1 GiB at k ≈ n ≈ 11k)."""
        rows = self.background if rows is None else rows
        out = torch.empty(rows.shape[0], f1 - f0, dtype=rows.dtype, device=rows.device)
        width = self.spectrum.frequencies.shape[1] + 2 * rows.shape[0]  # a frequency as floats, its products
        for a, b in chunk_bounds(f1 - f0, rows_per_chunk(width * rows.element_size(), f1 - f0)):
            freq = self.spectrum.frequencies[f0 + a : f0 + b].to(device=rows.device, dtype=rows.dtype)
            parity = torch.remainder(rows @ freq.T, 2.0)
            out[:, a:b] = (1.0 - 2.0 * parity) * self.spectrum.amplitudes[f0 + a : f0 + b].to(rows.device)
        return out

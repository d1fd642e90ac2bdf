"""The background-only part of the closed forms, and the player-group checks shared by every kernel."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from torchxplain._core import parse_memory
from torchxplain.fourier.spectrum import FourierSpectrum


class BackgroundTerm:
    """One (spectrum, background) pair prepared once and reused across query batches (the paper's "Precompute").

    It holds the background in the spectrum's dtype and, lazily, the ``(B, k)`` signed amplitudes
    ``s_{x,f} = a_f (-1)^{<f, x>}`` of the dense kernel (kept only when they fit a quarter of the memory budget;
    otherwise each block is recomputed from the background). The value functions also cache their
    :class:`~torchxplain.fourier.values.plan.ValuePlan` per player grouping on it (``plans``), so the tables of the
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
        rows = self.background if rows is None else rows
        freq = self.spectrum.frequencies[f0:f1].to(device=rows.device, dtype=rows.dtype)
        parity = torch.remainder(rows @ freq.T, 2.0)
        return (1.0 - 2.0 * parity) * self.spectrum.amplitudes[f0:f1].to(self.background.device)


def background_term(spectrum: FourierSpectrum, background: Tensor) -> BackgroundTerm:
    """A :class:`BackgroundTerm` for a background the caller has validated (binary ``(B, n)``)."""
    return BackgroundTerm(spectrum, background)


def validate_groups(groups: Tensor, n_features: int) -> tuple[Tensor, int]:
    """Check a ``(n,)`` integer player-id vector with ids ``0..m-1``, each used; return it (int64) and ``m``."""
    if not isinstance(groups, Tensor):
        raise TypeError(f"groups must be an integer tensor of shape ({n_features},), got {type(groups).__name__}")
    if groups.is_floating_point() or groups.dtype == torch.bool:
        raise TypeError(f"groups must be an integer tensor, got dtype {groups.dtype}")
    if groups.shape != (n_features,):
        raise ValueError(
            f"groups must give one player id per feature: expected shape ({n_features},), got {tuple(groups.shape)}"
        )
    if n_features and int(groups.min()) < 0:
        raise ValueError(f"groups must be non-negative player ids, found {int(groups.min())}")
    m = int(groups.max()) + 1 if n_features else 0
    used = torch.zeros(m, dtype=torch.bool, device=groups.device)
    used[groups.long()] = True
    if not bool(used.all()):
        missing = torch.nonzero(~used).flatten()[:5].tolist()
        raise ValueError(f"groups must use every id in 0..{m - 1}; ids {missing} are unused (renumber them)")
    return groups.long(), m

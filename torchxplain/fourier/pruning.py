"""Pruning an exact spectrum (the paper's energy rule) and reporting what the pruned spectrum keeps."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain.fourier.spectrum import FourierSpectrum


@dataclass(frozen=True)
class PruningReport:
    """What pruning kept of an exact tree spectrum.

    Attributes:
        total_terms, kept_terms: frequencies before and after pruning.
        kept_energy: ``Σ a_f²`` kept over the total, both without the constant term (which does not affect
            SHAP values).
        r2_background: R² of the pruned spectrum against the exact one on the background rows
            (1.0 when nothing was pruned or the model is constant there).
    """

    total_terms: int
    kept_terms: int
    kept_energy: float
    r2_background: float


def prune_tree_spectrum(
    spectrum: FourierSpectrum, background: Tensor, energy: float | None = None, threshold: float | None = None
) -> tuple[FourierSpectrum, PruningReport]:
    """Prune the non-constant part of ``spectrum`` and report what was kept.

    The constant term is always kept and excluded from the energy fraction: it is the model's mean over
    the cube, often far larger than the rest, and cancels from every SHAP value.

    Args:
        spectrum: the exact spectrum.
        background: ``(B, n)`` binary rows on which R² is measured.
        energy: keep the fewest largest non-constant frequencies reaching this fraction of their energy.
        threshold: drop non-constant frequencies with ``|a_f| < threshold``.
    """
    constant = ~spectrum.frequencies.any(dim=1)
    rest = FourierSpectrum(spectrum.frequencies[~constant], spectrum.amplitudes[~constant])
    kept = rest.prune(energy=energy, threshold=threshold)
    pruned = FourierSpectrum(
        torch.cat([spectrum.frequencies[constant], kept.frequencies]),
        torch.cat([spectrum.amplitudes[constant], kept.amplitudes]),
    )
    total_energy = float(rest.energy)
    exact = spectrum.evaluate(background.to(spectrum.dtype))
    approx = pruned.evaluate(background.to(spectrum.dtype))
    variance = float(((exact - exact.mean()) ** 2).sum())
    residual = float(((exact - approx) ** 2).sum())
    report = PruningReport(
        total_terms=len(spectrum),
        kept_terms=len(pruned),
        kept_energy=float(kept.energy) / total_energy if total_energy > 0 else 1.0,
        r2_background=1.0 - residual / variance if variance > 0 else (1.0 if residual == 0 else float("-inf")),
    )
    return pruned, report

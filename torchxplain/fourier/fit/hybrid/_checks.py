"""Held-out checks of a fit where SHAP looks: R² on permutation-path hybrids, and the SHAP values' R².

The check points are the permutation paths of :meth:`HybridSampler.paths` (fresh rows ``x``, background rows
``b``, random orders of the players on which they differ): hybrids distributed as in the permutation form of the
Shapley value. Beyond the pointwise R², the same paths estimate the SHAP values of the residual
``e = h - f`` of the surrogate ``h``: averaging ``e``'s marginal contributions along a row's paths is an unbiased
permutation estimate of ``φ(e) = φ(h) - φ(f)``, whose noise scales with ``e`` (small), not with ``f``. With the
closed-form ``φ(h)`` this gives ``φ(f) ≈ φ(h) - φ̂(e)`` and ``R²_SHAP ≈ 1 - Σ φ(e)² / Σ (φ(f) - mean)²``, both sums
of squares corrected for the estimator's own variance (the denominator's too: ``φ(h) - φ̂(e)`` carries the noise of
``φ̂(e)``, which for a poor fit would otherwise inflate it and make the estimate optimistic).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain.fourier.fit._report import r2_score
from torchxplain.fourier.fit.hybrid._sampler import HybridSampler, Paths
from torchxplain.fourier.spectrum._spectrum import FourierSpectrum

PATHS_PER_ROW = 8
"""Permutation paths per validation row (their spread gives the estimator's variance; with few paths the
variance of ``φ̂(e)`` swamps ``φ(e)²`` when the residual averages out along paths)."""
MIN_ROWS, MAX_ROWS = 64, 512
"""Bounds on the number of validation rows (R² over few rows depends much on which rows they are)."""


@dataclass(frozen=True)
class PathValidation:
    """Model outputs on the valid points of permutation paths, ready to score any spectrum.

    Attributes:
        paths: the paths (:class:`~torchxplain.fourier.fit.hybrid._sampler.Paths`).
        z: ``(V, n)`` bool the valid path points; y: ``(V,)`` float64 the model's outputs there.
        background: ``(D, n)`` bool; groups: ``(n,)`` int64 player ids; n_players: ``m``.
    """

    paths: Paths
    z: Tensor
    y: Tensor
    background: Tensor
    groups: Tensor
    n_players: int

    @property
    def n_queries(self) -> int:
        return int(self.z.shape[0])

    def r2(self, spectrum: FourierSpectrum) -> float:
        """R² of the spectrum against the model on the path points."""
        return r2_score(self.y, spectrum.evaluate(self.z.to(spectrum.dtype)).to(torch.float64))

    def shap_r2(self, spectrum: FourierSpectrum, shapley: Callable[..., Tensor]) -> tuple[float, float]:
        """Estimated R² of the spectrum's SHAP values against the model's on the validation rows, and its
        jackknife standard error over the rows (what another draw of rows would change).

        Args:
            spectrum: the fitted spectrum.
            shapley: ``shapley(spectrum, x, background, groups)`` -> ``(R, m)`` closed-form values.
        """
        p = self.paths
        residual = torch.zeros(p.valid.shape, dtype=torch.float64, device=self.y.device)
        residual[p.valid] = spectrum.evaluate(self.z.to(spectrum.dtype)).to(torch.float64) - self.y
        steps = p.valid[:, 1:]
        gain = torch.where(steps, residual[:, 1:] - residual[:, :-1], 0.0)  # (P, L) e's marginal contributions
        per_path = torch.zeros(p.row.numel(), self.n_players, dtype=torch.float64, device=self.y.device)
        per_path.scatter_add_(1, p.added, gain)
        n_rows = p.x.shape[0]
        counts = torch.bincount(p.row, minlength=n_rows).to(torch.float64)[:, None]
        mean = (
            torch.zeros(n_rows, self.n_players, dtype=torch.float64, device=self.y.device).index_add_(
                0, p.row, per_path
            )
            / counts
        )
        spread = torch.zeros_like(mean).index_add_(0, p.row, (per_path - mean[p.row]) ** 2) / (counts - 1).clamp(1)
        noise = spread / counts  # the variance of each row's mean over its paths
        err2 = (mean**2 - noise).sum(1)  # per row, unbiased Σ_i φ_i(e)²
        phi_h = shapley(spectrum, p.x.to(spectrum.dtype), self.background.to(spectrum.dtype), self.groups)
        phi_f = phi_h.to(torch.float64) - mean  # carries the same noise: its spread is corrected for too
        total = ((phi_f - phi_f.mean()) ** 2 - noise).sum(1)
        big_e, big_t = float(err2.sum()), float(total.sum())
        if big_t <= 0:
            return float("nan"), float("nan")
        leave_out = 1.0 - (big_e - err2) / (big_t - total).clamp_min(1e-300)
        se = float(((n_rows - 1) / n_rows * ((leave_out - leave_out.mean()) ** 2).sum()).sqrt())
        return min(1.0, 1.0 - big_e / big_t), se


def path_validation(
    sampler: HybridSampler, n_points: int, query: Callable[[Tensor], Tensor], generator: torch.Generator
) -> PathValidation:
    """Draw about ``n_points`` valid path points (:data:`PATHS_PER_ROW` paths per row) and query the model there."""
    pilot = sampler.paths(16, PATHS_PER_ROW, generator)
    per_path = max(float(pilot.valid.sum()) / pilot.valid.shape[0], 1.0)
    n_rows = min(MAX_ROWS, max(MIN_ROWS, round(n_points / (per_path * PATHS_PER_ROW))))
    paths = sampler.paths(n_rows, PATHS_PER_ROW, generator)
    z = paths.points[paths.valid]
    return PathValidation(paths, z, query(z), sampler.background, sampler.groups, sampler.n_players)

"""Least squares on a one-hot-per-block design by Jacobi-preconditioned conjugate gradients.

With every point activating one column per block, ``ΦᵀΦ`` has the column counts on its diagonal and the
products ``Φ c`` and ``Φᵀ r`` are a gather and a bincount, ``O(N·B)`` each: no matrix over the columns is formed,
whatever their number. The blocks overlap (a pair's cells also carry the pair's main effects, every block a
constant), so the normal equations are singular; CG started at zero converges to the least-squares solution of
smallest (preconditioned) norm, and columns no point activates stay zero (a ridge of ``RIDGE`` times the mean
count only guards the division).
"""

from __future__ import annotations

import torch
from torch import Tensor

RIDGE = 1e-12
"""Ridge weight relative to the mean column count (numerical only)."""
TOLERANCE = 1e-12
"""CG stops when the preconditioned residual drops below this share of the right-hand side's."""
STALL = 1e-7
"""... or when an iteration lowers the squared error by less than this share of it (the misfit of a model the
blocks cannot represent is then settled: more iterations move the fit by less than the misfit)."""
MAX_ITERATIONS = 1000
"""CG iterations at most (the report records how many ran)."""
CHECK_EVERY = 8
"""Iterations between convergence checks."""


def block_lstsq(active: Tensor, y: Tensor, n_columns: int, start: Tensor | None = None) -> tuple[Tensor, int]:
    """Coefficients ``(n_columns,)`` float64 minimising ``Σ_i (y_i - Σ_b c[active_ib])²`` (module docstring).

    Args:
        active: ``(N, B)`` int64 active column of every block at every point.
        y: ``(N,)`` float64 targets.
        n_columns: total columns.
        start: optional warm start (a previous stage's coefficients, zero-padded to ``n_columns``).

    Returns:
        ``(coefficients, iterations)``.
    """
    flat = active.reshape(-1)
    blocks = active.shape[1]
    counts = torch.bincount(flat, minlength=n_columns).to(torch.float64)
    ridge = RIDGE * float(counts.sum()) / max(int((counts > 0).sum()), 1)
    diagonal = counts + ridge

    def normal(c: Tensor) -> Tensor:
        fitted = c.index_select(0, flat).view(active.shape).sum(1)
        return torch.bincount(flat, weights=fitted.repeat_interleave(blocks), minlength=n_columns) + ridge * c

    rhs = torch.bincount(flat, weights=y.repeat_interleave(blocks), minlength=n_columns)
    coef = torch.zeros(n_columns, dtype=torch.float64, device=y.device) if start is None else start.clone()
    resid = rhs - normal(coef) if start is not None else rhs.clone()
    z = resid / diagonal
    direction = z.clone()
    rz = resid @ z
    stop = TOLERANCE**2 * (rhs @ (rhs / diagonal))
    fitted = coef[active].sum(1)
    sse = ((y - fitted) ** 2).sum()
    gain = sse
    iterations = 0
    while iterations < MAX_ITERATIONS:
        # one device sync per CHECK_EVERY iterations
        if iterations % CHECK_EVERY == 0 and bool((rz <= stop) | (gain < STALL * CHECK_EVERY * sse)):
            break
        q = normal(direction)
        alpha = rz / (direction @ q).clamp_min(1e-300)
        step = alpha * rz  # the squared error drops by this much
        gain = step if iterations % CHECK_EVERY == 0 else gain + step
        sse = sse - step
        coef += alpha * direction
        resid -= alpha * q
        z = resid / diagonal
        rz_next = resid @ z
        direction = z + (rz_next / rz.clamp_min(1e-300)) * direction
        rz = rz_next
        iterations += 1
    return coef, iterations


def predict(active: Tensor, coefficients: Tensor) -> Tensor:
    """``(N,)`` the fitted function at points given by their active columns."""
    return coefficients[active].sum(1)

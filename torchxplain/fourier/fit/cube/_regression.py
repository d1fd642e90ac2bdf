"""Least-squares fits of Fourier amplitudes from random queries (support refit, low-degree regression)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, rows_per_chunk
from torchxplain.fourier.spectrum import index_to_bool, signs

LS_MAX_COLUMNS = 3000
"""Up to this many candidate frequencies, ``regression`` solves one dense least-squares problem."""

GRAM_MAX_FLOPS = 2e9
"""Above ``m K²`` flops, :func:`least_squares` switches from the normal equations to CGLS."""

Query = Callable[[Tensor], Tensor]


def uniform_inputs(n_rows: int, n_features: int, generator: torch.Generator, device: torch.device) -> Tensor:
    """``(n_rows, n_features)`` bool inputs drawn uniformly from the cube."""
    return torch.randint(0, 2, (n_rows, n_features), generator=generator, device=device).bool()


def solve_normal(gram: Tensor, rhs: Tensor) -> Tensor:
    """Solve ``gram @ a = rhs`` for a symmetric PSD ``gram`` (Cholesky; minimum-norm fallback if singular)."""
    chol, info = torch.linalg.cholesky_ex(gram)
    if int(info) == 0:
        return torch.cholesky_solve(rhs[:, None], chol)[:, 0]
    return torch.linalg.lstsq(gram, rhs[:, None], driver="gelsd" if gram.device.type == "cpu" else None).solution[:, 0]


def least_squares(x: Tensor, y: Tensor, frequencies: Tensor) -> Tensor:
    """Amplitudes minimising ``Σ_rows (y - Σ_f a_f (-1)^{<f,x>})²`` on a fixed support.

    Small problems (``m K² <=`` :data:`GRAM_MAX_FLOPS`) solve the normal equations, accumulated in row chunks;
    larger ones run CGLS (conjugate gradients on the normal equations without forming them), which converges
    in a few dozen products because random ±1 columns are nearly orthogonal when ``m >> K``.

    Args:
        x: ``(m, n)`` bool inputs.
        y: ``(m,)`` float64 outputs.
        frequencies: ``(K, n)`` bool support.

    Returns:
        ``(K,)`` float64 amplitudes.
    """
    k = frequencies.shape[0]
    if x.shape[0] * k * k > GRAM_MAX_FLOPS:
        return _cgls(x, y, frequencies)
    gram = torch.zeros(k, k, dtype=torch.float64, device=x.device)
    rhs = torch.zeros(k, dtype=torch.float64, device=x.device)
    step = rows_per_chunk(8 * max(k, 1), x.shape[0])
    for start, stop in chunk_bounds(x.shape[0], step):
        phi = signs(x[start:stop], frequencies)
        gram += phi.T @ phi
        rhs += phi.T @ y[start:stop]
    return solve_normal(gram, rhs)


def _cgls(x: Tensor, y: Tensor, frequencies: Tensor, tol: float = 1e-13, max_iter: int = 1000) -> Tensor:
    """CGLS (Hestenes–Stiefel on ``ΦᵀΦ a = Φᵀ y``) with the sign matrix ``Φ`` kept, or rebuilt per chunk."""
    step = rows_per_chunk(8 * frequencies.shape[0], x.shape[0])
    bounds = chunk_bounds(x.shape[0], step)
    blocks = [signs(x[a:b], frequencies) for a, b in bounds] if len(bounds) == 1 else None

    def block(i: int) -> Tensor:
        return blocks[i] if blocks is not None else signs(x[bounds[i][0] : bounds[i][1]], frequencies)

    def matvec(v: Tensor) -> Tensor:
        return torch.cat([block(i) @ v for i in range(len(bounds))])

    def rmatvec(r: Tensor) -> Tensor:
        return torch.stack([block(i).T @ r[a:b] for i, (a, b) in enumerate(bounds)]).sum(0)

    amp = torch.zeros(frequencies.shape[0], dtype=torch.float64, device=x.device)
    resid = y.clone()
    grad = rmatvec(resid)
    direction = grad.clone()
    gamma = float(grad @ grad)
    stop = tol**2 * gamma
    for _ in range(max_iter):
        if gamma <= stop or gamma == 0.0:
            break
        q = matvec(direction)
        alpha = gamma / float(q @ q)
        amp += alpha * direction
        resid -= alpha * q
        grad = rmatvec(resid)
        gamma_new = float(grad @ grad)
        direction = grad + (gamma_new / gamma) * direction
        gamma = gamma_new
    return amp


def refit(
    query: Query, frequencies: Tensor, n_samples: int, k: int | None, generator: torch.Generator, device: torch.device
) -> tuple[Tensor, Tensor]:
    """Refit amplitudes of a recovered support on fresh uniform queries, then keep the ``k`` largest.

    Args:
        query: maps ``(B, n)`` bool inputs to ``(B,)`` float64 outputs (batches and counts the queries).
        frequencies: ``(K, n)`` bool candidate support.
        n_samples: number of fresh uniform queries.
        k: keep at most this many frequencies (refitting once more on the kept ones); ``None`` keeps all.
        generator: randomness for the samples.
        device: where the samples are built.

    Returns:
        ``(frequencies (K', n) bool, amplitudes (K',) float64)``.
    """
    x = uniform_inputs(n_samples, frequencies.shape[1], generator, device)
    y = query(x)
    amp = least_squares(x, y, frequencies)
    if k is not None and frequencies.shape[0] > k:
        keep = torch.topk(amp.abs(), k).indices
        frequencies = frequencies[keep]
        amp = least_squares(x, y, frequencies)
    return frequencies, amp


def _design(signs_ext: Tensor, index: Tensor) -> Tensor:
    """Columns ``Π_l s[:, index[c, l]]`` for index tuples ``(N, d)``; ``signs_ext`` is ``(m, n+1)`` ±1."""
    out = signs_ext[:, index[:, 0]]
    for col in range(1, index.shape[1]):
        out = out * signs_ext[:, index[:, col]]
    return out


def _correlations(signs_ext: Tensor, index: Tensor, residual: Tensor) -> Tensor:
    """``Φᵀ r`` over all candidates, building ``Φ`` in column chunks."""
    step = rows_per_chunk(8 * signs_ext.shape[0], index.shape[0])
    bounds = chunk_bounds(index.shape[0], step)
    return torch.cat([_design(signs_ext, index[a:b]).T @ residual for a, b in bounds])


def regression(
    x: Tensor, y: Tensor, index: Tensor, k: int, max_iter: int = 30
) -> tuple[Tensor, Tensor, dict[str, object]]:
    """Sparse regression of ``y`` on the candidate frequencies given as index tuples.

    With at most :data:`LS_MAX_COLUMNS` candidates and at least ``1.5×`` as many rows, a dense least-squares
    fit of every candidate followed by keeping the ``k`` largest (and refitting them); otherwise CoSaMP
    (Needell & Tropp 2009): correlate the residual with every candidate, merge the ``2k`` best into the
    support, least squares, keep ``k``, repeat until the residual stops shrinking.

    Args:
        x: ``(m, n)`` bool inputs; y: ``(m,)`` float64 outputs.
        index: ``(N, d)`` candidate frequencies as index tuples padded with ``n`` (see ``low_degree_index``).
        k: number of frequencies to keep.

    Returns:
        ``(frequencies (K, n) bool, amplitudes (K,) float64, info)`` with ``info["solver"]`` and iterations.
    """
    n = x.shape[1]
    m, n_cand = x.shape[0], index.shape[0]
    signs_ext = torch.cat((1.0 - 2.0 * x.to(torch.float64), x.new_ones(m, 1, dtype=torch.float64)), dim=1)
    if n_cand <= LS_MAX_COLUMNS and m >= 1.5 * n_cand:
        phi = _design(signs_ext, index)
        amp = solve_normal(phi.T @ phi, phi.T @ y)
        keep = torch.topk(amp.abs(), min(k, n_cand)).indices
        phi_k = phi[:, keep]
        amp = solve_normal(phi_k.T @ phi_k, phi_k.T @ y)
        return index_to_bool(index[keep], n), amp, {"solver": "dense least squares", "candidates": n_cand}
    support = torch.zeros(0, dtype=torch.long, device=x.device)
    amp = torch.zeros(0, dtype=torch.float64, device=x.device)
    residual = y.clone()
    best = float(residual @ residual)
    iterations = 0
    for _ in range(max_iter):
        iterations += 1
        corr = _correlations(signs_ext, index, residual).abs()
        corr[support] = -1.0
        merged = torch.cat((support, torch.topk(corr, min(2 * k, n_cand - support.numel())).indices))
        phi = _design(signs_ext, index[merged])
        wide = solve_normal(phi.T @ phi, phi.T @ y)
        keep = torch.topk(wide.abs(), min(k, merged.numel())).indices
        new_support = merged[keep]
        phi_k = phi[:, keep]
        new_amp = solve_normal(phi_k.T @ phi_k, phi_k.T @ y)
        new_residual = y - phi_k @ new_amp
        err = float(new_residual @ new_residual)
        if err >= best * (1 - 1e-9) and support.numel():
            break
        support, amp, residual, best = new_support, new_amp, new_residual, err
        if err <= 1e-24 * float(y @ y) + 1e-300:
            break
    info = {"solver": "CoSaMP", "candidates": n_cand, "iterations": iterations}
    return index_to_bool(index[support], n), amp, info

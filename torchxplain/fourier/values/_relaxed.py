"""Shapley values of the multilinear extension at real-valued queries (Owen's formula, exact quadrature)."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, parse_memory
from torchxplain.fourier.values._background import BackgroundTerm


def _gauss_legendre_01(n_nodes: int, dtype: torch.dtype, device: torch.device) -> tuple[Tensor, Tensor]:
    """Gauss–Legendre nodes and weights on [0, 1] (Golub–Welsch, float64 then cast)."""
    i = torch.arange(1, n_nodes, dtype=torch.float64)
    off = i / torch.sqrt(4.0 * i**2 - 1.0)
    jacobi = torch.diag(off, 1) + torch.diag(off, -1)
    nodes, vecs = torch.linalg.eigh(jacobi)
    weights = vecs[0] ** 2  # the Legendre weight integrates to 2 on [-1,1]; halved with the map below
    return ((nodes + 1.0) / 2.0).to(device=device, dtype=dtype), weights.to(device=device, dtype=dtype)


def _block_shape(q_rows: int, b_rows: int, bytes_per_pair: int) -> tuple[int, int]:
    """Chunk sizes ``(queries, background rows)`` so a block of pairs fits the budget."""
    pairs = max(1, parse_memory() // max(bytes_per_pair, 1))
    if pairs >= b_rows:
        return max(1, min(q_rows, pairs // b_rows)), b_rows
    return 1, pairs


def relaxed_shapley(xq: Tensor, term: BackgroundTerm) -> Tensor:
    """``(Q, n)`` Shapley values of the multilinear extension at real-valued queries ``xq``.

    With ``d = x* + x - 2 x x*`` (equal to ``x ⊕ x*`` on the cube), Owen's formula gives
    ``φ_i = -(2/|D|) Σ_{x,f} s f_i d_i ∫_0^1 Π_{j∈f∖i} (1 - 2 t d_j) dt``; the integrand is a polynomial of
    degree ``deg(f) - 1``, integrated exactly by an even number of Gauss–Legendre nodes (never t = 1/2).
    """
    bg, spectrum = term.background, term.spectrum
    q_rows, b_rows, n, k = xq.shape[0], bg.shape[0], spectrum.n_features, len(spectrum)
    freq = spectrum.frequencies.to(device=xq.device, dtype=xq.dtype)
    n_nodes = 2 * max(1, math.ceil(math.ceil(spectrum.degree / 2) / 2))
    nodes, weights = _gauss_legendre_01(n_nodes, xq.dtype, xq.device)
    tiny = torch.finfo(xq.dtype).tiny ** 0.25
    qc, bc = _block_shape(q_rows, b_rows, (2 * n + 4 * k) * xq.element_size())
    out = []
    for q0, q1 in chunk_bounds(q_rows, qc):
        acc = xq.new_zeros(q1 - q0, n)
        for b0, b1 in chunk_bounds(b_rows, bc):
            s = term.signed_rows(b0, b1)
            xs, xb = xq[q0:q1, None, :], bg[None, b0:b1, :]
            d = (xs + xb - 2.0 * xs * xb).reshape(-1, n)
            inner = torch.zeros_like(d)
            for t, omega in zip(nodes, weights):
                g = 1.0 - 2.0 * t * d
                g = torch.where(g < 0, -1.0, 1.0) * g.abs().clamp_min(tiny)
                log_abs = g.abs().log() @ freq.T
                negatives = torch.remainder((g < 0).to(d.dtype) @ freq.T, 2.0)
                prod = (1.0 - 2.0 * negatives) * log_abs.exp()
                sp = (prod.view(q1 - q0, b1 - b0, k) * s[None]).view(-1, k)
                inner = inner + omega * (sp @ freq) / g
            acc = acc + (inner * d).view(q1 - q0, b1 - b0, n).sum(1)
        out.append(acc)
    return torch.cat(out) * (-2.0 / b_rows)

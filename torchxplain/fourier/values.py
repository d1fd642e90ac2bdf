r"""Closed-form game values of a sparse spectrum against a background (interventional), batched.

For a query ``x*``, background point ``x`` and frequency ``f`` let ``dis_{x,f,g}`` be 1 when the parity
of ``f`` restricted to player ``g`` differs between ``x`` and ``x*`` (for singleton players:
``f_i (x_i ⊕ x*_i)``), ``c = Σ_g dis_g`` and ``s = a_f (-1)^{<f,x>}``. Then (DESIGN §3, paper Eq. 5):

* Shapley:     ``φ_g   = -(2/|D|) Σ_{x,f} s · w(c) · dis_g``,   ``w(c) = 1/c`` for odd ``c``, else 0;
* Banzhaf:     ``β_g   = -(2/|D|) Σ_{x,f} s · [c = 1] · dis_g``;
* pairwise SII ``Φ_gh  =  (4/|D|) Σ_{x,f} s · w2(c) · dis_g dis_h`` (g ≠ h), ``w2(c) = 1/(c-1)`` for even
  ``c ≥ 2``, else 0.

Singleton players use the two-GEMM form (``C = d Fᵀ``, ``Φ = (S ∘ w(C)) F``); grouped players and
interactions build the ``dis`` tensor chunk by chunk. Every ``O(Q·|D|·k)`` intermediate is chunked to
``max_memory``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain._core import (
    check_binary,
    check_finite,
    check_matrix,
    check_same_device,
    chunk_bounds,
    parse_memory,
)
from torchxplain.fourier.spectrum import FourierSpectrum

_HALF_EXACT_MAX = 2048  # float16 holds every integer up to 2048 exactly
_CPU_BLOCK = 2**18  # elements per (pairs × frequencies) block: about 1 MiB in float32, cache-resident
_CUDA_BLOCK = 2**26


@dataclass(frozen=True)
class BackgroundTerm:
    """The background-only part of the closed forms (the paper's "Precompute"), reusable across queries.

    Attributes:
        background: ``(B, n)`` binary background in the working dtype.
        signed_amplitudes: ``(B, k)`` ``s_{x,f} = a_f (-1)^{<f, x>}``.
    """

    background: Tensor
    signed_amplitudes: Tensor


def precompute_background(spectrum: FourierSpectrum, background: Tensor) -> BackgroundTerm:
    """Compute ``s_{x,f} = a_f (-1)^{<f,x>}`` for every background row ``x`` and frequency ``f``.

    Args:
        spectrum: the spectrum (``k`` frequencies on ``n`` features).
        background: ``(B, n)`` binary tensor, ``B ≥ 1``.

    Returns:
        A :class:`BackgroundTerm` in the spectrum's dtype on the background's device.
    """
    check_matrix(background, "background", spectrum.n_features)
    check_binary(background, "background")
    return background_term(spectrum, background)


def background_term(spectrum: FourierSpectrum, background: Tensor) -> BackgroundTerm:
    """:func:`precompute_background` for a background the caller has validated."""
    dtype = spectrum.dtype
    bg = background.to(dtype)
    freq = spectrum.frequencies.to(device=bg.device, dtype=dtype)
    parity = torch.remainder(bg @ freq.T, 2.0)
    return BackgroundTerm(bg, (1.0 - 2.0 * parity) * spectrum.amplitudes.to(bg.device))


def shapley_values(
    spectrum: FourierSpectrum,
    x: Tensor,
    background: Tensor | BackgroundTerm,
    groups: Tensor | None = None,
    max_memory: int | str | None = None,
    relaxed: bool = False,
) -> Tensor:
    """Exact interventional Shapley values of the spectrum's function (paper Eq. 5).

    Args:
        spectrum: ``k`` frequencies on ``n`` binary features.
        x: ``(Q, n)`` binary queries. With ``relaxed=True`` any real values are allowed and the game is
            played on the multilinear extension (exact Gauss–Legendre integration of Owen's formula).
        background: ``(B, n)`` binary background, or its :func:`precompute_background` term.
        groups: optional ``(n,)`` integer player id in ``0..m-1`` per feature (every id used).
        max_memory: budget for the chunked intermediates (bytes or e.g. ``"2GB"``).
        relaxed: allow non-binary queries (singleton players only).

    Returns:
        ``(Q, m)`` Shapley values (``m = n`` without groups), in the output's units.
    """
    term, xq, groups, m = _prepare(spectrum, x, background, groups, relaxed)
    if relaxed and not bool(((xq == 0) | (xq == 1)).all()):  # binary queries take the exact integer path
        if groups is not None:
            raise ValueError("relaxed=True supports singleton players only; pass groups=None")
        return _relaxed_shapley(spectrum, xq, term, max_memory)
    if groups is None:
        return _singleton_gemm(spectrum, xq, term, "shapley", max_memory)
    return _grouped_first_order(spectrum, xq, term, groups, m, "shapley", max_memory)


def banzhaf_values(
    spectrum: FourierSpectrum,
    x: Tensor,
    background: Tensor | BackgroundTerm,
    groups: Tensor | None = None,
    max_memory: int | str | None = None,
) -> Tensor:
    """Exact interventional Banzhaf values; arguments as :func:`shapley_values`.

    Returns:
        ``(Q, m)`` Banzhaf values.
    """
    term, xq, groups, m = _prepare(spectrum, x, background, groups, relaxed=False)
    if groups is None:
        return _singleton_gemm(spectrum, xq, term, "banzhaf", max_memory)
    return _grouped_first_order(spectrum, xq, term, groups, m, "banzhaf", max_memory)


def shapley_interactions(
    spectrum: FourierSpectrum,
    x: Tensor,
    background: Tensor | BackgroundTerm,
    groups: Tensor | None = None,
    max_memory: int | str | None = None,
) -> Tensor:
    """Exact interventional pairwise Shapley interaction index; arguments as :func:`shapley_values`.

    Returns:
        ``(Q, m, m)`` symmetric matrices with zero diagonal: ``[q, g, h]`` is the interaction of
        players ``g ≠ h`` at query ``q``.
    """
    term, xq, groups, m = _prepare(spectrum, x, background, groups, relaxed=False)
    return _grouped_interactions(spectrum, xq, term, groups, m, max_memory)


# ---------------------------------------------------------------------------------------------------
def _prepare(
    spectrum: FourierSpectrum, x: Tensor, background: Tensor | BackgroundTerm, groups: Tensor | None, relaxed: bool
) -> tuple[BackgroundTerm, Tensor, Tensor | None, int]:
    if not isinstance(spectrum, FourierSpectrum):
        raise TypeError(f"spectrum must be a FourierSpectrum, got {type(spectrum).__name__}")
    n = spectrum.n_features
    check_matrix(x, "x", n)
    if relaxed:
        check_finite(x, "x")
    else:
        check_binary(x, "x")
    term = background if isinstance(background, BackgroundTerm) else precompute_background(spectrum, background)
    if term.background.shape[1] != n or term.signed_amplitudes.shape[1] != len(spectrum):
        raise ValueError("the precomputed background term was made for another spectrum")
    check_same_device(x=x, background=term.background)
    if groups is None:
        return term, x.to(spectrum.dtype), None, n
    groups, m = validate_groups(groups, n)
    return term, x.to(spectrum.dtype), groups.to(x.device), m


def validate_groups(groups: Tensor, n_features: int) -> tuple[Tensor, int]:
    """Check a ``(n,)`` integer player-id vector with ids ``0..m-1``, each used; return it and ``m``."""
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


def _interaction_weight(c: Tensor) -> Tensor:
    even = (torch.remainder(c, 2.0) == 0.0) & (c >= 2.0)
    return torch.where(even, (c - 1.0).clamp_min(1.0).reciprocal(), 0.0)


def _pair_counts(d: Tensor, freq_t: Tensor) -> Tensor:
    """``d @ freq_t`` — exact small integers; on CUDA computed in float16 when that is exact."""
    if d.is_cuda and d.dtype in (torch.float32, torch.float64) and d.shape[1] <= _HALF_EXACT_MAX:
        return (d.half() @ freq_t.half()).to(d.dtype)
    return d @ freq_t


def _signed_query_amplitudes(spectrum: FourierSpectrum, xq: Tensor, freq_t: Tensor) -> Tensor:
    """``(Q, k)`` ``t_{x*,f} = a_f (-1)^{<f, x*>}``."""
    return (1.0 - 2.0 * torch.remainder(xq @ freq_t, 2.0)) * spectrum.amplitudes.to(xq.device)


def _singleton_gemm(
    spectrum: FourierSpectrum, xq: Tensor, term: BackgroundTerm, kind: str, max_memory: int | str | None
) -> Tensor:
    """Shapley (``kind="shapley"``) or Banzhaf values of singleton players in the two-GEMM form.

    ``c`` is odd exactly when ``(-1)^{<f,x>} ≠ (-1)^{<f,x*>}``, so ``s · [c odd] = (s - t) / 2`` with
    ``t = a_f (-1)^{<f,x*>}``: the weights cost one subtraction and one division per (pair, frequency).
    Blocks of (queries, background rows, frequencies) are sized to stay cache-resident.
    """
    s = term.signed_amplitudes
    q_rows, b_rows, k = xq.shape[0], term.background.shape[0], len(spectrum)
    # features in no frequency are dummies (value 0): leave them out of every product
    active = torch.nonzero(spectrum.frequencies.any(0).to(xq.device)).flatten()
    xq_all, xq, bg, n = xq, xq[:, active], term.background[:, active], active.shape[0]
    if n == 0:  # a constant function: every player is a dummy (zeros kept in the amplitudes' graph)
        return xq_all.new_zeros(xq_all.shape) + 0.0 * s.sum()
    freq = spectrum.frequencies.to(device=xq.device, dtype=xq.dtype)[:, active]
    freq_t = freq.T.contiguous()
    t = _signed_query_amplitudes(spectrum, xq, freq_t)
    cap = parse_memory(max_memory) // (3 * xq.element_size())
    elements = min(cap, _CUDA_BLOCK if xq.is_cuda else _CPU_BLOCK)
    bc = max(1, min(b_rows, elements))
    kc = max(1, min(k, elements // bc))
    qc = max(1, min(q_rows, elements // (bc * kc)))
    acc = xq.new_zeros(q_rows, n)
    for q0, q1 in chunk_bounds(q_rows, qc):
        for b0, b1 in chunk_bounds(b_rows, bc):
            d = (xq[q0:q1, None, :] - bg[None, b0:b1, :]).abs_()  # x ⊕ x* on {0,1}
            d2 = d.reshape(-1, n)
            phi = xq.new_zeros(d2.shape)
            for f0, f1 in chunk_bounds(k, kc):
                counts = _pair_counts(d2, freq_t[:, f0:f1])
                w = (s[None, b0:b1, f0:f1] - t[q0:q1, None, f0:f1]).reshape(counts.shape)
                w = w / counts.clamp_(min=1.0) if kind == "shapley" else w * (counts == 1.0)
                phi = phi + w @ freq[f0:f1]
            acc[q0:q1] += (phi.view_as(d) * d).sum(1)
    return xq_all.new_zeros(xq_all.shape).index_copy(1, active, acc * (-1.0 / b_rows))


def _block_shape(q_rows: int, b_rows: int, bytes_per_pair: int, max_memory: int | str | None) -> tuple[int, int]:
    """Chunk sizes ``(queries, background rows)`` so a block of pairs fits the budget."""
    pairs = max(1, parse_memory(max_memory) // max(bytes_per_pair, 1))
    if pairs >= b_rows:
        return max(1, min(q_rows, pairs // b_rows)), b_rows
    return 1, pairs


def _group_layout(groups: Tensor, m: int, active: Tensor) -> Tensor:
    """``(m, L)`` feature indices of each player's active features, padded with ``n`` (a zero column)."""
    n = groups.shape[0]
    features = torch.nonzero(active).flatten()
    owner = groups[features]
    order = torch.argsort(owner, stable=True)
    features, owner = features[order], owner[order]
    sizes = torch.bincount(owner, minlength=m)
    starts = torch.cumsum(sizes, 0) - sizes
    width = max(int(sizes.max()) if sizes.numel() else 0, 1)
    layout = torch.full((m, width), n, dtype=torch.long, device=groups.device)
    layout[owner, torch.arange(features.shape[0], device=groups.device) - starts[owner]] = features
    return layout


def _parity_bits(rows: Tensor, freq: Tensor, layout: Tensor | None) -> Tensor:
    """``(R, kc, m)`` parity of ``<f_g, x_g>`` for each row, frequency and player (in ``rows.dtype``).

    Singleton players (``layout=None``) need only ``x_i f_i``; groups use one batched product over players of
    the rows' and frequencies' features laid out per player (``layout`` from :func:`_group_layout`).
    """
    if layout is None:
        return rows[:, None, :] * freq[None, :, :]
    pad_rows = torch.cat([rows, rows.new_zeros(rows.shape[0], 1)], dim=1)[:, layout]  # (R, m, L)
    pad_freq = torch.cat([freq, freq.new_zeros(freq.shape[0], 1)], dim=1)[:, layout]  # (kc, m, L)
    counts = torch.bmm(pad_rows.permute(1, 0, 2), pad_freq.permute(1, 2, 0))  # (m, R, kc)
    return torch.remainder(counts, 2.0).permute(1, 2, 0)


def _dis_blocks(
    spectrum: FourierSpectrum,
    xq: Tensor,
    term: BackgroundTerm,
    groups: Tensor | None,
    m: int,
    max_memory: int | str | None,
):
    """Yield ``(q0, q1, b0, b1, f0, f1, dis)`` with ``dis`` of shape ``(q, b, kc, m)``."""
    bg = term.background
    q_rows, b_rows, k, n = xq.shape[0], bg.shape[0], len(spectrum), spectrum.n_features
    freq = spectrum.frequencies.to(device=xq.device, dtype=xq.dtype)
    layout = None if groups is None else _group_layout(groups, m, spectrum.frequencies.any(0).to(groups.device))
    elements = parse_memory(max_memory) // (4 * xq.element_size())
    kc = max(1, min(k, elements // (b_rows * m + n + 1)))
    qc = max(1, min(q_rows, elements // max(kc * b_rows * m, 1)))
    bc = b_rows if kc * b_rows * m <= elements else max(1, elements // (kc * m))
    for f0, f1 in chunk_bounds(k, kc):
        bits_b = _parity_bits(bg, freq[f0:f1], layout)
        for q0, q1 in chunk_bounds(q_rows, qc):
            bits_q = _parity_bits(xq[q0:q1], freq[f0:f1], layout)
            for b0, b1 in chunk_bounds(b_rows, bc):
                dis = (bits_q[:, None] - bits_b[None, b0:b1]).abs_()
                yield q0, q1, b0, b1, f0, f1, dis


def _grouped_first_order(
    spectrum: FourierSpectrum,
    xq: Tensor,
    term: BackgroundTerm,
    groups: Tensor,
    m: int,
    kind: str,
    max_memory: int | str | None,
) -> Tensor:
    """Shapley or Banzhaf values of grouped players, as batched products (no ``(Q, B, k, m)`` tensor).

    With parity bits ``p`` of each player, ``dis_g = p_q + p_b - 2 p_q p_b``, so ``c = Σ_g dis_g`` and
    ``Σ_{b,f} W dis_g`` reduce to per-frequency products of ``(Q, m)`` and ``(m, B)`` matrices.
    """
    bg, s = term.background, term.signed_amplitudes
    q_rows, b_rows, k, n = xq.shape[0], bg.shape[0], len(spectrum), spectrum.n_features
    freq = spectrum.frequencies.to(device=xq.device, dtype=xq.dtype)
    layout = _group_layout(groups, m, spectrum.frequencies.any(0).to(groups.device))
    t = _signed_query_amplitudes(spectrum, xq, freq.T)
    elements = parse_memory(max_memory) // (6 * xq.element_size())
    kc = max(1, min(k, elements // (b_rows * (m + 1) + n + 1)))
    qc = max(1, min(q_rows, elements // max(kc * (b_rows + m), 1)))
    out = xq.new_zeros(q_rows, m)
    for f0, f1 in chunk_bounds(k, kc):
        bits_b = _parity_bits(bg, freq[f0:f1], layout).permute(1, 0, 2)  # (kc, B, m)
        s_b = s[:, f0:f1].T[:, None, :]  # (kc, 1, B)
        for q0, q1 in chunk_bounds(q_rows, qc):
            bits_q = _parity_bits(xq[q0:q1], freq[f0:f1], layout).permute(1, 0, 2)  # (kc, q, m)
            counts = (
                bits_q.sum(-1, keepdim=True)
                + bits_b.sum(-1)[:, None, :]
                - 2.0 * torch.bmm(bits_q, bits_b.transpose(1, 2))
            )  # (kc, q, B)
            if kind == "shapley":  # s·[c odd] = (s - t)/2 as in the singleton form
                w = (s_b - t[q0:q1, f0:f1].T[:, :, None]) / (2.0 * counts.clamp_(min=1.0))
            else:
                w = s_b * (counts == 1.0)
            per_q = w.sum(-1, keepdim=True)  # (kc, q, 1)
            weighted_b = torch.bmm(w, bits_b)  # (kc, q, m): Σ_b w p_b
            contrib = (per_q * bits_q + weighted_b - 2.0 * bits_q * weighted_b).sum(0)
            out = out.index_add(0, torch.arange(q0, q1, device=xq.device), contrib)
    return out * (-2.0 / b_rows)


def _grouped_interactions(
    spectrum: FourierSpectrum,
    xq: Tensor,
    term: BackgroundTerm,
    groups: Tensor | None,
    m: int,
    max_memory: int | str | None,
) -> Tensor:
    s = term.signed_amplitudes
    out = xq.new_zeros(xq.shape[0], m, m)
    for q0, q1, b0, b1, f0, f1, dis in _dis_blocks(spectrum, xq, term, groups, m, max_memory):
        w = _interaction_weight(dis.sum(-1)) * s[None, b0:b1, f0:f1]
        flat = dis.reshape(q1 - q0, -1, m)
        contrib = (flat * w.reshape(q1 - q0, -1, 1)).transpose(1, 2) @ flat
        out = out.index_add(0, torch.arange(q0, q1, device=xq.device), contrib)
    out = out * (4.0 / term.background.shape[0])
    return out * (1.0 - torch.eye(m, dtype=out.dtype, device=out.device))


def _gauss_legendre_01(n_nodes: int, dtype: torch.dtype, device: torch.device) -> tuple[Tensor, Tensor]:
    """Gauss–Legendre nodes and weights on [0, 1] (Golub–Welsch, float64 then cast)."""
    i = torch.arange(1, n_nodes, dtype=torch.float64)
    off = i / torch.sqrt(4.0 * i**2 - 1.0)
    jacobi = torch.diag(off, 1) + torch.diag(off, -1)
    nodes, vecs = torch.linalg.eigh(jacobi)
    weights = vecs[0] ** 2  # the Legendre weight integrates to 2 on [-1,1]; halved with the map below
    return ((nodes + 1.0) / 2.0).to(device=device, dtype=dtype), weights.to(device=device, dtype=dtype)


def _relaxed_shapley(
    spectrum: FourierSpectrum, xq: Tensor, term: BackgroundTerm, max_memory: int | str | None
) -> Tensor:
    """Shapley values of the multilinear extension at real-valued queries.

    With ``d = x* + x - 2 x x*`` (equal to ``x ⊕ x*`` on the cube), Owen's formula gives
    ``φ_i = -(2/|D|) Σ_{x,f} s f_i d_i ∫_0^1 Π_{j∈f∖i} (1 - 2 t d_j) dt``; the integrand is a polynomial of
    degree ``deg(f) - 1``, integrated exactly by an even number of Gauss–Legendre nodes (never t = 1/2).
    """
    bg, s = term.background, term.signed_amplitudes
    q_rows, b_rows, n, k = xq.shape[0], bg.shape[0], spectrum.n_features, len(spectrum)
    freq = spectrum.frequencies.to(device=xq.device, dtype=xq.dtype)
    n_nodes = 2 * max(1, math.ceil(math.ceil(spectrum.degree / 2) / 2))
    nodes, weights = _gauss_legendre_01(n_nodes, xq.dtype, xq.device)
    tiny = torch.finfo(xq.dtype).tiny ** 0.25
    qc, bc = _block_shape(q_rows, b_rows, (2 * n + 4 * k) * xq.element_size(), max_memory)
    out = []
    for q0, q1 in chunk_bounds(q_rows, qc):
        acc = xq.new_zeros(q1 - q0, n)
        for b0, b1 in chunk_bounds(b_rows, bc):
            xs, xb = xq[q0:q1, None, :], bg[None, b0:b1, :]
            d = (xs + xb - 2.0 * xs * xb).reshape(-1, n)
            inner = torch.zeros_like(d)
            for t, omega in zip(nodes, weights):
                g = 1.0 - 2.0 * t * d
                g = torch.where(g < 0, -1.0, 1.0) * g.abs().clamp_min(tiny)
                log_abs = g.abs().log() @ freq.T
                negatives = torch.remainder((g < 0).to(d.dtype) @ freq.T, 2.0)
                prod = (1.0 - 2.0 * negatives) * log_abs.exp()
                sp = (prod.view(q1 - q0, b1 - b0, k) * s[None, b0:b1]).view(-1, k)
                inner = inner + omega * (sp @ freq) / g
            acc = acc + (inner * d).view(q1 - q0, b1 - b0, n).sum(1)
        out.append(acc)
    return torch.cat(out) * (-2.0 / b_rows)

"""Attribution-based kits (Def. 10): SHAP-IDX and LIME-IDX over input-output influences ``O x C_o``.

Attributions explain ``P(sigma(a, y) | .)`` for each output ``y`` (the input's own decided value), with
one player per categorical observation. A positive value makes the observation a supporter of ``y``,
a negative value an attacker.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, make_generator, progress, rows_per_chunk
from torchxplain.idx.classifier import BayesianClassifier

DEFAULT_MAX_PLAYERS = 12
DEFAULT_MAX_TABLE = 2**22
DEFAULT_MAX_BITS = 16


def _outputs(bc: BayesianClassifier, outputs: Sequence[str] | None) -> list[str]:
    if outputs is None:
        return list(bc.classifications)
    outputs = [outputs] if isinstance(outputs, str) else list(outputs)
    bad = [y for y in outputs if y not in bc.classifications]
    if bad:
        raise ValueError(f"outputs must be classifications {bc.classifications}, got {bad}")
    return outputs


def _background(bc: BayesianClassifier, codes: Tensor, background: Any, seed: int, size: int) -> Tensor:
    if background is not None:
        return bc.encode(background)
    if codes.shape[0] <= size:
        return codes
    gen = make_generator(seed, codes.device)
    return codes[torch.randperm(codes.shape[0], generator=gen, device=codes.device)[:size]]


def _target_proba(bc: BayesianClassifier, rows: Tensor, out_idx: Tensor) -> Tensor:
    """``P(y = v | rows)`` for every output ``y`` and value ``v``: ``(R, n_out, V)``."""
    return bc(rows)[0][:, out_idx].exp()


def _shapley_matrix(m: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """``W (2^m, m)`` with ``phi = v @ W`` for a game ``v`` over coalitions indexed by bitmask."""
    c = torch.arange(1 << m, device=device)
    member = ((c[:, None] >> torch.arange(m, device=device)) & 1).bool()
    size = member.sum(dim=1)
    fact = [math.factorial(k) for k in range(m + 1)]
    w = torch.tensor([fact[s] * fact[m - s - 1] / fact[m] for s in range(m)], dtype=dtype, device=device)
    with_i = w[(size - 1).clamp(min=0)][:, None]
    without_i = w[size.clamp(max=m - 1)][:, None]
    return torch.where(member, with_i, -without_i)


def shap_values(
    bc: BayesianClassifier,
    inputs: Any,
    outputs: Sequence[str] | None = None,
    background: Any = None,
    method: str = "exact",
    background_size: int = 100,
    seed: int = 0,
    max_players: int = DEFAULT_MAX_PLAYERS,
    max_table: int = DEFAULT_MAX_TABLE,
    max_bits: int = DEFAULT_MAX_BITS,
    max_memory: int | str | None = None,
    show_progress: bool | None = False,
) -> Tensor:
    """Exact interventional Shapley values with one player per observation, ``(B, |O|, |C_o|)``.

    The game of output ``y`` for input ``a`` is ``v(S) = mean_{b in background} P(sigma(a,y) | a_S, b_{-S})``.

    Args:
        bc: the classifier; ``inputs``: anything :meth:`BayesianClassifier.encode` accepts.
        outputs: the outputs ``C_o`` (default: every classification).
        background: background inputs (default: up to ``background_size`` of the inputs, seeded sample).
        method: ``"exact"`` enumerates the ``2^|O|`` coalitions (refused above ``max_players`` players),
            reading posteriors from a table over all observation assignments when it has at most
            ``max_table`` rows; ``"fourier"`` computes the exact Walsh-Hadamard spectrum of the posterior
            on a binary code of the observations (``ceil(log2 |V(o)|)`` bits each, at most ``max_bits`` in
            all) and evaluates torchxplain's FourierSHAP closed form with one player per observation
            (grouped bits). Both are exact; they differ in cost.
        max_memory: budget for chunked intermediates.
    """
    codes = bc.encode(inputs)
    outs = _outputs(bc, outputs)
    out_idx = torch.tensor([bc.index_of(y) for y in outs], device=codes.device)
    bg = _background(bc, codes, background, seed, background_size)
    sigma = bc(codes)[1][:, out_idx]  # (B, n_out)
    if method == "exact":
        return _shap_exact(bc, codes, bg, sigma, out_idx, max_players, max_table, max_memory, show_progress)
    if method == "fourier":
        return _shap_fourier(bc, codes, bg, sigma, out_idx, max_bits, max_memory, show_progress)
    raise ValueError(f"method must be 'exact' or 'fourier', got {method!r}")


def _shap_exact(bc, codes, bg, sigma, out_idx, max_players, max_table, max_memory, show_progress) -> Tensor:
    m = len(bc.observations)
    if m > max_players:
        raise ValueError(
            f"exact SHAP enumerates 2^{m} coalitions of the {m} observations, above max_players="
            f"{max_players}; raise max_players or use method='fourier'"
        )
    dtype, device = bc.log_prior.dtype, codes.device
    cards = bc.cardinality[bc.observation_index]
    n_assign = math.prod(cards.tolist())
    member = ((torch.arange(1 << m, device=device)[:, None] >> torch.arange(m, device=device)) & 1).bool()
    weights = _shapley_matrix(m, dtype, device)
    n_out, n_values = len(out_idx), bc.log_prior.shape[1]
    use_table = n_assign <= max_table
    if use_table:
        from torchxplain.idx.datasets import all_inputs

        table = torch.cat(
            [
                _target_proba(bc, rows, out_idx)
                for rows in all_inputs(bc).split(rows_per_chunk(64 * n_out * n_values, n_assign, max_memory))
            ]
        )
        stride = torch.ones(m, dtype=torch.long, device=device)
        for j in range(m - 2, -1, -1):
            stride[j] = stride[j + 1] * cards[j + 1]
        bg_part = (~member).long() @ (bg * stride).T  # (2^m, D)
    per_query = (1 << m) * bg.shape[0] * (m + n_out * (n_values + 2)) * 8
    out = []
    chunks = chunk_bounds(codes.shape[0], rows_per_chunk(per_query, codes.shape[0], max_memory))
    for start, stop in progress(chunks, show_progress, desc="SHAP-IDX coalitions"):
        q, s = codes[start:stop], sigma[start:stop]
        if use_table:
            flat = (member.long() @ (q * stride).T).T[:, :, None] + bg_part[None]  # (Q, 2^m, D)
            proba = table[flat]  # (Q, 2^m, D, n_out, V)
        else:
            mixed = torch.where(member[None, :, None, :], q[:, None, None, :], bg[None, None, :, :])
            proba = _target_proba(bc, mixed.reshape(-1, m), out_idx).reshape(*mixed.shape[:3], n_out, n_values)
        target = s[:, None, None, :, None].expand(*proba.shape[:4], 1)
        game = proba.gather(4, target).squeeze(4).mean(dim=2)  # (Q, 2^m, n_out)
        out.append(torch.einsum("qco,cm->qmo", game, weights))
    return torch.cat(out)


def _shap_fourier(bc, codes, bg, sigma, out_idx, max_bits, max_memory, show_progress) -> Tensor:
    from torchxplain.fourier import FourierSpectrum, shapley_values
    from torchxplain.fourier.fwht import fwht, index_bits

    device, dtype = codes.device, bc.log_prior.dtype
    cards = bc.cardinality[bc.observation_index].tolist()
    bits = [max(1, math.ceil(math.log2(k))) for k in cards]
    n_bits = sum(bits)
    if n_bits > max_bits:
        raise ValueError(
            f"method='fourier' needs the posterior on all 2^{n_bits} binary codes of the observations, "
            f"above max_bits={max_bits}; raise max_bits or use method='exact'"
        )
    groups = torch.tensor([j for j, b in enumerate(bits) for _ in range(b)], device=device)
    shifts = torch.tensor([i for b in bits for i in range(b)], device=device)

    def to_bits(c: Tensor) -> Tensor:
        return ((c[:, groups] >> shifts) & 1).bool()

    def from_bits(z: Tensor) -> Tensor:
        vals = torch.zeros((z.shape[0], len(cards)), dtype=torch.long, device=device)
        vals.index_add_(1, groups, z.long() << shifts)
        return torch.minimum(vals, torch.tensor(cards, device=device) - 1)  # unused codes: any valid value

    points = from_bits(index_bits(torch.arange(1 << n_bits, device=device), n_bits))
    proba = _target_proba(bc, points, out_idx)  # (2^bits, n_out, V)
    amps = fwht(proba.reshape(1 << n_bits, -1), dim=0) / (1 << n_bits)
    freqs = index_bits(torch.arange(1 << n_bits, device=device), n_bits)
    xb, bgb = to_bits(codes), to_bits(bg)
    n_out, n_values = len(out_idx), bc.log_prior.shape[1]
    phi = torch.zeros((codes.shape[0], len(cards), n_out), dtype=dtype, device=device)
    jobs = [(o, v) for o in range(n_out) for v in range(n_values)]
    for o, v in progress(jobs, show_progress, desc="SHAP-IDX spectra"):
        rows = (sigma[:, o] == v).nonzero().flatten()
        if rows.numel() == 0:
            continue
        a = amps[:, o * n_values + v]
        keep = a != 0
        spec = FourierSpectrum(freqs[keep], a[keep])
        phi[rows, :, o] = shapley_values(spec, xb[rows].to(dtype), bgb.to(dtype), groups=groups, max_memory=max_memory)
    return phi


# ---------------------------------------------------------------------------------------------- LIME
def weighted_ridge(x: Tensor, y: Tensor, w: Tensor, alpha: float = 1.0) -> tuple[Tensor, Tensor]:
    """Batched ridge regression with an unpenalised intercept and sample weights.

    Args:
        x: ``(Q, S, m)`` designs, ``y``: ``(Q, S)`` targets, ``w``: ``(Q, S)`` non-negative sample weights.

    Returns:
        ``(coef (Q, m), intercept (Q,))`` minimising ``sum_s w_s (y_s - x_s coef - b)^2 + alpha |coef|^2``.
    """
    wsum = w.sum(dim=1, keepdim=True)
    xm = (w[:, :, None] * x).sum(dim=1, keepdim=True) / wsum[:, :, None]
    ym = (w * y).sum(dim=1, keepdim=True) / wsum
    xc, yc = x - xm, y - ym
    gram = xc.transpose(1, 2) @ (w[:, :, None] * xc)
    gram = gram + alpha * torch.eye(x.shape[2], dtype=x.dtype, device=x.device)
    rhs = xc.transpose(1, 2) @ (w * yc)[:, :, None]
    coef = torch.linalg.solve(gram, rhs).squeeze(2)
    return coef, (ym - (xm.squeeze(1) * coef).sum(dim=1, keepdim=True)).squeeze(1)


def lime_values(
    bc: BayesianClassifier,
    inputs: Any,
    outputs: Sequence[str] | None = None,
    num_samples: int = 5000,
    kernel_width: float | None = None,
    alpha: float = 1.0,
    sampling: Tensor | None = None,
    seed: int = 0,
    max_memory: int | str | None = None,
    show_progress: bool | None = False,
) -> Tensor:
    """LIME attributions for categorical observations, batched: ``(B, |O|, |C_o|)``.

    Follows ``lime.lime_tabular.LimeTabularExplainer`` on categorical features with its defaults: each
    perturbed sample draws every observation independently from ``sampling`` (default: the classifier's
    SD weights, i.e. priors or data frequencies), its binary representation is ``1`` where it equals the
    input, the kernel is ``sqrt(exp(-d^2 / width^2))`` on the Euclidean distance of that representation
    to all-ones with ``width = 0.75 sqrt(|O|)``, the first sample is the input itself, and the explanation
    is a weighted ridge (``alpha = 1``) of ``P(sigma(a, y) | sample)`` on the binary representation.
    """
    codes = bc.encode(inputs)
    outs = _outputs(bc, outputs)
    out_idx = torch.tensor([bc.index_of(y) for y in outs], device=codes.device)
    dtype, device = bc.log_prior.dtype, codes.device
    m = len(bc.observations)
    probs = bc.sd_weight[bc.observation_index] if sampling is None else sampling.to(device=device, dtype=dtype)
    probs = torch.where(bc.value_mask[bc.observation_index], probs, torch.zeros_like(probs))
    width = 0.75 * math.sqrt(m) if kernel_width is None else kernel_width
    sigma = bc(codes)[1][:, out_idx]
    gen = make_generator(seed, device)
    per_query = num_samples * (m + len(out_idx) * bc.log_prior.shape[1]) * 8 * 4
    out = []
    chunks = chunk_bounds(codes.shape[0], rows_per_chunk(per_query, codes.shape[0], max_memory))
    for start, stop in progress(chunks, show_progress, desc="LIME-IDX"):
        q = codes[start:stop]
        draws = torch.multinomial(probs, (stop - start) * num_samples, replacement=True, generator=gen)
        samples = draws.reshape(m, stop - start, num_samples).permute(1, 2, 0).clone()
        samples[:, 0] = q
        z = (samples == q[:, None, :]).to(dtype)
        dist = torch.sqrt(((1.0 - z) ** 2).sum(dim=2))
        w = torch.sqrt(torch.exp(-(dist**2) / width**2))
        proba = _target_proba(bc, samples.reshape(-1, m), out_idx).reshape(stop - start, num_samples, len(outs), -1)
        target = proba.gather(3, sigma[start:stop, None, :, None].expand(-1, num_samples, -1, 1)).squeeze(3)
        coefs = []
        for o in range(len(outs)):
            coef, _ = weighted_ridge(z, target[:, :, o], w, alpha)
            coefs.append(coef)
        out.append(torch.stack(coefs, dim=2))
    return torch.cat(out)


def attribution_relations(
    bc: BayesianClassifier, codes: Tensor, kit: str, outputs: Sequence[str] | None = None, **kwargs: Any
) -> tuple[Tensor, dict[str, Tensor], list[tuple[str, str]], Tensor]:
    """Relations of the LIME or SHAP kit over input-output influences ``O x C_o``.

    Returns ``(sigma (B, n), {"attack", "support"} -> (B, P) bool, pairs, scores (B, P))`` with the
    pairs ordered output-major: ``(o, y)`` for each output ``y`` and observation ``o``.
    """
    outs = _outputs(bc, outputs)
    if kit == "shap":
        values = shap_values(bc, codes, outs, **kwargs)
    elif kit == "lime":
        values = lime_values(bc, codes, outs, **kwargs)
    else:
        raise ValueError(f"kit must be 'lime' or 'shap', got {kit!r}")
    scores = values.transpose(1, 2).reshape(codes.shape[0], -1)  # (B, n_out * |O|)
    pairs = [(o, y) for y in outs for o in bc.observations]
    return bc(codes)[1], {"attack": scores < 0, "support": scores > 0}, pairs, scores

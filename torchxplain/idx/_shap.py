"""SHAP-IDX (Def. 10): exact interventional Shapley values with one player per categorical observation.

The game of output ``y`` for input ``a`` is ``v(S) = mean_{b in background} P(sigma(a, y) | a_S, b_{-S})``. Two
exact methods differ only in cost: enumerating the ``2^|O|`` coalitions, or the Walsh-Hadamard spectrum of the
posterior on a binary code of the observations evaluated with torchxplain's FourierSHAP closed form.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import torch
from torch import Tensor

from torchxplain._core import check_int, chunk_bounds, make_generator, progress, rows_per_chunk, seeding, settings
from torchxplain.idx._classifier import BayesianClassifier, check_classifier
from torchxplain.idx._kits import check_choice

DEFAULT_MAX_PLAYERS = 12
DEFAULT_MAX_TABLE = 2**22
DEFAULT_MAX_BITS = 16
ShapMethod = Literal["exact", "fourier"]


def check_outputs(bc: BayesianClassifier, outputs: str | Sequence[str] | None) -> list[str]:
    """The explained outputs ``C_o``: every classification by default, else the named ones."""
    if outputs is None:
        return list(bc.classifications)
    outputs = [outputs] if isinstance(outputs, str) else list(outputs)
    bad = [y for y in outputs if y not in bc.classifications]
    if bad or not outputs:
        raise ValueError(f"outputs must name classifications from {bc.classifications}, got {outputs!r}")
    return outputs


def check_seed(seed: Any) -> int | torch.Generator:
    """An int >= 0 or a ``torch.Generator`` (floats and bools are refused, not truncated)."""
    return seed if isinstance(seed, torch.Generator) else seeding.check_seed(seed)


def output_proba(bc: BayesianClassifier, rows: Tensor, out_idx: Tensor) -> Tensor:
    """``P(y = v | rows)`` for every output ``y`` and value ``v``: ``(R, n_out, V)``."""
    return bc(rows)[0][:, out_idx].exp()


def background_codes(
    bc: BayesianClassifier, codes: Tensor, background: Any, seed: int | torch.Generator, size: int
) -> Tensor:
    """The background's codes: ``background`` encoded, else up to ``size`` of the inputs (a seeded sample).

    Raises:
        ValueError: an empty background, or no ``background`` and fewer than two distinct inputs (the input
            would be its own background: every Shapley value 0, no relation, whatever the classifier).
    """
    if background is not None:
        bg = bc.encode(background)
        if bg.shape[0] == 0:
            raise ValueError("background must hold at least one input; pass inputs to average over, or None")
        return bg
    if codes.shape[0] and torch.unique(codes, dim=0).shape[0] < 2:
        raise ValueError(
            "the shap kit needs a background: without background= it averages over the explained inputs, and "
            f"these {codes.shape[0]} input(s) hold one distinct assignment, so every Shapley value would be 0 (no "
            "attack, no support). Pass background= (e.g. training rows, or torchxplain.idx.datasets.all_inputs(bc) "
            "for every assignment of the observations)"
        )
    if codes.shape[0] <= size:
        return codes
    gen = make_generator(seed, codes.device)
    return codes[torch.randperm(codes.shape[0], generator=gen, device=codes.device)[:size]]


def _shapley_matrix(m: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """``W (2^m, m)`` with ``phi = v @ W`` for a game ``v`` over coalitions indexed by bitmask."""
    c = torch.arange(1 << m, device=device)
    member = ((c[:, None] >> torch.arange(m, device=device)) & 1).bool()
    size = member.sum(dim=1)
    fact = [math.factorial(k) for k in range(m + 1)]
    w = torch.tensor([fact[s] * fact[m - s - 1] / fact[m] for s in range(m)], dtype=dtype, device=device)
    return torch.where(member, w[(size - 1).clamp(min=0)][:, None], -w[size.clamp(max=m - 1)][:, None])


def shap_values(
    bc: BayesianClassifier,
    inputs: Any,
    outputs: str | Sequence[str] | None = None,
    background: Any = None,
    method: ShapMethod = "exact",
    background_size: int = 100,
    seed: int | torch.Generator = 0,
    max_players: int = DEFAULT_MAX_PLAYERS,
    max_table: int = DEFAULT_MAX_TABLE,
    max_bits: int = DEFAULT_MAX_BITS,
    max_memory: int | str | None = None,
    show_progress: bool | None = None,
) -> Tensor:
    """Exact interventional Shapley values with one player per observation, ``(B, |O|, |C_o|)``.

    Args:
        bc: the classifier; ``inputs``: anything :meth:`BayesianClassifier.encode` accepts.
        outputs: the outputs ``C_o`` (default: every classification).
        background: background inputs (default: up to ``background_size`` of the inputs, a seeded sample, so
            each input's values depend on the others explained with it; pass the training rows for values that do
            not). Refused without ``background`` when the inputs hold one distinct assignment (it would be its own
            background: every value 0).
        method: ``"exact"`` enumerates the ``2^|O|`` coalitions (refused above ``max_players`` players), reading
            posteriors from a table over all observation assignments when it has at most ``max_table`` rows;
            ``"fourier"`` computes the exact Walsh-Hadamard spectrum of the posterior on a binary code of the
            observations (``ceil(log2 |V(o)|)`` bits each, at most ``max_bits`` in all) and evaluates
            FourierSHAP's closed form with one player per observation (grouped bits).
        background_size, seed: the default background's size (>= 1) and sampling seed (an int >= 0).
        max_memory, show_progress: budget of chunked intermediates and progress bars (default: ``tx.settings``).
    """
    bc = check_classifier(bc).computing()
    with settings.using(max_memory=max_memory, show_progress=show_progress):
        codes = bc.encode(inputs)
        return shap_from_decisions(
            bc,
            codes,
            bc(codes)[1],
            outputs,
            background,
            method,
            background_size,
            seed,
            max_players,
            max_table,
            max_bits,
        )


def shap_from_decisions(
    bc: BayesianClassifier,
    codes: Tensor,
    sigma: Tensor,
    outputs: str | Sequence[str] | None = None,
    background: Any = None,
    method: ShapMethod = "exact",
    background_size: int = 100,
    seed: int | torch.Generator = 0,
    max_players: int = DEFAULT_MAX_PLAYERS,
    max_table: int = DEFAULT_MAX_TABLE,
    max_bits: int = DEFAULT_MAX_BITS,
) -> Tensor:
    """:func:`shap_values` for validated codes ``(B, |O|)`` whose decisions ``sigma (B, n)`` are known."""
    outs = check_outputs(bc, outputs)
    check_choice(method, "method", ("exact", "fourier"))
    check_int(background_size, "background_size", 1, hint="e.g. 100")
    seed = check_seed(seed)
    check_int(max_players, "max_players", 1, hint=f"e.g. {DEFAULT_MAX_PLAYERS}")
    check_int(max_table, "max_table", 1, hint=f"e.g. {DEFAULT_MAX_TABLE}")
    check_int(max_bits, "max_bits", 1, hint=f"e.g. {DEFAULT_MAX_BITS}")
    out_idx = torch.tensor([bc.index_of(y) for y in outs], device=codes.device)
    bg = background_codes(bc, codes, background, seed, background_size)
    if codes.shape[0] == 0:
        return torch.zeros((0, len(bc.observations), len(outs)), dtype=bc.dtype, device=codes.device)
    if method == "exact":
        return _shap_exact(bc, codes, bg, sigma[:, out_idx], out_idx, max_players, max_table)
    return _shap_fourier(bc, codes, bg, sigma[:, out_idx], out_idx, max_bits)


def _shap_exact(
    bc: BayesianClassifier, codes: Tensor, bg: Tensor, sigma: Tensor, out_idx: Tensor, max_players: int, max_table: int
) -> Tensor:
    m = len(bc.observations)
    if m > max_players:
        raise ValueError(
            f"exact SHAP enumerates 2^{m} coalitions of the {m} observations, above max_players={max_players}; "
            "raise max_players or use method='fourier'"
        )
    dtype, device = bc.dtype, codes.device
    cards = bc.cardinality[bc.observation_index]
    n_assign = math.prod(cards.tolist())
    member = ((torch.arange(1 << m, device=device)[:, None] >> torch.arange(m, device=device)) & 1).bool()
    weights = _shapley_matrix(m, dtype, device)
    n_out, n_values = len(out_idx), bc.log_prior.shape[1]
    use_table = n_assign <= max_table
    if use_table:
        stride = torch.ones(m, dtype=torch.long, device=device)
        for j in range(m - 2, -1, -1):
            stride[j] = stride[j + 1] * cards[j + 1]
        idx = torch.arange(n_assign, device=device)
        every = torch.div(idx[:, None], stride, rounding_mode="floor") % cards
        table = torch.cat(
            [output_proba(bc, rows, out_idx) for rows in every.split(rows_per_chunk(64 * n_out * n_values, n_assign))]
        )
        bg_part = (~member).long() @ (bg * stride).T  # (2^m, D)
    per_query = (1 << m) * bg.shape[0] * (m + n_out * (n_values + 2)) * 8
    out = []
    chunks = chunk_bounds(codes.shape[0], rows_per_chunk(per_query, codes.shape[0]))
    for start, stop in progress(chunks, None if len(chunks) > 1 else False, desc="SHAP-IDX"):
        q, s = codes[start:stop], sigma[start:stop]
        if use_table:
            flat = (member.long() @ (q * stride).T).T[:, :, None] + bg_part[None]  # (Q, 2^m, D)
            proba = table[flat]  # (Q, 2^m, D, n_out, V)
        else:
            mixed = torch.where(member[None, :, None, :], q[:, None, None, :], bg[None, None, :, :])
            proba = output_proba(bc, mixed.reshape(-1, m), out_idx).reshape(*mixed.shape[:3], n_out, n_values)
        target = s[:, None, None, :, None].expand(*proba.shape[:4], 1)
        game = proba.gather(4, target).squeeze(4).mean(dim=2)  # (Q, 2^m, n_out)
        out.append(torch.einsum("qco,cm->qmo", game, weights))
    return torch.cat(out)


def _shap_fourier(
    bc: BayesianClassifier, codes: Tensor, bg: Tensor, sigma: Tensor, out_idx: Tensor, max_bits: int
) -> Tensor:
    from torchxplain.fourier.spectrum import FourierSpectrum, fwht, index_bits
    from torchxplain.fourier.values import shapley_values

    device, dtype = codes.device, bc.dtype
    cards = bc.cardinality[bc.observation_index].tolist()
    bits = [max(1, math.ceil(math.log2(k))) for k in cards]
    n_bits = sum(bits)
    if n_bits > max_bits:
        raise ValueError(
            f"method='fourier' needs the posterior on all 2^{n_bits} binary codes of the observations, above "
            f"max_bits={max_bits}; raise max_bits or use method='exact'"
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
    proba = output_proba(bc, points, out_idx)  # (2^bits, n_out, V)
    amps = fwht(proba.reshape(1 << n_bits, -1), dim=0) / (1 << n_bits)
    freqs = index_bits(torch.arange(1 << n_bits, device=device), n_bits)
    xb, bgb = to_bits(codes), to_bits(bg)
    n_out, n_values = len(out_idx), bc.log_prior.shape[1]
    phi = torch.zeros((codes.shape[0], len(cards), n_out), dtype=dtype, device=device)
    jobs = [(o, v) for o in range(n_out) for v in range(n_values)]
    for o, v in progress(jobs, desc="SHAP-IDX spectra"):
        rows = (sigma[:, o] == v).nonzero().flatten()
        if rows.numel() == 0:
            continue
        a = amps[:, o * n_values + v]
        keep = a != 0
        spec = FourierSpectrum(freqs[keep], a[keep])
        phi[rows, :, o] = shapley_values(spec, xb[rows].to(dtype), bgb.to(dtype), groups=groups)
    return phi

"""LIME-IDX (Def. 10): LIME attributions for categorical observations, batched over inputs.

Follows ``lime.lime_tabular.LimeTabularExplainer`` on categorical features with its defaults: each perturbed
sample draws every observation independently from ``sampling`` (default: the classifier's SD weights, i.e.
priors or data frequencies), its binary representation is ``1`` where it equals the input, the kernel is
``sqrt(exp(-d^2 / width^2))`` on the Euclidean distance of that representation to all-ones with
``width = 0.75 sqrt(|O|)``, the first sample is the input itself, and the explanation is a weighted ridge
(``alpha = 1``) of ``P(sigma(a, y) | sample)`` on the binary representation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from torchxplain._core import check_int, check_number, chunk_bounds, make_generator, progress, rows_per_chunk, settings
from torchxplain.idx._classifier import BayesianClassifier, check_classifier
from torchxplain.idx._shap import check_outputs, check_seed, output_proba


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


def _sampling(bc: BayesianClassifier, sampling: Any) -> Tensor:
    """``(|O|, V)`` sampling probabilities per observation (zero beyond its values)."""
    mask = bc.value_mask[bc.observation_index]
    if sampling is None:
        probs = bc.sd_weight[bc.observation_index]
    else:
        probs = torch.as_tensor(sampling, dtype=bc.dtype, device=bc.device)
        if probs.shape != mask.shape:
            raise ValueError(
                f"sampling must have shape {tuple(mask.shape)} (one row of value probabilities per observation), "
                f"got {tuple(probs.shape)}"
            )
    probs = torch.where(mask, probs, torch.zeros_like(probs))
    bad = ~torch.isfinite(probs).all(dim=1) | (probs < 0).any(dim=1) | (probs.sum(dim=1) <= 0)
    if bool(bad.any()):
        o = bc.observations[int(bad.nonzero()[0, 0])]
        raise ValueError(
            f"sampling probabilities of observation {o!r} must be finite, >= 0 and not all 0, got "
            f"{probs[bad][0].tolist()}"
        )
    return probs


def lime_values(
    bc: BayesianClassifier,
    inputs: Any,
    outputs: str | Sequence[str] | None = None,
    num_samples: int = 5000,
    kernel_width: float | None = None,
    alpha: float = 1.0,
    sampling: Tensor | None = None,
    seed: int | torch.Generator = 0,
    max_memory: int | str | None = None,
    show_progress: bool | None = None,
) -> Tensor:
    """LIME attributions for categorical observations, batched: ``(B, |O|, |C_o|)`` (see the module docstring).

    Args:
        bc: the classifier; ``inputs``: anything :meth:`BayesianClassifier.encode` accepts.
        outputs: the outputs ``C_o`` (default: every classification).
        num_samples: perturbed samples per input (>= 2; the first is the input itself).
        kernel_width: the kernel's width (> 0; default ``0.75 sqrt(|O|)``).
        alpha: ridge penalty (> 0).
        sampling: ``(|O|, V)`` value probabilities per observation (default: the SD weights).
        seed: an int >= 0 or a ``torch.Generator``.
        max_memory, show_progress: budget of chunked intermediates and progress bars (default: ``tx.settings``).
    """
    bc = check_classifier(bc).computing()
    with settings.using(max_memory=max_memory, show_progress=show_progress):
        codes = bc.encode(inputs)
        return lime_from_decisions(bc, codes, bc(codes)[1], outputs, num_samples, kernel_width, alpha, sampling, seed)


def lime_from_decisions(
    bc: BayesianClassifier,
    codes: Tensor,
    sigma: Tensor,
    outputs: str | Sequence[str] | None = None,
    num_samples: int = 5000,
    kernel_width: float | None = None,
    alpha: float = 1.0,
    sampling: Tensor | None = None,
    seed: int | torch.Generator = 0,
) -> Tensor:
    """:func:`lime_values` for validated codes ``(B, |O|)`` whose decisions ``sigma (B, n)`` are known."""
    outs = check_outputs(bc, outputs)
    check_int(num_samples, "num_samples", 2, hint="e.g. 5000")
    m = len(bc.observations)
    width = (
        0.75 * math.sqrt(m)
        if kernel_width is None
        else check_number(kernel_width, "kernel_width", greater_than=0, hint="e.g. 1.0")
    )
    check_number(alpha, "alpha", greater_than=0, hint="e.g. 1.0")
    gen = make_generator(check_seed(seed), codes.device)
    probs = _sampling(bc, sampling)
    out_idx = torch.tensor([bc.index_of(y) for y in outs], device=codes.device)
    dtype, device, n_out = bc.dtype, codes.device, len(out_idx)
    per_query = num_samples * (m + n_out * bc.log_prior.shape[1]) * 8 * 4
    out = [torch.zeros((0, m, n_out), dtype=dtype, device=device)]
    chunks = chunk_bounds(codes.shape[0], rows_per_chunk(per_query, codes.shape[0]))
    for start, stop in progress(chunks, None if len(chunks) > 1 else False, desc="LIME-IDX"):
        q = codes[start:stop]
        draws = torch.multinomial(probs, (stop - start) * num_samples, replacement=True, generator=gen)
        samples = draws.reshape(m, stop - start, num_samples).permute(1, 2, 0).clone()
        samples[:, 0] = q
        z = (samples == q[:, None, :]).to(dtype)
        dist = torch.sqrt(((1.0 - z) ** 2).sum(dim=2))
        w = torch.sqrt(torch.exp(-(dist**2) / width**2))
        proba = output_proba(bc, samples.reshape(-1, m), out_idx).reshape(stop - start, num_samples, n_out, -1)
        decided = sigma[start:stop, out_idx]
        target = proba.gather(3, decided[:, None, :, None].expand(-1, num_samples, -1, 1)).squeeze(3)
        coefs = [weighted_ridge(z, target[:, :, o], w, alpha)[0] for o in range(n_out)]
        out.append(torch.stack(coefs, dim=2))
    return torch.cat(out)

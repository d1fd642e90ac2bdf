"""The dialectical relation properties (Defs. 7 and 8 of Rago et al. 2021) as batched tensor operations.

Everything is computed per *family*: a classification ``y`` and its influencers ``x_1..x_m``. The relations of
the influences ``(x_j, y)`` depend on an input only through the values of ``y``'s influencers, so one function,
:func:`family_posteriors`, serves both the tabulation over every joint value of a family (the bulk path in
:mod:`torchxplain.idx._tables`) and the direct evaluation of given rows; the two agree bit for bit because every
operation acts on each row alone.

Readings (see the IDX note): the modified input ``a'_{x_k}`` sets ``x := x_k`` and keeps every other influencer
of ``y`` at its current value ("local"). Comparisons are strict; posteriors within a relative tie tolerance of
each other count as equal.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain.idx._classifier import BayesianClassifier, check_classifier
from torchxplain.idx._logmath import safe_log_softmax


@dataclass(frozen=True)
class FamilyPosteriors:
    """Posteriors of ``y``'s decided value under every modified input of every influencer, for ``R`` rows.

    Attributes:
        prob: ``(R, m, V)``: ``P(sigma(a, y) | a'_{x_k})`` for influencer ``j`` set to value ``k``; at
            ``k = sigma(a, x_j)`` this is ``P(sigma(a, y) | a)``; 0 beyond the values of ``x_j``.
        diff: ``(R, m, V)``: ``prob - P(sigma(a, y) | a)``, snapped to 0 within the tie tolerance; 0 at
            ``k = sigma(a, x_j)`` and beyond the values of ``x_j``.
        alternative: ``(R, m, V)`` bool: ``k`` is a value of ``x_j`` other than ``sigma(a, x_j)``.
        decision: ``(R,)`` long: ``sigma(a, y)``.
        log_posterior: ``(R, V)``: the log posterior of ``y``.
    """

    prob: Tensor
    diff: Tensor
    alternative: Tensor
    decision: Tensor
    log_posterior: Tensor


@dataclass(frozen=True)
class ModifiedPosteriors:
    """The family posteriors of every classification laid out over all influences ``E`` of ``B`` inputs.

    Attributes:
        prob: ``(B, E, V)``: ``P(sigma(a, y) | a'_{x_k})`` with influencer ``x`` of influence ``e`` set to value ``k``
            (column ``e`` for influence ``e = (x, y)``); 0 beyond the values of ``x``.
        diff: ``(B, E, V)``: ``prob - P(sigma(a, y) | a)``, snapped to 0 within the tie tolerance.
        alternative: ``(B, E, V)`` bool: ``k`` is a value of ``x`` other than ``sigma(a, x)``.
        sigma: ``(B, n)`` the decision function over all variables.
        log_posterior: ``(B, n, V)`` log posteriors of every variable under ``a``.
    """

    prob: Tensor
    diff: Tensor
    alternative: Tensor
    sigma: Tensor
    log_posterior: Tensor


def tie_tolerance(dtype: torch.dtype) -> float:
    """Default relative tolerance under which two posteriors count as equal (``64 * eps`` of ``dtype``)."""
    return 64 * torch.finfo(dtype).eps


def family_posteriors(bc: BayesianClassifier, y: int, values: Tensor, rtol: float | None = None) -> FamilyPosteriors:
    """Posteriors under every modified input (Def. 6) of ``y``'s influences, for rows of influencer values.

    Args:
        bc: the classifier; ``y``: index of a classification in ``bc.variables``.
        values: ``(R, m)`` long codes of ``y``'s influencers in slot order (valid values).
        rtol: tie tolerance (default :func:`tie_tolerance` of the classifier's dtype).

    Log factors are summed in log space (exact zeros are ``-inf``); the normalisation over ``y``'s values runs on
    max-shifted probabilities. Memory ``O(R m V^2)``.
    """
    n_values = bc.log_prior.shape[1]
    device = values.device
    infl = torch.tensor(bc.family(bc.variables[y]), device=device)
    n_rows, m = values.shape
    contrib = bc.cpt_rows[infl[None, :] * n_values + values]  # (R, m, Vy)
    logits = bc.family_logits(y, values)
    decision = logits.argmax(dim=-1)
    # leave-one-out sums: prior of y plus every other influencer's factor, in slot order (adding 0.0 is exact)
    loo = bc.log_prior[y].expand(n_rows, m, n_values)
    own = torch.eye(m, dtype=torch.bool, device=device)
    for i in range(m):
        loo = loo + torch.where(own[None, :, i, None], torch.zeros_like(contrib[:, :1]), contrib[:, i, None, :])
    # modified input x_j := k: P(y | a'_k) ∝ exp(loo_j) P(x_j = k | y), normalised over y (fixed summation order)
    top = loo.amax(dim=2, keepdim=True)
    scaled = (loo - torch.where(torch.isfinite(top), top, torch.zeros_like(top))).exp()  # (R, m, Vy), max 1
    cpt = bc.log_cpt[infl].exp()  # (m, Vy, Vx)
    z = scaled[:, :, 0, None] * cpt[None, :, 0]
    for v in range(1, n_values):
        z = z + scaled[:, :, v, None] * cpt[None, :, v]
    numerator = (
        scaled.gather(2, decision[:, None, None].expand(n_rows, m, 1))
        * cpt[torch.arange(m, device=device), decision[:, None]]
    )
    card_y = bc.cardinality[y].to(z.dtype)
    prob = torch.where(z > 0, numerator / torch.where(z > 0, z, torch.ones_like(z)), 1.0 / card_y)  # 0/0: uniform
    ks = torch.arange(n_values, device=device)
    exists = (ks[None, :] < bc.cardinality[bc.source[infl]][:, None])[None]  # (1, m, Vx)
    alternative = exists & (ks[None, None, :] != values[:, :, None])
    prob = torch.where(exists, prob, torch.zeros_like(prob))
    base = prob.gather(2, values[:, :, None])
    diff = prob - base
    tol = tie_tolerance(prob.dtype) if rtol is None else rtol
    diff = torch.where(diff.abs() <= tol * torch.maximum(prob, base), torch.zeros_like(diff), diff)
    diff = torch.where(alternative, diff, torch.zeros_like(diff))
    log_post = safe_log_softmax(logits, bc.value_mask[y])
    return FamilyPosteriors(prob, diff, alternative, decision, log_post)


def monotonic(diff: Tensor, alternative: Tensor) -> dict[str, Tensor]:
    """Def. 7 on ``(..., V)`` differences: attack iff every other value raises, support iff every one lowers.

    An influencer with a single value has no alternatives and enters no relation.
    """
    has_alt = alternative.any(dim=-1)
    up = ((diff > 0) | ~alternative).all(dim=-1) & has_alt
    down = ((diff < 0) | ~alternative).all(dim=-1) & has_alt
    return {"attack": up, "support": down}


def stochastic(weights: Tensor, diff: Tensor, alternative: Tensor) -> dict[str, Tensor]:
    """Def. 8 on ``(..., V)`` differences with SD weights ``P(x_k)`` broadcast to them.

    The comparison is ``sum_k w_k (P'_k - P) >< 0`` over the other values, equivalent to Def. 8 when
    ``sum_k w_k > 0`` (no relation otherwise).
    """
    w = torch.where(alternative, weights.to(diff.dtype), torch.zeros_like(diff))
    score = (w * diff).sum(dim=-1)
    return {"attack": score > 0, "support": score < 0}


def modified_posteriors(bc: BayesianClassifier, codes: Tensor, rtol: float | None = None) -> ModifiedPosteriors:
    """Posteriors under every modified input (Def. 6) of every influence of validated codes ``(B, |O|)``."""
    bc = check_classifier(bc).computing()
    log_post, sigma = bc(codes)
    shape = (codes.shape[0], len(bc.influences), bc.log_prior.shape[1])
    prob = torch.zeros(shape, dtype=bc.dtype, device=codes.device)
    diff = torch.zeros_like(prob)
    alternative = torch.zeros(shape, dtype=torch.bool, device=codes.device)
    for c in bc.classifications:
        y, infl = bc.index_of(c), bc.family(c)
        fp = family_posteriors(bc, y, sigma[:, [bc.index_of(x) for x in bc.structure[c]]], rtol)
        prob[:, infl], diff[:, infl], alternative[:, infl] = fp.prob, fp.diff, fp.alternative
    return ModifiedPosteriors(prob, diff, alternative, sigma, log_post)


def md_relations(mp: ModifiedPosteriors | FamilyPosteriors) -> dict[str, Tensor]:
    """Monotonic attack/support (Def. 7) from modified posteriors: ``(B, E)`` (or ``(R, m)``) bool each."""
    return monotonic(mp.diff, mp.alternative)


def sd_relations(bc: BayesianClassifier, mp: ModifiedPosteriors) -> dict[str, Tensor]:
    """Stochastic attack/support (Def. 8) over all influences, weighted by ``bc.sd_weight``: ``(B, E)`` bool each."""
    bc = check_classifier(bc).computing()
    return stochastic(bc.sd_weight[bc.source][None], mp.diff, mp.alternative)

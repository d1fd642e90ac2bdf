"""Relation properties (Defs. 7-9 of Rago et al. 2021) for a batch of inputs as tensor operations.

All functions take a :class:`~torchxplain.idx.classifier.BayesianClassifier` and validated integer codes
``(B, |O|)`` and return boolean tensors ``(B, E)`` over the classifier's influences ``(x, y)``.

Readings (see the IDX note): the modified input ``a'_{x_k}`` sets ``x := x_k`` and keeps every other
influencer of ``y`` at its current value ("local"); the counterfactual kit quantifies over assignments
of the observations, with classifications at their predicted values (the hard chain).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, rows_per_chunk
from torchxplain.idx.classifier import BayesianClassifier

DEFAULT_MAX_CF_ASSIGNMENTS = 2**21


@dataclass(frozen=True)
class ModifiedPosteriors:
    """Posteriors of every influencee's current value under every modified input of every influence.

    Attributes:
        prob: ``(B, E, V)``: ``P(sigma(a, y) | a'_{x_k})`` for influence ``e = (x, y)``, value ``k`` of ``x``;
            at ``k = sigma(a, x)`` this is ``P(sigma(a, y) | a)`` (the baseline every comparison uses).
        diff: ``(B, E, V)``: ``prob - P(sigma(a, y) | a)``, snapped to 0 within the tie tolerance; 0 at
            ``k = sigma(a, x)`` and beyond the values of ``x``.
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
    """Relative tolerance under which two posteriors count as equal (exact ties in the tables)."""
    return 64 * torch.finfo(dtype).eps


def modified_posteriors(bc: BayesianClassifier, codes: Tensor, rtol: float | None = None) -> ModifiedPosteriors:
    """Posteriors under every modified input (Def. 6) of every influence, in one batched computation.

    Log factors are summed in log space (exact zeros are ``-inf``); the final normalisation over the
    influencee's values runs on max-shifted probabilities as one batched product per influence.
    Memory is ``O(B * E * V * V)``; callers chunk over ``B`` (see :func:`relation_tensors`).
    """
    log_post, sigma = bc(codes)
    n_values = bc.log_prior.shape[1]
    n_infl = len(bc.influences)
    y = bc.target
    # leave-one-out sums: prior of y plus every other influencer's factor, (B, E, Vy), -inf safe (no subtraction)
    contrib = torch.cat([bc.contributions(sigma), torch.zeros_like(log_post[:, :1])], dim=1)
    loo = bc.log_prior[y].unsqueeze(0)
    for j in range(bc.slot_influence.shape[1]):
        other = bc.slot_influence[y, j]
        keep = (other >= 0) & (bc.slot != j)
        loo = loo + contrib[:, torch.where(keep, other, torch.full_like(other, n_infl))]
    # modified input x := k: P(y | a'_k) ∝ exp(loo) * P(x_k | y). With loo shifted by its maximum this is
    # one batched product per influence, Z[b, e, k] = sum_y exp(loo)[b, e, y] P(x_k | y)[e, y, k].
    top = loo.amax(dim=2, keepdim=True)
    scaled = (loo - torch.where(torch.isfinite(top), top, torch.zeros_like(top))).exp()  # (B, E, Vy), max 1
    cpt = bc.log_cpt.exp()  # (E, Vy, Vx)
    z = torch.einsum("bey,eyk->bek", scaled, cpt)
    current_y = sigma[:, y]  # (B, E)
    e_idx = torch.arange(n_infl, device=codes.device)[None, :]
    numerator = scaled.gather(2, current_y[:, :, None]) * cpt[e_idx, current_y]  # (B, E, Vx)
    card_y = bc.cardinality[y].to(z.dtype)[None, :, None]
    prob = torch.where(z > 0, numerator / torch.where(z > 0, z, torch.ones_like(z)), 1.0 / card_y)  # 0/0: uniform
    current_x = sigma[:, bc.source]  # (B, E)
    ks = torch.arange(n_values, device=codes.device)
    exists = ks[None, None, :] < bc.cardinality[bc.source][None, :, None]
    alternative = exists & (ks[None, None, :] != current_x[:, :, None])
    prob = torch.where(exists, prob, torch.zeros_like(prob))
    base = prob.gather(2, current_x[:, :, None])
    diff = prob - base
    tol = tie_tolerance(prob.dtype) if rtol is None else rtol
    diff = torch.where(diff.abs() <= tol * torch.maximum(prob, base), torch.zeros_like(diff), diff)
    diff = torch.where(alternative, diff, torch.zeros_like(diff))
    return ModifiedPosteriors(prob, diff, alternative, sigma, log_post)


def md_relations(mp: ModifiedPosteriors) -> dict[str, Tensor]:
    """Monotonic attack/support (Def. 7): every other value of ``x`` raises/lowers ``P(sigma(a,y))``.

    An influencer with a single value has no alternatives and enters no relation.
    """
    has_alt = mp.alternative.any(dim=2)
    up = ((mp.diff > 0) | ~mp.alternative).all(dim=2) & has_alt
    down = ((mp.diff < 0) | ~mp.alternative).all(dim=2) & has_alt
    return {"attack": up, "support": down}


def sd_relations(bc: BayesianClassifier, mp: ModifiedPosteriors) -> dict[str, Tensor]:
    """Stochastic attack/support (Def. 8): the weighted mean over other values of ``x`` is above/below.

    Weights are ``bc.sd_weight`` (``P(x_k)``); the comparison is ``sum_k w_k (P'_k - P) >< 0``, equivalent
    to Def. 8 when ``sum_k w_k > 0`` (no relation otherwise).
    """
    w = bc.sd_weight[bc.source][None].to(mp.diff.dtype)  # (1, E, V)
    w = torch.where(mp.alternative, w, torch.zeros_like(mp.diff))
    score = (w * mp.diff).sum(dim=2)
    return {"attack": score > 0, "support": score < 0}


# ---------------------------------------------------------------------------- counterfactual kit
@dataclass(frozen=True)
class CounterfactualTables:
    """The decision function of every classification tabulated over the joint values of its influencers.

    For classification ``y`` with influencers ``x_1..x_m`` the joint value ``(v_1..v_m)`` has code
    ``sum_j v_j * stride_j``; ``decision[offset[y] + code]`` is y's decision there and ``reachable[...]``
    says whether some assignment of the observations produces that joint value (through the chain).
    ``potential[e, u, s]`` answers Def. 9's potential test for influence ``e`` when ``sigma(a,x)=u`` and
    ``sigma(a,y)=s``.
    """

    decision: Tensor  # (sum_y M_y,) long
    reachable: Tensor  # (sum_y M_y,) bool
    offset: Tensor  # (n,) long, -1 for observations
    stride: Tensor  # (E,) long: stride of influence e's source in its target's code
    potential: Tensor  # (E, V, V) bool


def _enumerate(cards: list[int], device: torch.device, start: int, stop: int) -> Tensor:
    """Rows ``start..stop-1`` of the row-major full factorial over ``cards``: codes ``(rows, len(cards))``."""
    idx = torch.arange(start, stop, device=device)
    cols = []
    for k in reversed(cards):
        cols.append(idx % k)
        idx = idx // k
    return torch.stack(cols[::-1], dim=1)


def counterfactual_tables(
    bc: BayesianClassifier,
    max_assignments: int = DEFAULT_MAX_CF_ASSIGNMENTS,
    max_memory: int | str | None = None,
) -> CounterfactualTables:
    """Tabulate decisions and reachability for the counterfactual kit (cached on ``bc`` per dtype/device).

    Classifications whose influencers are all observations reach every joint value; the others need
    the decision function over every assignment of the observations, ``prod |V(o)|`` rows, evaluated in
    chunks. Raises ``ValueError`` when that number, or a classification's joint-value count, exceeds
    ``max_assignments``.
    """
    key = (bc.log_prior.dtype, bc.log_prior.device, max_assignments)
    cache = bc.__dict__.setdefault("_cf_cache", {})
    if key in cache:
        return cache[key]
    device = bc.log_prior.device
    card = bc.cardinality.tolist()
    n_values = bc.log_prior.shape[1]
    sizes = {c: math.prod(card[bc.index_of(x)] for x in bc.influences_of(c)) for c in bc.classifications}
    for c, size in sizes.items():
        if size > max_assignments:
            raise ValueError(
                f"the counterfactual kit needs {c!r}'s decision over all {size:,} joint values of its "
                f"influencers {bc.influences_of(c)}, above max_cf_assignments={max_assignments:,}; "
                "raise max_cf_assignments to allow it"
            )
    offset = torch.full((len(card),), -1, dtype=torch.long)
    stride = torch.zeros(len(bc.influences), dtype=torch.long)
    decisions, reach = [], []
    total = 0
    for c in bc.classifications:
        kids = bc.influences_of(c)
        kc = [card[bc.index_of(x)] for x in kids]
        offset[bc.index_of(c)] = total
        total += sizes[c]
        for j, x in enumerate(kids):
            stride[bc.influences.index((x, c))] = math.prod(kc[j + 1 :])
        ci = bc.index_of(c)
        logits = bc.log_prior[ci].clone()
        for j, x in enumerate(kids):
            e = bc.influences.index((x, c))
            table = bc.log_cpt[e, :, : kc[j]].T  # (V(x), Vy)
            logits = logits + table.reshape([1] * j + [kc[j]] + [1] * (len(kids) - 1 - j) + [n_values])
        logits = logits.reshape(-1, n_values)
        decisions.append(logits.argmax(dim=-1))
        reach.append(torch.ones(sizes[c], dtype=torch.bool, device=device))
    decision = torch.cat(decisions)
    reachable = torch.cat(reach)
    chained = [c for c in bc.classifications if any(x in bc.classifications for x in bc.influences_of(c))]
    if chained:
        obs_cards = [card[i] for i in bc.observation_index.tolist()]
        n_assign = math.prod(obs_cards)
        if n_assign > max_assignments:
            raise ValueError(
                f"the counterfactual kit needs the decision function over all {n_assign:,} assignments "
                f"of the observations {bc.observations}, above max_cf_assignments={max_assignments:,}; "
                "raise max_cf_assignments to allow it"
            )
        for c in chained:
            reachable[offset[bc.index_of(c)] : offset[bc.index_of(c)] + sizes[c]] = False
        rows = rows_per_chunk(8 * len(card) * (n_values + 2), n_assign, max_memory)
        for start, stop in chunk_bounds(n_assign, rows):
            _, sigma = bc(_enumerate(obs_cards, device, start, stop))
            for c in chained:
                kids = bc.influences_of(c)
                code = sum(sigma[:, bc.index_of(x)] * int(stride[bc.influences.index((x, c))]) for x in kids)
                reachable[offset[bc.index_of(c)] + code] = True
    potential = torch.zeros((len(bc.influences), n_values, n_values), dtype=torch.bool, device=device)
    for e, (x, c) in enumerate(bc.influences):
        kids = bc.influences_of(c)
        kc = [card[bc.index_of(z)] for z in kids]
        j = kids.index(x)
        sl = slice(int(offset[bc.index_of(c)]), int(offset[bc.index_of(c)]) + sizes[c])
        g = decision[sl].reshape(kc).movedim(j, 0).reshape(kc[j], -1)  # (V(x), contexts)
        r = reachable[sl].reshape(kc).movedim(j, 0).reshape(kc[j], -1)
        s = torch.arange(n_values, device=device)
        agree = r[:, :, None] & (g[:, :, None] == s)  # a' with x = u reaching y = s
        differ = r[:, :, None] & (g[:, :, None] != s)  # a'' with x = v reaching y != s
        others = differ.sum(dim=0, keepdim=True) - differ.long()  # how many v != u do
        potential[e, : kc[j]] = (agree & (others > 0)).any(dim=1)
    tables = CounterfactualTables(decision, reachable, offset.to(device), stride.to(device), potential)
    cache[key] = tables
    return tables


def cf_relations(bc: BayesianClassifier, sigma: Tensor, tables: CounterfactualTables) -> dict[str, Tensor]:
    """Critical and potential influences (Def. 9, read as in the IDX note) for decisions ``sigma (B, n)``.

    Critical: some assignment changes ``x`` while keeping ``y``'s other influencers, and every such
    assignment changes ``y``. Potential: not critical, and in some context of the other influencers
    ``x = sigma(a,x)`` yields ``y = sigma(a,y)`` while another value of ``x`` yields another value of ``y``.
    """
    n_values = bc.log_prior.shape[1]
    y, x = bc.target, bc.source
    codes = torch.zeros((sigma.shape[0], len(bc.influences)), dtype=torch.long, device=sigma.device)
    for j in range(bc.slot_influence.shape[1]):
        other = bc.slot_influence[y, j]
        present = (other >= 0)[None, :]
        term = sigma[:, bc.source[other.clamp(min=0)]] * tables.stride[other.clamp(min=0)][None, :]
        codes = codes + torch.where(present, term, torch.zeros_like(term))
    ks = torch.arange(n_values, device=sigma.device)
    cur_x, cur_y = sigma[:, x], sigma[:, y]
    exists = ks[None, None, :] < bc.cardinality[x][None, :, None]
    shifted = codes[:, :, None] + (ks[None, None, :] - cur_x[:, :, None]) * tables.stride[None, :, None]
    idx = torch.where(exists, tables.offset[y][None, :, None] + shifted, torch.zeros_like(shifted))
    alt = exists & (ks[None, None, :] != cur_x[:, :, None]) & tables.reachable[idx]
    same = tables.decision[idx] == cur_y[:, :, None]
    critical = alt.any(dim=2) & ~(alt & same).any(dim=2)
    e = torch.arange(len(bc.influences), device=sigma.device)[None, :]
    potential = tables.potential[e, cur_x, cur_y] & ~critical
    return {"critical": critical, "potential": potential}

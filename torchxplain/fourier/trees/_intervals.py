"""Leaf slots for continuous inputs: the thresholds of one feature on a path collapse to one interval.

A leaf of a tree is ``v_l Π_{splits on its path} [x goes that way]``. On binary split features each factor is a
slot of two Fourier options, ``[b = 0] = (1 + χ_b)/2`` or ``[b = 1] = (1 - χ_b)/2``, so a leaf at depth ``D``
expands into ``2^D`` terms. But the binary features of one original feature are not free: on every real input
``b_t = [x > t]`` is monotone in ``t`` (``b_hi ⇒ b_lo`` for ``lo < hi``), so the factors of one feature on a path
reduce to the interval ``(lo, hi]`` they bound, and on every input an encoding produces

    [lo < x ≤ hi] = b_lo - b_hi = (χ_hi - χ_lo)/2,   [x > lo] = (1 - χ_lo)/2,   [x ≤ hi] = (1 + χ_hi)/2,

again one slot of two options. A leaf then expands into ``2^{distinct features on its path}`` terms, each with at
most one threshold per feature. The spectrum equals the model on every encoded input (``encoding.transform(x)``);
on bit patterns no input produces it is a different, sparser function, which changes no SHAP, Banzhaf or
interaction value whose players own whole features.

Missing values: a NaN sets every ``b`` to its ``nan_right``, which need not be monotone. A feature's interval is
used only when it gives the same value as the product of its factors on that pattern too (and when ``lo < hi``,
else the leaf is reachable by NaN alone); otherwise, and for features with a zero-as-missing split (whose zero
region is a state of its own), the factors stay one slot each, exact on every pattern.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain.fourier.encoding import ThresholdEncoding


@dataclass(frozen=True)
class FeatureGroups:
    """The encoding's binary features grouped by original feature, as the interval form needs them.

    Attributes:
        owner: ``(n,)`` original feature of each binary feature.
        rank: ``(n,)`` position in the order of ``(owner, threshold)``; ``by_rank`` inverts it.
        threshold, nan_right: ``(n,)`` per binary feature.
        compressible: ``(p,)`` bool, features without a zero-as-missing split.
    """

    owner: Tensor
    rank: Tensor
    by_rank: Tensor
    threshold: Tensor
    nan_right: Tensor
    compressible: Tensor

    @classmethod
    def from_encoding(cls, encoding: ThresholdEncoding, device: torch.device) -> FeatureGroups:
        """The groups of ``encoding``'s binary features, on ``device``."""
        owner, threshold = encoding.feature.to(device), encoding.threshold.to(device)
        by_threshold = torch.argsort(threshold, stable=True)
        by_rank = by_threshold[torch.argsort(owner[by_threshold], stable=True)]
        rank = torch.empty_like(by_rank)
        rank[by_rank] = torch.arange(len(by_rank), device=device)
        zero = torch.zeros(encoding.n_features, dtype=torch.bool, device=device)
        zero[owner[encoding.zero_is_missing.to(device)]] = True
        return cls(owner, rank, by_rank, threshold, encoding.nan_right.to(device), ~zero)


@dataclass(frozen=True)
class Slots:
    """Every leaf as a product of two-option slots: slot ``s`` is ``coef[s,0] χ^{feat[s,0]} + coef[s,1] χ^{feat[s,1]}``
    (feature ``n`` is the empty set), and leaf ``leaf[s]``'s value is the product of its slots times ``value``.

    Attributes:
        leaf: ``(S,)`` leaf row of each slot, sorted; feat: ``(S, 2)`` int64; coef: ``(S, 2)`` float64.
        nodes: ``(L,)`` node id of each leaf row; count: ``(L,)`` its number of slots; start: ``(L,)`` its first slot.
    """

    leaf: Tensor
    feat: Tensor
    coef: Tensor
    nodes: Tensor
    count: Tensor
    start: Tensor


def leaf_slots(nodes: Tensor, path: Tensor, went_right: Tensor, groups: FeatureGroups, n: int) -> Slots:
    """The slots of every leaf.

    Args:
        nodes: ``(L,)`` leaf node ids; path: ``(L, D)`` their ancestors' binary features, ``-1`` past the root;
        went_right: ``(L, D)`` bool, the side the path takes at each ancestor.
        groups: the encoding's feature groups; n: number of binary features (the empty option).
    """
    device = groups.owner.device
    valid = path >= 0
    leaf = torch.arange(path.shape[0], device=device)[:, None].expand_as(path)[valid]
    feat, right = path[valid], went_right[valid]
    owner = groups.owner[feat]
    n_owners = int(groups.compressible.shape[0])
    _, group = torch.unique(leaf * n_owners + owner, return_inverse=True)
    g = int(group.max()) + 1 if len(group) else 0
    count = torch.bincount(group, minlength=g)
    rank = groups.rank[feat]
    lo = torch.full((g,), -1, dtype=torch.int64, device=device).scatter_reduce(
        0, group[right], rank[right], "amax", include_self=True
    )
    hi = torch.full((g,), len(groups.rank), dtype=torch.int64, device=device).scatter_reduce(
        0, group[~right], rank[~right], "amin", include_self=True
    )
    has_lo, has_hi = lo >= 0, hi < len(groups.rank)
    lo_feat = groups.by_rank[lo.clamp(min=0)]
    hi_feat = groups.by_rank[hi.clamp(max=len(groups.rank) - 1)]
    ordered = ~(has_lo & has_hi) | (groups.threshold[lo_feat] < groups.threshold[hi_feat])
    # the NaN pattern: the product of the factors against the interval form
    at_nan = (groups.nan_right[feat] == right).long()
    product = torch.ones(g, dtype=torch.int64, device=device).scatter_reduce(0, group, at_nan, "amin")
    nan_lo, nan_hi = groups.nan_right[lo_feat].long(), groups.nan_right[hi_feat].long()
    interval = torch.where(has_lo & has_hi, nan_lo - nan_hi, torch.where(has_lo, nan_lo, 1 - nan_hi))
    group_owner = torch.zeros(g, dtype=torch.int64, device=device).scatter_(0, group, owner)
    compress = (count > 1) & groups.compressible[group_owner] & ordered & (interval == product)
    group_leaf = torch.zeros(g, dtype=torch.int64, device=device).scatter_(0, group, leaf)

    both = has_lo & has_hi
    none = torch.full((g,), n, dtype=torch.int64, device=device)
    half = torch.full((g,), 0.5, dtype=torch.float64, device=device)
    # two-sided: (lo: -1/2, hi: +1/2); above lo: (∅: 1/2, lo: -1/2); at most hi: (∅: 1/2, hi: +1/2)
    interval_feat = torch.stack([torch.where(both, lo_feat, none), torch.where(has_lo & ~both, lo_feat, hi_feat)], 1)
    interval_coef = torch.stack([torch.where(both, -half, half), torch.where(has_hi, half, -half)], 1)
    keep = ~compress[group]  # literals of uncompressed features: one slot each
    literal_feat = torch.stack([torch.full_like(feat[keep], n), feat[keep]], 1)
    literal_coef = torch.stack(
        [torch.full((int(keep.sum()),), 0.5, dtype=torch.float64, device=device), 0.5 - right[keep].double()], 1
    )
    all_leaf = torch.cat([group_leaf[compress], leaf[keep]])
    order = torch.argsort(all_leaf, stable=True)
    slot_feat = torch.cat([interval_feat[compress], literal_feat])[order]
    slot_coef = torch.cat([interval_coef[compress], literal_coef])[order]
    per_leaf = torch.bincount(all_leaf, minlength=len(nodes))
    return Slots(
        leaf=all_leaf[order],
        feat=slot_feat,
        coef=slot_coef,
        nodes=nodes,
        count=per_leaf,
        start=torch.cumsum(per_leaf, 0) - per_leaf,
    )

"""Reference SHAP values for the black-box benchmark: exact enumeration, or a converged permutation estimate.

* :func:`exact_by_pairs`: interventional SHAP is the background mean of single-baseline games; for one
  ``(x, b)`` pair only the players on which ``x`` and ``b`` differ are not null, so the game is enumerated over
  their ``2^p`` coalitions (exact whenever every pair differs in at most ``max_players`` players).
* :func:`permutation_reference`: antithetic permutation sampling over every (row, background) pair, the
  number of permutations doubled until two independent halves agree (R² between halves printed by the caller).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

Model = Callable[[Tensor], Tensor]


def shapley_from_games(v: Tensor, players: int) -> Tensor:
    """Shapley values ``(G, players)`` of games tabulated as ``v : (G, 2**players)`` (bit i = player i)."""
    index = torch.arange(2**players)
    size = ((index[:, None] >> torch.arange(players)) & 1).sum(1)
    fact = [math.factorial(c) for c in range(players + 1)]
    weight = torch.tensor([fact[c] * fact[players - c - 1] / fact[players] for c in range(players)], dtype=v.dtype)
    out = []
    for i in range(players):
        s = index[(index >> i) & 1 == 0]
        out.append(((v[:, s | (1 << i)] - v[:, s]) * weight[size[s]]).sum(1))
    return torch.stack(out, 1) if out else v.new_zeros(v.shape[0], 0)


def differing_players(queries: Tensor, background: Tensor, groups: Tensor, m: int) -> Tensor:
    """``(Q, D, m)`` bool: whether row ``q`` and background row ``d`` differ on player ``g``."""
    diff = (queries[:, None, :] != background[None]).to(torch.float64)  # (Q, D, n)
    onehot = torch.nn.functional.one_hot(groups, m).to(torch.float64)  # (n, m)
    return (diff @ onehot) > 0


def exact_by_pairs(
    f: Model, queries: Tensor, background: Tensor, groups: Tensor, max_players: int = 16, batch: int = 65536
) -> Tensor:
    """Exact interventional SHAP ``(Q, m)`` per player by enumerating each pair's differing players (pairs grouped
    by how many players they differ in, so each costs ``2^d`` queries for its own ``d``)."""
    m = int(groups.max()) + 1
    q_count, d_count = queries.shape[0], background.shape[0]
    diff = differing_players(queries, background, groups, m).reshape(-1, m)
    sizes = diff.sum(-1)
    if int(sizes.max()) > max_players:
        raise ValueError(f"a pair differs in {int(sizes.max())} players; enumeration is capped at {max_players}")
    qx = queries.repeat_interleave(d_count, 0)
    bx = background.repeat(q_count, 1)
    phi = torch.zeros(diff.shape[0], m, dtype=torch.float64)
    for players in torch.unique(sizes).tolist():
        if players == 0:
            continue
        pairs = (sizes == players).nonzero()[:, 0]
        order = torch.sort(diff[pairs].to(torch.int8), dim=1, descending=True, stable=True).indices[:, :players]
        masks = ((torch.arange(2**players)[:, None] >> torch.arange(players)) & 1).bool()
        step = max(1, batch // 2**players)
        for a in range(0, pairs.numel(), step):
            rows = pairs[a : a + step]
            on = torch.zeros(rows.numel(), 2**players, m, dtype=torch.bool)
            on.scatter_(
                2, order[a : a + step, None, :].expand(-1, 2**players, -1), masks[None].expand(rows.numel(), -1, -1)
            )
            take = on[:, :, groups]
            points = torch.where(take, qx[rows, None], bx[rows, None]).reshape(-1, queries.shape[1])
            v = f(points).double().reshape(rows.numel(), 2**players)
            phi[rows] = phi[rows].scatter_add(1, order[a : a + step], shapley_from_games(v, players))
    return phi.reshape(q_count, d_count, m).mean(1)


def permutation_estimate(
    f: Model, queries: Tensor, background: Tensor, groups: Tensor, n_perm: int, seed: int, batch: int = 65536
) -> Tensor:
    """Antithetic permutation sampling ``(Q, m)``: ``n_perm`` permutations (and their reverses) per pair."""
    m = int(groups.max()) + 1
    gen = torch.Generator().manual_seed(seed)
    q_count, d_count, n = queries.shape[0], background.shape[0], queries.shape[1]
    phi = torch.zeros(q_count, m, dtype=torch.float64)
    half = max(1, n_perm // 2)
    perms = torch.rand(q_count, d_count, half, m, generator=gen).argsort(-1)
    perms = torch.cat((perms, perms.flip(-1)), dim=2).reshape(q_count, -1, m)  # (Q, D*P, m)
    bx = background.repeat_interleave(2 * half, 0)  # (D*P, n), pair with the permutation index
    rank = perms.argsort(-1)  # position of each player in its permutation
    steps = torch.arange(m + 1)
    per_q = perms.shape[1]
    chunk = max(1, batch // (m + 1))
    for q in range(q_count):
        for a in range(0, per_q, chunk):
            b = min(a + chunk, per_q)
            take = (rank[q, a:b, None, :] < steps[None, :, None])[:, :, groups]  # (c, m+1, n)
            z = torch.where(take, queries[q], bx[a:b, None, :]).reshape(-1, n)
            v = f(z).double().reshape(b - a, m + 1)
            gain = v[:, 1:] - v[:, :-1]  # gain of the player added at each step
            phi[q].index_add_(0, perms[q, a:b].reshape(-1), gain.reshape(-1))
    return phi / per_q


def r2(truth: Tensor, est: Tensor) -> float:
    """R² of ``est`` against ``truth`` over all entries."""
    t, e = truth.double().flatten(), est.double().flatten()
    return 1.0 - float(((t - e) ** 2).sum()) / max(float(((t - t.mean()) ** 2).sum()), 1e-300)


def converged_permutation(
    f: Model, queries: Tensor, background: Tensor, groups: Tensor, start: int = 32, cap: int = 1024
) -> tuple[Tensor, str]:
    """Permutation sampling with the number of permutations per pair doubled until two independent halves agree
    (R² >= 0.999) or ``cap`` is reached; returns the pooled estimate and the convergence check as text."""
    n_perm, checks = start, []
    while True:
        a = permutation_estimate(f, queries, background, groups, n_perm, seed=2 * n_perm)
        b = permutation_estimate(f, queries, background, groups, n_perm, seed=2 * n_perm + 1)
        checks.append(f"{2 * n_perm} permutations/pair: halves R² {r2(a, b):.5f}")
        if r2(a, b) >= 0.999 or n_perm >= cap:
            return (a + b) / 2, "converged permutation reference (" + "; ".join(checks) + ")"
        n_perm *= 2


def converged_correction(
    f: Model, queries: Tensor, background: Tensor, groups: Tensor, budget: int, agree: float = 0.9999, cap: int = 2**24
) -> tuple[Tensor, str]:
    """Two independent runs of the library's unbiased correction (no surrogate; tested against brute force in
    ``tests/fourier/test_residual.py``) at a budget raised until the two halves agree to R² >= ``agree`` (or the
    budget reaches ``cap`` model rows per row); returns their mean and the check as text."""
    from torchxplain.fourier.fit import CorrectionOptions, correct

    m, checks = int(groups.max()) + 1, []
    while True:
        halves = [
            correct(f, queries, background, groups, m, options=CorrectionOptions(budget=budget, seed=seed)).values
            for seed in (1001, 1002)
        ]
        agreement = r2(halves[0], halves[1])
        checks.append(f"{budget:,} model rows/row: halves R² {agreement:.6f}")
        if agreement >= agree or budget >= cap:
            text = "converged unbiased correction, two seeds (" + "; ".join(checks) + ")"
            return (halves[0] + halves[1]) / 2, text
        budget = min(cap, int(budget * min(8.0, 1.3 * (1 - agreement) / (1 - agree))))


def tree_reference(model: object, queries: Tensor, background: Tensor) -> Tensor:
    """Interventional TreeSHAP (shap's TreeExplainer with the whole background as its data)."""
    import shap

    explainer = shap.TreeExplainer(model, data=background.numpy(), feature_perturbation="interventional")
    return torch.as_tensor(explainer.shap_values(queries.numpy()), dtype=torch.float64)

"""Exact interventional Shapley and Banzhaf values of tree ensembles against per-row references (Captum's
``baselines``): each row pairs with its own reference only, so every leaf's game is summed in closed form per pair
(:mod:`~torchxplain.fourier.trees._leaf_games`) over the leaves grouped by their number of players, no tables or
walks needed."""

from __future__ import annotations

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, parse_memory
from torchxplain.fourier.trees._leaf_games import Kind, popcount, weight_tables
from torchxplain.fourier.trees._leaves import LeafTable, Slots, fail_patterns, traversal


def paired_leaf_values(table: LeafTable, slot: Slots, x: Tensor, b: Tensor, kind: Kind, m: int) -> Tensor:
    """``(Q, m)`` float64 values of row ``x[i]`` against its own reference row ``b[i]`` (Captum's per-row baselines):
    each leaf's game for the pair in closed form, leaves grouped by their number of players.

    Args:
        table, slot: the output's leaf table and its slots for the players.
        x, b: ``(Q, p)`` raw rows and their references.
        kind: ``"shapley"`` or ``"banzhaf"``; m: number of players.
    """
    device = table.left.device
    x, b = x.to(device), b.to(device)
    order = torch.argsort(slot.n_slots, stable=True)
    plan = traversal(table, slot, (0, table.n_trees), slot.leaves[order])
    n_slots = slot.n_slots[order]
    sizes = torch.bincount(n_slots, minlength=slot.max_slots + 1).tolist()
    value = table.value[plan.leaves]
    out = torch.zeros(m, x.shape[0], dtype=torch.float64, device=device)
    step = max(1, parse_memory() // max(1, 8 * (2 * plan.leaves.numel() + 3 * plan.widest + 4 * slot.max_slots)))
    for a, c in chunk_bounds(x.shape[0], step):
        fail_x = fail_patterns(table, plan, table.codes(x[a:c]))
        fail_b = fail_patterns(table, plan, table.codes(b[a:c]))
        start = 0
        for d, count in enumerate(sizes):
            stop, lo = start + count, start
            start = stop
            if d == 0 or count == 0:
                continue
            g, h = weight_tables(kind, d, torch.float64)
            bit = (torch.ones(d, dtype=torch.int64, device=device) << torch.arange(d, device=device))[None, :, None]
            fx, fb = fail_x[lo:stop], fail_b[lo:stop]
            cover = ((fx & fb) == 0).double() * value[lo:stop, None]
            ia, ib = popcount(fb), popcount(fx)
            w_h, w_g = h[ia, ib] * cover, g[ia, ib] * cover
            x_fails = ((fx[:, None, :] & bit) != 0).double()
            b_fails = ((fb[:, None, :] & bit) != 0).double()
            values = b_fails * w_h[:, None, :] - x_fails * w_g[:, None, :]
            players = slot.players[order[lo:stop], :d]
            out[:, a:c].index_add_(0, players.reshape(-1), values.reshape(-1, c - a))
    return out.T

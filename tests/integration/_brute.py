"""Brute-force interventional SHAP of a black box by enumerating every coalition (test reference only)."""

from __future__ import annotations

import itertools
import math

import torch


def interventional_shap(model, x: torch.Tensor, background: torch.Tensor) -> torch.Tensor:
    """phi[q, i] = sum_S |S|!(n-|S|-1)!/n! (v(S+i) - v(S)), v(S) = mean_b model(x_S, b_rest). x: (Q, n)."""
    q, n = x.shape
    masks = torch.tensor(list(itertools.product([0.0, 1.0], repeat=n)), dtype=x.dtype)  # (2^n, n)
    z = masks[None, :, None, :] * x[:, None, None, :] + (1 - masks[None, :, None, :]) * background[None, None]
    with torch.no_grad():
        v = model(z.reshape(-1, n)).reshape(q, len(masks), background.shape[0]).mean(2)  # (Q, 2^n)
    key = {tuple(int(b) for b in m.tolist()): j for j, m in enumerate(masks)}
    phi = torch.zeros(q, n, dtype=x.dtype)
    for j, m in enumerate(masks):
        s = int(m.sum())
        for i in range(n):
            if m[i] == 0:
                with_i = list(int(b) for b in m.tolist())
                with_i[i] = 1
                w = math.factorial(s) * math.factorial(n - s - 1) / math.factorial(n)
                phi[:, i] += w * (v[:, key[tuple(with_i)]] - v[:, j])
    return phi

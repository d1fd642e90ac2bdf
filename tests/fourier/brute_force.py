"""Brute-force game values by enumerating coalitions (numpy, independent of torchxplain's closed forms)."""

from __future__ import annotations

import itertools
from math import factorial

import numpy as np


def evaluate(freq: np.ndarray, amp: np.ndarray, z: np.ndarray) -> np.ndarray:
    """h(z) = Σ_f a_f Π_i (1 - 2 z_i)^{f_i} for real z (the multilinear extension; (-1)^{<f,z>} on the cube)."""
    out = np.zeros(z.shape[0])
    for f, a in zip(freq, amp):
        out += a * np.prod(np.where(f[None, :], 1.0 - 2.0 * z, 1.0), axis=1)
    return out


def _values_table(freq, amp, xq, background, groups):
    """v[q, S] = mean_b h(x*_S, x_b,-S) for every coalition S (bitmask over m players)."""
    m = int(groups.max()) + 1
    table = np.zeros((xq.shape[0], 2**m))
    for mask in range(2**m):
        members = np.array([(mask >> g) & 1 for g in range(m)], dtype=bool)
        take = members[groups]
        for q in range(xq.shape[0]):
            z = np.where(take[None, :], xq[q][None, :], background)
            table[q, mask] = evaluate(freq, amp, z).mean()
    return table, m


def shapley(freq, amp, xq, background, groups=None):
    groups = np.arange(freq.shape[1]) if groups is None else np.asarray(groups)
    v, m = _values_table(freq, amp, xq, background, groups)
    phi = np.zeros((xq.shape[0], m))
    for i in range(m):
        for mask in range(2**m):
            if (mask >> i) & 1:
                continue
            size = bin(mask).count("1")
            weight = factorial(size) * factorial(m - size - 1) / factorial(m)
            phi[:, i] += weight * (v[:, mask | (1 << i)] - v[:, mask])
    return phi


def banzhaf(freq, amp, xq, background, groups=None):
    groups = np.arange(freq.shape[1]) if groups is None else np.asarray(groups)
    v, m = _values_table(freq, amp, xq, background, groups)
    beta = np.zeros((xq.shape[0], m))
    for i in range(m):
        for mask in range(2**m):
            if not (mask >> i) & 1:
                beta[:, i] += v[:, mask | (1 << i)] - v[:, mask]
    return beta / 2 ** (m - 1)


def interactions(freq, amp, xq, background, groups=None):
    groups = np.arange(freq.shape[1]) if groups is None else np.asarray(groups)
    v, m = _values_table(freq, amp, xq, background, groups)
    out = np.zeros((xq.shape[0], m, m))
    for i, j in itertools.permutations(range(m), 2):
        for mask in range(2**m):
            if (mask >> i) & 1 or (mask >> j) & 1:
                continue
            size = bin(mask).count("1")
            weight = factorial(size) * factorial(m - size - 2) / factorial(m - 1)
            delta = v[:, mask | (1 << i) | (1 << j)] - v[:, mask | (1 << i)] - v[:, mask | (1 << j)] + v[:, mask]
            out[:, i, j] += weight * delta
    return out


def model_shapley(predict, xq: np.ndarray, background: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Interventional Shapley values of a model (any numpy ``predict``) by enumerating every coalition of the
    players: ``v[q, S] = mean_b predict(x*_S, b_-S)``, the Shapley formula over all ``2^m`` coalitions."""
    groups = np.asarray(groups)
    m = int(groups.max()) + 1
    table = np.zeros((xq.shape[0], 2**m))
    for mask in range(2**m):
        take = np.array([(mask >> g) & 1 for g in range(m)], dtype=bool)[groups]
        hybrids = np.where(take[None, None, :], xq[:, None, :], background[None, :, :]).reshape(-1, xq.shape[1])
        table[:, mask] = predict(hybrids).reshape(xq.shape[0], background.shape[0]).mean(1)
    phi = np.zeros((xq.shape[0], m))
    for i in range(m):
        for mask in range(2**m):
            if not (mask >> i) & 1:
                size = bin(mask).count("1")
                weight = factorial(size) * factorial(m - size - 1) / factorial(m)
                phi[:, i] += weight * (table[:, mask | (1 << i)] - table[:, mask])
    return phi


def shap_r2(reference: np.ndarray, values: np.ndarray) -> float:
    """The R² of values against the reference (about the reference's overall mean, as the report defines it)."""
    return 1.0 - ((values - reference) ** 2).sum() / ((reference - reference.mean()) ** 2).sum()

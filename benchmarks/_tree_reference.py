"""Exact references for the tree benchmark, independent of the Fourier machinery (no spectrum, no tables).

* :func:`direct_values`: interventional SHAP per original feature by each leaf's closed form. A leaf is
  ``v · Π_features [x_j satisfies the leaf's splits on j]``; for a query ``x`` and a background row ``b`` each
  feature is satisfied by ``x``, by ``b``, by both or by neither, and the hybrid ``(x_S, b_~S)`` reaches the leaf
  iff every feature is satisfied by the side it is taken from. So the leaf's game is
  ``v [P ⊆ S][N ∩ S = ∅]`` (``P``: satisfied by ``x`` only, ``N``: by ``b`` only; zero when a feature is satisfied
  by neither), whose Shapley values are ``v (p-1)! n!/(p+n)!`` on ``P`` and ``-v p! (n-1)!/(p+n)!`` on ``N``.
  Cost ``Q·|D|·Σ_leaves depth``: a reference for a few queries, not a contender.
* :func:`coalition_values`: Shapley values by enumerating all ``2^p`` coalitions through the model's own output
  function (small ``p`` only): the check of :func:`direct_values` itself.

The leaves' splits are read with the library's adapter (``parse_model_outputs``): the adapters are checked on their
own against each model's ``predict`` (``tests/fourier/test_trees_spectrum.py``).
"""

from __future__ import annotations

import itertools
from math import factorial
from typing import Any

import numpy as np

from torchxplain.fourier.trees.adapters._dispatch import parse_model_outputs


def _leaf_paths(ensemble: Any) -> list[tuple[float, list[tuple[int, int, bool]]]]:
    """``[(value, [(feature, split row, goes right), ...]), ...]`` for every leaf of the node table."""
    node_split = np.cumsum(~ensemble.is_leaf) - 1
    out = []
    for root in ensemble.roots:
        stack = [(int(root), [])]
        while stack:
            node, path = stack.pop()
            if ensemble.left[node] < 0:
                out.append((float(ensemble.value[node]), path))
                continue
            split = int(node_split[node])
            feature = int(ensemble.feature[node])
            stack.append((int(ensemble.left[node]), [*path, (feature, split, False)]))
            stack.append((int(ensemble.right[node]), [*path, (feature, split, True)]))
    return out


def direct_values(model: Any, queries: np.ndarray, background: np.ndarray, target: int | None = None) -> np.ndarray:
    """``(Q, p)`` interventional SHAP values of ``model``'s explained output (as ``FourierShap.from_trees``)."""
    (ensemble,) = parse_model_outputs(model, target) if target is not None else parse_model_outputs(model)[:1]
    if ensemble.oblivious:
        raise ValueError("direct_values reads node tables; oblivious trees (CatBoost) are not covered")
    q, b, p = len(queries), len(background), queries.shape[1]
    phi = np.zeros((q, p))
    table = ensemble.split_table()
    sentinel = np.asarray(ensemble.missing, dtype=ensemble.input_dtype).astype(np.float64)

    def goes_right(values: np.ndarray, split: int) -> np.ndarray:
        _, threshold, nan_right, zero_missing = table[split]
        v = np.asarray(values, dtype=ensemble.input_dtype).astype(np.float64)
        right = v >= threshold if ensemble.strict else v > threshold
        missing = np.isnan(v) | ((zero_missing > 0) & (np.abs(v) <= 1e-35)) | (v == sentinel)
        return np.where(missing, nan_right > 0, right)

    for value, path in _leaf_paths(ensemble):
        features = sorted({f for f, _, _ in path})
        sat_x = np.ones((q, len(features)), dtype=bool)
        sat_b = np.ones((b, len(features)), dtype=bool)
        for f, split, right in path:
            j = features.index(f)
            sat_x[:, j] &= goes_right(queries[:, f], split) == right
            sat_b[:, j] &= goes_right(background[:, f], split) == right
        only_x = sat_x[:, None, :] & ~sat_b[None, :, :]  # (Q, B, d)
        only_b = ~sat_x[:, None, :] & sat_b[None, :, :]
        reachable = (sat_x[:, None, :] | sat_b[None, :, :]).all(2)
        pn, nn = only_x.sum(2), only_b.sum(2)
        total = np.maximum(pn + nn, 1)
        fact = np.array([factorial(i) for i in range(len(features) + 2)], dtype=np.float64)
        w_p = np.where(pn > 0, fact[np.maximum(pn - 1, 0)] * fact[nn] / fact[total], 0.0) * reachable
        w_n = np.where(nn > 0, -fact[pn] * fact[np.maximum(nn - 1, 0)] / fact[total], 0.0) * reachable
        contribution = value * (only_x * w_p[..., None] + only_b * w_n[..., None]).mean(1)  # (Q, d)
        phi[:, features] += contribution
    return phi


def coalition_values(predict: Any, queries: np.ndarray, background: np.ndarray) -> np.ndarray:
    """Shapley values over all coalitions of the ``p`` features, through the model's own output function."""
    p = queries.shape[1]
    masks = np.array(list(itertools.product([0, 1], repeat=p)), dtype=bool)[:, ::-1]
    hybrid = np.where(masks[None, :, None, :], queries[:, None, None, :], background[None, None])
    v = predict(hybrid.reshape(-1, p)).reshape(len(queries), len(masks), len(background)).mean(2)
    phi = np.zeros((len(queries), p))
    for s in range(2**p):
        size = bin(s).count("1")
        for i in range(p):
            if not (s >> i) & 1:
                phi[:, i] += factorial(size) * factorial(p - size - 1) / factorial(p) * (v[:, s | (1 << i)] - v[:, s])
    return phi

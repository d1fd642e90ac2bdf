"""Exact references for the tree benchmark, independent of the Fourier machinery (no spectrum, no tables).

* :func:`direct_values`: interventional SHAP per original feature by each leaf's closed form. A leaf is
  ``v · Π_features [x_j satisfies the leaf's splits on j]``; for a query ``x`` and a background row ``b`` each
  feature is satisfied by ``x``, by ``b``, by both or by neither, and the hybrid ``(x_S, b_~S)`` reaches the leaf
  iff every feature is satisfied by the side it is taken from. So the leaf's game is
  ``v [P ⊆ S][N ∩ S = ∅]`` (``P``: satisfied by ``x`` only, ``N``: by ``b`` only; zero when a feature is satisfied
  by neither), whose Shapley values are ``v (p-1)! n!/(p+n)!`` on ``P`` and ``-v p! (n-1)!/(p+n)!`` on ``N``.
  Background rows with the same pattern at a leaf are taken once, weighted by their number. Cost
  ``|D|·Σ_leaves depth`` to read the patterns, then ``Q`` times the distinct ones: a reference for a few queries, not
  a contender.
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


def _splits(ensemble: Any) -> list[dict[str, Any]]:
    """Every split of the ensemble as a dict ``feature, threshold, nan_right, zero_is_missing, category`` (the row
    of ``category_sets``, ``-1`` for a threshold): the node table's internal nodes, then the oblivious blocks'."""
    out = []
    category = ensemble.category_split
    for node in np.flatnonzero(ensemble.left >= 0):
        out.append(
            {
                "feature": int(ensemble.feature[node]),
                "threshold": float(ensemble.threshold[node]),
                "nan_right": bool(ensemble.nan_right[node]),
                "zero_is_missing": bool(ensemble.zero_is_missing[node]),
                "category": -1 if category is None else int(category[node]),
                "node": int(node),
            }
        )
    for block in ensemble.oblivious:
        for t in range(block.n_trees):
            for j in range(block.depth):
                out.append(
                    {
                        "feature": int(block.feature[t, j]),
                        "threshold": float(block.threshold[t, j]),
                        "nan_right": bool(block.nan_right[t, j]),
                        "zero_is_missing": bool(block.zero_is_missing[t, j]),
                        "category": -1,
                    }
                )
    return out


def _leaf_paths(ensemble: Any) -> list[tuple[float, list[tuple[int, int, bool]]]]:
    """``[(value, [(feature, split, goes right), ...]), ...]`` for every leaf (``split`` indexes :func:`_splits`):
    the node table's leaves, then every oblivious tree's ``2^d`` leaves (leaf ``i`` goes right at level ``j`` when
    bit ``j`` of ``i`` is set)."""
    inner = np.flatnonzero(ensemble.left >= 0)
    split_of = {int(node): i for i, node in enumerate(inner)}
    out = []
    for root in ensemble.roots:
        stack = [(int(root), [])]
        while stack:
            node, path = stack.pop()
            if ensemble.left[node] < 0:
                out.append((float(ensemble.value[node]), path))
                continue
            split = split_of[node]
            feature = int(ensemble.feature[node])
            stack.append((int(ensemble.left[node]), [*path, (feature, split, False)]))
            stack.append((int(ensemble.right[node]), [*path, (feature, split, True)]))
    start = len(inner)
    for block in ensemble.oblivious:
        for t in range(block.n_trees):
            rows = [start + t * block.depth + j for j in range(block.depth)]
            for leaf in range(2**block.depth):
                path = [(int(block.feature[t, j]), rows[j], bool((leaf >> j) & 1)) for j in range(block.depth)]
                out.append((float(block.value[t, leaf]), path))
        start += block.n_trees * block.depth
    return out


def _as_ids(ensemble: Any, rows: Any) -> np.ndarray:
    """Rows as float64: a DataFrame's category columns as the model's category ids (its recorded categories, or
    the frame's), NaN for a category it does not know."""
    if not hasattr(rows, "iloc"):
        return np.asarray(rows, dtype=np.float64)
    import pandas as pd

    out = np.empty(rows.shape, dtype=np.float64)
    for j, (column, dtype) in enumerate(rows.dtypes.items()):
        if isinstance(dtype, pd.CategoricalDtype):
            known = (ensemble.categories or {}).get(j)
            known = list(known) if known is not None else list(dtype.categories)
            codes = pd.Index(known).get_indexer(rows[column].astype(object)).astype(np.float64)
            out[:, j] = np.where(codes < 0, np.nan, codes)
        else:
            out[:, j] = rows[column].to_numpy(dtype=np.float64)
    return out


def direct_values(model: Any, queries: np.ndarray, background: np.ndarray, target: int | None = None) -> np.ndarray:
    """``(Q, p)`` interventional SHAP values of ``model``'s explained output (as ``FourierShap.from_trees``; a
    classifier's positive class, or ``target``); rows may be DataFrames with ``category`` columns (read as the
    model's category ids; CatBoost's categorical splits are read by probing it with the background's)."""
    frame = background if hasattr(background, "iloc") else None
    ensemble = parse_model_outputs(model, target, frame)[0]
    queries, background = _as_ids(ensemble, queries), _as_ids(ensemble, background)
    q, b, p = len(queries), len(background), queries.shape[1]
    phi = np.zeros((q, p))
    table = _splits(ensemble)
    sentinel = np.asarray(ensemble.missing, dtype=ensemble.input_dtype).astype(np.float64)
    sets = ensemble.category_sets

    def goes_right(values: np.ndarray, split: int) -> np.ndarray:
        row = table[split]
        if row["category"] >= 0:  # a category set: the id (truncated) indexes it; unknown ids take its last column
            v = np.asarray(values, dtype=np.float64)
            width = sets.shape[1] - 1
            ids = np.where((v >= 0) & (v < width), np.floor(np.nan_to_num(v, nan=width)), width).astype(np.int64)
            return np.where(np.isnan(v), row["nan_right"], sets[row["category"], ids])
        v = np.asarray(values, dtype=ensemble.input_dtype).astype(np.float64)
        right = v >= row["threshold"] if ensemble.strict else v > row["threshold"]
        missing = np.isnan(v) | (row["zero_is_missing"] & (np.abs(v) <= 1e-35)) | (v == sentinel)
        return np.where(missing, row["nan_right"], right)

    for value, path in _leaf_paths(ensemble):
        features = sorted({f for f, _, _ in path})
        sat_x = np.ones((q, len(features)), dtype=bool)
        sat_b = np.ones((b, len(features)), dtype=bool)
        for f, split, right in path:
            j = features.index(f)
            sat_x[:, j] &= goes_right(queries[:, f], split) == right
            sat_b[:, j] &= goes_right(background[:, f], split) == right
        # background rows with the same pattern play the same game: each distinct pattern once, weighted by its rows
        code = sat_b.astype(np.int64) @ (np.int64(1) << np.arange(len(features), dtype=np.int64))
        code, count = np.unique(code, return_counts=True)
        sat_u = (code[:, None] >> np.arange(len(features))) & 1 == 1  # (U, d)
        only_x = sat_x[:, None, :] & ~sat_u[None, :, :]  # (Q, U, d)
        only_b = ~sat_x[:, None, :] & sat_u[None, :, :]
        reachable = (sat_x[:, None, :] | sat_u[None, :, :]).all(2)
        pn, nn = only_x.sum(2), only_b.sum(2)
        total = np.maximum(pn + nn, 1)
        fact = np.array([factorial(i) for i in range(len(features) + 2)], dtype=np.float64)
        w_p = np.where(pn > 0, fact[np.maximum(pn - 1, 0)] * fact[nn] / fact[total], 0.0) * reachable
        w_n = np.where(nn > 0, -fact[pn] * fact[np.maximum(nn - 1, 0)] / fact[total], 0.0) * reachable
        games = only_x * w_p[..., None] + only_b * w_n[..., None]  # (Q, U, d)
        contribution = value * np.einsum("qud,u->qd", games, count / b)
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

"""Small fitted tree models and model-level references for the tree-spectrum tests (numpy/sklearn only)."""

from __future__ import annotations

import itertools
from math import factorial

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from threadpoolctl import threadpool_limits


def binary_data(n: int, rows: int = 300, seed: int = 0, classes: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random binary inputs with a sparse, interacting target (regression, or ``classes`` labels)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 2, (rows, n)).astype(np.float64)
    w = rng.normal(size=n) * (rng.random(n) < 0.5)
    y = x @ w + 2.0 * x[:, 0] * x[:, 1] - 1.5 * x[:, 2] * x[:, 3] * x[:, 4] + 0.1 * rng.normal(size=rows)
    if classes:
        y = np.digitize(y, np.quantile(y, np.linspace(0, 1, classes + 1)[1:-1]))
    return x, y


def diabetes() -> tuple[np.ndarray, np.ndarray]:
    return load_diabetes(return_X_y=True)


def breast_cancer() -> tuple[np.ndarray, np.ndarray]:
    return load_breast_cancer(return_X_y=True)


def make_model(kind: str, depth: int, seed: int = 0):
    """An unfitted model: ``kind`` in ``MODEL_KINDS`` with ``max_depth=depth`` and a handful of trees."""
    common = {"max_depth": depth, "random_state": seed}
    if kind.startswith("xgb"):
        xgb = pytest.importorskip("xgboost")
    if kind.startswith("lgb"):
        lgb = pytest.importorskip("lightgbm")
    if kind.startswith("cat"):
        cb = pytest.importorskip("catboost")
    return {
        "tree_reg": lambda: DecisionTreeRegressor(**common),
        "tree_clf": lambda: DecisionTreeClassifier(**common),
        "rf_reg": lambda: RandomForestRegressor(n_estimators=4, **common),
        "rf_clf": lambda: RandomForestClassifier(n_estimators=4, **common),
        "et_reg": lambda: ExtraTreesRegressor(n_estimators=4, **common),
        "et_clf": lambda: ExtraTreesClassifier(n_estimators=4, **common),
        "gbm_reg": lambda: GradientBoostingRegressor(n_estimators=5, learning_rate=0.3, **common),
        "gbm_clf": lambda: GradientBoostingClassifier(n_estimators=5, learning_rate=0.3, **common),
        "xgb_reg": lambda: xgb.XGBRegressor(
            n_estimators=5, max_depth=depth, learning_rate=0.3, random_state=seed, n_jobs=1
        ),
        "xgb_clf": lambda: xgb.XGBClassifier(
            n_estimators=5, max_depth=depth, learning_rate=0.3, random_state=seed, n_jobs=1
        ),
        "lgb_reg": lambda: lgb.LGBMRegressor(
            n_estimators=5,
            max_depth=depth,
            num_leaves=2**depth,
            min_child_samples=5,
            random_state=seed,
            verbose=-1,
            n_jobs=1,
        ),
        "lgb_clf": lambda: lgb.LGBMClassifier(
            n_estimators=5,
            max_depth=depth,
            num_leaves=2**depth,
            min_child_samples=5,
            random_state=seed,
            verbose=-1,
            n_jobs=1,
        ),
        "hgb_reg": lambda: HistGradientBoostingRegressor(max_iter=5, max_depth=depth, learning_rate=0.3, **_HGB),
        "hgb_clf": lambda: HistGradientBoostingClassifier(max_iter=5, max_depth=depth, learning_rate=0.3, **_HGB),
        "cat_reg": lambda: cb.CatBoostRegressor(iterations=5, depth=depth, random_seed=seed, **_CAT),
        "cat_clf": lambda: cb.CatBoostClassifier(iterations=5, depth=depth, random_seed=seed, **_CAT),
    }[kind]()


_HGB = {"min_samples_leaf": 5, "early_stopping": False, "random_state": 0}
_CAT = {"verbose": 0, "thread_count": 1, "allow_writing_files": False}

MODEL_KINDS = (
    "tree_reg",
    "tree_clf",
    "rf_reg",
    "rf_clf",
    "et_reg",
    "et_clf",
    "gbm_reg",
    "gbm_clf",
    "xgb_reg",
    "xgb_clf",
    "lgb_reg",
    "lgb_clf",
)
# Histogram gradient boosting and CatBoost (not in MODEL_KINDS, which the shap comparisons iterate over).
EXTRA_KINDS = ("hgb_reg", "hgb_clf", "cat_reg", "cat_clf")
# Models whose explained output is a probability column (the positive class by default).
PROBA_KINDS = ("tree_clf", "rf_clf", "et_clf")


def model_output(model, kind: str, x: np.ndarray, target: int | None = None) -> np.ndarray:
    """The output the spectrum explains, from the library's own predict functions (float64 where offered)."""
    if kind in PROBA_KINDS:
        return model.predict_proba(x)[:, 1 if target is None else target]
    if kind in ("gbm_clf", "hgb_clf"):
        out = model.decision_function(x)
        return out if out.ndim == 1 else out[:, target]
    if kind.startswith("cat"):
        out = model.predict(x, prediction_type="RawFormulaVal")
        return out if out.ndim == 1 else out[:, target]
    if kind.startswith("xgb"):
        out = model.predict(x, output_margin=True).astype(np.float64)
        return out if out.ndim == 1 else out[:, target]
    if kind == "lgb_clf":
        out = model.predict(x, raw_score=True)
        return out if out.ndim == 1 else out[:, target]
    return model.predict(x)


def fit(kind: str, depth: int, x: np.ndarray, y: np.ndarray, seed: int = 0):
    """Fit ``kind``; classifiers get labels ``y`` as given when there are at most 10, else ``y > median(y)``."""
    model = make_model(kind, depth, seed)
    if kind.endswith("clf") and len(np.unique(y)) > 10:
        y = (y > np.median(y)).astype(int)
    with threadpool_limits(1):  # HistGradientBoosting's OpenMP threads crawl on a loaded machine
        return model.fit(x, y)


def coalition_values(predict, x: np.ndarray, background: np.ndarray) -> np.ndarray:
    """``v[q, S] = mean_b f(x*_S, x_b,-S)`` for every coalition bitmask ``S`` of the ``p`` features, built as one
    batch of hybrid rows so that ``predict`` is called once."""
    p = x.shape[1]
    masks = np.array(list(itertools.product([0, 1], repeat=p)), dtype=bool)[:, ::-1]  # row s has bit g at [g]
    hybrid = np.where(masks[None, :, None, :], x[:, None, None, :], background[None, None, :, :])
    out = predict(hybrid.reshape(-1, p)).reshape(x.shape[0], len(masks), background.shape[0])
    return out.mean(axis=2)


def brute_force_values(v: np.ndarray, kind: str = "shapley") -> np.ndarray:
    """Shapley or Banzhaf values ``(Q, p)`` from a coalition table ``(Q, 2^p)``."""
    p = int(np.log2(v.shape[1]))
    out = np.zeros((v.shape[0], p))
    for s in range(2**p):
        size = bin(s).count("1")
        for i in range(p):
            if (s >> i) & 1:
                continue
            w = factorial(size) * factorial(p - size - 1) / factorial(p) if kind == "shapley" else 2.0 ** (1 - p)
            out[:, i] += w * (v[:, s | (1 << i)] - v[:, s])
    return out


def brute_force_interactions(v: np.ndarray) -> np.ndarray:
    """Pairwise Shapley interaction index ``(Q, p, p)`` (zero diagonal) from a coalition table."""
    p = int(np.log2(v.shape[1]))
    out = np.zeros((v.shape[0], p, p))
    for i, j in itertools.combinations(range(p), 2):
        for s in range(2**p):
            if (s >> i) & 1 or (s >> j) & 1:
                continue
            size = bin(s).count("1")
            w = factorial(size) * factorial(p - size - 2) / factorial(p - 1)
            delta = v[:, s | (1 << i) | (1 << j)] - v[:, s | (1 << i)] - v[:, s | (1 << j)] + v[:, s]
            out[:, i, j] += w * delta
            out[:, j, i] += w * delta
    return out


def one_hot_case(kind: str) -> tuple[object, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """4 categorical variables × 5 levels, one-hot (20 inputs), a depth-5 model of ``kind`` fitted on them, and the
    per-variable coalition values of 3 queries against 15 background rows through ``model.predict``.

    Returns:
        ``(model, ids (20,) variable of each input, query (3, 20), background (15, 20), v (3, 16))``.
    """
    rng = np.random.default_rng(7)
    codes = rng.integers(0, 5, (300, 4))
    x = np.zeros((300, 20))
    x[np.arange(300)[:, None], 5 * np.arange(4) + codes] = 1.0
    y = (codes[:, 0] == 2) * 1.5 + codes[:, 1] * (codes[:, 2] > 2) + 0.1 * rng.normal(size=300)
    model = fit(kind, 5, x, y)
    ids = np.repeat(np.arange(4), 5)
    query, background = x[:3], x[50:65]
    masks = np.array([[(s >> g) & 1 for g in range(4)] for s in range(16)], dtype=bool)[:, ids]
    hybrid = np.where(masks[None, :, None, :], query[:, None, None, :], background[None, None])
    v = model.predict(hybrid.reshape(-1, 20)).reshape(3, 16, 15).mean(2)
    return model, ids, query, background, v

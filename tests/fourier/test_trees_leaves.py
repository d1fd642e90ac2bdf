"""The leaf route (``from_trees(..., route="leaves")``): exact values of deep trees against brute force over coalitions.

References are independent of the leaf machinery: the leaf game against enumeration of its coalitions, and every
model against ``coalition_values`` — the library's own ``predict`` at all ``2^p`` hybrids of a query and each
background row.
"""

from __future__ import annotations

import itertools
import re
import threading
from math import factorial

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_limits

import torchxplain as tx
from tests.fourier.tree_cases import brute_force_values, coalition_values, model_output
from torchxplain._core.settings import parse_memory
from torchxplain.fourier.trees import _leaf_pairs as leaf_pairs
from torchxplain.fourier.trees import _leaf_values as leaf_values
from torchxplain.fourier.trees._leaf_games import weight_tables
from torchxplain.fourier.trees._leaf_pairs import set_bits
from torchxplain.fourier.trees._leaf_values import LeafPlan
from torchxplain.fourier.trees._leaves import leaf_table, spectrum_terms
from torchxplain.fourier.trees.adapters._dispatch import parse_model


def _data(rows: int = 600, p: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, p))
    y = x[:, 0] * x[:, 1] + np.sin(3 * x[:, 2]) + (x[:, 3] > 0) * x[:, 4] + 0.3 * x[:, -1] + 0.1 * rng.normal(size=rows)
    return x, y


@pytest.mark.parametrize("kind", ["shapley", "banzhaf"])
def test_leaf_game_weights_match_enumeration(kind):
    """The pair game ``v [G ⊆ S][F ∩ S = ∅]`` (x supplies G, b supplies F): its values by enumeration of all
    coalitions equal the closed-form weights, for every split of up to 7 players into G, F and the rest."""
    n = 7
    g, h = weight_tables(kind, n)
    rng = np.random.default_rng(1)
    for _ in range(40):
        roles = rng.integers(0, 3, n)  # 0: G (x must supply), 1: F (b must supply), 2: neither side fails
        x_side, b_side = set(np.flatnonzero(roles == 0)), set(np.flatnonzero(roles == 1))

        def game(s: set, x_side: set = x_side, b_side: set = b_side) -> float:
            return float(x_side <= s and not (b_side & s))

        phi = np.zeros(n)
        for i in range(n):
            for size in range(n):
                w = factorial(size) * factorial(n - size - 1) / factorial(n) if kind == "shapley" else 2.0 ** (1 - n)
                for rest in itertools.combinations([j for j in range(n) if j != i], size):
                    phi[i] += w * (game(set(rest) | {i}) - game(set(rest)))
        a, b = len(x_side), len(b_side)
        want = np.where(roles == 0, float(h[a, b]), np.where(roles == 1, -float(g[a, b]), 0.0))
        np.testing.assert_allclose(phi, want, atol=1e-14)


def _models():
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.tree import DecisionTreeRegressor

    x, y = _data()
    out = [
        ("tree_reg", DecisionTreeRegressor(max_depth=18, random_state=0).fit(x, y)),
        ("rf_reg", RandomForestRegressor(n_estimators=3, max_depth=14, random_state=0).fit(x, y)),
    ]
    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    out.append(("xgb_reg", xgb.XGBRegressor(n_estimators=4, max_depth=12, learning_rate=0.5, n_jobs=1).fit(x, y)))
    leafwise = lgb.LGBMRegressor(n_estimators=4, num_leaves=64, min_child_samples=2, verbose=-1, n_jobs=1)
    out.append(("lgb_reg", leafwise.fit(x, y)))
    return x, out


def _tolerance(kind: str, values: np.ndarray) -> float:
    """XGBoost predicts in float32 (the brute force inherits its rounding): 1e-6 of the values' scale; float64
    libraries 1e-10."""
    return 1e-6 * float(np.abs(values).max()) if kind.startswith("xgb") else 1e-10


@pytest.fixture(scope="module")
def deep_models():
    return _models()


def test_deep_trees_match_brute_force(deep_models):
    """Depth 12–18 trees (sklearn, XGBoost, LightGBM leaf-wise) on 6 features: Shapley and Banzhaf values of the
    leaf route equal enumeration of all 64 coalitions through the model's own predict."""
    x, models = deep_models
    query, background = x[:3], x[100:116]
    for kind, model in models:
        assert parse_model(model).max_depth >= 12 or kind == "lgb_reg"
        explainer = tx.FourierShap.from_trees(model, torch.from_numpy(background), route="leaves")
        v = coalition_values(lambda z, m=model, k=kind: model_output(m, k, z), query, background)
        phi = explainer.attribute(torch.from_numpy(query)).numpy()
        tol = _tolerance(kind, phi)
        np.testing.assert_allclose(phi, brute_force_values(v), atol=tol, rtol=0, err_msg=kind)
        beta = explainer.banzhaf(torch.from_numpy(query)).numpy()
        np.testing.assert_allclose(beta, brute_force_values(v, "banzhaf"), atol=tol, rtol=0, err_msg=kind)


@pytest.mark.parametrize(
    "which", [pytest.param(i, marks=pytest.mark.slow) for i in range(3)] + [3]
)  # each 3-6 s of CPU: LightGBM in the fast loop, the others in the slow one
def test_dense_units_and_pair_forms_agree(deep_models, which, monkeypatch):
    """The forms of the leaf values — tables over each leaf's fail patterns, units of one to three levels of leaves
    tabulated together (tables of at most 1, 5 or 10 bits, the deeper leaves one by one), pairs followed down the
    trees — give the same values, whatever the cost model picks."""
    x, models = deep_models
    for _, model in models[which : which + 1]:
        table = leaf_table(parse_model(model))
        plan = LeafPlan(table, torch.from_numpy(x[200:230]), None, x.shape[1])
        rows = torch.from_numpy(x[:20])
        for kind in ("shapley", "banzhaf"):
            dense = torch.zeros(x.shape[1], 20, dtype=torch.float64)
            for chunk in range(len(plan._chunks)):
                plan._dense_values(kind, chunk, rows, dense)
            for height, most in ((1, 1), (1, 10), (2, 5), (3, 10)):
                monkeypatch.setattr(leaf_values, "unit_bits", lambda rows, most=most: most)
                units = torch.zeros_like(dense)
                for chunk in range(len(plan._chunks)):
                    plan._unit_values(kind, chunk, rows, units, height)
                torch.testing.assert_close(units, dense, atol=1e-12, rtol=0)
            pairs = torch.zeros_like(dense)
            plan._pair_values(kind, rows, pairs)
            torch.testing.assert_close(pairs, dense, atol=1e-12, rtol=0)


def test_efficiency_against_the_model(deep_models):
    """Values sum to the model's own output minus its background mean (``predict`` of the library)."""
    x, models = deep_models
    background, query = x[300:350], x[:40]
    for kind, model in models:
        explainer = tx.FourierShap.from_trees(model, background, route="leaves")
        phi = explainer.attribute(torch.from_numpy(query)).numpy()
        gap = phi.sum(1) - (model_output(model, kind, query) - model_output(model, kind, background).mean())
        assert np.abs(gap).max() < 1e-5 * max(1.0, np.abs(phi).max()), kind


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.int32, torch.int64])
def test_pattern_widths_and_deep_leaves_agree(deep_models, dtype, monkeypatch):
    """Fail patterns in every integer width, and leaves past a lowered dense limit (the pair form's: their
    background patterns kept beside the other leaves' counts, in one traversal) give the values of the default
    widths and limit, and the background's mean output from the counts equals the trees descended."""
    x, models = deep_models
    model = models[3][1]  # LightGBM leaf-wise: leaves of 1 to 6 players
    table = leaf_table(parse_model(model))
    background, rows = torch.from_numpy(x[200:230]), torch.from_numpy(x[:20])
    want = torch.zeros(x.shape[1], 20, dtype=torch.float64)
    reference = LeafPlan(table, background, None, x.shape[1])
    for chunk in range(len(reference._chunks)):
        reference._dense_values("shapley", chunk, rows, want)
    monkeypatch.setattr(leaf_values, "pattern_dtype", lambda slots: dtype)
    monkeypatch.setattr(leaf_values, "MAX_DENSE_SLOTS", 3)
    plan = LeafPlan(table, background, None, x.shape[1])
    descended = leaf_values.leaf_outputs(table, background).mean()
    torch.testing.assert_close(plan.mean_output(), descended, atol=1e-12, rtol=0)  # no counts yet: descended
    for height in (0, 2):
        got = torch.zeros_like(want)
        for chunk in range(len(plan._chunks)):
            if height:
                plan._unit_values("shapley", chunk, rows, got, height)
            else:
                plan._dense_values("shapley", chunk, rows, got)
        torch.testing.assert_close(got, want, atol=1e-12, rtol=0)
    assert len(plan._reached) == len(plan._chunks)
    torch.testing.assert_close(plan.mean_output(), descended, atol=1e-12, rtol=0)


def test_base_value_from_the_background_counts(deep_models):
    """The base value comes from the leaves' counts of background rows (no second descent): the library's own
    predict averaged over the background, for deep models under one and many tree chunks, a 0/1 background given
    as bool or float rows, and every output of a multiclass forest."""
    from sklearn.ensemble import RandomForestClassifier

    x, models = deep_models
    background, query = x[300:340], torch.from_numpy(x[:5])
    for kind, model in models:
        want = model_output(model, kind, background).mean()
        for budget in (None, 2**20):
            with tx.settings.max_memory(budget or tx.settings.DEFAULT_MAX_MEMORY):
                got = tx.FourierShap.from_trees(model, background, route="leaves").player_values(query)
            assert abs(float(got.base_values) - want) <= 1e-6 * max(1.0, abs(want)), (kind, budget)
    xgb = pytest.importorskip("xgboost")
    bits = (x[:, :5] > 0).astype(np.float64)
    binary = xgb.XGBRegressor(n_estimators=5, max_depth=4, n_jobs=1).fit(bits, x[:, 0] + bits[:, 1] * bits[:, 2])
    want = model_output(binary, "xgb_reg", bits[100:140]).mean()
    for rows in (torch.from_numpy(bits[100:140]).bool(), torch.from_numpy(bits[100:140])):
        got = tx.FourierShap.from_trees(binary, rows, route="leaves").player_values(torch.from_numpy(bits[:4]))
        assert abs(float(got.base_values) - want) <= 1e-6 * max(1.0, abs(want))
    labels = np.digitize(x[:, 0], [-0.5, 0.5])
    forest = RandomForestClassifier(n_estimators=4, max_depth=6, random_state=0).fit(x, labels)
    got = tx.FourierShap.from_trees(forest, background, route="leaves").player_values(query, target=[0, 1, 2, 1, 0])
    proba = forest.predict_proba(background).mean(0)
    np.testing.assert_allclose(got.base_values.numpy(), proba[[0, 1, 2, 1, 0]], atol=1e-12, rtol=0)


def test_groups_pairs_and_missing_values():
    """Grouped players, per-row baselines and NaN inputs (routed as XGBoost routes them) against brute force."""
    xgb = pytest.importorskip("xgboost")
    x, y = _data(p=5)
    x[np.random.default_rng(2).random(x.shape) < 0.1] = np.nan
    model = xgb.XGBRegressor(n_estimators=4, max_depth=8, n_jobs=1).fit(x, y)
    query, background = x[:3], x[50:62]
    predict = lambda z: model_output(model, "xgb_reg", z)  # noqa: E731
    groups = torch.tensor([0, 0, 1, 2, 2])
    explainer = tx.FourierShap.from_trees(model, background, feature_groups=groups, route="leaves")
    values = explainer.player_values(torch.from_numpy(query)).values.numpy()
    masks = np.array([[(s >> g) & 1 for g in range(3)] for s in range(8)], dtype=bool)[:, groups.numpy()]
    hybrid = np.where(masks[None, :, None, :], query[:, None, None, :], background[None, None])
    v = predict(hybrid.reshape(-1, 5)).reshape(3, 8, len(background)).mean(2)
    np.testing.assert_allclose(values, brute_force_values(v), atol=_tolerance("xgb", values), rtol=0)
    paired = tx.FourierShap.from_trees(model, background, route="leaves")
    base = background[:3]
    phi = paired.attribute(torch.from_numpy(query), baselines=torch.from_numpy(base)).numpy()
    for i in range(3):
        v = coalition_values(predict, query[i : i + 1], base[i : i + 1])
        np.testing.assert_allclose(phi[i], brute_force_values(v)[0], atol=_tolerance("xgb", phi), rtol=0)


def test_small_memory_budget_completes_by_chunking(deep_models):
    """Under the smallest budget (1 MiB) the leaf route splits trees and rows into many chunks and returns the
    same values."""
    x, models = deep_models
    model = models[1][1]  # the forest: several trees, deep leaves
    background, query = x[300:400], torch.from_numpy(x[:300])
    want = tx.FourierShap.from_trees(model, background, route="leaves").attribute(query)
    with tx.settings.max_memory(2**20):
        explainer = tx.FourierShap.from_trees(model, background, route="leaves")
        plan = explainer._plan(explainer._players(None, [query.shape]), None, 0).leaves
        got = explainer.attribute(query)
    assert len(plan._chunks) > 1
    torch.testing.assert_close(got, want, atol=1e-12, rtol=0)


def test_interactions_fall_back_to_the_spectrum_or_refuse(deep_models):
    """Pairwise interactions of a leaf-route explainer come from the spectrum (equal to the spectrum route's);
    when the spectrum cannot fit the budget the call is refused with its size."""
    x, models = deep_models
    model = models[2][1]  # XGBoost depth 12
    background, query = x[300:320], torch.from_numpy(x[:4])
    leaves = tx.FourierShap.from_trees(model, background, route="leaves")
    spectrum = tx.FourierShap.from_trees(model, background, route="spectrum")
    torch.testing.assert_close(leaves.interactions(query), spectrum.interactions(query), atol=1e-10, rtol=0)
    deep = tx.FourierShap.from_trees(models[0][1], background, route="leaves", max_memory=2**20)
    with pytest.raises(ValueError, match="need its Fourier spectrum.*more than max_memory"):
        deep.interactions(query)


def test_route_argument_and_saving(tmp_path, deep_models):
    x, models = deep_models
    model = models[0][1]
    with pytest.raises(ValueError, match="route must be one of"):
        tx.FourierShap.from_trees(model, x[:10], route="fast")
    with pytest.raises(ValueError, match="energy act on a Fourier spectrum"):
        tx.FourierShap.from_trees(model, x[:10], route="leaves", energy=0.99)
    explainer = tx.FourierShap.from_trees(model, x[:10])  # auto: a depth-18 tree takes the leaves
    assert explainer.provider is not None and explainer.provider.route == "leaves"
    with pytest.raises(ValueError, match="leaf route"):
        explainer.save(tmp_path / "tree.pt")


def test_oblivious_trees_on_both_routes():
    """CatBoost's oblivious trees become node tables on the leaf route: same values as the spectrum route."""
    cb = pytest.importorskip("catboost")
    x, y = _data(p=5)
    model = cb.CatBoostRegressor(iterations=6, depth=5, verbose=0, thread_count=1, allow_writing_files=False)
    model.fit(x, y)
    background, query = torch.from_numpy(x[50:70]), torch.from_numpy(x[:10])
    leaves = tx.FourierShap.from_trees(model, background, route="leaves").attribute(query)
    spectrum = tx.FourierShap.from_trees(model, background, route="spectrum").attribute(query)
    torch.testing.assert_close(leaves, spectrum, atol=1e-10, rtol=0)


@pytest.mark.parametrize("route", ["spectrum", "leaves"])
def test_expected_value_after_a_call_comes_from_the_plans(route, monkeypatch):
    """Once a call has built the plans, ``expected_value()`` is their mean output (the spectrum's Walsh moments, the
    leaf counts) without evaluating the explained function at the background rows again: equal to the model's own
    mean prediction, a scalar for a regressor and ``(3,)`` for a 3-class classifier."""
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier

    x, y = _data(p=5)
    background, query = x[50:90], torch.from_numpy(x[:6])
    labels = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    cases = [
        (GradientBoostingRegressor(n_estimators=5, max_depth=3, random_state=0).fit(x, y), "predict"),
        (RandomForestClassifier(n_estimators=3, max_depth=4, random_state=0).fit(x, labels), "predict_proba"),
    ]
    for model, method in cases:
        explainer = tx.FourierShap.from_trees(model, background, route=route)
        want = torch.as_tensor(getattr(model, method)(background).mean(0), dtype=torch.float64)
        torch.testing.assert_close(explainer.expected_value(), want, atol=1e-10, rtol=0)  # evaluated
        explainer.attribute(query)
        with monkeypatch.context() as patch:

            def evaluated(*args, **kwargs):
                raise AssertionError("expected_value evaluated the outputs again")

            patch.setattr(explainer, "_output_at", evaluated)
            torch.testing.assert_close(explainer.expected_value(), want, atol=1e-10, rtol=0)


# --- native categorical splits ---------------------------------------------------------------------------------
def _category_frame(rows: int = 1500, seed: int = 3):
    """Two numeric and three ``category`` columns (strings, integers, and a NaN-holding one), a target that needs
    the categories."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "a": rng.normal(size=rows),
            "colour": pd.Categorical(rng.choice(["red", "green", "blue", "grey", "pink"], rows)),
            "size": pd.Categorical(rng.integers(0, 9, rows)),
            "b": rng.normal(size=rows),
            "shape": pd.Categorical(rng.choice(["round", "square", "star"], rows)),
        }
    )
    y = (
        frame.a
        + 2.0 * (frame.colour == "green")
        + 1.5 * (frame["size"].astype(int) % 3 == 0) * frame.b
        + (frame["shape"] == "star") * (frame.colour == "red")
        + 0.1 * rng.normal(size=rows)
    )
    return frame, y.to_numpy()


def _frame_coalitions(predict, query, background) -> np.ndarray:
    """``v[q, S]``: the model's mean output over hybrids that take the columns of ``S`` from query row ``q`` and
    the others from each background row, every column kept in its own dtype (one ``predict`` call)."""
    import pandas as pd

    p = query.shape[1]
    masks = np.array(list(itertools.product([0, 1], repeat=p)), dtype=bool)[:, ::-1]
    nq, nm, nb = len(query), len(masks), len(background)
    take = np.broadcast_to(masks[None, :, None, :], (nq, nm, nb, p)).reshape(-1, p)  # row (q, S, b)
    columns = {}
    for j, name in enumerate(query.columns):
        own = np.repeat(query.iloc[:, j].to_numpy(dtype=object), nm * nb)
        other = np.tile(background.iloc[:, j].to_numpy(dtype=object), nq * nm)
        values = np.where(take[:, j], own, other)
        dtype = query.dtypes.iloc[j]
        categorical = isinstance(dtype, pd.CategoricalDtype)
        columns[name] = pd.Categorical(values, dtype=dtype) if categorical else values.astype(np.float64)
    values = predict(pd.DataFrame(columns))
    return np.asarray(values, dtype=np.float64).reshape(nq, nm, nb).mean(2)


def _categorical_models(frame, y):
    """The four libraries' native categorical models; all but CatBoost (which refuses NaN categories) fitted on a
    copy of ``frame`` whose ``colour`` misses every 17th value. Returns ``(name, model, predict, its frame)``."""
    lgb = pytest.importorskip("lightgbm")
    xgb = pytest.importorskip("xgboost")
    cb = pytest.importorskip("catboost")
    from sklearn.ensemble import HistGradientBoostingRegressor

    holed = frame.copy()
    holed.loc[holed.index[::17], "colour"] = np.nan
    columns = ["colour", "size", "shape"]
    gbm = lgb.LGBMRegressor(n_estimators=6, min_data_per_group=5, cat_smooth=1, verbose=-1, n_jobs=1)
    boost = xgb.XGBRegressor(n_estimators=6, max_depth=5, enable_categorical=True, max_cat_to_onehot=1, n_jobs=1)
    cat = cb.CatBoostRegressor(
        iterations=8, depth=4, verbose=0, thread_count=1, allow_writing_files=False, cat_features=columns
    )
    hist = HistGradientBoostingRegressor(max_iter=6, random_state=0)
    with threadpool_limits(1):  # its OpenMP threads spin for seconds on a loaded machine
        hist.fit(holed, y)
    return [
        ("lightgbm", gbm.fit(holed, y), lambda m, z: m.predict(z, raw_score=True), holed),
        ("xgboost", boost.fit(holed, y), lambda m, z: m.predict(z, output_margin=True), holed),
        ("catboost", cat.fit(frame, y), lambda m, z: m.predict(z, prediction_type="RawFormulaVal"), frame),
        ("histgb", hist, lambda m, z: m.predict(z), holed),
    ]


def test_native_categorical_splits_match_brute_force():
    """LightGBM, XGBoost, CatBoost and HistGradientBoosting fitted on a DataFrame with ``category`` columns,
    explained from that DataFrame: one value per column, equal to enumeration of the 32 coalitions of its
    columns through the library's own predict; the leaf table's output equals predict."""
    frame, y = _category_frame()
    for name, model, predict, rows in _categorical_models(frame, y):
        query, background = rows.iloc[[0, 1, 17]], rows.iloc[200:212]  # row 17 misses its colour (but CatBoost's)
        explainer = tx.FourierShap.from_trees(model, background)
        assert explainer.provider is not None and explainer.provider.categorical, name
        v = _frame_coalitions(lambda z, m=model, f=predict: f(m, z), query, background)
        phi = explainer.attribute(query).numpy()
        tol = 1e-6 * float(np.abs(phi).max()) if name == "xgboost" else 1e-10
        np.testing.assert_allclose(phi, brute_force_values(v), atol=tol, rtol=0, err_msg=name)
        out = explainer.predict(rows.iloc[:50]).numpy()
        np.testing.assert_allclose(out, predict(model, rows.iloc[:50]), atol=1e-5, rtol=0, err_msg=name)


def test_categorical_boundary():
    """Categorical models refuse the spectrum route and interactions with the reason, and categories their
    library refuses."""
    import pandas as pd

    xgb = pytest.importorskip("xgboost")
    frame, y = _category_frame(rows=600)
    boost = xgb.XGBRegressor(n_estimators=4, max_depth=4, enable_categorical=True, max_cat_to_onehot=1, n_jobs=1)
    model = boost.fit(frame, y)  # XGBoost refuses a category it was not fitted on
    explainer = tx.FourierShap.from_trees(model, frame.iloc[:20])
    with pytest.raises(ValueError, match="categorical splits.*route='leaves'"):
        tx.FourierShap.from_trees(model, frame.iloc[:20], route="spectrum")
    with pytest.raises(ValueError, match="categorical splits"):
        explainer.interactions(frame.iloc[:2])
    other = frame.iloc[:2].copy()
    other["shape"] = pd.Categorical(["hexagon", "star"])
    with pytest.raises(ValueError, match="'shape' holds 'hexagon', a category"):
        explainer.attribute(other)


def test_outputs_targets_masks_and_dtypes_match_the_spectrum_route():
    """A multiclass forest and a binary XGBoost classifier: every output, a per-row target, a feature_mask and a
    float32 background give on the leaf route what the spectrum route gives (small models: both fit)."""
    from sklearn.ensemble import RandomForestClassifier

    xgb = pytest.importorskip("xgboost")
    x, y = _data(rows=400, p=5)
    labels = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    models = [
        RandomForestClassifier(n_estimators=3, max_depth=4, random_state=0).fit(x, labels),
        xgb.XGBClassifier(n_estimators=3, max_depth=3, n_jobs=1).fit(x, labels > 0),
    ]
    background, query = x[100:120], torch.from_numpy(x[:6])
    mask = torch.tensor([0, 0, 1, 2, 2])
    for model in models:
        leaves = tx.FourierShap.from_trees(model, background, route="leaves")
        spectrum = tx.FourierShap.from_trees(model, background, route="spectrum")
        torch.testing.assert_close(leaves.attribute(query), spectrum.attribute(query), atol=1e-10, rtol=0)
        target = None if len(leaves.outputs) == 1 else [0, 2, 1, 0, 1, 2]
        got = leaves.player_values(query, feature_mask=mask, target=target)
        want = spectrum.player_values(query, feature_mask=mask, target=target)
        torch.testing.assert_close(got.values, want.values, atol=1e-10, rtol=0)
        torch.testing.assert_close(got.base_values, want.base_values, atol=1e-10, rtol=0)
        _, delta = leaves.attribute(query, return_convergence_delta=True)
        assert float(delta.abs().max()) < 1e-10
    single = tx.FourierShap.from_trees(models[1], background.astype(np.float32), route="leaves")
    assert single.attribute(query.float()).dtype == torch.float32


@pytest.mark.parametrize("tail", [0, 3, 1024])
def test_set_bits_lists_every_set_bit(tail, monkeypatch):
    """``set_bits`` finds each set bit of int64 words once, the sign bit (63) included, against a bit-by-bit scan:
    one pass per bit, all 64 positions at once, or the passes and then the last words at once."""
    monkeypatch.setattr(leaf_pairs, "TAIL_WORDS", tail)
    words = torch.tensor([0, 1, -1, -(2**63), 0b1011 << 40, 2**62 + 5], dtype=torch.int64)
    index, position = set_bits(words)
    found = sorted(zip(index.tolist(), position.tolist()))
    expected = sorted((i, s) for i, w in enumerate(words.tolist()) for s in range(64) if (w >> s) & 1)
    assert found == expected


@pytest.mark.parametrize("most", [1, 7, 40, 10**6])
def test_bit_batches_list_every_bit_once_within_their_bound(most, monkeypatch):
    """``bit_batches`` splits the listing into batches of at most ``max(most, N)`` pairs (plus the tail's ``64 ·
    TAIL_WORDS``), each set bit in exactly one of them, against a bit-by-bit scan of 3,000 words of 0 to 64 bits."""
    monkeypatch.setattr(leaf_pairs, "TAIL_WORDS", 4)
    generator = torch.Generator().manual_seed(0)
    n_bits = torch.randint(0, 65, (3000,), generator=generator)
    keep = torch.rand(3000, 64, generator=generator).argsort(1) < n_bits[:, None]  # n_bits random bits of each word
    words = (keep.long() << torch.arange(64)).sum(1)  # the sum of distinct powers of two is their or (bit 63 wraps)
    batches = list(leaf_pairs.bit_batches(words, most))
    found = sorted((i, s) for index, position in batches for i, s in zip(index.tolist(), position.tolist()))
    expected = sorted((i, s) for i, w in enumerate(words.tolist()) for s in range(64) if (w >> s) & 1)
    assert found == expected
    assert all(index.numel() <= max(most, 3000) + 64 * 4 for index, _ in batches)
    assert len(batches) == 1 if most == 10**6 else len(batches) > 1


@pytest.mark.parametrize(
    "player_bits, piece_bits, wide, n_bg",
    [(62, 13, False, 150), (62, 2, False, 150), (62, 13, True, 150), (0, 13, True, 150), (62, 13, False, 100)],
)
def test_pair_form_over_several_background_words(deep_models, player_bits, piece_bits, wide, n_bg, monkeypatch):
    """The pair form with 150 background rows (three 64-bit words, one pass, listed word by word) or 100 (two
    words, listed together) equals the dense tables, also under a 1 MiB memory budget (rows, trees and each
    level's leaf pairs in many chunks; the accumulators kept across tree ranges): with patterns over players
    accumulated in one piece of 6 bits or three of 2, in int32 or in int64 (the dtype of 31 to 62 players; rows
    and nodes int64 too), and with patterns over each path's slots (more than 62 players); each level's background
    cells tabulated or read by each pair; pairs listed in batches of at most 64 and added in parts of at most 20."""
    monkeypatch.setattr(leaf_pairs, "PLAYER_BITS", player_bits)
    monkeypatch.setattr(leaf_pairs, "PIECE_BITS", piece_bits)
    if wide:  # int64 patterns, rows and nodes
        monkeypatch.setattr(leaf_pairs, "pattern_dtype", lambda bits: torch.int64)
        monkeypatch.setattr(leaf_pairs, "INDEX_LIMIT", 0)
    x, models = deep_models
    model = models[3][1]
    plan = LeafPlan(leaf_table(parse_model(model)), torch.from_numpy(x[200 : 200 + n_bg]), None, x.shape[1])
    rows = torch.from_numpy(x[:6])
    dense = torch.zeros(x.shape[1], 6, dtype=torch.float64)
    for chunk in range(len(plan._chunks)):
        plan._dense_values("shapley", chunk, rows, dense)
    tabulated = []
    level_pieces = leaf_pairs._level_pieces
    monkeypatch.setattr(leaf_pairs, "_level_pieces", lambda *a: tabulated.append(1) or level_pieces(*a))
    for cell_pairs in (0, 10**9):  # each level's background cells tabulated, or read by each pair
        monkeypatch.setattr(leaf_pairs, "CELL_PAIRS", cell_pairs)
        tabulated.clear()
        pairs = torch.zeros_like(dense)
        plan._pair_values("shapley", rows, pairs)
        torch.testing.assert_close(pairs, dense, atol=1e-12, rtol=0)
        assert bool(tabulated) == (cell_pairs == 0 and player_bits > 0)
        small = torch.zeros_like(dense)
        # priced at 64 KiB per row, the accumulators take 3 rows per chunk: two chunks of rows, each over two ranges
        with monkeypatch.context() as patch, tx.settings.max_memory("1MiB"):  # pairs in many chunks at every level
            patch.setattr(leaf_values, "accumulator_bytes", lambda m: 1 << 16)
            plan._pair_values("shapley", rows, small)
        torch.testing.assert_close(small, dense, atol=1e-12, rtol=0)
    with monkeypatch.context() as patch:  # listed in batches of a few pairs, added in parts of fewer
        patch.setattr(leaf_pairs, "LIST_BYTES", parse_memory() // 8 // 64)
        patch.setattr(leaf_pairs, "PAIR_BYTES", parse_memory() // 8 // 20)
        parts = torch.zeros_like(dense)
        plan._pair_values("shapley", rows, parts)
    torch.testing.assert_close(parts, dense, atol=1e-12, rtol=0)


def test_pair_form_on_worker_threads(deep_models, monkeypatch):
    """With three intra-op threads the pair form deals its tree ranges (one tree each here) to three worker threads,
    each under a third of the caller's budget and with its own accumulator: the values equal the dense tables and
    one worker's, and the caller's thread count is unchanged."""
    x, models = deep_models
    model = models[3][1]  # LightGBM, 4 leaf-wise trees
    plan = LeafPlan(leaf_table(parse_model(model)), torch.from_numpy(x[200:300]), None, x.shape[1])
    rows = torch.from_numpy(x[:8])
    dense = torch.zeros(x.shape[1], 8, dtype=torch.float64)
    for chunk in range(len(plan._chunks)):
        plan._dense_values("shapley", chunk, rows, dense)
    monkeypatch.setattr(leaf_values, "WALK_BYTES", 1)  # a range per tree
    plan._probe(rows)  # the cost model's probe of the walk, on the caller's thread, before the calls counted
    calls: list[tuple[int, int]] = []
    traced = leaf_values.pair_values

    def pair_values(table, walk, *args):
        calls.append((threading.get_ident(), parse_memory()))
        return traced(table, walk, *args)

    monkeypatch.setattr(leaf_values, "pair_values", pair_values)
    threads = torch.get_num_threads()
    values = {}
    try:
        for count in (1, 3):
            torch.set_num_threads(count)
            calls.clear()
            values[count] = torch.zeros_like(dense)
            with tx.settings.max_memory("6MiB"):
                plan._pair_values("shapley", rows, values[count])
            assert torch.get_num_threads() == count
            assert len(calls) == 4  # the four trees, one range each
            assert len({ident for ident, _ in calls}) == count
            assert {budget for _, budget in calls} == {6 * 2**20 // count}
    finally:
        torch.set_num_threads(threads)
    torch.testing.assert_close(values[3], dense, atol=1e-12, rtol=0)
    torch.testing.assert_close(values[3], values[1], atol=1e-13, rtol=0)


def test_spectrum_terms_cap_decides_as_the_full_bound(deep_models):
    """With a cap, ``spectrum_terms`` may stop at a lower bound, but it is above the cap exactly when the full
    bound is (the route rule of ``route='auto'``)."""
    _, models = deep_models
    for _, model in models:
        table = leaf_table(parse_model(model))
        full = spectrum_terms(table)
        for cap in (0, 1, full // 3, full - 1, full, 2 * full):
            assert (spectrum_terms(table, cap) > cap) == (full > cap)


def test_piece_shape_covers_every_player():
    """The accumulators' pieces cover all ``m`` players, each at most ``PIECE_BITS`` wide, no piece wasted."""
    for m in range(1, 63):
        n, width = leaf_pairs.piece_shape(m)
        assert n * width >= m > (n - 1) * width and width <= leaf_pairs.PIECE_BITS


def _reached_leaves(estimator, rows: np.ndarray, background: np.ndarray) -> set[tuple[int, int, int]]:
    """(row, background row, leaf) of one sklearn tree such that some hybrid ``(x_S, b_{~S})`` reaches the leaf: all
    ``2^p`` coalitions put through the tree's own ``apply``."""
    p = rows.shape[1]
    masks = np.array(list(itertools.product([False, True], repeat=p)))  # (2^p, p): True takes the row's value
    found = set()
    for i, row in enumerate(rows):
        for j, other in enumerate(background):
            leaves = estimator.apply(np.where(masks, row, other).astype(np.float32))
            found.update((i, j, int(leaf)) for leaf in leaves)
    return found


def _satisfied(estimator, x: np.ndarray, background: np.ndarray) -> list[tuple[int, list[int]]]:
    """Per leaf of one sklearn tree: its number of distinct path features ``d`` and each background row's satisfied
    pattern over them — feature ``i`` satisfied when a training row that reaches the leaf, given the background
    row's value of ``i``, still reaches it (the tree's own ``apply``)."""
    tree, at = estimator.tree_, estimator.apply(x.astype(np.float32))
    out = []
    for leaf in np.flatnonzero(tree.children_left < 0):
        row = x[np.flatnonzero(at == leaf)[0]]  # every leaf holds a training row
        path = estimator.decision_path(row[None].astype(np.float32)).indices
        features = sorted({int(tree.feature[n]) for n in path if tree.children_left[n] >= 0})
        moved = np.repeat(row[None, None], len(background), 0).repeat(len(features), 1)  # (B, d, p)
        for s, feature in enumerate(features):
            moved[:, s, feature] = background[:, feature]
        stays = estimator.apply(moved.reshape(-1, x.shape[1]).astype(np.float32)).reshape(len(background), -1) == leaf
        out.append((len(features), [int((stay * (1 << np.arange(len(features)))).sum()) for stay in stays]))
    return out


def test_cost_model_probes_count_pairs_and_emission(deep_models):
    """The two measurements the form router prices from, against the trees' own ``apply``: the pair probe's (row,
    background row, leaf) pairs on 4 rows, 3 trees and 40 background rows equal the triples some hybrid of the
    row and the background row reaches (all 64 coalitions); the emission per dense table entry on the first two
    trees equals the distinct satisfied patterns' ``Σ 2^{|q|}`` per number of path features ``d`` (at most
    ``d (d + 1)`` per entry), over the trees' ``Σ 2^d``."""
    x, models = deep_models
    forest = models[1][1]  # RandomForestRegressor: 3 trees of depth 14 on 6 features
    background, rows = x[200:240], x[:4]
    plan = LeafPlan(leaf_table(parse_model(forest)), torch.from_numpy(background), None, x.shape[1])
    visits, _, pairs = plan._probe(torch.from_numpy(rows))
    reached = sum(len(_reached_leaves(tree, rows, background)) for tree in forest.estimators_)
    assert visits > 0
    assert pairs * len(rows) * 3 * len(background) == pytest.approx(reached, rel=1e-12)
    emitted: dict[int, int] = {}
    sizes: dict[int, int] = {}
    for tree in forest.estimators_[:2]:
        for d, patterns in _satisfied(tree, x, background):
            emitted[d] = emitted.get(d, 0) + sum(1 << bin(q).count("1") for q in set(patterns))
            sizes[d] = sizes.get(d, 0) + (1 << d)
    ranked = {d: leaf_values.RANKED_NS * d * (d + 1) * sizes[d] for d in sizes}
    want = sum(min(leaf_values.EMIT_NS * emitted[d], ranked[d]) for d in emitted) / sum(sizes.values())
    assert plan._emission() == pytest.approx(want, rel=1e-12)


def test_emission_probe_within_the_budget(deep_models, monkeypatch):
    """Where not even the first tree's background counts and patterns fit half the budget, the emission probe counts
    nothing and prices the bound, the ranked transform's ``d (d + 1)`` per entry at every leaf (each leaf's ``d``
    from the trees' own ``decision_path``); under the default budget it counts the first two trees."""
    x, models = deep_models
    forest = models[1][1]
    background = x[200:500]  # 300 rows: 16 bytes each per leaf, over 512 KiB for one tree of about 300 leaves
    with tx.settings.max_memory("1MiB"):
        plan = LeafPlan(leaf_table(parse_model(forest)), torch.from_numpy(background), None, x.shape[1])
        counted = []
        monkeypatch.setattr(leaf_values, "fail_counts", lambda *args: counted.append(1))
        bound = plan._emission()
    assert not counted
    d = np.array([n for tree in forest.estimators_ for n, _ in _satisfied(tree, x, background[:1])], dtype=float)
    assert bound == pytest.approx(leaf_values.RANKED_NS * (d * (d + 1) * 2**d).sum() / (2**d).sum(), rel=1e-12)
    monkeypatch.undo()
    plan._emitted = None
    assert plan._emission() < bound  # counted on two trees: the emission is cheaper than the bound here


@pytest.mark.parametrize("form", ["emission", "ranked"])
@pytest.mark.parametrize("kind", ["shapley", "banzhaf"])
def test_background_arrays_match_their_definition(form, kind, monkeypatch):
    """``_emit``'s arrays ``G, H, H↑`` of 3 leaves of 5 players from random counts of background fail patterns, by
    either form (the emission of sub-patterns, the ranked superset sums), equal their definition summed directly:
    ``G[F] = Σ_{q ⊇ F} N_q g(d − |q|, |F|)``, ``H`` with ``h``, ``H↑`` with ``h(d − |q|, |F| − 1)`` (0 at F = ∅)."""
    monkeypatch.setattr(leaf_values, "EMIT_NS" if form == "emission" else "RANKED_NS", 0.0)
    d, n_leaves = 5, 3
    counts = torch.from_numpy(np.random.default_rng(3).poisson(0.4, n_leaves << d))
    g, h = weight_tables(kind, d)
    want = np.zeros((3, n_leaves << d))
    for leaf in range(n_leaves):
        for fails in range(1 << d):
            for background_fails in range(1 << d):
                satisfied = (1 << d) - 1 - background_fails
                if fails & ~satisfied:
                    continue
                n = float(counts[(leaf << d) + background_fails])
                a, b = d - bin(satisfied).count("1"), bin(fails).count("1")
                want[0, (leaf << d) + fails] += n * float(g[a, b])
                want[1, (leaf << d) + fails] += n * float(h[a, b])
                want[2, (leaf << d) + fails] += n * float(h[a, b - 1]) if b else 0.0
    np.testing.assert_allclose(leaf_values._emit(counts, d, kind, torch.float64).numpy(), want, atol=1e-12)


_PRICED = re.compile(
    r"priced ([0-9.e+-]+) s for the pair form against ([0-9.e+-]+)(?: to ([0-9.e+-]+))? s for the dense form "
    r"\(2,400 rows against 40 background rows, one thread\)$"
)


def test_explanation_reports_the_leaf_form_and_why(deep_models, monkeypatch):
    """``route_reason`` names the form of the leaf values that ran (the plan's own record, read after the call)
    and why: where both forms are priced, the one taken is the cheaper (the dense price a range where its emission
    was not measured: pairs below its low end, dense at most the pair price at its high end); a dense form too
    cheap to price the pairs says so; leaves past the dense limit take pairs, with the same values. A call in parts
    (chunks of rows) gives each distinct part's reason once, with its share of the parts where they differ."""
    x, models = deep_models
    forest = models[1][1]  # RandomForestRegressor: 3 trees of depth 14 on 6 features
    background = torch.from_numpy(x[200:240])
    taken: list[str] = []
    values = LeafPlan._values

    def spy(self, kind, rows):
        out = values(self, kind, rows)
        taken.append(self.route)
        return out

    monkeypatch.setattr(LeafPlan, "_values", spy)
    rows = torch.from_numpy(np.tile(x, (4, 1)))  # 2,400 rows: the dense form over the 10 ms below which it is taken
    explanation = tx.FourierShap.from_trees(forest, background, route="leaves").explain(rows)
    found = _PRICED.search(explanation.route_reason)
    assert explanation.route == "leaves" and found is not None, explanation.route_reason
    paired, low = float(found[1]), float(found[2])
    high = float(found[3]) if found[3] else low
    if taken[-1] == "pairs":
        assert explanation.route_reason.startswith("the pair form of the leaf values: ") and paired < low
    else:
        assert explanation.route_reason.startswith("the dense form of the leaf values: ") and high <= paired
    one = tx.FourierShap.from_trees(forest, background, route="leaves").explain(rows[:1])
    assert taken[-1] == "dense" and one.route_reason.startswith("the dense form of the leaf values: the dense form is")
    assert one.route_reason.endswith("s, too little to price the pair form")
    monkeypatch.setattr(leaf_values, "MAX_DENSE_SLOTS", 2)
    deep = tx.FourierShap.from_trees(forest, background, route="leaves").explain(rows[:3])
    assert taken[-1] == "pairs" and deep.route_reason == (
        "the pair form of the leaf values: leaves of more than 2 players have no dense tables (3 rows against 40 "
        "background rows, one thread)"
    )
    torch.testing.assert_close(deep.values, explanation.values[:3], atol=1e-12, rtol=0)
    halves = tx.FourierShap.from_trees(forest, background, route="leaves").explain(rows[:6], internal_batch_size=3)
    assert halves.route_reason == deep.route_reason  # two parts with one reason: given once
    monkeypatch.undo()
    n = rows.shape[0]
    split = tx.FourierShap.from_trees(forest, background, route="leaves").explain(rows, internal_batch_size=n - 1)
    first, last = split.route_reason.split("; ")  # each part's reason once, with its share
    assert first.endswith(f"({n - 1:,} rows against 40 background rows, one thread) (1 of 2 parts)")
    if first.startswith("the dense form"):  # the second part finds the tables built
        assert last == (
            "the dense form of the leaf values: the background's dense tables are built already (rows cost the "
            "same either way) (1 of 2 parts)"
        )
    else:
        assert last == f"{one.route_reason} (1 of 2 parts)"
    torch.testing.assert_close(split.values, explanation.values, atol=1e-12, rtol=0)

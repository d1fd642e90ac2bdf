"""Exact tree spectra: the spectrum evaluates to the model's own output (scikit-learn, XGBoost, LightGBM,
HistGradientBoosting, CatBoost)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.linear_model import LinearRegression

from tests.fourier.tree_cases import (
    EXTRA_KINDS,
    MODEL_KINDS,
    binary_data,
    breast_cancer,
    diabetes,
    fit,
    make_model,
    model_output,
)
from torchxplain import tree_spectrum
from torchxplain.fourier import TreeEncoding, parse_model
from torchxplain.testing import tiny_memory_budget

TOL = 1e-9


def _check_xgb_trees(model, x: np.ndarray, spectrum_out: np.ndarray, target: int = 0) -> None:
    """XGBoost predicts in float32, so check the float64 tree sum against XGBoost's own routing (pred_leaf) and
    its own leaf table (trees_to_dataframe), and the total against predict(output_margin=True) to float32."""
    booster = model.get_booster()
    frame = booster.trees_to_dataframe()
    leaf_value = {
        (int(t), int(n)): float(np.float32(g))
        for t, n, g, f in zip(frame.Tree, frame.Node, frame.Gain, frame.Feature)
        if f == "Leaf"
    }
    xgb = pytest.importorskip("xgboost")
    leaves = booster.predict(xgb.DMatrix(x), pred_leaf=True).reshape(len(x), -1)
    n_class = int(getattr(model, "n_classes_", 1))
    n_class = n_class if n_class > 2 else 1
    trees = [t for t in range(leaves.shape[1]) if t % n_class == target]
    tree_sum = np.array([sum(leaf_value[(t, int(row[t]))] for t in trees) for row in leaves])
    offset = parse_model(model, None if n_class == 1 else target).offset
    np.testing.assert_allclose(spectrum_out - offset, tree_sum, atol=TOL * max(1.0, np.abs(tree_sum).max()), rtol=0)
    margin = model.predict(x, output_margin=True).astype(np.float64)
    margin = margin if margin.ndim == 1 else margin[:, target]
    np.testing.assert_allclose(spectrum_out, margin, atol=2e-6 * max(1.0, np.abs(margin).max()), rtol=0)


@pytest.mark.parametrize("kind", MODEL_KINDS + EXTRA_KINDS)
@pytest.mark.parametrize("n,depth", [(13, 1), (13, 4), (40, 6), (80, 8)])
def test_binary_spectrum_is_the_model(kind: str, n: int, depth: int) -> None:
    """Binary classifiers need no target: the positive class (probability, or log-odds for boosting)."""
    x, y = binary_data(n, rows=300, seed=n + depth)
    model = fit(kind, depth, x, y)
    spec = tree_spectrum(model)
    assert spec.n_features == n and spec.degree <= depth
    out = spec.evaluate(torch.from_numpy(x)).numpy()
    if kind.startswith("xgb"):
        _check_xgb_trees(model, x, out)
        return
    ref = model_output(model, kind, x)
    np.testing.assert_allclose(out, ref, atol=TOL * max(1.0, float(np.abs(ref).max())), rtol=0)


@pytest.mark.parametrize("kind", MODEL_KINDS + EXTRA_KINDS)
@pytest.mark.parametrize("data", ["diabetes", "breast_cancer"])
def test_continuous_spectrum_is_the_model(kind: str, data: str) -> None:
    """Continuous inputs need no encoding argument: the spectrum lives on TreeEncoding.from_model(model)."""
    x, y = diabetes() if data == "diabetes" else breast_cancer()
    model = fit(kind, 4, x, y)
    encoding = TreeEncoding.from_model(model)
    assert bool((encoding.groups < x.shape[1]).all())
    spec = tree_spectrum(model)
    assert spec.n_features == encoding.n_binary
    assert len(tree_spectrum(model, encoding=encoding)) == len(spec)
    out = spec.evaluate(encoding.transform(torch.from_numpy(x))).numpy()
    if kind.startswith("xgb"):
        _check_xgb_trees(model, x, out)
        return
    ref = model_output(model, kind, x)
    np.testing.assert_allclose(out, ref, atol=TOL * max(1.0, float(np.abs(ref).max())), rtol=0)


@pytest.mark.parametrize("kind", ["rf_clf", "gbm_clf", "xgb_clf", "lgb_clf", "hgb_clf", "cat_clf"])
def test_multiclass_targets(kind: str) -> None:
    x, y = binary_data(13, rows=300, seed=3, classes=3)
    model = fit(kind, 3, x, y)
    if kind == "cat_clf":
        model = make_model(kind, 3).set_params(loss_function="MultiClass").fit(x, y)
    with pytest.raises(ValueError, match=r"3 outputs .*pass target=<index in 0..2>"):
        tree_spectrum(model)
    for target in range(3):
        out = tree_spectrum(model, target).evaluate(torch.from_numpy(x)).numpy()
        if kind == "xgb_clf":
            _check_xgb_trees(model, x, out, target)
        else:
            ref = model_output(model, kind, x, target)
            np.testing.assert_allclose(out, ref, atol=TOL * max(1.0, float(np.abs(ref).max())), rtol=0)


@pytest.mark.parametrize("kind", ["tree_reg", "rf_reg", "xgb_reg", "lgb_reg", "hgb_reg", "cat_reg"])
def test_missing_values_follow_the_model(kind: str) -> None:
    x, y = diabetes()
    x = x.copy()
    rng = np.random.default_rng(0)
    x[rng.random(x.shape) < 0.15] = np.nan
    model = fit(kind, 4, x, y)
    encoding = TreeEncoding.from_model(model)
    assert bool(encoding.nan_right.any()) or kind == "cat_reg"  # CatBoost's default nan_mode='Min' goes left
    out = tree_spectrum(model, encoding=encoding).evaluate(encoding.transform(torch.from_numpy(x))).numpy()
    if kind == "xgb_reg":
        _check_xgb_trees(model, x, out)
        return
    ref = model_output(model, kind, x)
    np.testing.assert_allclose(out, ref, atol=TOL * float(np.abs(ref).max()), rtol=0)


def test_lightgbm_zero_as_missing() -> None:
    lgb = pytest.importorskip("lightgbm")
    x, y = diabetes()
    x = np.where(np.abs(x) < 0.01, 0.0, x)
    model = lgb.LGBMRegressor(n_estimators=5, num_leaves=8, zero_as_missing=True, verbose=-1, n_jobs=1).fit(x, y)
    encoding = TreeEncoding.from_model(model)
    assert bool(encoding.zero_is_missing.any())
    out = tree_spectrum(model, encoding=encoding).evaluate(encoding.transform(torch.from_numpy(x))).numpy()
    np.testing.assert_allclose(out, model.predict(x, raw_score=True), atol=TOL * np.abs(y).max(), rtol=0)


def test_early_stopping_and_lightgbm_random_forest_mode() -> None:
    """Early-stopped models are explained up to their best iteration, as their predict does; LightGBM's
    random-forest mode averages its trees (its raw_score is the plain sum, so compare with predict)."""
    lgb = pytest.importorskip("lightgbm")
    xgb = pytest.importorskip("xgboost")
    x, y = diabetes()
    fit_rows, valid = slice(0, 300), slice(300, None)
    booster = lgb.LGBMRegressor(n_estimators=200, num_leaves=8, verbose=-1, n_jobs=1).fit(
        x[fit_rows], y[fit_rows], eval_set=[(x[valid], y[valid])], callbacks=[lgb.early_stopping(3, verbose=False)]
    )
    assert booster.best_iteration_ < 200
    xgbm = xgb.XGBRegressor(n_estimators=200, max_depth=3, early_stopping_rounds=3, n_jobs=1).fit(
        x[fit_rows], y[fit_rows], eval_set=[(x[valid], y[valid])], verbose=False
    )
    assert xgbm.best_iteration < 199
    forest = lgb.LGBMRegressor(
        boosting_type="rf", n_estimators=6, num_leaves=8, bagging_freq=1, bagging_fraction=0.7, verbose=-1, n_jobs=1
    ).fit(x, y)
    for model, ref, tol in (
        (booster, booster.predict(x), TOL),
        (forest, forest.predict(x), TOL),
        (xgbm, xgbm.predict(x, output_margin=True), 2e-6),
    ):
        encoding = TreeEncoding.from_model(model)
        out = tree_spectrum(model, encoding=encoding).evaluate(encoding.transform(torch.from_numpy(x))).numpy()
        np.testing.assert_allclose(out, ref, atol=tol * np.abs(y).max(), rtol=0)


def test_xgboost_booster_and_random_forest_mode() -> None:
    xgb = pytest.importorskip("xgboost")
    x, y = binary_data(13, seed=5)
    booster = xgb.train({"max_depth": 3, "eta": 0.5}, xgb.DMatrix(x, y), num_boost_round=4)
    out = tree_spectrum(booster).evaluate(torch.from_numpy(x)).numpy()
    margin = booster.predict(xgb.DMatrix(x), output_margin=True)
    np.testing.assert_allclose(out, margin, atol=2e-6 * np.abs(margin).max(), rtol=0)
    forest = xgb.XGBRFRegressor(n_estimators=4, max_depth=3).fit(x, y)
    out = tree_spectrum(forest).evaluate(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(out, forest.predict(x), atol=2e-6 * np.abs(y).max(), rtol=0)


def test_spectrum_is_exact_on_the_whole_cube() -> None:
    """Amplitudes equal the Walsh–Hadamard transform of the model tabulated on all of {0,1}^8."""
    x, y = binary_data(8, seed=1)
    model = fit("rf_reg", 5, x, y)
    cube = np.array([[(s >> i) & 1 for i in range(8)] for s in range(256)], dtype=np.float64)
    table = model.predict(cube)
    signs = 1.0 - 2.0 * ((cube @ cube.T) % 2)  # (-1)^{<f, x>} with frequencies enumerated like inputs
    dense = signs @ table / 256.0
    spec = tree_spectrum(model)
    index = (spec.frequencies.long() * (2 ** torch.arange(8))).sum(1).numpy()
    recovered = np.zeros(256)
    recovered[index] = spec.amplitudes.numpy()
    np.testing.assert_allclose(recovered, dense, atol=1e-12, rtol=0)
    assert len(np.unique(index)) == len(index)  # duplicates were merged


def test_depth_and_size_bounds() -> None:
    x, y = binary_data(40, seed=2)
    model = fit("rf_reg", 6, x, y)
    spec = tree_spectrum(model)
    leaves = sum(int((t.tree_.children_left < 0).sum()) for t in model.estimators_)
    assert len(spec) <= 1 + sum(4**t.tree_.max_depth // 3 + 1 for t in model.estimators_)
    assert spec.degree <= 6 and leaves > 0
    with pytest.raises(ValueError, match="max_terms"):
        tree_spectrum(model, max_terms=10)


def test_float32_and_memory_budget() -> None:
    x, y = binary_data(13, seed=4)
    model = fit("gbm_reg", 5, x, y)
    exact = tree_spectrum(model)
    with tiny_memory_budget(4096):
        small, families = tree_spectrum(model, return_families=True)  # merges duplicates many times on the way
    assert len(small) == len(exact) and families.family.shape == (len(small),)
    assert torch.equal(small.frequencies, exact.frequencies)
    xt = torch.from_numpy(x)
    np.testing.assert_allclose(small.evaluate(xt).numpy(), exact.evaluate(xt).numpy(), atol=1e-12, rtol=0)
    f32 = tree_spectrum(model, dtype=torch.float32)
    assert f32.dtype == torch.float32
    assert float((f32.evaluate(xt.float()).double() - exact.evaluate(xt)).abs().max()) < 1e-4


# --- bad input -----------------------------------------------------------------------------------------
def test_unsupported_model_names_type_and_supported_list() -> None:
    model = LinearRegression().fit(np.eye(3), np.arange(3.0))
    pattern = r"LinearRegression.*supported: sklearn DecisionTree.*HistGradient.*xgboost.*lightgbm.*catboost"
    with pytest.raises(TypeError, match=pattern + r".*tx.FourierShap\(forward_func, background\)"):
        tree_spectrum(model)


def test_unfitted_model() -> None:
    with pytest.raises(ValueError, match="not fitted"):
        tree_spectrum(make_model("rf_reg", 3))


@pytest.mark.parametrize("kind", ["rf_clf", "tree_clf"])
def test_probability_targets(kind: str) -> None:
    x, y = binary_data(13)
    model = fit(kind, 3, x, y)
    xt = torch.from_numpy(x)
    for target in (0, 1):
        out = tree_spectrum(model, target=target).evaluate(xt).numpy()
        np.testing.assert_allclose(out, model.predict_proba(x)[:, target], atol=TOL, rtol=0)
    with pytest.raises(ValueError, match="target must be in 0..1"):
        tree_spectrum(model, target=2)
    with pytest.raises(TypeError, match="target must be an int"):
        tree_spectrum(model, target=1.0)


def test_continuous_splits_refuse_a_binary_encoding() -> None:
    x, y = diabetes()
    model = fit("rf_reg", 3, x, y)
    with pytest.raises(ValueError, match="not a function of binary inputs; use encoding='thresholds'"):
        tree_spectrum(model, encoding="binary")
    with pytest.raises(ValueError, match="encoding must be one of"):
        tree_spectrum(model, encoding="onehot")


def test_encoding_checks() -> None:
    x, y = diabetes()
    model = fit("rf_reg", 3, x, y)
    encoding = TreeEncoding.from_model(model)
    with pytest.raises(ValueError, match="x has 9 features .* expected 10"):
        encoding.transform(torch.zeros(2, 9))
    other = TreeEncoding.from_model(fit("rf_reg", 3, x, y, seed=1))
    with pytest.raises(ValueError, match="a split the encoding does not have"):
        tree_spectrum(model, encoding=other)
    narrow = TreeEncoding.from_model(fit("rf_reg", 3, x[:, :5], y))
    with pytest.raises(ValueError, match="encoding has 5 features"):
        tree_spectrum(model, encoding=narrow)
    with pytest.raises(TypeError, match="encoding must be one of .* got int"):  # a wrong type is a TypeError
        tree_spectrum(model, encoding=3)
    with pytest.raises(ValueError, match="encoding must be one of .* got 'onehot'"):
        tree_spectrum(model, encoding="onehot")


def test_binary_spectrum_rejects_non_binary_inputs() -> None:
    x, y = binary_data(13)
    spec = tree_spectrum(fit("rf_reg", 3, x, y))
    with pytest.raises(ValueError, match="binary"):
        spec.evaluate(torch.full((2, 13), 0.5, dtype=torch.float64))

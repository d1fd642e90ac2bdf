"""Which output a parsed tree ensemble explains: classifier defaults, stated outputs and scales, DataFrames."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestClassifier
from sklearn.linear_model import LogisticRegression

import torchxplain as tx
from tests.fourier.tree_cases import binary_data, breast_cancer, diabetes, fit, make_model, model_output
from torchxplain import tree_spectrum
from torchxplain.fourier import TreeEncoding, parse_model
from torchxplain.fourier.trees.adapters._dispatch import parse_model_outputs, supports

TOL = 1e-9
BINARY_OUTPUTS = {
    "rf_clf": "predict_proba[:, 1] (probability of class 1)",
    "tree_clf": "predict_proba[:, 1] (probability of class 1)",
    "gbm_clf": "decision_function (log-odds of class 1)",
    "hgb_clf": "decision_function (log-odds of class 1)",
    "xgb_clf": "predict(output_margin=True) (log-odds of class 1)",
    "lgb_clf": "predict(raw_score=True) (log-odds of class 1)",
    "cat_clf": "predict(prediction_type='RawFormulaVal') (log-odds of class 1)",
}


def _reference(model, kind: str, x: np.ndarray, target: int) -> np.ndarray:
    """The class-``target`` output from the library (class 0 of a boosted model: minus its margin)."""
    if kind in ("rf_clf", "tree_clf"):
        return model.predict_proba(x)[:, target]
    margin = model_output(model, kind, x)
    return margin if target == 1 else -margin


@pytest.mark.parametrize("kind", sorted(BINARY_OUTPUTS))
def test_binary_classifiers_default_to_the_positive_class_on_their_own_scale(kind: str) -> None:
    x, y = breast_cancer()
    model = fit(kind, 3, x, y)
    ensemble = parse_model(model)
    assert ensemble.output == BINARY_OUTPUTS[kind] and ensemble.target == 1
    assert BINARY_OUTPUTS[kind] in ensemble.description
    encoding = TreeEncoding.from_model(model)
    bits = encoding.transform(torch.from_numpy(x))
    for target in (None, 1, 0):
        out = tree_spectrum(model, target=target).evaluate(bits).numpy()  # continuous: no encoding argument
        ref = _reference(model, kind, x, 1 if target is None else target)
        tol = (2e-6 if kind == "xgb_clf" else TOL) * max(1.0, float(np.abs(ref).max()))
        np.testing.assert_allclose(out, ref, atol=tol, rtol=0)
    negative = parse_model(model, target=0).output
    assert "class 0" in negative and (negative.startswith("-") or "predict_proba[:, 0]" in negative)


@pytest.mark.parametrize("kind", ["rf_clf", "gbm_clf", "hgb_clf", "xgb_clf", "lgb_clf", "cat_clf"])
def test_multiclass_models_give_one_ensemble_per_class(kind: str) -> None:
    x, y = binary_data(13, rows=300, seed=3, classes=3)
    model = fit(kind, 3, x, y)
    outputs = parse_model_outputs(model)
    assert [e.target for e in outputs] == [0, 1, 2]
    scale = "probability" if kind == "rf_clf" else "softmax logit"
    for c, ensemble in enumerate(outputs):
        assert ensemble.output.endswith(f"[:, {c}] ({scale} of class {c})"), ensemble.output
    assert [e.output for e in parse_model_outputs(model, target=2)] == [outputs[2].output]
    encoding = TreeEncoding.from_model(model)  # every class's splits: one encoding serves each class
    bits = encoding.transform(x)
    for target in range(3):
        out = tree_spectrum(model, target, encoding=encoding).evaluate(bits).numpy()
        ref = model_output(model, kind, x, target)
        tol = (2e-6 if kind == "xgb_clf" else TOL) * max(1.0, float(np.abs(ref).max()))
        np.testing.assert_allclose(out, ref, atol=tol, rtol=0)


def test_class_labels_are_named() -> None:
    x, y = binary_data(13)
    labels = np.where(y > np.median(y), "yes", "no")
    model = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(x, labels)
    assert parse_model(model).output == "predict_proba[:, 1] (probability of class 1, label 'yes')"


def test_regressor_outputs() -> None:
    x, y = diabetes()
    assert parse_model(fit("rf_reg", 3, x, y)).output == "predict (output units)"
    assert parse_model(fit("rf_reg", 3, x, y)).target is None
    multi = make_model("rf_reg", 3).fit(x, np.stack([y, -y], 1))
    outputs = parse_model_outputs(multi)
    assert [e.output for e in outputs] == ["predict[:, 0] (output units)", "predict[:, 1] (output units)"]
    enc = TreeEncoding.from_model(multi)
    out = tree_spectrum(multi, target=1).evaluate(enc.transform(torch.from_numpy(x))).numpy()
    np.testing.assert_allclose(out, multi.predict(x)[:, 1], atol=TOL * np.abs(y).max(), rtol=0)
    with pytest.raises(ValueError, match=r"2 outputs \(predict\[:, 0\] \(output units\), ...\); pass target="):
        tree_spectrum(multi)


# --- DataFrames and feature names ------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["rf_reg", "hgb_reg", "xgb_reg", "lgb_reg", "cat_reg"])
def test_dataframe_column_names_flow_into_the_encoding(kind: str) -> None:
    x, y = diabetes()
    columns = [f"f{i}" for i in range(x.shape[1])]
    frame = pd.DataFrame(x, columns=columns)
    model = fit(kind, 3, frame, y)
    encoding = TreeEncoding.from_model(model)
    assert encoding.feature_names == tuple(columns)
    from_frame = encoding.transform(frame)
    assert torch.equal(from_frame, encoding.transform(x))  # numpy array, no names: accepted as is
    ref = model_output(model, kind, frame)
    tol = (2e-6 if kind == "xgb_reg" else TOL) * float(np.abs(ref).max())  # XGBoost predicts in float32
    np.testing.assert_allclose(tree_spectrum(model).evaluate(from_frame).numpy(), ref, atol=tol, rtol=0)
    with pytest.raises(ValueError, match=r"x has columns that differ .*missing \['f0'\], unexpected \['age'\]"):
        encoding.transform(frame.rename(columns={"f0": "age"}))
    with pytest.raises(ValueError, match="the same names in another order"):
        encoding.transform(frame[columns[::-1]])


def test_from_trees_checks_a_background_frame_against_the_models_columns() -> None:
    """A background frame with the model's columns permuted would explain permuted features: refused."""
    x, y = binary_data(6, 200)
    columns = [f"b{i}" for i in range(x.shape[1])]
    frame = pd.DataFrame(x, columns=columns)
    model = fit("rf_reg", 3, frame, y)
    explainer = tx.FourierShap.from_trees(model, frame.iloc[:20])
    assert explainer.feature_names == tuple(columns)
    with pytest.raises(ValueError, match="background has columns that differ .*the same names in another order"):
        tx.FourierShap.from_trees(model, frame[columns[::-1]].iloc[:20])
    with pytest.raises(ValueError, match=r"missing \['b0'\], unexpected \['z'\]"):
        tx.FourierShap.from_trees(model, frame.rename(columns={"b0": "z"}).iloc[:20])
    unnamed = tx.FourierShap.from_trees(model, x[:20])  # an array carries no names: nothing to check
    assert torch.equal(unnamed.attribute(x[20:30]), explainer.attribute(frame.iloc[20:30]))


def test_arrays_lists_and_unnamed_frames_are_accepted() -> None:
    """The issue's repro: transform(pd.DataFrame(x)) of a model fitted on an array raised pandas KeyError: 10."""
    x, y = diabetes()
    encoding = TreeEncoding.from_model(fit("rf_reg", 3, x, y))
    ref = encoding.transform(torch.from_numpy(x))
    for variant in (x, pd.DataFrame(x), x.tolist(), x.astype(np.float32)):
        assert torch.equal(encoding.transform(variant)[:, :].bool(), ref.bool())
    with pytest.raises(TypeError, match="x column 'c' has dtype .*not numeric; encode it first"):
        encoding.transform(pd.DataFrame(x).assign(c="a"))
    with pytest.raises(ValueError, match="x has 11 features"):
        encoding.transform(pd.DataFrame(x).assign(c=1.0))


# --- refusals --------------------------------------------------------------------------------------------
def test_unsupported_models_list_the_families_and_the_next_step() -> None:
    x, y = binary_data(13)
    model = LogisticRegression().fit(x, y > np.median(y))
    assert not supports(model)
    with pytest.raises(TypeError, match=r"LogisticRegression is not a supported tree model") as err:
        parse_model_outputs(model)
    message = str(err.value)
    for family in ("RandomForest", "HistGradientBoosting", "XGBClassifier", "LGBMClassifier", "CatBoostClassifier"):
        assert family in message
    assert "tx.FourierShap(forward_func, background)" in message


def test_histgradientboosting_categorical_features_take_the_leaf_route() -> None:
    """A categorical feature (integer codes here; ``category`` columns in tests/fourier/test_trees_leaves.py) has
    no spectrum: ``tree_spectrum`` refuses with the route that explains it, which reproduces ``predict``."""
    x, y = diabetes()
    frame = pd.DataFrame(x, columns=[f"f{i}" for i in range(10)]).assign(sex=(x[:, 1] > 0).astype(int) * 3 + 2)
    model = HistGradientBoostingRegressor(max_iter=3, categorical_features=["sex"]).fit(frame, y)
    with pytest.raises(ValueError, match=r"categorical splits.*FourierShap.from_trees\(model, background\)"):
        tree_spectrum(model)
    explainer = tx.FourierShap.from_trees(model, frame.iloc[:30])
    assert explainer.provider is not None and explainer.provider.route == "leaves"
    np.testing.assert_allclose(explainer.predict(frame.iloc[:50]).numpy(), model.predict(frame.iloc[:50]), atol=1e-12)

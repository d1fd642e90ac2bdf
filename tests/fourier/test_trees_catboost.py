"""CatBoost: exact spectra of oblivious (and other) trees, SHAP against brute force and CatBoost's own values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import torchxplain as tx
from tests.fourier.tree_cases import binary_data, brute_force_values, coalition_values, diabetes
from torchxplain.fourier import TreeEncoding, TreeEnsemble, parse_model
from torchxplain.fourier.trees._extraction import spectrum_of_ensemble
from torchxplain.fourier.trees.adapters._base import ObliviousBlock, concat_trees

cb = pytest.importorskip("catboost")
TOL = 1e-9
AVGFP = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "avgfp_sarkisyan2016"


def _model(cls=None, **params):
    cls = cls or cb.CatBoostRegressor
    options = {"iterations": 10, "depth": 4, "verbose": 0, "thread_count": 1, "random_seed": 0}
    return cls(**{**options, "allow_writing_files": False, **params})


def _raw(model, x: np.ndarray) -> np.ndarray:
    return model.predict(x, prediction_type="RawFormulaVal")


def _catboost_shap(model, x: np.ndarray, background: np.ndarray) -> np.ndarray:
    """CatBoost's interventional SHAP values (exact: checked against brute force below), ``(Q, p)``."""
    data = cb.Pool(x, label=np.zeros(len(x)))
    reference = cb.Pool(background, label=np.zeros(len(background)))
    values = model.get_feature_importance(type="ShapValues", data=data, reference_data=reference)
    return values[..., :-1]


def _brute_force(model, x: np.ndarray, background: np.ndarray) -> np.ndarray:
    return brute_force_values(coalition_values(lambda z: _raw(model, z), x, background))


@pytest.mark.parametrize(
    "params",
    [
        {"depth": 1},
        {"depth": 6},
        {"depth": 3, "nan_mode": "Max"},
        {"depth": 4, "grow_policy": "Lossguide", "max_leaves": 9},
        {"depth": 4, "grow_policy": "Depthwise"},
    ],
)
@pytest.mark.parametrize("data", ["binary", "diabetes"])
def test_spectrum_reproduces_raw_formula_val_on_every_training_row(params: dict, data: str) -> None:
    x, y = binary_data(12, rows=400, seed=2) if data == "binary" else diabetes()
    x = x.copy()
    if data == "diabetes":
        x[np.random.default_rng(0).random(x.shape) < 0.1] = np.nan  # missing values routed like CatBoost does
    model = _model(**params).fit(x, y)
    spec = tx.tree_spectrum(model)
    bits = torch.from_numpy(x) if data == "binary" else TreeEncoding.from_model(model).transform(x)
    ref = _raw(model, x)
    np.testing.assert_allclose(spec.evaluate(bits).numpy(), ref, atol=TOL * np.abs(ref).max(), rtol=0)
    if params.get("grow_policy") is None:
        assert parse_model(model).oblivious and spec.degree <= params["depth"]


@pytest.mark.parametrize("loss", ["Logloss", "MultiClass"])
def test_classifiers_explain_their_raw_formula_val(loss: str) -> None:
    x, y = diabetes()
    labels = (y > np.median(y)).astype(int) if loss == "Logloss" else np.digitize(y, [100, 200])
    model = _model(cb.CatBoostClassifier, loss_function=loss).fit(x, labels)
    bits = TreeEncoding.from_model(model).transform(x)
    ref = _raw(model, x)
    targets = [None, 0] if loss == "Logloss" else [0, 1, 2]
    for target in targets:
        out = tx.tree_spectrum(model, target=target).evaluate(bits).numpy()
        want = ref if target is None else (-ref if ref.ndim == 1 else ref[:, target])
        np.testing.assert_allclose(out, want, atol=TOL * np.abs(ref).max(), rtol=0)
    assert "RawFormulaVal" in parse_model(model, target=targets[-1]).output


def test_oblivious_transform_equals_the_node_expansion() -> None:
    """The one-transform-per-tree spectrum equals expanding the same trees as ordinary node tables."""
    x, y = binary_data(12, rows=400, seed=4)
    ensemble = parse_model(_model(depth=5).fit(x, y))
    as_nodes = _as_node_tables(ensemble)
    fast, slow = spectrum_of_ensemble(ensemble), spectrum_of_ensemble(as_nodes)
    assert torch.equal(fast.frequencies, slow.frequencies)
    torch.testing.assert_close(fast.amplitudes, slow.amplitudes, atol=1e-12, rtol=0)


def test_oblivious_splits_that_send_zero_right() -> None:
    """A split where 0 goes right and 1 goes left (zero treated as missing, missing right) flips the sign."""
    block = ObliviousBlock(
        feature=np.array([[0, 2], [1, 0]]),
        threshold=np.array([[1.5, 0.5], [0.5, 0.5]]),
        nan_right=np.array([[True, False], [False, False]]),
        zero_is_missing=np.array([[True, False], [False, False]]),
        value=np.array([[1.0, -2.0, 3.5, 0.25], [0.5, 4.0, -1.0, 2.0]]),
    )
    empty = np.zeros(0)
    ensemble = TreeEnsemble(
        left=empty.astype(np.int64), right=empty.astype(np.int64), feature=empty.astype(np.int64),
        threshold=empty, nan_right=empty.astype(bool), zero_is_missing=empty.astype(bool), value=empty,
        roots=empty.astype(np.int64), offset=0.75, n_features=3, strict=False, input_dtype=np.dtype(np.float64),
        description="two oblivious trees", oblivious=(block,),
    )  # fmt: skip
    cube = np.array([[(s >> i) & 1 for i in range(3)] for s in range(8)], dtype=np.float64)
    expected = np.full(8, 0.75)
    for t in range(2):
        bits = [ensemble.goes_right(cube[:, block.feature[t, j]], np.full(8, 2 * t + j)) for j in range(2)]
        expected += block.value[t, bits[0].astype(int) + 2 * bits[1].astype(int)]
    spec = spectrum_of_ensemble(ensemble)
    np.testing.assert_allclose(spec.evaluate(torch.from_numpy(cube)).numpy(), expected, atol=1e-15, rtol=0)


@pytest.mark.parametrize("kind", ["regressor", "classifier"])
def test_shap_equals_brute_force_and_catboost(kind: str) -> None:
    """n = 10 binary inputs: closed-form SHAP of the spectrum = coalition brute force on the model = CatBoost's."""
    x, y = binary_data(10, rows=400, seed=1)
    model = _model(cb.CatBoostClassifier).fit(x, y > np.median(y)) if kind == "classifier" else _model().fit(x, y)
    query, background = x[:6], x[100:130]
    ours = tx.fourier.shapley_values(tx.tree_spectrum(model), query, background).numpy()
    ref = _brute_force(model, query, background)
    scale = max(1.0, float(np.abs(ref).max()))
    np.testing.assert_allclose(ours, ref, atol=1e-12 * scale, rtol=0)
    np.testing.assert_allclose(_catboost_shap(model, query, background), ref, atol=1e-12 * scale, rtol=0)


@pytest.mark.slow
def test_continuous_shap_per_feature_equals_brute_force_and_catboost() -> None:
    x, y = diabetes()
    model = _model(depth=5).fit(x, y)
    query, background = x[:4], x[200:220]
    explainer = tx.FourierShap.from_trees(model, torch.from_numpy(background))
    ours = explainer.attribute(torch.from_numpy(query)).detach().numpy()
    ref = _brute_force(model, query, background)
    np.testing.assert_allclose(ours, ref, atol=1e-12 * np.abs(ref).max(), rtol=0)
    np.testing.assert_allclose(_catboost_shap(model, query, background), ref, atol=1e-12 * np.abs(ref).max(), rtol=0)


def test_explain_after_fit_picks_the_tree_spectrum() -> None:
    x, y = diabetes()
    model = _model().fit(x, y)
    train, test = x[:30], x[400:405]
    result = tx.explain_after_fit(model, train, test, n_background=len(train))
    assert result.method == "trees" and "CatBoostRegressor" in result.reason
    ref = _catboost_shap(model, test, train)
    np.testing.assert_allclose(result.attributions.numpy(), ref, atol=1e-9 * np.abs(ref).max(), rtol=0)


@pytest.mark.skipif(not AVGFP.is_dir(), reason="avGFP data not present (not shipped)")
def test_paper_model_on_avgfp() -> None:
    """The paper's avGFP model (CatBoost depth 5, 10 trees on mutated-site indicators): exact on every row."""
    frame = pd.read_csv(AVGFP / "avgfp_sarkisyan2016_aa.csv.gz")
    frame = frame[~frame.aa_genotype_native.str.contains(r"\*")]
    muts = frame.aa_genotype_native.where(frame.aa_genotype_native != "wt", "").str.split(":")
    sites = muts.apply(lambda ms: sorted({int(m[1:-1]) for m in ms if m}))
    columns = sorted({s for row in sites for s in row})
    index = {s: j for j, s in enumerate(columns)}
    x = np.zeros((len(frame), len(columns)))
    for i, row in enumerate(sites):
        x[i, [index[s] for s in row]] = 1.0
    model = _model(depth=5, iterations=10).fit(x, frame.log_brightness.to_numpy())
    spec = tx.tree_spectrum(model)
    assert spec.n_features == len(columns) > 200 and spec.degree <= 5 and len(spec) <= 10 * 2**5
    ref = _raw(model, x)
    np.testing.assert_allclose(spec.evaluate(torch.from_numpy(x)).numpy(), ref, atol=TOL * np.abs(ref).max(), rtol=0)


# --- bad input -----------------------------------------------------------------------------------------
def test_categorical_features_need_a_category_frame_and_text_features_are_refused() -> None:
    """Categorical features are explained on the leaf route from a DataFrame with ``category`` columns
    (tests/fourier/test_trees_leaves.py); a spectrum, or a background without those columns, is refused with the
    fix. Text features are refused."""
    x, y = diabetes()
    frame = pd.DataFrame(x[:, :4], columns=["age", "bmi", "bp", "s1"]).assign(sex=np.where(x[:, 1] > 0, "m", "f"))
    model = _model(iterations=3).fit(frame, y, cat_features=["sex"])
    with pytest.raises(ValueError, match=r"categorical features.*FourierShap.from_trees\(model, background\)"):
        tx.tree_spectrum(model)
    with pytest.raises(ValueError, match="'sex' is a categorical feature.*dtype 'category'"):
        tx.FourierShap.from_trees(model, frame.iloc[:5].assign(sex=0.0))
    words = np.array(["good day", "bad day", "good night", "bad night"] * (len(y) // 4 + 1))[: len(y)]
    texts = pd.DataFrame({"bmi": x[:, 2], "note": words})
    text_model = _model(cb.CatBoostClassifier, iterations=3).fit(texts, y > np.median(y), text_features=["note"])
    with pytest.raises(ValueError, match=r"text feature 'note' \(column 1\).*One-hot encode"):
        tx.tree_spectrum(text_model)


def test_unfitted_catboost() -> None:
    with pytest.raises(ValueError, match="CatBoostRegressor is not fitted"):
        tx.tree_spectrum(_model())


def _as_node_tables(ensemble: TreeEnsemble) -> TreeEnsemble:
    """The oblivious trees of ``ensemble`` as complete node tables (heap order), the reference for the transform."""
    tables = []
    for block in ensemble.oblivious:
        d = block.depth
        for t in range(block.n_trees):
            internal, leaves = 2**d - 1, 2**d
            nodes = np.arange(internal)
            level = np.floor(np.log2(nodes + 1)).astype(int)
            leaf_bits = np.array([[(p >> (d - 1 - j)) & 1 for j in range(d)] for p in range(leaves)])  # root first
            leaf_index = (leaf_bits * (2 ** np.arange(d))).sum(1)  # CatBoost's: bit j = level j
            tables.append(
                {
                    "left": np.concatenate([2 * nodes + 1, -np.ones(leaves, int)]),
                    "right": np.concatenate([2 * nodes + 2, -np.ones(leaves, int)]),
                    "feature": np.concatenate([block.feature[t, level], -np.ones(leaves, int)]),
                    "threshold": np.concatenate([block.threshold[t, level], np.zeros(leaves)]),
                    "nan_right": np.concatenate([block.nan_right[t, level], np.zeros(leaves, bool)]),
                    "zero_is_missing": np.zeros(internal + leaves, bool),
                    "value": np.concatenate([np.zeros(internal), block.value[t, leaf_index]]),
                }
            )
    meta = {k: getattr(ensemble, k) for k in ("offset", "n_features", "strict", "input_dtype", "description")}
    return concat_trees(tables, [1.0] * len(tables), **meta)

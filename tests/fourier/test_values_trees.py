"""The small-support kernel on real tree spectra: equal to model-level brute force and to shap's TreeExplainer.

shap's interventional C++ kernel computes in float32 (measured 2e-8…6e-8 × scale on these models even with
float32-exact leaf values), so it is compared at 2e-7 × scale; the exact reference is brute force over all
coalitions of hybrid rows through the model's own ``predict`` (``n ≤ 12``), compared at 1e-12 × scale.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from tests.fourier.tree_cases import (
    binary_data,
    brute_force_interactions,
    brute_force_values,
    coalition_values,
    diabetes,
    fit,
    model_output,
    one_hot_case,
)
from torchxplain import tree_spectrum
from torchxplain.fourier import TreeEncoding
from torchxplain.fourier.values._plan import ValuePlan

KINDS = ["rf_reg", "rf_clf", "gbm_reg", "gbm_clf", "xgb_reg", "xgb_clf", "lgb_reg", "lgb_clf"]


def _target(kind: str) -> int | None:
    return 1 if kind in ("rf_clf", "tree_clf", "et_clf") else None


def _plan(spectrum, background: np.ndarray, groups=None, m=None) -> ValuePlan:
    m = background.shape[1] if m is None else m
    return ValuePlan(spectrum, torch.from_numpy(background), groups, m, kernel="small_support")


@pytest.mark.parametrize("kind", KINDS)
def test_binary_trees_equal_brute_force_and_shap(kind: str) -> None:
    x, y = binary_data(10, rows=300, seed=4)
    model = fit(kind, 5, x, y)
    target = _target(kind)
    query, background = x[:4], x[100:116]
    plan = _plan(tree_spectrum(model, target), background)
    v = coalition_values(lambda z: model_output(model, kind, z, target), query, background)
    scale = max(1.0, float(np.abs(v).max())) * (1e6 if kind.startswith("xgb") else 1.0)  # XGBoost predicts in float32
    q = torch.from_numpy(query)
    np.testing.assert_allclose(plan.shapley(q).numpy(), brute_force_values(v, "shapley"), atol=1e-12 * scale, rtol=0)
    np.testing.assert_allclose(plan.banzhaf(q).numpy(), brute_force_values(v, "banzhaf"), atol=1e-12 * scale, rtol=0)
    np.testing.assert_allclose(plan.interactions(q).numpy(), brute_force_interactions(v), atol=1e-12 * scale, rtol=0)
    shap = pytest.importorskip("shap")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        masker = shap.maskers.Independent(background, max_samples=len(background))
        ref = np.asarray(shap.TreeExplainer(model, masker, feature_perturbation="interventional").shap_values(query))
    ref = ref[..., 1 if target is None else target] if ref.ndim == 3 else ref
    np.testing.assert_allclose(plan.shapley(q).numpy(), ref, atol=2e-7 * float(np.abs(ref).max()), rtol=0)


@pytest.mark.parametrize("kind", ["rf_reg", "lgb_reg"])
def test_depth_8_forest_on_80_inputs_equals_the_dense_kernel(kind: str) -> None:
    x, y = binary_data(80, rows=300, seed=8)
    model = fit(kind, 8, x, y)
    spectrum = tree_spectrum(model)
    q, bg = torch.from_numpy(x[:2]), torch.from_numpy(x[100:110])
    tables = ValuePlan(spectrum, bg, None, 80, kernel="small_support").shapley(q)
    dense = ValuePlan(spectrum, bg, None, 80, kernel="gemm").shapley(q)
    torch.testing.assert_close(tables, dense, atol=1e-12 * float(dense.abs().max()), rtol=0)


def test_one_hot_groups_equal_brute_force_per_variable() -> None:
    """4 categorical variables × 5 levels one-hot: "bit differs" becomes "group parity differs"."""
    model, ids, query, background, v = one_hot_case("gbm_reg")
    plan = _plan(tree_spectrum(model), background, torch.from_numpy(ids), 4)
    q = torch.from_numpy(query)
    np.testing.assert_allclose(plan.shapley(q).numpy(), brute_force_values(v, "shapley"), atol=1e-12, rtol=0)
    np.testing.assert_allclose(plan.banzhaf(q).numpy(), brute_force_values(v, "banzhaf"), atol=1e-12, rtol=0)
    np.testing.assert_allclose(plan.interactions(q).numpy(), brute_force_interactions(v), atol=1e-12, rtol=0)


@pytest.mark.parametrize("kind", ["rf_reg", "xgb_reg", "lgb_reg"])
def test_continuous_thresholds_grouped_per_feature_equal_brute_force(kind: str) -> None:
    """Every split is a binary feature and a feature's thresholds are one player (10 diabetes features)."""
    x, y = diabetes()
    model = fit(kind, 4, x, y)
    encoding = TreeEncoding.from_model(model)
    spectrum = tree_spectrum(model, encoding=encoding)
    query, background = x[:3], x[10:22]
    v = coalition_values(lambda z: model_output(model, kind, z), query, background)
    used, groups = torch.unique(encoding.groups, return_inverse=True)
    bits_bg = encoding.transform(torch.from_numpy(background)).double()
    plan = ValuePlan(spectrum, bits_bg, groups, len(used), kernel="small_support")
    phi = plan.shapley(encoding.transform(torch.from_numpy(query)).double())
    full = np.zeros((3, 10))
    full[:, used.numpy()] = phi.numpy()
    scale = float(np.abs(y).max())
    tol = (1e-6 if kind.startswith("xgb") else 1e-12) * scale  # XGBoost's margins are float32
    np.testing.assert_allclose(full, brute_force_values(v, "shapley"), atol=tol, rtol=0)


def test_catboost_oblivious_trees_equal_brute_force() -> None:
    catboost = pytest.importorskip("catboost")
    from torchxplain.fourier import parse_model

    x, y = binary_data(9, rows=300, seed=5)
    model = catboost.CatBoostRegressor(iterations=10, depth=5, verbose=0, random_seed=0, allow_writing_files=False).fit(
        x, y
    )
    try:
        parse_model(model)
    except TypeError:
        pytest.skip("no CatBoost adapter in this tree yet")
    query, background = x[:3], x[50:62]
    v = coalition_values(lambda z: model.predict(z, prediction_type="RawFormulaVal"), query, background)
    phi = _plan(tree_spectrum(model), background).shapley(torch.from_numpy(query))
    np.testing.assert_allclose(phi.numpy(), brute_force_values(v, "shapley"), atol=1e-12 * np.abs(v).max(), rtol=0)


def test_the_extractions_families_serve_the_plan() -> None:
    """``tree_spectrum(..., return_families=True)`` records a cover of leaf-path supports: the plan uses it as is."""
    x, y = binary_data(12, rows=300, seed=6)
    model = fit("gbm_reg", 4, x, y)
    spectrum, cover = tree_spectrum(model, return_families=True)
    q, bg = torch.from_numpy(x[:5]), torch.from_numpy(x[100:120])
    plan = ValuePlan(spectrum, bg, None, 12, kernel="small_support", families=cover)
    families = plan.families
    assert bool((families.family[spectrum.frequencies.any(1)] >= 0).all())
    assert bool((families.family[~spectrum.frequencies.any(1)] == -1).all())  # the constant has no family
    assert families.sizes.tolist() == sorted(families.sizes.tolist()) and int(families.sizes.min()) > 0
    own = ValuePlan(spectrum, bg, None, 12, kernel="small_support")
    torch.testing.assert_close(plan.shapley(q), own.shapley(q), atol=1e-12, rtol=0)
    torch.testing.assert_close(plan.interactions(q), own.interactions(q), atol=1e-12, rtol=0)


def test_an_explainer_of_trees_searches_nothing_again(monkeypatch) -> None:
    """from_trees(...).attribute/interactions read the extraction's families and feature lists: the plan's family
    search, its feature scan and the surrogate's support scan never run (they would find the same)."""
    import torchxplain as tx
    import torchxplain.fourier.spectrum._surrogate as surrogate
    import torchxplain.fourier.values._plan as plan_module

    def refuse(*args, **kwargs):
        raise AssertionError("searched again")

    x, y = binary_data(12, rows=300, seed=6)
    model = fit("rf_reg", 5, x, y)
    expected = tx.FourierShap.from_trees(model, x[100:130]).attribute(x[:6])  # the leaves (before the patches)
    monkeypatch.setattr(plan_module, "support_families", refuse)
    monkeypatch.setattr(plan_module, "feature_lists", refuse)
    monkeypatch.setattr(surrogate.SparseFourierSurrogate, "_support_indices", refuse)
    explainer = tx.FourierShap.from_trees(model, x[100:130], kernel="small_support", route="spectrum")
    torch.testing.assert_close(explainer.attribute(x[:6]), expected, atol=1e-12, rtol=0)
    explainer.interactions(x[:6])
    torch.testing.assert_close(
        explainer.predict(x[:6]), torch.from_numpy(model.predict(x[:6])), atol=1e-12, rtol=0
    )  # the surrogate's support, from the extraction, evaluates the model


@pytest.mark.parametrize("index", ["SII", "k-SII", "STII", "FBII"])
def test_tree_interaction_indices_from_the_tables_equal_shapiq(index: str) -> None:
    """interaction_values of a tree explainer through the small-support tables (orders 0..2) against shapiq's
    ExactComputer on the model's own interventional game over all 2^8 coalitions."""
    import torchxplain as tx
    from tests.fourier.interaction_reference import coalitions, exact_computer, interventional_game, ours_at

    x, y = binary_data(8, rows=300, seed=4)
    model = fit("gbm_reg", 4, x, y)
    background, queries = x[100:115], x[:3]
    explainer = tx.FourierShap.from_trees(model, background, kernel="small_support")
    result = explainer.interaction_values(queries, index=index, max_order=2)
    for q in range(len(queries)):
        game = interventional_game(model.predict, queries[q], background, np.arange(8))
        reference = exact_computer(game, 8)(index, 2)
        worst = max(abs(ours_at(result, q, s) - reference[s]) for s in coalitions(8, 2))
        assert worst < 1e-12 * max(1.0, float(np.abs(y).max())), f"{index}: {worst:.2e}"

"""FourierShap.from_trees equals interventional TreeSHAP (shap.TreeExplainer) and model-level brute force."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from tests.fourier.tree_cases import (
    MODEL_KINDS,
    PROBA_KINDS,
    binary_data,
    breast_cancer,
    brute_force_interactions,
    brute_force_values,
    coalition_values,
    diabetes,
    fit,
    model_output,
    one_hot_case,
)
from torchxplain import FourierShap
from torchxplain.fourier import ThresholdEncoder, parse_model
from torchxplain.testing import ExplainerTestCase

shap = pytest.importorskip("shap")


def tree_shap(model, x: np.ndarray, background: np.ndarray, target: int | None) -> np.ndarray:
    """shap's interventional TreeSHAP of the same output the spectrum explains (raw margin / probability)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        explainer = shap.TreeExplainer(model, data=background, feature_perturbation="interventional")
        values = np.asarray(explainer.shap_values(x, check_additivity=False))
    if values.ndim == 3:  # (N, p, outputs)
        values = values[..., 1 if target is None else target]
    return values


def shap_routing_rows(model, target: int | None, x: np.ndarray) -> np.ndarray:
    """Rows whose path through every tree does not change when thresholds are rounded to float32.

    shap's interventional C++ kernel stores thresholds (and leaf values) as float32 (``struct Node`` in
    ``tree_shap.h``), so on a row lying between a float64 threshold and its float32 rounding it follows another
    path than the model; FourierSHAP follows the model (see ``test_continuous_matches_brute_force``).
    """
    ens = parse_model(model, target)
    nodes = np.flatnonzero(ens.left >= 0)
    v = x[:, ens.feature[nodes]].astype(ens.input_dtype).astype(np.float64)
    thr64, thr32 = ens.threshold[nodes], ens.threshold[nodes].astype(np.float32).astype(np.float64)
    same = (v >= thr64) == (v >= thr32) if ens.strict else (v > thr64) == (v > thr32)
    return np.flatnonzero(same.all(axis=1))


def _compare(model, kind: str, x: np.ndarray, background: np.ndarray, target: int | None) -> None:
    explainer = FourierShap.from_trees(model, torch.from_numpy(background), target)
    ours = explainer.attribute(torch.from_numpy(x)).detach().numpy()
    ref = tree_shap(model, x, background, target)
    scale = float(np.abs(ref).max())
    assert ours.shape == ref.shape
    err = float(np.abs(ours - ref).max())
    assert err <= 1e-6 * scale, f"{kind}: max abs error {err:.3g} vs TreeExplainer (scale {scale:.3g})"
    # efficiency against the model's own output (float64 except XGBoost's float32 margins)
    gap = model_output(model, kind, x, target) - model_output(model, kind, background, target).mean()
    tol = (2e-6 if kind.startswith("xgb") else 1e-9) * max(1.0, float(np.abs(gap).max()))
    np.testing.assert_allclose(ours.sum(1), gap, atol=tol, rtol=0)


@pytest.mark.parametrize("kind", MODEL_KINDS)
@pytest.mark.parametrize("n,depth", [(13, 1), (13, 3), (40, 5), (80, 6)])
def test_binary_inputs_match_tree_explainer(kind: str, n: int, depth: int) -> None:
    x, y = binary_data(n, rows=300, seed=10 * n + depth)
    model = fit(kind, depth, x, y)
    _compare(model, kind, x[:8], x[100:124], 1 if kind in PROBA_KINDS else None)


@pytest.mark.parametrize("kind", ["rf_clf", "gbm_clf", "xgb_reg", "lgb_clf"])
def test_depth_8_on_80_inputs(kind: str) -> None:
    x, y = binary_data(80, rows=300, seed=8)
    model = fit(kind, 8, x, y)
    _compare(model, kind, x[:4], x[100:112], 1 if kind in PROBA_KINDS else None)


@pytest.mark.parametrize("depth", range(1, 9))
def test_random_forest_every_depth(depth: int) -> None:
    x, y = binary_data(13, rows=400, seed=depth)
    model = fit("rf_reg", depth, x, y)
    _compare(model, "rf_reg", x[:10], x[200:230], None)


@pytest.mark.slow
@pytest.mark.parametrize("kind", MODEL_KINDS)
@pytest.mark.parametrize("data", ["diabetes", "breast_cancer"])
def test_continuous_inputs_match_tree_explainer(kind: str, data: str) -> None:
    x, y = diabetes() if data == "diabetes" else breast_cancer()
    model = fit(kind, 4, x, y)
    target = 1 if kind in PROBA_KINDS else None
    x = x.astype(np.float32).astype(np.float64)  # the precision both libraries compare in
    rows = shap_routing_rows(model, target, x)
    assert len(rows) >= 30
    _compare(model, kind, x[rows[:6]], x[rows[-20:]], target)


def test_continuous_matches_brute_force() -> None:
    """Shapley, Banzhaf and pairwise interactions per original feature equal enumeration of all 2^10
    coalitions of hybrid rows through the model's own predict, including rows where shap's float32 thresholds
    route differently."""
    x, y = diabetes()
    model = fit("rf_reg", 4, x, y)
    query, background = x[:3], x[10:22]
    v = coalition_values(model.predict, query, background)
    explainer = FourierShap.from_trees(model, torch.from_numpy(background))
    assert isinstance(explainer.encoder, ThresholdEncoder)
    assert explainer.n_features == 10 and explainer.background.shape == (12, 10)
    q = torch.from_numpy(query)
    scale = float(np.abs(y).max())
    np.testing.assert_allclose(
        explainer.attribute(q).numpy(), brute_force_values(v, "shapley"), atol=1e-12 * scale, rtol=0
    )
    np.testing.assert_allclose(
        explainer.banzhaf(q).numpy(), brute_force_values(v, "banzhaf"), atol=1e-12 * scale, rtol=0
    )
    np.testing.assert_allclose(
        explainer.interactions(q).numpy(), brute_force_interactions(v), atol=1e-12 * scale, rtol=0
    )
    np.testing.assert_allclose(explainer.predict(q).numpy(), model.predict(query), atol=1e-12 * scale, rtol=0)


def test_feature_groups_are_players() -> None:
    """Grouping original features (0,1), (2..5), (6..9): brute force over the 3 players."""
    x, y = diabetes()
    model = fit("gbm_reg", 3, x, y)
    query, background = x[:4], x[30:40]
    ids = np.array([0, 0, 1, 1, 1, 1, 2, 2, 2, 2])
    # coalition table over the 3 players: expand player masks to feature masks
    masks = np.array([[(s >> g) & 1 for g in range(3)] for s in range(8)], dtype=bool)[:, ids]
    hybrid = np.where(masks[None, :, None, :], query[:, None, None, :], background[None, None])
    v = model.predict(hybrid.reshape(-1, 10)).reshape(4, 8, 10).mean(2)
    phi = brute_force_values(v, "shapley")
    explainer = FourierShap.from_trees(model, torch.from_numpy(background), feature_groups=torch.from_numpy(ids))
    ours = explainer.attribute(torch.from_numpy(query)).numpy()
    np.testing.assert_allclose(ours, phi[:, ids], atol=1e-10 * np.abs(y).max(), rtol=0)
    via_mask = FourierShap.from_trees(model, torch.from_numpy(background)).attribute(
        torch.from_numpy(query), feature_mask=torch.from_numpy(ids)[None]
    )
    np.testing.assert_allclose(via_mask.numpy(), ours, atol=1e-10 * np.abs(y).max(), rtol=0)


def test_one_hot_groups_on_binary_inputs() -> None:
    """Categorical features one-hot encoded (4 variables x 5 levels): values per variable match brute force."""
    model, ids, query, background, v = one_hot_case("rf_reg")
    explainer = FourierShap.from_trees(model, torch.from_numpy(background), feature_groups=torch.from_numpy(ids))
    ours = explainer.attribute(torch.from_numpy(query)).detach().numpy()
    np.testing.assert_allclose(ours, brute_force_values(v, "shapley")[:, ids], atol=1e-10, rtol=0)


def test_pruning_report_and_accuracy() -> None:
    x, y = binary_data(40, rows=400, seed=11)
    model = fit("rf_reg", 5, x, y)
    background = torch.from_numpy(x[:50])
    exact = FourierShap.from_trees(model, background)
    pruned = FourierShap.from_trees(model, background, energy=0.9995)
    report = pruned.pruning
    assert exact.pruning is None
    assert report.total_terms == len(exact.spectrum) and report.kept_terms == len(pruned.spectrum)
    assert report.kept_terms < report.total_terms and report.kept_energy >= 0.9995
    truth = model.predict(x[:50])
    approx = pruned.spectrum.evaluate(background).detach().numpy()
    r2 = 1.0 - ((truth - approx) ** 2).sum() / ((truth - truth.mean()) ** 2).sum()
    assert report.r2_background == pytest.approx(r2, abs=1e-9)
    assert r2 > 0.99
    q = torch.from_numpy(x[100:110])
    ref = exact.attribute(q).detach()
    err = float((pruned.attribute(q).detach() - ref).abs().max())
    assert err < 0.05 * float(ref.abs().max())
    thresholded = FourierShap.from_trees(model, background, threshold=1e-3)
    assert bool((thresholded.spectrum.amplitudes.abs()[1:] >= 1e-3).all())


# --- bad input -----------------------------------------------------------------------------------------
def test_from_trees_bad_input() -> None:
    x, y = binary_data(13)
    model = fit("rf_clf", 3, x, y)
    background = torch.from_numpy(x[:20])
    default = FourierShap.from_trees(model, background)  # a binary classifier explains class 1 by default
    positive = FourierShap.from_trees(model, background, target=1)
    torch.testing.assert_close(default.attribute(background[:3]), positive.attribute(background[:3]))
    with pytest.raises(ValueError, match="background has 12 features, but RandomForestClassifier .* expects 13"):
        FourierShap.from_trees(model, background[:, :12], target=1)
    explainer = FourierShap.from_trees(model, background, target=1)
    with pytest.raises(ValueError, match="binary"):
        explainer.attribute(torch.full((2, 13), 0.5, dtype=torch.float64))
    with pytest.raises(ValueError, match="13"):
        explainer.attribute(background[:, :12])
    with pytest.raises(ValueError, match="target=1"):
        explainer.attribute(background[:2], target=0)
    with pytest.raises(ValueError, match="encoding must be one of"):
        FourierShap.from_trees(model, background, target=1, encoding="onehot")
    with pytest.raises(TypeError, match="not a supported tree model"):
        FourierShap.from_trees(object(), background)
    xc, yc = diabetes()
    cont = FourierShap.from_trees(fit("rf_reg", 3, xc, yc), torch.from_numpy(xc[:20]))
    with pytest.raises(ValueError, match="inputs has 9 features"):
        cont.attribute(torch.from_numpy(xc[:2, :9]))
    with pytest.raises(ValueError, match="binary"):
        FourierShap.from_trees(fit("rf_reg", 3, xc, yc), torch.from_numpy(xc[:20]), encoding="binary")


# --- the shared explainer contract ------------------------------------------------------------------------
class TestContinuousTreeExplainer(ExplainerTestCase):
    x, y = diabetes()
    model = fit("gbm_reg", 3, x, y)

    def make_explainer(self, dtype: torch.dtype) -> FourierShap:
        return FourierShap.from_trees(self.model, torch.from_numpy(self.x[:16]).to(dtype))

    def make_inputs(self, dtype: torch.dtype) -> torch.Tensor:
        return torch.from_numpy(self.x[20:26]).to(dtype)


class TestBinaryTreeExplainer(ExplainerTestCase):
    x, y = binary_data(13, seed=3)
    model = fit("rf_reg", 4, x, y)
    noise_tunnel = False  # noisy inputs are not binary: covered by relaxed=True below
    captum_metrics = False

    def make_explainer(self, dtype: torch.dtype) -> FourierShap:
        return FourierShap.from_trees(self.model, torch.from_numpy(self.x[:16]).to(dtype))

    def make_inputs(self, dtype: torch.dtype) -> torch.Tensor:
        return torch.from_numpy(self.x[20:26]).to(dtype)


class TestRelaxedBinaryTreeExplainer(TestBinaryTreeExplainer):
    noise_tunnel = True
    captum_metrics = True

    def make_explainer(self, dtype: torch.dtype) -> FourierShap:
        return FourierShap.from_trees(self.model, torch.from_numpy(self.x[:16]).to(dtype), relaxed=True)


def test_interaction_values_of_continuous_trees_equal_the_functional_form_on_the_splits() -> None:
    """Per original feature, the explainer's indices equal the functional form on the split features grouped by
    feature (features no tree splits on are zero players)."""
    from torchxplain.fourier import interaction_values

    x, y = diabetes()
    model = fit("gbm_reg", 3, x, y)
    explainer = FourierShap.from_trees(model, torch.from_numpy(x[:12]))
    q = torch.from_numpy(x[40:43])
    ours = explainer.interaction_values(q, index="k-SII", max_order=2)
    owner = explainer.encoder.owner
    used, groups = torch.unique(owner, return_inverse=True)
    bits_q = explainer.encoder.encode(q, torch.float64)
    bits_b = explainer.background_bits.double()
    ref = interaction_values(explainer.spectrum, bits_q, bits_b, index="k-SII", max_order=2, groups=groups)
    torch.testing.assert_close(ours[1][:, used], ref[1], atol=1e-12, rtol=0)
    torch.testing.assert_close(ours[2][:, used[:, None], used[None, :]], ref[2], atol=1e-12, rtol=0)
    unused = torch.ones(10, dtype=torch.bool)
    unused[used] = False
    assert bool((ours[1][:, unused] == 0).all())


# --- several outputs: multiclass classifiers ---------------------------------------------------------------
@pytest.mark.parametrize("kind", ["rf_clf", "lgb_clf", "xgb_clf", "gbm_clf"])
def test_multiclass_default_explains_every_class_like_brute_force(kind: str) -> None:
    """Without target, a 3-class model gives ``(Q, p, C)`` values; each class equals brute force over the
    coalitions of that class's own output (probability or raw margin), and ``target=c`` picks class ``c``."""
    x, y = diabetes()
    labels = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    model = fit(kind, 3, x, labels)
    query, background = x[:3], x[30:40]
    explainer = FourierShap.from_trees(model, torch.from_numpy(background))
    assert explainer.outputs.targets == (0, 1, 2)
    phi = explainer.attribute(torch.from_numpy(query)).detach().numpy()
    assert phi.shape == (3, 10, 3)

    def output(z: np.ndarray, c: int) -> np.ndarray:
        out = model_output(model, kind, z, c)
        return out if out.ndim == 1 else out[:, c]  # XGBoost's margins come for every class at once

    for c in range(3):
        v = coalition_values(lambda z, c=c: output(z, c), query, background)
        scale = max(1.0, float(np.abs(v).max())) * (2e3 if kind.startswith("xgb") else 1.0)  # XGBoost: float32 margins
        np.testing.assert_allclose(phi[..., c], brute_force_values(v, "shapley"), atol=1e-9 * scale, rtol=0)
        one = explainer.attribute(torch.from_numpy(query), target=c).detach().numpy()
        np.testing.assert_allclose(one, phi[..., c], atol=0, rtol=0)
    per_row = explainer.attribute(torch.from_numpy(query), target=torch.tensor([2, 0, 1])).detach().numpy()
    np.testing.assert_allclose(per_row, phi[np.arange(3), :, [2, 0, 1]], atol=0, rtol=0)
    predicted = explainer.predict(torch.from_numpy(query)).numpy()
    want = np.stack([output(query, c) for c in range(3)], axis=1)
    tol = (2e-6 if kind.startswith("xgb") else 1e-9) * max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(predicted, want, atol=tol, rtol=0)
    with pytest.raises(ValueError, match=r"built for target=\[0, 1, 2\]; got target=3"):
        explainer.attribute(torch.from_numpy(query), target=3)


def test_multiclass_to_shap_layout_and_round_trip(tmp_path) -> None:
    x, y = diabetes()
    labels = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    model = fit("rf_clf", 3, x, labels)
    explainer = FourierShap.from_trees(model, torch.from_numpy(x[30:40]))
    explanation = explainer.to_shap(torch.from_numpy(x[:4]))
    assert explanation.values.shape == (4, 10, 3) and explanation.base_values.shape == (4, 3)
    np.testing.assert_allclose(
        explanation.values.sum(1) + explanation.base_values, model.predict_proba(x[:4]), atol=1e-9
    )
    loaded = FourierShap.load(explainer.save(tmp_path / "multi.pt"))
    assert loaded.outputs == explainer.outputs
    assert torch.equal(loaded.attribute(torch.from_numpy(x[:4])), explainer.attribute(torch.from_numpy(x[:4])))
    interactions = explainer.interactions(torch.from_numpy(x[:2]))
    assert interactions.shape == (2, 10, 10, 3)
    torch.testing.assert_close(interactions[..., 1], explainer.interactions(torch.from_numpy(x[:2]), target=1))


def test_interaction_values_with_max_order_above_the_split_features() -> None:
    """A tree that splits on 2 of 3 features: max_order=3 is valid (3 players) and its order-3 terms are 0; the
    lower orders equal Moebius of the 2-player game (max_order at least the active players)."""
    x, _ = diabetes()
    x = x[:, :3].copy()
    x[:, 2] = 0.0  # a constant feature no split can use
    y = (x[:, 0] > 0) * (x[:, 1] > 0) + x[:, 0]
    tree = fit("tree_reg", 3, x, y)
    explainer = FourierShap.from_trees(tree, torch.from_numpy(x[:12]))
    used = torch.unique(explainer.encoder.owner)
    assert len(used) == 2
    q = torch.from_numpy(x[40:42])
    fsii = explainer.interaction_values(q, index="FSII", max_order=3)
    moebius = explainer.interaction_values(q, index="Moebius", max_order=3)
    assert bool((fsii[3] == 0).all()) and fsii[3].shape == (2, 3, 3, 3)
    for t in (1, 2):
        torch.testing.assert_close(fsii[t], moebius[t], atol=1e-10, rtol=0)

"""SHAP-IDX and LIME-IDX: exact Shapley values against a permutation oracle, LIME against the lime package."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
import torch
from reference import random_bc

from torchxplain.idx import BayesianClassifier, datasets, explain, lime_values, shap_values
from torchxplain.idx._attribution import weighted_ridge


def _permutation_shapley(bc, a, background, y):
    """Shapley values by averaging marginal contributions over all orderings (pure Python loops)."""
    m = len(bc.observations)
    yi = bc.index_of(y)
    target = int(bc.decide(torch.tensor([a]))[0, yi])

    def v(coalition):
        rows = [[a[j] if j in coalition else b[j] for j in range(m)] for b in background]
        return bc.predict_proba(torch.tensor(rows))[:, yi, target].mean().item()

    phi = [0.0] * m
    perms = list(itertools.permutations(range(m)))
    for perm in perms:
        seen = set()
        for j in perm:
            before = v(seen)
            seen = seen | {j}
            phi[j] += (v(seen) - before) / len(perms)
    return phi


@pytest.mark.parametrize("method", ["exact", "fourier"])
def test_shap_equals_permutation_oracle_on_play_outside(method):
    bc = datasets.play_outside()
    x = datasets.all_inputs(bc)
    bg = x[::3]
    phi = shap_values(bc, x, background=bg, method=method)
    assert phi.shape == (18, 3, 2)
    for b in (0, 2, 9, 13):
        for k, y in enumerate(("r", "o")):
            want = _permutation_shapley(bc, x[b].tolist(), bg.tolist(), y)
            np.testing.assert_allclose(phi[b, :, k].numpy(), want, atol=1e-12)
    # w does not influence r in this classifier: its Shapley value for r is exactly 0
    assert phi[:, bc.observations.index("w"), 0].abs().max() < 1e-12


@pytest.mark.parametrize("seed", [3, 11])
def test_shap_exact_fourier_and_table_free_paths_agree_on_random_bccs(seed):
    rng = random.Random(seed)
    values, structure, prior, cpt = random_bc(rng, False, 4, 3, max_card=4)
    bc = BayesianClassifier(values, structure, prior, cpt)
    x = datasets.all_inputs(bc)
    bg = x[: min(7, len(x))]
    a = shap_values(bc, x, background=bg, method="exact")
    b = shap_values(bc, x, background=bg, method="fourier")
    c = shap_values(bc, x, background=bg, method="exact", max_table=1)  # forward passes, no table
    torch.testing.assert_close(a, b, atol=1e-12, rtol=0)
    torch.testing.assert_close(a, c, atol=1e-12, rtol=0)
    # efficiency: sum_i phi_i = P(sigma(a,y) | a) - mean_bg P(sigma(a,y) | bg)
    proba = bc.predict_proba(x)
    sigma = bc.decide(x)
    for k, y in enumerate(bc.classifications):
        yi = bc.index_of(y)
        full = proba[torch.arange(len(x)), yi, sigma[:, yi]]
        empty = bc.predict_proba(bg)[:, yi, :][:, sigma[:, yi]].mean(dim=0)
        torch.testing.assert_close(a[:, :, k].sum(dim=1), full - empty, atol=1e-12, rtol=0)


def test_shap_refusals_name_the_knob():
    bc = datasets.play_outside()
    with pytest.raises(ValueError, match="max_players=2"):
        shap_values(bc, datasets.all_inputs(bc), method="exact", max_players=2)
    with pytest.raises(ValueError, match="max_bits=3"):
        shap_values(bc, datasets.all_inputs(bc), method="fourier", max_bits=3)
    with pytest.raises(ValueError, match="method"):
        shap_values(bc, datasets.all_inputs(bc), method="kernel")
    with pytest.raises(ValueError, match="outputs"):
        shap_values(bc, datasets.all_inputs(bc), outputs=["w"])


def test_weighted_ridge_matches_sklearn():
    from sklearn.linear_model import Ridge

    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, 2, (3, 50, 4), generator=gen).double()
    y = torch.rand(3, 50, generator=gen, dtype=torch.float64)
    w = torch.rand(3, 50, generator=gen, dtype=torch.float64)
    coef, intercept = weighted_ridge(x, y, w, alpha=1.0)
    for q in range(3):
        ref = Ridge(alpha=1.0).fit(x[q].numpy(), y[q].numpy(), sample_weight=w[q].numpy())
        np.testing.assert_allclose(coef[q].numpy(), ref.coef_, atol=1e-10)
        assert intercept[q].item() == pytest.approx(ref.intercept_, abs=1e-10)


def test_lime_matches_the_lime_package_within_sampling_noise():
    lime_tabular = pytest.importorskip("lime.lime_tabular")
    bc = datasets.play_outside()
    x = datasets.all_inputs(bc)
    o = bc.index_of("o")
    ours = lime_values(bc, x, outputs=["o"], num_samples=5000, seed=1)
    explainer = lime_tabular.LimeTabularExplainer(
        x.numpy(), categorical_features=[0, 1, 2], discretize_continuous=False, random_state=0
    )

    def predict(arr):
        return bc.predict_proba(torch.as_tensor(arr).long())[:, o, :2].numpy()

    for b in range(0, 18, 3):
        s = int(bc.decide(x[b : b + 1])[0, o])
        e = explainer.explain_instance(x[b].numpy(), predict, labels=(s,), num_features=3, num_samples=5000)
        theirs = dict(e.as_map()[s])
        np.testing.assert_allclose(ours[b, :, 0].numpy(), [theirs[j] for j in range(3)], atol=0.03)


def test_lime_is_seeded():
    bc = datasets.play_outside()
    x = datasets.all_inputs(bc)
    torch.testing.assert_close(lime_values(bc, x, num_samples=500, seed=4), lime_values(bc, x, num_samples=500, seed=4))


def test_attribution_kits_give_input_output_relations():
    bc = datasets.play_outside()
    a = {"w": "l", "t": "m", "p": "l"}
    (shap,) = explain(bc, a, "shap", background=datasets.all_inputs(bc))
    pairs = set().union(*shap.relations.values())
    assert pairs <= {(o, y) for o in ("w", "t", "p") for y in ("r", "o")}
    assert ("w", "r") not in pairs  # a zero Shapley value is neither attack nor support
    assert ("p", "r") in shap.relations["support"]  # p_l supports r_+ (as in MD)
    for pair, score in shap.scores.items():
        assert (score > 0) == (pair in shap.relations["support"])
    (expl,) = explain(bc, a, "shap", explanandum="o", background=datasets.all_inputs(bc))
    assert expl.relevant <= {"o", "w", "t", "p"} and "o" in expl.relevant
    (lime,) = explain(bc, a, "lime", outputs=["o"], num_samples=2000)
    assert set().union(*lime.relations.values()) <= {("w", "o"), ("t", "o"), ("p", "o")}
    assert math.isfinite(sum(lime.scores.values()))


def test_exactly_zero_attributions_are_no_relation():
    """With the input as its own background every Shapley value is 0 (up to rounding): no attack, no support."""
    bc = datasets.play_outside()
    a = {"w": "l", "t": "l", "p": "l"}
    assert shap_values(bc, a, background=a).abs().max() < 1e-15  # rounding noise, not exactly zero
    (ex,) = explain(bc, a, "shap", background=a)
    assert ex.relations == {"attack": set(), "support": set()}
    with pytest.raises(ValueError, match="the shap kit needs a background"):  # the default would be the input
        explain(bc, a, "shap")

"""Captum's conventions on every Fourier explainer, checked against Captum itself and brute force.

``baselines`` pair row ``i`` with input ``i`` (Captum's ``ShapleyValues`` is the reference: it enumerates every
permutation), a ``background=`` set is averaged; ``additional_forward_args`` reach every model query of a black box;
``internal_batch_size`` chunks; ``return_convergence_delta`` is the efficiency gap against the model itself;
per-example targets pick each row's output.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from captum.attr import NoiseTunnel, ShapleyValues

from tests.fourier import brute_force
from tests.fourier.cases import random_case, random_groups
from tests.integration._brute import interventional_shap
from torchxplain import FourierShap
from torchxplain._core.inputs import dense_players
from torchxplain.fourier import interaction_values

# Captum's Shapley methods accumulate in float32: compare at that precision, relative to the values' scale
CAPTUM_TOL = {"rtol": 0.0, "atol": 1e-4}


def _per_row(reference, freq, amp, xq, rows, groups=None):
    """A brute-force value of each query against its own reference row (a loop over rows: test reference only)."""
    return np.stack([reference(freq, amp, xq[i : i + 1], rows[i : i + 1], groups)[0] for i in range(len(xq))])


def test_baselines_pair_row_i_with_input_i_as_captum_does():
    spec, freq, amp, xq, bg = random_case(1, 5, 24, 4, 4)
    explainer = FourierShap.from_spectrum(spec, bg)
    model = explainer.surrogate
    captum = ShapleyValues(model).attribute(xq, baselines=bg, perturbations_per_eval=128).double()
    ours = explainer.attribute(xq, baselines=bg)
    scale = float(ours.abs().max())
    torch.testing.assert_close(ours / scale, captum / scale, **CAPTUM_TOL)
    torch.testing.assert_close(ours, torch.tensor(_per_row(brute_force.shapley, freq, amp, xq.numpy(), bg.numpy())))
    # the silent bug this replaces: the same (N, n) rows averaged as one background give other numbers
    assert float((explainer.attribute(xq, background=bg) - captum.double()).abs().max()) > 0.1 * scale
    # grouped players (Captum's feature_mask), one shared row and a scalar: Captum's meanings too
    mask = torch.tensor([[0, 0, 3, 3, 1]])
    captum = ShapleyValues(model).attribute(xq, baselines=bg, feature_mask=mask, perturbations_per_eval=128)
    torch.testing.assert_close(
        explainer.attribute(xq, baselines=bg, feature_mask=mask) / scale, captum.double() / scale, **CAPTUM_TOL
    )
    for baselines in (bg[:1], 1, 0.0):
        captum = ShapleyValues(model).attribute(xq, baselines=baselines, perturbations_per_eval=128)
        torch.testing.assert_close(
            explainer.attribute(xq, baselines=baselines) / scale, captum.double() / scale, **CAPTUM_TOL
        )


def test_paired_banzhaf_interactions_and_indices_equal_brute_force_per_row():
    spec, freq, amp, xq, bg = random_case(2, 6, 30, 5, 5)
    groups = random_groups(2, 6)
    dense = dense_players(torch.tensor(groups))[0].numpy()
    explainer = FourierShap.from_spectrum(spec, bg)
    mask = torch.tensor(groups)[None]
    want = _per_row(brute_force.banzhaf, freq, amp, xq.numpy(), bg.numpy(), dense)
    torch.testing.assert_close(explainer.banzhaf(xq, feature_mask=mask, baselines=bg), torch.tensor(want[:, dense]))
    want = _per_row(brute_force.interactions, freq, amp, xq.numpy(), bg.numpy(), dense)
    torch.testing.assert_close(explainer.interactions(xq, feature_mask=mask, baselines=bg), torch.tensor(want))
    paired = explainer.interaction_values(xq, "k-SII", 3, baselines=bg)
    for i in range(xq.shape[0]):  # each row against its own one-row background: the public background path
        alone = interaction_values(spec, xq[i : i + 1], bg[i : i + 1], "k-SII", 3)
        for order, tensor in alone.items():
            torch.testing.assert_close(paired[order][i : i + 1], tensor)


def test_tuple_inputs_take_a_tuple_of_baselines_and_other_row_counts_are_refused():
    spec, freq, amp, xq, bg = random_case(3, 6, 20, 4, 4)
    explainer = FourierShap.from_spectrum(spec, bg)
    want = torch.tensor(_per_row(brute_force.shapley, freq, amp, xq.numpy(), bg.numpy()))
    first, second = explainer.attribute(
        (xq[:, :2], xq[:, 2:].reshape(4, 2, 2)), baselines=(bg[:, :2], bg[:, 2:].reshape(4, 2, 2))
    )
    torch.testing.assert_close(torch.cat([first, second.reshape(4, 4)], 1), want)
    zero_tail = bg.clone()
    zero_tail[:, 2:] = 0
    want = torch.tensor(_per_row(brute_force.shapley, freq, amp, xq.numpy(), zero_tail.numpy()))
    first, second = explainer.attribute((xq[:, :2], xq[:, 2:]), baselines=(bg[:, :2], 0))
    torch.testing.assert_close(torch.cat([first, second], 1), want)
    with pytest.raises(ValueError, match=r"baselines has shape \(3, 6\).*background="):
        explainer.attribute(xq, baselines=bg[:3])
    with pytest.raises(ValueError, match="tuple with one entry per input"):
        explainer.attribute((xq[:, :2], xq[:, 2:]), baselines=bg)
    with pytest.raises(ValueError, match="not both"):
        explainer.attribute(xq, baselines=bg, background=bg)
    with pytest.raises(ValueError, match="baselines must hold binary"):
        explainer.attribute(xq, baselines=0.5)


def test_tree_baselines_pair_raw_rows_as_the_model_predicts():
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 4))
    forest = RandomForestRegressor(n_estimators=4, max_depth=3, random_state=0).fit(x, x[:, 0] * x[:, 1] + x[:, 2])
    explainer = FourierShap.from_trees(forest, x[:20])
    queries, baselines = torch.tensor(x[30:34]), torch.tensor(x[40:44])

    def predict(z):
        return torch.tensor(forest.predict(z.numpy()))

    want = torch.cat([interventional_shap(predict, queries[i : i + 1], baselines[i : i + 1]) for i in range(4)])
    torch.testing.assert_close(explainer.attribute(queries, baselines=baselines), want)
    phi, delta = explainer.attribute(queries, baselines=baselines, return_convergence_delta=True)
    gap = phi.sum(1) - (predict(queries) - predict(baselines))  # the model's own predict, per row
    torch.testing.assert_close(delta, gap, atol=1e-12, rtol=0)


def _net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1), torch.nn.Flatten(0)
    ).double()


def test_additional_forward_args_reach_every_query_of_the_fit():
    net = _net()
    scale = torch.tensor([1.0, -1.0, 2.0, 0.5, 1.0], dtype=torch.float64)

    def model(x, scale, shift):
        return net(x * scale) + shift

    gen = torch.Generator().manual_seed(1)
    bg, x = (torch.rand(6, 5, generator=gen) < 0.5).double(), (torch.rand(4, 5, generator=gen) < 0.5).double()
    explainer = FourierShap(model, bg, method="exact", additional_forward_args=(scale, 3.0))
    want = interventional_shap(lambda z: model(z, scale, 3.0), x, bg)
    torch.testing.assert_close(explainer.attribute(x), want)
    torch.testing.assert_close(explainer.attribute(x, additional_forward_args=(scale.clone(), 3.0)), want)
    with pytest.raises(ValueError, match="differ from those the spectrum was fitted with"):
        explainer.attribute(x, additional_forward_args=(scale, 2.0))
    with pytest.raises(ValueError, match="takes no additional_forward_args"):
        FourierShap.from_spectrum(explainer.spectrum, bg).attribute(x, additional_forward_args=(scale,))


def _paired_gap(explainer, net, x, baselines):
    phi = explainer.attribute(x, baselines=baselines)
    return phi.sum(1) - (net(x) - net(baselines))


def test_convergence_delta_is_the_efficiency_gap_against_the_model():
    net = _net()
    gen = torch.Generator().manual_seed(2)
    bg, x = (torch.rand(8, 5, generator=gen) < 0.5).double(), (torch.rand(5, 5, generator=gen) < 0.5).double()
    poor = FourierShap(net, bg, k=3, method="hybrid", target_r2=None)  # a deliberately poor fit: the gap shows it
    phi, delta = poor.attribute(x, return_convergence_delta=True)
    with torch.no_grad():
        gap = phi.sum(1) - (net(x) - net(bg).mean())
    assert delta.shape == (5,) and float(gap.abs().max()) > 1e-3
    torch.testing.assert_close(delta, gap)
    _, paired = poor.attribute(x, baselines=bg[:5], return_convergence_delta=True)
    with torch.no_grad():
        torch.testing.assert_close(paired, _paired_gap(poor, net, x, bg[:5]))
    exact = FourierShap.from_spectrum(poor.spectrum, bg)
    (first, second), exact_delta = exact.attribute((x[:, :2], x[:, 2:]), return_convergence_delta=True)
    assert exact_delta.abs().max() < 1e-12 and first.shape == (5, 2) and second.shape == (5, 3)
    assert exact.has_convergence_delta()
    tunnel = FourierShap.from_spectrum(poor.spectrum, bg, relaxed=True)  # Captum's NoiseTunnel asks for the delta
    _, noisy = NoiseTunnel(tunnel).attribute(x, nt_samples=3, stdevs=0.01, return_convergence_delta=True)
    assert noisy.shape == (15,) and float(noisy.abs().max()) < 1e-12


def test_internal_batch_size_chunks_without_changing_the_values():
    spec, _, _, xq, bg = random_case(4, 6, 30, 5, 7)
    explainer = FourierShap.from_spectrum(spec, bg)
    paired = random_case(5, 6, 1, 7, 7)[4]  # seven reference rows, one per query
    for kwargs in ({}, {"baselines": paired}):
        whole = explainer.attribute(xq, **kwargs)
        torch.testing.assert_close(explainer.attribute(xq, internal_batch_size=2, **kwargs), whole, atol=1e-12, rtol=0)
    whole = explainer.interaction_values(xq, "STII", 2)
    chunked = explainer.interaction_values(xq, "STII", 2, internal_batch_size=3)
    for order in whole:
        torch.testing.assert_close(chunked[order], whole[order], atol=1e-12, rtol=0)
    with pytest.raises(ValueError, match="internal_batch_size must be"):
        explainer.attribute(xq, internal_batch_size=0)
    with pytest.raises(TypeError, match="internal_batch_size must be"):
        explainer.attribute(xq, internal_batch_size=2.5)


def test_per_example_targets_pick_each_rows_output():
    from sklearn.ensemble import GradientBoostingClassifier

    rng = np.random.default_rng(0)
    x = rng.normal(size=(80, 4))
    model = GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0).fit(x, rng.integers(0, 3, 80))
    explainer = FourierShap.from_trees(model, x[:20])
    queries, rows = x[30:35], np.arange(5)
    every = explainer.attribute(queries)  # (Q, p, C)
    for target in ([0, 2, 1, 1, 0], torch.tensor([2, 2, 0, 1, 0])):
        picked = list(target.tolist() if isinstance(target, torch.Tensor) else target)
        torch.testing.assert_close(explainer.attribute(queries, target=target), every[rows, :, picked])
        explanation = explainer.to_shap(queries, target=target)  # shap's layout, one base value per row
        margin = model.decision_function(queries)[rows, picked]  # the model's own margin
        np.testing.assert_allclose(explanation.values.sum(1) + explanation.base_values, margin, atol=1e-12)
    _, delta = explainer.attribute(queries, return_convergence_delta=True)
    assert delta.shape == (5, 3) and float(delta.abs().max()) < 1e-12
    with pytest.raises(ValueError, match="target has 2 entries for 5 input rows"):
        explainer.attribute(queries, target=[0, 1])

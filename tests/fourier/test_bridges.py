"""The shapiq and shap bridges: objects equal to shapiq's own, plots that render (Agg), values + base = f(x)."""

from __future__ import annotations

import itertools
from math import comb

import matplotlib

matplotlib.use("Agg")  # tests only; the library never switches backends

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import shap
import torch

from tests.fourier import brute_force
from tests.fourier.cases import random_case, random_groups
from tests.fourier.interaction_reference import exact_computer, spectrum_game
from torchxplain.fourier import INDICES, interaction_values, shapley_values, to_shap_explanation, to_shapiq_values


@pytest.fixture(scope="module")
def case():
    spec, freq, amp, xq, bg = random_case(31, 6, 30, 5, 3)
    baseline = brute_force.evaluate(freq, amp, bg.numpy()).mean()
    return spec, freq, amp, xq, bg, baseline


@pytest.mark.parametrize("index", INDICES)
def test_converted_values_equal_shapiq_exact_computer(case, index):
    spec, freq, amp, xq, bg, baseline = case
    order = 1 if index in ("SV", "BV") else 2
    result = interaction_values(spec, xq, bg, index=index, max_order=order)
    converted = to_shapiq_values(result, index, baseline_value=baseline, max_order=order)
    assert len(converted) == xq.shape[0]
    for q, ours in enumerate(converted):
        reference = exact_computer(spectrum_game(freq, amp, xq[q].numpy(), bg.numpy(), np.arange(6)), 6)(index, order)
        assert ours.index == reference.index and ours.max_order == order
        assert reference.max_order == (6 if index == "Moebius" else order)  # shapiq's Moebius ignores the order
        assert ours.n_players == 6 and not ours.estimated
        tol = 1e-7 if index == "FSII" else 1e-10  # shapiq's FSII is a 1e8-penalty approximation (see test_interactions)
        assert abs(ours.baseline_value - reference.baseline_value) < tol
        keys = set(ours.interaction_lookup) | {s for s in reference.interaction_lookup if len(s) <= order}
        assert max(abs(ours[s] - reference[s]) for s in keys) < tol


def test_grouped_result_converts_with_one_entry_per_subset():
    spec, _, _, xq, bg = random_case(32, 7, 20, 4, 2)
    groups = torch.tensor(random_groups(5, 7))
    m = int(groups.max()) + 1
    result = interaction_values(spec, xq, bg, index="STII", max_order=min(3, m), groups=groups)
    first, second = to_shapiq_values(result, "STII", baseline_value=torch.tensor([0.0, 1.0]))
    order = min(3, m)
    assert len(first.interaction_lookup) == sum(comb(m, t) for t in range(order + 1))
    assert second.baseline_value == 1.0
    for subset in itertools.chain.from_iterable(itertools.combinations(range(m), t) for t in range(1, order + 1)):
        assert first[subset] == float(result[len(subset)][(0, *subset)])


def test_shapiq_network_and_upset_plots_render(case, tmp_path):
    spec, _, _, xq, bg, baseline = case
    result = interaction_values(spec, xq, bg, index="k-SII", max_order=2)
    values = to_shapiq_values(result, "k-SII", baseline_value=baseline)
    names = [f"x{i}" for i in range(6)]
    fig, _ = values[0].plot_network(show=False, feature_names=names)
    fig.savefig(tmp_path / "network.png")
    plt.close(fig)
    fig = values[1].plot_upset(show=False, feature_names=names)
    fig.savefig(tmp_path / "upset.png")
    plt.close(fig)
    assert (tmp_path / "network.png").stat().st_size > 10_000
    assert (tmp_path / "upset.png").stat().st_size > 10_000


def test_shap_explanation_reproduces_the_prediction_and_renders(case, tmp_path):
    spec, freq, amp, xq, bg, baseline = case
    phi = shapley_values(spec, xq, bg)
    data = pd.DataFrame(xq.numpy(), columns=[f"bit{i}" for i in range(6)])
    explanation = to_shap_explanation(phi, baseline, data=data)
    assert isinstance(explanation, shap.Explanation)
    assert explanation.feature_names == list(data.columns)
    np.testing.assert_allclose(
        explanation.values.sum(1) + explanation.base_values, brute_force.evaluate(freq, amp, xq.numpy()), atol=1e-10
    )
    shap.plots.waterfall(explanation[0], show=False)
    plt.gcf().savefig(tmp_path / "waterfall.png")
    plt.close("all")
    shap.plots.beeswarm(explanation, show=False)
    plt.gcf().savefig(tmp_path / "beeswarm.png")
    plt.close("all")
    assert (tmp_path / "waterfall.png").stat().st_size > 10_000
    assert (tmp_path / "beeswarm.png").stat().st_size > 10_000


def test_shap_explanation_multi_output_layout():
    values = torch.randn(4, 3, 2)
    explanation = to_shap_explanation(
        values, base_values=[0.5, -1.0], feature_names=["a", "b", "c"], output_names=["p", "q"]
    )
    assert explanation.values.shape == (4, 3, 2) and explanation.base_values.shape == (4, 2)
    np.testing.assert_array_equal(explanation.base_values[:, 1], -1.0)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda r: to_shapiq_values(r, "SHAP", 0.0), "index must be one of"),
        (lambda r: to_shapiq_values({0: r[0], 2: r[2]}, "SII", 0.0), "orders 0 and 1"),
        (lambda r: to_shapiq_values(r, "SII", 0.0, max_order=3), "max_order"),
        (lambda r: to_shap_explanation(r[1], np.zeros(5)), "do not broadcast"),
        (lambda r: to_shap_explanation(r[1], 0.0, feature_names=["a"]), "feature_names must name"),
        (lambda r: to_shap_explanation(r[1], 0.0, data=np.zeros((2, 2))), "data must have shape"),
    ],
)
def test_bad_inputs_are_refused(case, call, match):
    spec, _, _, xq, bg, _ = case
    result = interaction_values(spec, xq, bg, index="SII", max_order=2)
    with pytest.raises(ValueError, match=match):
        call(result)

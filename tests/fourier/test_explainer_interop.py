"""FourierShap.to_shap / to_shapiq / expected_value: shap's and shapiq's objects from the closed forms."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from tests.fourier import brute_force  # noqa: E402
from tests.fourier.cases import random_case  # noqa: E402
from torchxplain import FourierShap

shap = pytest.importorskip("shap")
shapiq = pytest.importorskip("shapiq")


@pytest.mark.slow
def test_to_shap_values_plus_base_equal_the_model_and_plots_render(tmp_path):
    pd = pytest.importorskip("pandas")
    from sklearn.datasets import load_diabetes
    from sklearn.ensemble import RandomForestRegressor

    data = load_diabetes()
    frame = pd.DataFrame(data.data, columns=data.feature_names)
    forest = RandomForestRegressor(n_estimators=5, max_depth=4, random_state=0).fit(frame, data.target)
    explainer = FourierShap.from_trees(forest, frame.iloc[:40])
    explanation = explainer.to_shap(frame.iloc[50:60])
    assert list(explanation.feature_names) == list(data.feature_names)
    np.testing.assert_allclose(explanation.data, data.data[50:60])
    total = explanation.values.sum(1) + explanation.base_values
    np.testing.assert_allclose(total, forest.predict(frame.iloc[50:60]), atol=1e-8, rtol=0)
    np.testing.assert_allclose(explanation.base_values, forest.predict(frame.iloc[:40]).mean(), atol=1e-9, rtol=0)
    shap.plots.waterfall(explanation[0], show=False)
    plt.savefig(tmp_path / "waterfall.png")
    plt.close("all")
    shap.plots.beeswarm(explanation, show=False)
    plt.savefig(tmp_path / "beeswarm.png")
    plt.close("all")
    assert (tmp_path / "waterfall.png").stat().st_size > 1000 and (tmp_path / "beeswarm.png").stat().st_size > 1000


def test_to_shap_per_player_with_a_feature_mask():
    spec, freq, amp, xq, bg = random_case(20, 6, 24, 5, 3)
    explainer = FourierShap.from_spectrum(spec, bg)
    ids = torch.tensor([[4, 4, 7, 7, 7, 9]])
    explanation = explainer.to_shap(xq, feature_mask=ids, player_names=["a", "b", "c"])
    expected = brute_force.shapley(freq, amp, xq.numpy(), bg.numpy(), [0, 0, 1, 1, 1, 2])
    np.testing.assert_allclose(explanation.values, expected, atol=1e-10, rtol=0)
    assert list(explanation.feature_names) == ["a", "b", "c"]
    gap = spec.evaluate(xq) - spec.evaluate(bg).mean()
    np.testing.assert_allclose(explanation.values.sum(1), gap.numpy(), atol=1e-10, rtol=0)


def test_to_shapiq_equals_shapiq_exact_computer_and_renders(tmp_path):
    spec, freq, amp, xq, bg = random_case(21, 6, 24, 5, 2, max_degree=3)
    explainer = FourierShap.from_spectrum(spec, bg)
    ours = explainer.to_shapiq(xq, index="k-SII", max_order=2)
    for row, values in enumerate(ours):

        def game(coalitions, row=row):
            z = np.where(coalitions[:, None, :], xq[row].numpy(), bg.numpy()[None])
            return spec.evaluate(torch.tensor(z.reshape(-1, 6))).reshape(len(coalitions), -1).mean(1).numpy()

        ref = shapiq.ExactComputer(n_players=6, game=game)("k-SII", order=2)
        for subset, position in ref.interaction_lookup.items():
            assert values[subset] == pytest.approx(ref.values[position], abs=1e-10)
    shapiq.plot.network_plot(ours[0])
    plt.savefig(tmp_path / "network.png")
    plt.close("all")
    assert (tmp_path / "network.png").stat().st_size > 1000

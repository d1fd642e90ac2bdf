"""``Goals.to_shap``: the local scores as a ``shap.Explanation`` for shap's distribution plots, with no base value
(GOALS scores are finite differences, not an additive decomposition, so additive plots must refuse them)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from gp_refs import gpytorch_shift_scores, make_gp  # noqa: E402

from torchxplain import Goals

shap = pytest.importorskip("shap")


def test_to_shap_holds_the_local_scores_and_renders_distribution_plots(tmp_path):
    model = make_gp(n=20, j=4)
    g = Goals(model, feature_names=["a", "b", "c", "d"])
    xq = torch.randn(12, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    explanation = g.to_shap(xq)
    # shap's sign: f(x + xi e_j) - f(x), the negated GOALS scores f(x) - f(x + xi e_j)
    np.testing.assert_allclose(explanation.values, -gpytorch_shift_scores(model, xq, 1.0).numpy(), atol=1e-8)
    assert explanation.output_names.startswith("GOALS: f(x + xi_j e_j) - f(x)")
    np.testing.assert_array_equal(explanation.data, xq.numpy())
    assert explanation.feature_names == ["a", "b", "c", "d"] and explanation.base_values is None
    # The scores are not additive: they do not sum to f(x) - E f, so no base value could make them so.
    gap = (g.forward_func(xq) - g.forward_func(model.train_inputs[0]).mean()).numpy()
    assert not np.allclose(explanation.values.sum(1), gap, atol=1e-3)
    shap.plots.beeswarm(explanation, show=False)
    plt.savefig(tmp_path / "beeswarm.png")
    assert (tmp_path / "beeswarm.png").stat().st_size > 0
    plt.close("all")
    with pytest.raises(TypeError):  # waterfall would draw base + sum(values) = f(x): it refuses
        shap.plots.waterfall(explanation[0], show=False)
    plt.close("all")

"""Grouped players as users think of them: one value per variable with its name, and shap plots that
keep the data; checked against brute force through the model's own predict."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.fourier import brute_force
from tests.fourier.cases import random_case
from tests.fourier.tree_cases import brute_force_values, one_hot_case
from torchxplain import FourierShap

LEVELS = "ACGTW"


def _frame(x: np.ndarray):
    pd = pytest.importorskip("pandas")
    return pd.DataFrame(x, columns=[f"site{g}_{level}" for g in range(4) for level in LEVELS])


def test_player_values_give_one_named_value_per_variable():
    model, ids, query, background, v = one_hot_case("rf_reg")
    explainer = FourierShap.from_trees(model, _frame(background), feature_groups=ids)
    result = explainer.player_values(_frame(query))
    assert result.names == ("site0", "site1", "site2", "site3")
    np.testing.assert_array_equal(result.ids.numpy(), np.arange(4))
    np.testing.assert_allclose(result.values.numpy(), brute_force_values(v, "shapley"), atol=1e-10, rtol=0)
    np.testing.assert_allclose(result.values.sum(1) + result.base_values, model.predict(query), atol=1e-10)
    banzhaf = explainer.player_values(_frame(query), kind="banzhaf")
    np.testing.assert_allclose(banzhaf.values.numpy(), brute_force_values(v, "banzhaf"), atol=1e-10, rtol=0)
    named = explainer.player_values(query, player_names=["a", "b", "c", "d"])
    assert named.names == ("a", "b", "c", "d")
    with pytest.raises(ValueError, match="must name the 4 players"):
        explainer.player_values(query, player_names=["a"])
    with pytest.raises(ValueError, match="kind must be 'shapley' or 'banzhaf'"):
        explainer.player_values(query, kind="owen")


def test_to_shap_with_a_feature_mask_keeps_one_representative_value_per_player():
    pytest.importorskip("shap")
    model, ids, query, background, v = one_hot_case("rf_reg")
    explainer = FourierShap.from_trees(model, _frame(background))
    mask = torch.from_numpy(ids)[None]
    explanation = explainer.to_shap(_frame(query), feature_mask=mask)
    assert explanation.feature_names == ["site0", "site1", "site2", "site3"]
    # the level of each variable, read off the one-hot block independently: 1-based position of its hot column
    levels = query.reshape(3, 4, 5).argmax(2) + 1
    np.testing.assert_array_equal(explanation.data, levels)
    np.testing.assert_allclose(explanation.values, brute_force_values(v, "shapley"), atol=1e-10, rtol=0)
    np.testing.assert_allclose(explanation.values.sum(1) + explanation.base_values, model.predict(query), atol=1e-10)
    # what each level is, for shap's waterfall: the column's name without the variable's stem
    np.testing.assert_array_equal(explanation.display_data, np.array(list(LEVELS))[levels - 1])
    import matplotlib

    matplotlib.use("Agg")
    import shap

    shap.plots.beeswarm(explanation, show=False)
    shap.plots.waterfall(explanation[0], show=False)


def test_representative_values_of_blocks_that_are_not_one_hot_are_nan_and_names_fall_back():
    pytest.importorskip("shap")
    spec, *_ = random_case(0, 4, 10, 5, 1)
    rows = torch.tensor([[1.0, 0, 0, 1], [1, 1, 0, 1], [0, 0, 0, 0]])  # row 1: two levels on at once
    explainer = FourierShap.from_spectrum(spec, torch.zeros(2, 4))
    explanation = explainer.to_shap(rows, feature_mask=torch.tensor([[7, 7, 7, 2]]))
    assert explanation.feature_names == ["player 2", "player 7"]  # players by id, no column names to name them
    np.testing.assert_array_equal(explanation.data, [[1.0, 1.0], [1.0, np.nan], [0.0, 0.0]])


def test_player_names_without_a_feature_mask_are_refused():
    spec, freq, amp, xq, bg = random_case(1, 4, 10, 3, 2)
    explainer = FourierShap.from_spectrum(spec, bg)
    with pytest.raises(ValueError, match="player_names name the players of a feature_mask"):
        explainer.to_shap(xq, player_names=["a", "b", "c", "d"])
    groups = np.array([0, 0, 1, 1])
    values = explainer.player_values(xq, feature_mask=torch.tensor(groups)[None]).values
    np.testing.assert_allclose(values.numpy(), brute_force.shapley(freq, amp, xq.numpy(), bg.numpy(), groups))

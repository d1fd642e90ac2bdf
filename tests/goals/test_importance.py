"""GlobalImportance: intervals, ranking, exports and plots."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest
import torch
from scipy.stats import norm

from torchxplain.goals import GlobalImportance


def _imp(reduction="mean"):
    mean = torch.tensor([0.5, -2.0, 0.1, -0.05], dtype=torch.float64)
    score = {"mean": mean, "abs_mean": mean.abs(), "mean_abs": torch.tensor([0.6, 2.1, 0.3, 0.9])}[reduction]
    return GlobalImportance(
        mean=mean,
        score=score.double(),
        variance=torch.tensor([0.04, 1.0, 0.01, 0.0025], dtype=torch.float64),
        reduction=reduction,
        feature_names=["a", "b", "c", "d"],
    )


def test_interval_z_and_ranking():
    imp = _imp()
    lo, hi = imp.interval(0.9)
    q = norm.ppf(0.95)
    torch.testing.assert_close(lo, imp.mean - q * imp.variance.sqrt())
    torch.testing.assert_close(hi, imp.mean + q * imp.variance.sqrt())
    torch.testing.assert_close(imp.z, torch.tensor([2.5, 2.0, 1.0, 1.0], dtype=torch.float64))
    assert imp.ranking.tolist() == [1, 0, 2, 3]


def test_abs_mean_interval_is_the_folded_signed_interval():
    imp = _imp("abs_mean")
    lo, hi = imp.interval(0.95)
    q = norm.ppf(0.975)
    # feature 0: [0.5 - 0.392, 0.5 + 0.392] stays positive; feature 1: [-3.96, -0.04] folds to [0.04, 3.96];
    # feature 3: [-0.148, 0.048] straddles zero and folds to [0, 0.148].
    torch.testing.assert_close(lo[:2], torch.tensor([0.5 - 0.2 * q, 2.0 - q], dtype=torch.float64))
    torch.testing.assert_close(hi[:2], torch.tensor([0.5 + 0.2 * q, 2.0 + q], dtype=torch.float64))
    assert float(lo[3]) == 0.0 and abs(float(hi[3]) - (0.05 + 0.05 * q)) < 1e-12
    with pytest.raises(ValueError, match="no interval"):
        _imp("mean_abs").interval()


def test_frame_plot_and_manhattan():
    imp = _imp()
    frame = imp.to_frame()
    assert frame["feature"].tolist() == ["b", "a", "c", "d"]
    assert list(frame.columns) == ["feature", "index", "rank", "mean", "score", "sd", "z", "lower", "upper"]
    fig, ax = imp.plot(top=3)
    assert len(ax.patches) == 3
    fig, ax = imp.plot_manhattan(["1", "1", "2", "X"], position=[10.0, 20.0, 5.0, 1.0])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "X"]


def test_validation():
    with pytest.raises(ValueError, match="reduction"):
        GlobalImportance(mean=torch.zeros(2), score=torch.zeros(2), reduction="max")
    with pytest.raises(ValueError, match="together"):
        GlobalImportance(mean=torch.zeros(2), score=torch.zeros(2), covariance=torch.eye(2))
    with pytest.raises(ValueError, match="feature_names"):
        GlobalImportance(mean=torch.zeros(2), score=torch.zeros(2), feature_names=["a"])

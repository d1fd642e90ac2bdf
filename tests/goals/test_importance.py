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
    display = imp.plot(top=3)
    ax = display.ax_
    assert display.figure_ is ax.figure and len(ax.patches) == 3
    # ranked by |score| (b, a, c), drawn bottom-up with the signed scores as bar widths
    assert [t.get_text() for t in ax.get_yticklabels()] == ["c", "a", "b"]
    assert [p.get_width() for p in ax.patches] == pytest.approx([0.1, 0.5, -2.0])
    lower, upper = imp.interval(0.95)
    (segments,) = [c.get_segments() for c in ax.collections]  # the xerr bars, one segment per drawn feature
    drawn = [x for segment in segments for x in (segment[0][0], segment[1][0])]
    assert drawn == pytest.approx([float(bound[j]) for j in (2, 0, 1) for bound in (lower, upper)])
    assert display.intervals_drawn_ and "95% interval" in ax.get_xlabel()
    unbounded = _imp("mean_abs").plot()
    # mean |local score| has no posterior interval: none drawn, and the label says so instead of promising one
    assert not unbounded.intervals_drawn_ and not unbounded.ax_.collections
    assert "95%" not in unbounded.ax_.get_xlabel() and "no posterior interval" in unbounded.ax_.get_xlabel()
    display = imp.plot_manhattan(["1", "1", "2", "X"], position=[10.0, 20.0, 5.0, 1.0])
    ax = display.ax_
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "X"]
    # chromosome 1 spans positions 0..10, then a gap of max(2% of 10, 1) before chromosome 2 and X
    assert display.x_.tolist() == [0.0, 10.0, 11.0, 12.0]
    # every feature annotated (annotate=5 > J) at its (x, |mean|/sd), largest z first
    assert [t.get_text() for t in ax.texts] == ["a", "b", "c", "d"]
    assert [tuple(map(float, t.xy)) for t in ax.texts] == [(0.0, 2.5), (10.0, 2.0), (11.0, 1.0), (12.0, 1.0)]


def test_validation():
    with pytest.raises(ValueError, match="reduction"):
        GlobalImportance(mean=torch.zeros(2), score=torch.zeros(2), reduction="max")
    with pytest.raises(ValueError, match="together"):
        GlobalImportance(mean=torch.zeros(2), score=torch.zeros(2), covariance=torch.eye(2))
    with pytest.raises(ValueError, match="feature_names"):
        GlobalImportance(mean=torch.zeros(2), score=torch.zeros(2), feature_names=["a"])

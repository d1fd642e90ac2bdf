"""Displays draw exactly the numbers they are given, take feature names, and never show or switch backends."""

from __future__ import annotations

import os
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from torchxplain import viz  # noqa: E402


@pytest.fixture(autouse=True)
def _no_show_and_close(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a display called plt.show()")

    monkeypatch.setattr(plt, "show", refuse)
    yield
    plt.close("all")


@pytest.mark.slow
def test_importing_torchxplain_keeps_the_users_backend():
    code = "import matplotlib, torchxplain; print(matplotlib.get_backend())"
    env = {**os.environ, "MPLBACKEND": "svg"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "svg"


def test_beeswarm_shares_one_low_to_high_colour_scale_across_features():
    q = 101
    features = np.stack([np.arange(q, dtype=float), 1000.0 + 10.0 * np.arange(q), np.full(q, 3.0)], axis=1)
    attributions = np.stack([np.linspace(-1, 1, q), np.linspace(-3, 3, q), np.zeros(q)], axis=1)
    display = viz.BeeswarmDisplay(attributions, features, ["small", "large", "flat"]).plot()
    # drawn bottom-up by mean |attribution|: large (1.5), small (0.5), flat (0)
    assert display.order_.tolist() == [2, 0, 1]
    assert [t.get_text() for t in display.ax_.get_yticklabels()] == ["flat", "small", "large"]
    # each feature between its own 5th and 95th percentile (5 and 95 for 0..100), clipped: the same numbers for
    # both scales, although one feature is in [0, 100] and the other in [1000, 2000]
    expected = np.clip((np.arange(q) - 5.0) / 90.0, 0.0, 1.0)
    np.testing.assert_allclose(display.colour_values_[:, 1], expected)
    np.testing.assert_allclose(display.colour_values_[:, 2], expected)
    assert np.isnan(display.colour_values_[:, 0]).all()  # a constant feature has no low or high
    colour_bar = display.figure_.axes[-1]
    assert colour_bar.get_ylabel() == "feature value (low → high)"
    assert [t.get_text() for t in colour_bar.get_yticklabels()] == ["low", "high"]
    grey, coloured = display.ax_.collections
    assert len(grey.get_offsets()) == q and len(coloured.get_offsets()) == 2 * q
    # the coloured dots sit at the attributions, in row-major (sample, shown feature) order
    np.testing.assert_allclose(coloured.get_offsets()[:, 0], attributions[:, [0, 1]].ravel())
    display.figure_.canvas.draw()  # mapped colours are computed at draw time
    top = coloured.get_facecolors()[np.argmax(coloured.get_offsets()[:, 0])]
    np.testing.assert_allclose(top[:3], plt.get_cmap("coolwarm")(1.0)[:3])  # the largest value is red
    assert tuple(grey.get_facecolors()[0][:3]) == pytest.approx(to_rgba("#999999")[:3])


def test_beeswarm_without_features_and_with_dataframe_names():
    frame = pd.DataFrame({"age": [1.0, -2.0, 0.5], "bmi": [0.1, 0.2, -0.1]})
    display = viz.BeeswarmDisplay(frame).plot(max_features=1)
    assert display.colour_values_ is None and display.order_.tolist() == [0]
    assert [t.get_text() for t in display.ax_.get_yticklabels()] == ["age"]
    assert len(display.figure_.axes) == 1  # no colour bar without feature values
    with pytest.raises(ValueError, match="feature_names has 1 names for 2 features"):
        viz.BeeswarmDisplay(frame, feature_names=["age"])
    with pytest.raises(ValueError, match="features must have the attributions' shape"):
        viz.BeeswarmDisplay(frame, np.zeros((3, 3)))


def test_bar_from_attributions_draws_the_mean_absolute_value_top_first():
    phi = torch.tensor([[1.0, -4.0, 0.0], [-3.0, 2.0, 0.5]])
    display = viz.BarDisplay.from_attributions(phi, ["a", "b", "c"], max_features=2)
    assert [p.get_width() for p in display.ax_.patches] == pytest.approx([2.0, 3.0])  # a: (1+3)/2, b: (4+2)/2
    assert [t.get_text() for t in display.ax_.get_yticklabels()] == ["a", "b"]
    with pytest.raises(ValueError, match="max_features must be a positive integer"):
        viz.BarDisplay([1.0]).plot(max_features=0)


def test_interaction_heatmap_averages_rows_on_a_symmetric_scale():
    sii = torch.tensor([[[0.0, 1.0], [1.0, 0.0]], [[0.0, -3.0], [-3.0, 2.0]]])
    display = viz.InteractionHeatmapDisplay(sii, ["u", "v"]).plot()
    (image,) = display.ax_.images
    np.testing.assert_allclose(image.get_array(), [[0.0, -1.0], [-1.0, 1.0]])
    assert image.get_clim() == (-1.0, 1.0)
    with pytest.raises(ValueError, match=r"\(m, m\) or \(Q, m, m\)"):
        viz.InteractionHeatmapDisplay(np.zeros((2, 3)))


def test_importance_from_mean_std_draws_the_intervals():
    display = viz.ImportanceDisplay.from_mean_std([0.5, -2.0], [0.1, 0.5], ["a", "b"], z=2.0)
    (bars,) = [c.get_segments() for c in display.ax_.collections]
    ends = [(s[0][0], s[1][0]) for s in bars]
    assert ends == [pytest.approx((0.3, 0.7)), pytest.approx((-3.0, -1.0))]
    assert display.intervals_drawn_ and display.ax_.get_xlabel() == "importance, ± 2 sd"
    with pytest.raises(ValueError, match="together"):
        viz.ImportanceDisplay([1.0], lower=[0.0])


def test_drift_draws_one_line_per_top_feature_with_its_values():
    importance = torch.tensor([[0.1, 0.5, 0.2], [0.3, 0.4, 0.9]])
    display = viz.DriftDisplay([1, 2], importance, ["a", "b", "c"]).plot(max_features=2)
    assert display.shown_.tolist() == [2, 1]  # the largest at the last epoch first
    lines = display.ax_.get_lines()
    assert [line.get_label() for line in lines] == ["c", "b"]
    np.testing.assert_allclose(lines[0].get_ydata(), [0.2, 0.9])
    np.testing.assert_allclose(lines[0].get_xdata(), [1, 2])
    with pytest.raises(ValueError, match="len\\(epochs\\)=3"):
        viz.DriftDisplay([1, 2, 3], importance)


def _graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for v, kind in (("w", "observation"), ("p", "observation"), ("r", "classification"), ("o", "classification")):
        g.add_node(v, kind=kind, value="x", explanandum=v == "o")
    g.add_edge("p", "r", relation="support", symbol="+", score=None)
    g.add_edge("r", "o", relation="support", symbol="+", score=0.25)
    g.add_edge("w", "o", relation="attack", symbol="-", score=None)
    return g


def test_explanation_graph_keeps_nodes_inside_and_labels_upright():
    display = viz.ExplanationGraphDisplay(_graph(), "md").plot()
    ax = display.ax_
    ys = {v: y for v, (_, y) in display.positions_.items()}
    assert ys["w"] == ys["p"] < ys["r"] < ys["o"]  # observations below, r one layer up, o above r
    display.figure_.canvas.draw()
    renderer = display.figure_.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    boxes = [t for t in ax.texts if "\n" in t.get_text()]
    assert len(boxes) == 4
    for box in boxes:  # every node box is drawn whole inside the axes (with a margin), none under the legend
        extent = box.get_bbox_patch().get_window_extent(renderer)
        assert frame.x0 + 5 < extent.x0 and extent.x1 < frame.x1 - 5 and frame.y0 < extent.y0
        assert extent.y1 < frame.y1 - 5
        assert extent.y0 > ax.get_legend().get_window_extent(renderer).y1
    # signed labels read upright: "+" and a true minus sign (never a rotated "+" that reads as "x"), scores signed
    edge_labels = {t.get_text(): t.get_rotation() for t in ax.texts if "\n" not in t.get_text() and t.get_text()}
    assert edge_labels == {"+": 0.0, "+0.25": 0.0, "\u2212": 0.0}
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == [
        "\u2212 attack",
        "+ support",
        "observation: input value",
        "classification: decided value",
        "explanandum",
    ]


def test_displays_draw_on_a_given_axes_and_save_closes_the_figure(tmp_path):
    fig, ax = plt.subplots()
    display = viz.BarDisplay([1.0, 2.0]).plot(ax=ax)
    assert display.ax_ is ax and display.figure_ is fig
    path = display.save(tmp_path / "bar.png")
    assert open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n" and not plt.fignum_exists(fig.number)
    with pytest.raises(RuntimeError, match="call .plot\\(\\) first"):
        viz.BarDisplay([1.0]).save(tmp_path / "x.png")

"""Rendering: dict/JSON, networkx, DOT and the Figure-2-style plot agree with the explanation."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

from torchxplain.idx import datasets, explain  # noqa: E402

A = {"w": "l", "t": "m", "p": "l"}


def test_views_carry_the_relations():
    bc = datasets.play_outside()
    (ex,) = explain(bc, A, "md", explanandum="o")
    d = json.loads(ex.to_json())
    assert d["relations"]["support"] == [["p", "r"], ["r", "o"]]
    assert d["relations"]["attack"] == [["t", "o"], ["w", "o"]]
    assert d["assignment"] == {"w": "l", "t": "m", "p": "l", "r": "+", "o": "-"}
    g = ex.to_networkx()
    assert set(g.edges) == {("p", "r"), ("r", "o"), ("t", "o"), ("w", "o")}
    assert g.edges["w", "o"]["relation"] == "attack" and g.edges["r", "o"]["symbol"] == "+"
    assert g.nodes["p"]["kind"] == "observation" and g.nodes["r"]["kind"] == "classification"
    assert g.nodes["o"]["explanandum"] and g.nodes["o"]["value"] == "-"
    dot = ex.to_dot()
    assert '"w" -> "o" [label="-"' in dot and '"p" [label="p\\nl", fillcolor="lightgrey"' in dot
    assert '"r" [label="r\\n+", fillcolor="white"' in dot


def test_plot_returns_a_display_with_figure_and_axes():
    import matplotlib.pyplot as plt

    bc = datasets.play_outside()
    for kit in ("md", "cf", "shap"):
        kwargs = {"background": datasets.all_inputs(bc)} if kit == "shap" else {}
        (ex,) = explain(bc, A, kit, explanandum="o", **kwargs)
        display = ex.plot()
        ax = display.ax_
        assert display.figure_ is ax.figure
        texts = {t.get_text() for t in ax.texts}
        assert "o\n-" in texts and "r\n+" in texts or kit == "shap"
        assert ax.get_title().startswith(kit.upper())
        plt.close(display.figure_)

"""Rendering: dict/JSON, networkx, DOT and the Figure-2-style plot agree with the explanation."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

from torchxplain.idx import datasets, explain

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


def test_plot_draws_every_relevant_node_and_each_relation_sign():
    import matplotlib.pyplot as plt

    bc = datasets.play_outside()
    signs = {"attack": "\u2212", "support": "+", "critical": "!", "potential": "\u2217"}
    for kit in ("md", "cf", "shap"):
        kwargs = {"background": datasets.all_inputs(bc)} if kit == "shap" else {}
        (ex,) = explain(bc, A, kit, explanandum="o", **kwargs)
        display = ex.plot()
        ax = display.ax_
        assert display.figure_ is ax.figure and ax.get_title() == f"{kit.upper()}-IDX for o"
        nodes = sorted(t.get_text() for t in ax.texts if "\n" in t.get_text())
        assert nodes == sorted(f"{v}\n{ex.assignment[v]}" for v in ex.relevant)  # "o\n-", "r\n+", ...
        labels = sorted(t.get_text() for t in ax.texts if t.get_text() and "\n" not in t.get_text())
        if kit == "shap":  # scored relations carry their signed score
            want = [f"{ex.scores[p]:+.2f}".replace("-", "\u2212") for pairs in ex.relations.values() for p in pairs]
        else:
            want = [signs[name] for name, pairs in ex.relations.items() for _ in pairs]
        assert labels == sorted(want) and len(labels) == sum(map(len, ex.relations.values())) > 0
        plt.close(display.figure_)

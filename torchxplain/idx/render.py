"""Views of an :class:`~torchxplain.idx.explain.Explanation`: dict/JSON, networkx, Graphviz DOT, matplotlib."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchxplain.idx.explain import Explanation

SYMBOLS = {"attack": "-", "support": "+", "critical": "!", "potential": "*"}
COLOURS = {"attack": "#c0392b", "support": "#27ae60", "critical": "#8e44ad", "potential": "#7f8c8d"}


def explanation_to_dict(ex: Explanation) -> dict[str, Any]:
    """JSON-ready dict: kit, explanandum, assignment, relevant variables, relations (sorted lists), scores."""
    return {
        "kit": ex.kit,
        "explanandum": ex.explanandum,
        "assignment": dict(ex.assignment),
        "probabilities": dict(ex.probabilities),
        "relevant": sorted(ex.relevant),
        "relations": {name: sorted([list(p) for p in pairs]) for name, pairs in ex.relations.items()},
        "scores": [[x, y, s] for (x, y), s in sorted(ex.scores.items())],
    }


def _nodes(ex: Explanation) -> list[str]:
    in_relations = {v for pairs in ex.relations.values() for p in pairs for v in p}
    return [v for v in ex.assignment if v in ex.relevant or v in in_relations]


def to_networkx(ex: Explanation) -> Any:
    """``networkx.DiGraph``: nodes carry ``value``, ``kind`` (observation/classification) and ``explanandum``;
    edges ``(influencer, influencee)`` carry ``relation`` (e.g. ``"support"``), ``symbol`` and ``score``."""
    import networkx as nx

    g = nx.DiGraph(kit=ex.kit, explanandum=ex.explanandum)
    for v in _nodes(ex):
        g.add_node(
            v,
            value=ex.assignment[v],
            kind="observation" if v in ex.observations else "classification",
            explanandum=v == ex.explanandum,
            probability=ex.probabilities.get(v),
        )
    for name, pairs in ex.relations.items():
        for x, y in sorted(pairs):
            g.add_edge(x, y, relation=name, symbol=SYMBOLS[name], score=ex.scores.get((x, y)))
    return g


def to_dot(ex: Explanation) -> str:
    """Graphviz DOT text: observations filled grey, classifications white, edges labelled by relation."""
    lines = [f'digraph "{ex.kit}_idx" {{', "  rankdir=BT;", "  node [shape=ellipse, style=filled];"]
    for v in _nodes(ex):
        fill = "lightgrey" if v in ex.observations else "white"
        pen = ", penwidth=2" if v == ex.explanandum else ""
        lines.append(f'  "{v}" [label="{v}\\n{ex.assignment[v]}", fillcolor="{fill}"{pen}];')
    for name, pairs in ex.relations.items():
        for x, y in sorted(pairs):
            lines.append(f'  "{x}" -> "{y}" [label="{SYMBOLS[name]}", color="{COLOURS[name]}"];')
    lines.append("}")
    return "\n".join(lines)


def _layers(ex: Explanation, g: Any) -> dict[str, int]:
    """Observations at layer 0; a classification one above the highest of its influencers in the graph."""
    import networkx as nx

    layer = {}
    for v in nx.topological_sort(g):
        preds = list(g.predecessors(v))
        layer[v] = 0 if v in ex.observations else 1 + max((layer[p] for p in preds), default=0)
    return layer


def plot_explanation(ex: Explanation, ax: Any = None) -> tuple[Any, Any]:
    """Draw the explanation in the style of the paper's Figure 2 and return ``(fig, ax)``.

    Observations are grey and classifications white, each labelled with its assigned or decided value;
    edges point from influencer to influencee and are labelled ``+``/``-`` (``!``/``*`` for cf). Never
    calls ``plt.show()``.
    """
    import matplotlib.pyplot as plt
    import networkx as nx

    g = to_networkx(ex)
    layers = _layers(ex, g)
    if ax is None:
        widest = max([list(layers.values()).count(k) for k in set(layers.values())], default=1)
        fig, ax = plt.subplots(figsize=(max(4.0, 1.5 * widest), max(3.0, 1.4 * (max(layers.values(), default=0) + 1))))
    else:
        fig = ax.figure
    if g.number_of_nodes() == 0:
        ax.set_axis_off()
        ax.set_title(f"{ex.kit.upper()}-IDX: no relations")
        return fig, ax
    nx.set_node_attributes(g, layers, "layer")
    pos = nx.multipartite_layout(g, subset_key="layer", align="horizontal")
    colours = ["lightgrey" if g.nodes[v]["kind"] == "observation" else "white" for v in g.nodes]
    widths = [2.5 if g.nodes[v]["explanandum"] else 1.0 for v in g.nodes]
    nx.draw_networkx_nodes(g, pos, ax=ax, node_color=colours, edgecolors="black", linewidths=widths, node_size=1800)
    nx.draw_networkx_labels(g, pos, ax=ax, font_size=8, labels={v: f"{v}\n{g.nodes[v]['value']}" for v in g.nodes})
    edge_colours = [COLOURS[g.edges[e]["relation"]] for e in g.edges]
    nx.draw_networkx_edges(g, pos, ax=ax, edge_color=edge_colours, arrows=True, arrowsize=15, node_size=1800)
    labels = {}
    for e in g.edges:
        score = g.edges[e]["score"]
        labels[e] = g.edges[e]["symbol"] + (f" {score:+.2f}" if score is not None else "")
    nx.draw_networkx_edge_labels(g, pos, ax=ax, edge_labels=labels, font_size=9)
    title = f"{ex.kit.upper()}-IDX" + (f" for {ex.explanandum}" if ex.explanandum else " (all influences)")
    ax.set_title(title)
    ax.set_axis_off()
    return fig, ax

"""Display of an explanation graph (IDX): variables as nodes, signed relations as labelled, coloured edges."""

from __future__ import annotations

from typing import Any

from matplotlib.axes import Axes

from torchxplain.viz._base import Display

RELATION_COLOURS = {"attack": "#c0392b", "support": "#27ae60", "critical": "#8e44ad", "potential": "#7f8c8d"}
NODE_SIZE = 1800


class ExplanationGraphDisplay(Display):
    """Draw an explanation graph in the style of the IDX paper's Figure 2.

    Observations sit on the bottom layer (grey), each classification one layer above the highest of its
    influencers (white); the explanandum has a thick border. Edges point from influencer to influencee, are
    coloured by relation and labelled with the relation's symbol (and the score when there is one); a legend
    names the relations.

    Args:
        graph: a ``networkx.DiGraph`` whose nodes carry ``kind`` (``"observation"``/``"classification"``),
            ``value`` (the assigned or decided value) and ``explanandum`` (bool), and whose edges carry
            ``relation``, ``symbol`` and ``score`` (``None`` when unscored) — what
            :meth:`~torchxplain.idx.Explanation.to_networkx` returns.
        title: the figure title.

    Attributes:
        positions_: node -> ``(x, y)`` in data coordinates (set by :meth:`plot`).
    """

    positions_: dict[Any, tuple[float, float]]

    def __init__(self, graph: Any, title: str = "explanation") -> None:
        if not (hasattr(graph, "nodes") and hasattr(graph, "edges") and hasattr(graph, "predecessors")):
            raise TypeError(f"graph must be a networkx.DiGraph (Explanation.to_networkx()), got {type(graph).__name__}")
        for v, data in graph.nodes(data=True):
            missing = sorted({"kind", "value", "explanandum"} - set(data))
            if missing:
                raise ValueError(f"graph node {str(v)[:40]!r} lacks the attributes {missing}")
        for x, y, data in graph.edges(data=True):
            if data.get("relation") not in RELATION_COLOURS or not {"symbol", "score"} <= set(data):
                raise ValueError(
                    f"graph edge ({str(x)[:40]!r}, {str(y)[:40]!r}) needs a relation among "
                    f"{sorted(RELATION_COLOURS)}, a symbol and a score"
                )
        self.graph, self.title = graph, title

    @classmethod
    def from_explanation(cls, explanation: Any, ax: Axes | None = None) -> ExplanationGraphDisplay:
        """Plot an IDX :class:`~torchxplain.idx.Explanation` (anything with ``to_networkx``, ``kit`` and
        ``explanandum``) on ``ax``."""
        target = explanation.explanandum
        title = f"{explanation.kit.upper()}-IDX" + (f" for {target}" if target else " (all influences)")
        return cls(explanation.to_networkx(), title).plot(ax=ax)

    def plot(self, ax: Axes | None = None) -> ExplanationGraphDisplay:
        """Draw the graph on ``ax`` (a new figure sized to the layers when ``None``); returns ``self``."""
        import networkx as nx
        from matplotlib.lines import Line2D

        g = self.graph
        layers = _layers(g)
        counts = [list(layers.values()).count(k) for k in set(layers.values())]
        width, height = max(4.0, 1.6 * max(counts, default=1)), max(3.0, 1.5 * (max(layers.values(), default=0) + 1))
        ax = self._start(ax, (width, height))
        ax.set_axis_off()
        if g.number_of_nodes() == 0:
            self.positions_ = {}
            ax.set_title(f"{self.title}: no relations")
            return self
        nx.set_node_attributes(g, layers, "layer")
        pos = nx.multipartite_layout(g, subset_key="layer", align="horizontal")
        self.positions_ = {v: (float(p[0]), float(p[1])) for v, p in pos.items()}
        colours = ["lightgrey" if g.nodes[v]["kind"] == "observation" else "white" for v in g.nodes]
        borders = [2.5 if g.nodes[v]["explanandum"] else 1.0 for v in g.nodes]
        nx.draw_networkx_nodes(
            g, pos, ax=ax, node_color=colours, edgecolors="black", linewidths=borders, node_size=NODE_SIZE
        )
        nx.draw_networkx_labels(g, pos, ax=ax, font_size=8, labels={v: f"{v}\n{g.nodes[v]['value']}" for v in g.nodes})
        edge_colours = [RELATION_COLOURS[g.edges[e]["relation"]] for e in g.edges]
        nx.draw_networkx_edges(g, pos, ax=ax, edge_color=edge_colours, arrows=True, arrowsize=15, node_size=NODE_SIZE)
        labels = {e: _edge_label(g.edges[e]) for e in g.edges}
        nx.draw_networkx_edge_labels(g, pos, ax=ax, edge_labels=labels, font_size=9, rotate=False)
        drawn = {g.edges[e]["relation"] for e in g.edges}
        handles = [Line2D([], [], color=c, label=r) for r, c in RELATION_COLOURS.items() if r in drawn]
        if handles:
            ax.legend(handles=handles, loc="upper left", fontsize="small", frameon=False)
        ax.margins(0.25, 0.3)  # room for the node discs and labels at the edges of the canvas
        ax.set_title(self.title)
        return self


def _edge_label(edge: dict[str, Any]) -> str:
    score = edge["score"]
    return edge["symbol"] + (f" {score:+.2f}" if score is not None else "")


def _layers(g: Any) -> dict[Any, int]:
    """Observations at layer 0; a classification one above the highest of its influencers in the graph."""
    import networkx as nx

    layer: dict[Any, int] = {}
    for v in nx.topological_sort(g):
        above = max((layer[p] for p in g.predecessors(v)), default=0)
        layer[v] = 0 if g.nodes[v]["kind"] == "observation" else 1 + above
    return layer

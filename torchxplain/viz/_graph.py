"""Display of an explanation graph (IDX): variables as labelled boxes, signed relations as coloured arrows."""

from __future__ import annotations

from functools import partial
from typing import Any

from matplotlib.axes import Axes

from torchxplain.viz._base import Display

RELATION_COLOURS = {"attack": "#c0392b", "support": "#1e8449", "critical": "#8e44ad", "potential": "#7f8c8d"}
RELATION_SYMBOLS = {"attack": "\u2212", "support": "+", "critical": "!", "potential": "\u2217"}  # − and ∗ read clearly
NODE_FILL = {"observation": "#d9d9d9", "classification": "white"}


class ExplanationGraphDisplay(Display):
    """Draw an explanation graph in the style of the IDX paper's Figure 2.

    Observations sit on the bottom layer (grey boxes), each classification one layer above the highest of its
    influencers (white boxes); the explanandum has a thick border. Each box reads ``name`` over the variable's
    state (the input's value for an observation, the decided value for a classification). Nodes within a layer
    are ordered to reduce crossings; an arrow that would pass behind a box of a layer it skips is bent around it.
    Arrows point from influencer to influencee, are coloured by relation and carry the relation's sign (``+``
    support, ``−`` attack, ``!`` critical, ``∗`` potential) or the score when there is one, upright on a white
    patch near the influencee. The legend names the relations and the node encoding; everything is drawn
    inside the axes.

    Args:
        graph: a ``networkx.DiGraph`` whose nodes carry ``kind`` (``"observation"``/``"classification"``),
            ``value`` (the assigned or decided value) and ``explanandum`` (bool), and whose edges carry
            ``relation``, ``symbol`` (ASCII, for DOT; the plot draws the readable sign above) and ``score``
            (``None`` when unscored) — what
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
        """Draw the graph on ``ax`` (a new figure sized to the layers and labels when ``None``); returns ``self``."""
        g = self.graph
        layers = _order(g, _layers(g))
        chars = max((len(str(v)) for v in g.nodes), default=1)
        width = max(5.0, max((len(row) for row in layers), default=1) * max(1.3, 0.11 * chars + 0.5))
        ax = self._start(ax, (width, max(3.5, 1.3 * len(layers) + 1.6)))
        ax.set_axis_off()
        ax.set_title(self.title if g.number_of_nodes() else f"{self.title}: no relations")
        self.positions_ = {
            v: ((i + 1) / (len(row) + 1), (k + 0.5) / len(layers))
            for k, row in enumerate(layers)
            for i, v in enumerate(row)
        }
        if not self.positions_:
            return self
        layer_of = {v: k for k, row in enumerate(layers) for v in row}
        boxes = {v: self._node(ax, v) for v in g.nodes}
        legend = self._legend(ax, g)
        _fit(ax, list(boxes.values()), legend)  # final limits first: arrows and their labels are placed on screen
        renderer = ax.figure.canvas.get_renderer()  # type: ignore[attr-defined]
        extents = {v: b.get_bbox_patch().get_window_extent(renderer) for v, b in boxes.items()}
        for u, v in g.edges:
            between = [extents[w] for w in g.nodes if layer_of[u] < layer_of[w] < layer_of[v]]
            self._edge(ax, g.edges[u, v], boxes[u], boxes[v], _bend(ax, boxes[u], boxes[v], between))
        return self

    def _node(self, ax: Axes, v: Any) -> Any:
        data = self.graph.nodes[v]
        x, y = self.positions_[v]
        bold = bool(data.get("explanandum"))
        box = {"boxstyle": "round,pad=0.4", "fc": NODE_FILL[data["kind"]], "ec": "black", "lw": 2.6 if bold else 1.0}
        return ax.text(x, y, f"{v}\n{data['value']}", ha="center", va="center", fontsize=8, bbox=box, zorder=3)

    def _edge(self, ax: Axes, data: dict[str, Any], source: Any, target: Any, rad: float) -> None:
        colour = RELATION_COLOURS[data["relation"]]
        props = {
            "arrowstyle": "-|>",
            "color": colour,
            "lw": 1.4,
            "mutation_scale": 14,
            "patchA": source.get_bbox_patch(),
            "patchB": target.get_bbox_patch(),
            "shrinkA": 2,
            "shrinkB": 2,
            "connectionstyle": f"arc3,rad={rad}",
        }
        start, end = source.get_position(), target.get_position()
        ax.annotate("", xy=end, xytext=start, arrowprops=props, zorder=2)
        # the label sits 60% of the way along the arrow, upright
        lx, ly = ax.transData.inverted().transform(_arc(ax, start, end, rad, [0.6])[0])
        ax.text(
            lx,
            ly,
            _edge_label(data),
            ha="center",
            va="center",
            color=colour,
            fontsize=10,
            fontweight="bold",
            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.9},
            zorder=4,
        )

    def _legend(self, ax: Axes, g: Any) -> Any:
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch

        drawn = {g.edges[e]["relation"] for e in g.edges}
        handles: list[Any] = [
            Line2D([], [], color=c, lw=1.6, label=f"{RELATION_SYMBOLS[r]} {r}")
            for r, c in RELATION_COLOURS.items()
            if r in drawn
        ]
        kinds = {g.nodes[v]["kind"] for v in g.nodes}
        if "observation" in kinds:
            handles.append(Patch(fc=NODE_FILL["observation"], ec="black", label="observation: input value"))
        if "classification" in kinds:
            handles.append(Patch(fc=NODE_FILL["classification"], ec="black", label="classification: decided value"))
        if any(g.nodes[v].get("explanandum") for v in g.nodes):
            handles.append(Patch(fc="white", ec="black", lw=2.6, label="explanandum"))
        inches = ax.get_window_extent().width / ax.figure.dpi
        columns = max(1, min(len(handles), int(inches / 2.0)))
        return ax.legend(handles=handles, loc="lower center", ncol=columns, fontsize=8, frameon=False)


def _arc(ax: Axes, start: Any, end: Any, rad: float, ts: list[float]) -> list[tuple[float, float]]:
    """Screen points at parameters ``ts`` of matplotlib's ``arc3`` curve from ``start`` to ``end`` (data coords)."""
    (x0, y0), (x1, y1) = ax.transData.transform([start, end])
    cx, cy = (x0 + x1) / 2 + rad * (y1 - y0), (y0 + y1) / 2 - rad * (x1 - x0)
    return [
        ((1 - t) ** 2 * x0 + 2 * t * (1 - t) * cx + t**2 * x1, (1 - t) ** 2 * y0 + 2 * t * (1 - t) * cy + t**2 * y1)
        for t in ts
    ]


def _bend(ax: Axes, source: Any, target: Any, between: list[Any]) -> float:
    """The ``arc3`` bend of an arrow: straight unless that passes behind a box of a layer it skips (then the bend,
    of a few tried, that crosses the fewest boxes)."""
    ts = [i / 24 for i in range(1, 24)]
    start, end = source.get_position(), target.get_position()

    def hits(rad: float) -> int:
        points = _arc(ax, start, end, rad, ts)
        return sum(box.padded(4).contains(x, y) for box in between for x, y in points)

    return min((0.0, 0.25, -0.25, 0.45, -0.45), key=hits)


def _edge_label(edge: dict[str, Any]) -> str:
    score = edge.get("score")
    if score is None:
        return RELATION_SYMBOLS[edge["relation"]]
    return f"{score:+.2f}".replace("-", "\u2212")


def _layers(g: Any) -> dict[Any, int]:
    """Observations at layer 0; a classification one above the highest of its influencers in the graph."""
    import networkx as nx

    layer: dict[Any, int] = {}
    for v in nx.topological_sort(g):
        above = max((layer[p] for p in g.predecessors(v)), default=0)
        layer[v] = 0 if g.nodes[v]["kind"] == "observation" else 1 + above
    return layer


def _order(g: Any, layer: dict[Any, int]) -> list[list[Any]]:
    """Nodes per layer (bottom first), ordered by the barycentre of their neighbours to reduce crossings."""
    rows = [[v for v in g.nodes if layer[v] == k] for k in range(max(layer.values(), default=-1) + 1)]
    for _ in range(4):  # alternate upward and downward sweeps
        for k in list(range(1, len(rows))) + list(range(len(rows) - 2, -1, -1)):
            place = {v: i / max(len(r), 1) for r in rows for i, v in enumerate(r)}
            rows[k] = sorted(rows[k], key=partial(_barycentre, g, layer=layer, k=k, place=place))
    return rows


def _barycentre(g: Any, v: Any, *, layer: dict[Any, int], k: int, place: dict[Any, float]) -> float:
    """Mean position of ``v``'s neighbours outside its own layer ``k`` (its own position when it has none)."""
    near = [place[u] for u in (*g.predecessors(v), *g.successors(v)) if layer[u] != k]
    return sum(near) / len(near) if near else place[v]


def _fit(ax: Axes, artists: list[Any], legend: Any) -> None:
    """Set the limits so that every box lies inside the axes, above the legend, with margins.

    Boxes keep their size on screen while the limits change, so the fit runs twice.
    """
    renderer = ax.figure.canvas.get_renderer()  # type: ignore[attr-defined]
    height = ax.get_window_extent(renderer).height
    below = (legend.get_window_extent(renderer).height + 12) / height if legend is not None else 0.04
    for _ in range(2):
        corners = []
        for a in artists:  # the rounded box around each label, as drawn
            a.update_bbox_position_size(renderer)
            corners.append(
                ax.transData.inverted().transform(a.get_bbox_patch().get_window_extent(renderer).get_points())
            )
        x0, x1 = min(c[:, 0].min() for c in corners), max(c[:, 0].max() for c in corners)
        y0, y1 = min(c[:, 1].min() for c in corners), max(c[:, 1].max() for c in corners)
        span_x = (x1 - x0) / 0.9 + 1e-3
        span_y = (y1 - y0) / (1 - 0.05 - below) + 1e-3
        ax.set_xlim(x0 - 0.05 * span_x, x1 + 0.05 * span_x)
        ax.set_ylim(y0 - below * span_y, y1 + 0.05 * span_y)

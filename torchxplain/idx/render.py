"""Views of an :class:`~torchxplain.idx.explain.Explanation`: dict/JSON, networkx, Graphviz DOT.

The matplotlib view is :class:`torchxplain.viz.ExplanationGraphDisplay` (``Explanation.plot``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from torchxplain.viz.graph import RELATION_COLOURS as COLOURS

if TYPE_CHECKING:
    from torchxplain.idx.explain import Explanation

SYMBOLS = {"attack": "-", "support": "+", "critical": "!", "potential": "*"}


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

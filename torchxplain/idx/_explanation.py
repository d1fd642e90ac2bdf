"""Explanation objects: a batch of explanations held as tensors, and light views of its rows.

:class:`ExplanationBatch` keeps what :func:`~torchxplain.idx.explain_batch` computed for ``B`` inputs as index
tensors (decisions, decided posteriors, one boolean mask per kit and relation). Names are produced only when
asked for: :meth:`ExplanationBatch.to_frame` builds a DataFrame column by column from the codes, and an
:class:`Explanation` (one row) turns its block of rows into Python sets on first access.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import torch
from torch import Tensor

from torchxplain.idx._classifier import BayesianClassifier
from torchxplain.idx._kits import RELATION_NAMES

if TYPE_CHECKING:
    from torchxplain.viz._graph import ExplanationGraphDisplay

SYMBOLS = {"attack": "-", "support": "+", "critical": "!", "potential": "*"}
BLOCK = 1024
Pair = tuple[str, str]


@dataclass(frozen=True)
class KitRelations:
    """The relations one kit found for ``B`` inputs.

    Attributes:
        pairs: the ``P`` ``(influencer, influencee)`` pairs of the columns (``bc.influences`` for md/sd/cf, the
            input-output pairs for lime/shap).
        masks: relation name -> ``(B, P)`` bool (with an explanandum: only the Def. 5 connected relations).
        relevant: ``(B, n)`` bool, the relevant variables when an explanandum was given (it holds it); ``None``
            otherwise (then every variable in some relation, see :meth:`ExplanationBatch.relevant`).
        scores: ``(B, P)`` attribution values (lime/shap), else ``None``.
    """

    pairs: tuple[Pair, ...]
    masks: dict[str, Tensor]
    relevant: Tensor | None = None
    scores: Tensor | None = None


@dataclass(frozen=True)
class _Row:
    relevant: frozenset[str]
    relations: dict[str, frozenset[Pair]]
    scores: dict[Pair, float]


class ExplanationBatch:
    """Influence-driven explanations of ``B`` inputs by one or more kits, kept as tensors.

    Attributes:
        classifier: the explained classifier.
        sigma: ``(B, n)`` long, every variable's value (inputs for observations, decisions for classifications).
        log_prob: ``(B, n)``, ``log P(sigma(a, v) | a)`` (0 for observations).
        kits: kit name -> the kit's relations: ``pairs`` (the ``(influencer, influencee)`` pairs of the
            columns), ``masks`` (relation name -> ``(B, P)`` bool) and ``relevant`` (``(B, n)`` bool or ``None``).
        explanandum: the explained classification, or ``None`` for the all-influences view.
    """

    def __init__(
        self,
        classifier: BayesianClassifier,
        sigma: Tensor,
        log_prob: Tensor,
        kits: Mapping[str, KitRelations],
        explanandum: str | None,
    ) -> None:
        self.classifier, self.sigma, self.log_prob = classifier, sigma, log_prob
        self.kits, self.explanandum = dict(kits), explanandum
        self._rows: dict[tuple[str, int], list[_Row]] = {}
        self._relevant: dict[str, Tensor] = {}
        self._assignments: dict[int, list[dict[str, str]]] = {}

    def __len__(self) -> int:
        return int(self.sigma.shape[0])

    def __repr__(self) -> str:
        return f"ExplanationBatch({len(self)} inputs, kits={list(self.kits)}, explanandum={self.explanandum!r})"

    def relations(self, kit: str) -> dict[str, Tensor]:
        """Relation name -> ``(B, P)`` bool mask of ``kit`` (columns: :meth:`pairs`)."""
        return self._kit(kit).masks

    def relevant(self, kit: str) -> Tensor:
        """``(B, n)`` bool: the relevant variables of ``kit``'s explanations (computed on first use)."""
        k = self._kit(kit)
        if k.relevant is not None:
            return k.relevant
        if kit not in self._relevant:
            self._relevant[kit] = stack_relevant(self.classifier, k.masks, k.pairs)
        return self._relevant[kit]

    def pairs(self, kit: str) -> tuple[Pair, ...]:
        """The ``(influencer, influencee)`` pairs of ``kit``'s mask columns."""
        return self._kit(kit).pairs

    def explanations(self, kit: str | None = None) -> list[Explanation]:
        """One :class:`Explanation` per input for ``kit`` (default: the only kit), as light views of this batch."""
        kit = self._default_kit(kit)
        return [Explanation(self, kit, b) for b in range(len(self))]

    def _default_kit(self, kit: str | None) -> str:
        if kit is None:
            if len(self.kits) != 1:
                raise ValueError(f"this batch holds kits {list(self.kits)}; pass kit= one of them")
            return next(iter(self.kits))
        self._kit(kit)
        return kit

    def _kit(self, kit: str) -> KitRelations:
        if kit not in self.kits:
            raise ValueError(f"kit {kit!r} was not computed; this batch holds {list(self.kits)}")
        return self.kits[kit]

    # ------------------------------------------------------------------ names, on demand and block-wise
    def _assignment_block(self, block: int) -> list[dict[str, str]]:
        if block not in self._assignments:
            rows = slice(block * BLOCK, (block + 1) * BLOCK)
            self._assignments[block] = self.classifier.decode(self.sigma[rows])
        return self._assignments[block]

    def _row_block(self, kit: str, block: int) -> list[_Row]:
        key = (kit, block)
        if key not in self._rows:
            k, bc = self._kit(kit), self.classifier
            rows = slice(block * BLOCK, (block + 1) * BLOCK)
            n = int(self.sigma[rows].shape[0])
            found: list[dict[str, set[Pair]]] = [{name: set() for name in k.masks} for _ in range(n)]
            for name, mask in k.masks.items():
                hit_rows, hit_pairs = np.nonzero(mask[rows].cpu().numpy())
                for b, p in zip(hit_rows.tolist(), hit_pairs.tolist()):
                    found[b][name].add(k.pairs[p])
            relevant: list[set[str]] = [set() for _ in range(n)]
            hit_rows, hit_vars = np.nonzero(self.relevant(kit)[rows].cpu().numpy())
            for b, v in zip(hit_rows.tolist(), hit_vars.tolist()):
                relevant[b].add(bc.variables[v])
            scores = k.scores[rows].cpu().numpy().tolist() if k.scores is not None else None
            self._rows[key] = [
                _Row(
                    frozenset(relevant[b]),
                    {name: frozenset(s) for name, s in found[b].items()},
                    {p: s for p, s in zip(k.pairs, scores[b]) if any(p in r for r in found[b].values())}
                    if scores is not None
                    else {},
                )
                for b in range(n)
            ]
        return self._rows[key]

    # ------------------------------------------------------------------ tables
    def to_frame(self, kit: str | None = None, layout: Literal["wide", "long"] = "wide") -> Any:
        """The batch as a pandas DataFrame, built from the codes column by column.

        Args:
            kit: one kit (default: every kit of the batch).
            layout: ``"wide"``: one row per input with every variable's value (categorical), ``P(y)`` of every
                classification's decided value, and one categorical column per kit and pair (``"md: t->r"``)
                holding the relation name or missing. ``"long"``: one row per relation found, with columns
                ``input``, ``kit``, ``relation``, ``influencer``, ``influencee`` (and ``score`` for lime/shap).
        """
        import pandas as pd

        kits = list(self.kits) if kit is None else [self._default_kit(kit)]
        if layout == "long":
            return pd.concat([self._long(k) for k in kits], ignore_index=True)
        if layout != "wide":
            raise ValueError(f"layout must be 'wide' or 'long', got {layout!r}")
        bc = self.classifier
        sigma = self.sigma.T.cpu().numpy()  # (n, B)
        cols: dict[str, Any] = {
            v: pd.Categorical.from_codes(sigma[i], categories=pd.Index(bc.value_names[v]))
            for i, v in enumerate(bc.variables)
        }
        rows = [bc.index_of(c) for c in bc.classifications]
        probs = self.log_prob.T[rows].exp().cpu().numpy()  # variable-major: one contiguous row per variable
        cols.update({f"P({c})": probs[i] for i, c in enumerate(bc.classifications)})
        for k in kits:
            rel, names = self.kits[k], RELATION_NAMES[k]
            first, second = (rel.masks[name].T.to(torch.int8) for name in names)  # relations are exclusive
            code_np = (first + 2 * second - 1).cpu().numpy()  # (P, B): -1 none, 0 first relation, 1 second
            for p, (x, y) in enumerate(rel.pairs):
                cols[f"{k}: {x}->{y}"] = pd.Categorical.from_codes(code_np[p], categories=pd.Index(names))
        return pd.DataFrame(cols)

    def _long(self, kit: str) -> Any:
        import pandas as pd

        k, bc = self.kits[kit], self.classifier
        names = list(k.masks)
        hits = [k.masks[name].nonzero().cpu().numpy() for name in names]
        rows = np.concatenate([h[:, 0] for h in hits]) if hits else np.zeros(0, dtype=np.int64)
        cols = np.concatenate([h[:, 1] for h in hits]) if hits else np.zeros(0, dtype=np.int64)
        which = np.concatenate([np.full(len(h), i) for i, h in enumerate(hits)])
        order = np.lexsort((cols, which, rows))
        rows, cols, which = rows[order], cols[order], which[order]
        src = np.array([bc.index_of(x) for x, _ in k.pairs], dtype=np.int64)
        dst = np.array([bc.index_of(y) for _, y in k.pairs], dtype=np.int64)
        frame = pd.DataFrame(
            {
                "input": rows,
                "kit": pd.Categorical.from_codes(np.zeros(len(rows), dtype=np.int8), categories=pd.Index([kit])),
                "relation": pd.Categorical.from_codes(which, categories=pd.Index(names)),
                "influencer": pd.Categorical.from_codes(src[cols], categories=pd.Index(bc.variables)),
                "influencee": pd.Categorical.from_codes(dst[cols], categories=pd.Index(bc.variables)),
            }
        )
        if k.scores is not None:
            frame["score"] = k.scores.cpu().numpy()[rows, cols]
        return frame


class Explanation:
    """One influence-driven explanation (IDX) of one input: a view of one row of an :class:`ExplanationBatch`.

    Attributes:
        kit: ``"md"``, ``"sd"``, ``"cf"``, ``"lime"`` or ``"shap"``.
        index: the input's row in its batch.

    Example:
        >>> from torchxplain import idx
        >>> ex = idx.explain(idx.datasets.play_outside(), {"w": "m", "t": "l", "p": "l"}, kit="cf")[0]
        >>> ex.kit, sorted(ex.relations)
        ('cf', ['critical', 'potential'])
        >>> ex.to_dict()["assignment"]
        {'w': 'm', 't': 'l', 'p': 'l', 'r': '+', 'o': '-'}
    """

    __slots__ = ("_batch", "index", "kit")

    def __init__(self, batch: ExplanationBatch, kit: str, index: int) -> None:
        self._batch, self.kit, self.index = batch, kit, index

    @property
    def explanandum(self) -> str | None:
        """The explained classification, or ``None`` for the all-influences view."""
        return self._batch.explanandum

    @property
    def observations(self) -> tuple[str, ...]:
        """The classifier's observation names."""
        return self._batch.classifier.observations

    @property
    def assignment(self) -> dict[str, str]:
        """Variable -> value name (the input for observations, the decision for classifications)."""
        return dict(self._batch._assignment_block(self.index // BLOCK)[self.index % BLOCK])

    def _row(self) -> _Row:
        return self._batch._row_block(self.kit, self.index // BLOCK)[self.index % BLOCK]

    @property
    def relevant(self) -> frozenset[str]:
        """The relevant variables ``X_r`` (with an explanandum they contain it, Def. 5; without, every variable in
        some relation)."""
        return self._row().relevant

    @property
    def relations(self) -> dict[str, frozenset[Pair]]:
        """Relation name -> the ``(influencer, influencee)`` pairs in it."""
        return dict(self._row().relations)

    @property
    def scores(self) -> dict[Pair, float]:
        """Attribution value of each related pair (lime/shap kits; empty otherwise)."""
        return dict(self._row().scores)

    @property
    def probabilities(self) -> dict[str, float]:
        """Classification -> posterior probability of its decided value."""
        bc = self._batch.classifier
        row = self._batch.log_prob[self.index].exp().tolist()
        return {c: row[bc.index_of(c)] for c in bc.classifications}

    def __repr__(self) -> str:
        return f"Explanation(kit={self.kit!r}, explanandum={self.explanandum!r}, relations={self.relations})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Explanation) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: kit, explanandum, assignment, probabilities, relevant, relations (sorted), scores."""
        return {
            "kit": self.kit,
            "explanandum": self.explanandum,
            "assignment": self.assignment,
            "probabilities": self.probabilities,
            "relevant": sorted(self.relevant),
            "relations": {name: sorted([list(p) for p in pairs]) for name, pairs in self.relations.items()},
            "scores": [[x, y, s] for (x, y), s in sorted(self.scores.items())],
        }

    def to_json(self, **kwargs: Any) -> str:
        """The :meth:`to_dict` view as a JSON string (``kwargs`` go to :func:`json.dumps`)."""
        return json.dumps(self.to_dict(), **kwargs)

    def _nodes(self) -> list[str]:
        in_relations = {v for pairs in self.relations.values() for p in pairs for v in p}
        return [v for v in self.assignment if v in self.relevant or v in in_relations]

    def to_networkx(self) -> Any:
        """A ``networkx.DiGraph``: nodes carry ``value``, ``kind`` (observation/classification), ``explanandum`` and
        ``probability``; edges ``(influencer, influencee)`` carry ``relation`` (e.g. ``"support"``), ``symbol`` and
        ``score``."""
        import networkx as nx

        g: Any = nx.DiGraph(kit=self.kit, explanandum=self.explanandum)
        assignment, probabilities, scores = self.assignment, self.probabilities, self.scores
        for v in self._nodes():
            g.add_node(
                v,
                value=assignment[v],
                kind="observation" if v in self.observations else "classification",
                explanandum=v == self.explanandum,
                probability=probabilities.get(v),
            )
        for name, pairs in self.relations.items():
            for x, y in sorted(pairs):
                g.add_edge(x, y, relation=name, symbol=SYMBOLS[name], score=scores.get((x, y)))
        return g

    def to_dot(self) -> str:
        """Graphviz DOT text: observations filled grey, classifications white, edges labelled by relation."""
        from torchxplain.viz._graph import RELATION_COLOURS

        assignment = self.assignment
        lines = [f'digraph "{self.kit}_idx" {{', "  rankdir=BT;", "  node [shape=ellipse, style=filled];"]
        for v in self._nodes():
            fill = "lightgrey" if v in self.observations else "white"
            pen = ", penwidth=2" if v == self.explanandum else ""
            lines.append(f'  "{v}" [label="{v}\\n{assignment[v]}", fillcolor="{fill}"{pen}];')
        for name, pairs in self.relations.items():
            for x, y in sorted(pairs):
                lines.append(f'  "{x}" -> "{y}" [label="{SYMBOLS[name]}", color="{RELATION_COLOURS[name]}"];')
        lines.append("}")
        return "\n".join(lines)

    def plot(self, ax: Any = None) -> ExplanationGraphDisplay:
        """Figure-2-style plot on ``ax`` (a new figure when ``None``); returns the display (``figure_``, ``ax_``)."""
        from torchxplain.viz._graph import ExplanationGraphDisplay

        return ExplanationGraphDisplay.from_explanation(self, ax=ax)


def stack_relevant(bc: BayesianClassifier, masks: Mapping[str, Tensor], pairs: Sequence[Pair]) -> Tensor:
    """``(B, n)`` bool: the variables that appear in some relation of ``masks`` (the all-influences view).

    Works on the pair-major transposes ``(P, B)`` (contiguous for the kernel's masks); returns a transposed view.
    """
    first, *rest = (m.T for m in masks.values())
    relevant = torch.zeros((len(bc.variables), first.shape[1]), dtype=torch.bool, device=first.device)
    for p, (x, y) in enumerate(pairs):
        hit = first[p].clone()
        for m in rest:
            hit |= m[p]
        relevant[bc.index_of(x)] |= hit
        relevant[bc.index_of(y)] |= hit
    return relevant.T

"""Influence-driven explanations: kits, batched relation tensors and :class:`Explanation` objects."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, progress, rows_per_chunk
from torchxplain.idx.classifier import BayesianClassifier
from torchxplain.idx.properties import (
    DEFAULT_MAX_CF_ASSIGNMENTS,
    cf_relations,
    counterfactual_tables,
    md_relations,
    modified_posteriors,
    sd_relations,
)

if TYPE_CHECKING:
    from torchxplain.viz import ExplanationGraphDisplay

DIALECTICAL_KITS = ("md", "sd")
ATTRIBUTION_KITS = ("lime", "shap")
KITS = ("md", "sd", "cf", "lime", "shap")
RELATION_NAMES = {
    "md": ("attack", "support"),
    "sd": ("attack", "support"),
    "cf": ("critical", "potential"),
    "lime": ("attack", "support"),
    "shap": ("attack", "support"),
}


def _check_kits(kits: str | Sequence[str]) -> tuple[str, ...]:
    kits = (kits,) if isinstance(kits, str) else tuple(kits)
    for k in kits:
        if k not in KITS:
            raise ValueError(f"unknown kit {k!r}; expected one of {KITS}")
    return kits


def relation_tensors(
    bc: BayesianClassifier,
    inputs: Any,
    kits: str | Sequence[str] = ("md", "sd", "cf"),
    *,
    rtol: float | None = None,
    max_cf_assignments: int = DEFAULT_MAX_CF_ASSIGNMENTS,
    max_memory: int | str | None = None,
    show_progress: bool | None = False,
) -> tuple[Tensor, dict[str, dict[str, Tensor]]]:
    """Relations of every influence for every input, as boolean tensors (the batched core of IDX).

    Args:
        bc: the classifier.
        inputs: anything :meth:`BayesianClassifier.encode` accepts (``B`` inputs).
        kits: any of ``"md"``, ``"sd"``, ``"cf"`` (the influence-based kits).
        rtol: relative tolerance under which posteriors tie (default ``64 * eps`` of the classifier's dtype).
        max_cf_assignments: refuse the counterfactual kit when it would enumerate more assignments.
        max_memory: budget for the ``(B, E, V, V)`` modified-posterior intermediate (chunked over inputs).
        show_progress: tqdm bar over chunks.

    Returns:
        ``(sigma, relations)``: decisions ``(B, n)`` and ``relations[kit][name]`` bool ``(B, E)`` over
        ``bc.influences``.
    """
    kits = _check_kits(kits)
    for k in kits:
        if k in ATTRIBUTION_KITS:
            raise ValueError(f"kit {k!r} is attribution-based; use torchxplain.idx.attribution_relations")
    codes = bc.encode(inputs)
    tables = counterfactual_tables(bc, max_cf_assignments, max_memory) if "cf" in kits else None
    n_values = bc.log_prior.shape[1]
    itemsize = bc.log_prior.element_size()
    bytes_per_row = 4 * len(bc.influences) * n_values * n_values * itemsize
    rows = rows_per_chunk(bytes_per_row, codes.shape[0], max_memory)
    sigmas, parts = [], {k: {name: [] for name in RELATION_NAMES[k]} for k in kits}
    for start, stop in progress(chunk_bounds(codes.shape[0], rows), show_progress, desc="IDX relations"):
        chunk = codes[start:stop]
        if "md" in kits or "sd" in kits:
            mp = modified_posteriors(bc, chunk, rtol)
            sigma = mp.sigma
            found = {
                "md": md_relations(mp) if "md" in kits else None,
                "sd": sd_relations(bc, mp) if "sd" in kits else None,
            }
        else:
            sigma = bc(chunk)[1]
            found = {}
        if tables is not None:
            found["cf"] = cf_relations(bc, sigma, tables)
        sigmas.append(sigma)
        for k in kits:
            for name in RELATION_NAMES[k]:
                parts[k][name].append(found[k][name])
    return torch.cat(sigmas), {k: {n: torch.cat(v) for n, v in d.items()} for k, d in parts.items()}


def connected(
    bc: BayesianClassifier,
    relation_mask: Tensor,
    explanandum: str,
    pairs: Sequence[tuple[str, str]] | None = None,
) -> tuple[Tensor, Tensor]:
    """Def. 5 connected explanation, batched: which variables reach the explanandum through relations.

    Args:
        relation_mask: ``(B, P)`` bool, ``True`` where pair ``p`` is in some relation.
        pairs: the ``(influencer, influencee)`` pairs of the columns (default ``bc.influences``).

    Returns:
        ``(relevant (B, n) bool, kept (B, P) bool)``: ``relevant`` holds the explanandum and every variable
        with a relation path to it; ``kept`` the relations whose influencee is relevant.
    """
    pairs = bc.influences if pairs is None else pairs
    src = torch.tensor([bc.index_of(x) for x, _ in pairs], device=relation_mask.device)
    dst = torch.tensor([bc.index_of(y) for _, y in pairs], device=relation_mask.device)
    relevant = torch.zeros((relation_mask.shape[0], len(bc.variables)), dtype=torch.bool, device=relation_mask.device)
    relevant[:, bc.index_of(explanandum)] = True
    for _ in range(len(bc.variables)):
        reach = relation_mask & relevant[:, dst]
        grown = relevant.clone()
        grown.index_put_(
            (
                torch.arange(relevant.shape[0], device=relevant.device)[:, None].expand_as(reach)[reach],
                src[None, :].expand_as(reach)[reach],
            ),
            torch.tensor(True, device=relevant.device),
        )
        if torch.equal(grown, relevant):
            break
        relevant = grown
    return relevant, relation_mask & relevant[:, dst]


@dataclass(frozen=True)
class Explanation:
    """One influence-driven explanation (IDX) of one input.

    Attributes:
        kit: ``"md"``, ``"sd"``, ``"cf"``, ``"lime"`` or ``"shap"``.
        assignment: value name of every variable (inputs for observations, decisions for classifications).
        explanandum: the explained classification, or ``None`` for the all-influences view.
        relevant: relevant variables ``X_r`` (with an explanandum it contains it, Def. 5; without, every
            variable in some relation).
        relations: relation name -> set of ``(influencer, influencee)`` variable names.
        observations: names of the classifier's observations (for rendering).
        probabilities: posterior probability of each classification's decided value.
        scores: attribution value per pair for the lime and shap kits (empty otherwise).
    """

    kit: str
    assignment: dict[str, str]
    explanandum: str | None
    relevant: frozenset[str]
    relations: dict[str, frozenset[tuple[str, str]]]
    observations: tuple[str, ...]
    probabilities: dict[str, float] = field(default_factory=dict)
    scores: dict[tuple[str, str], float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (sets become sorted lists)."""
        from torchxplain.idx.render import explanation_to_dict

        return explanation_to_dict(self)

    def to_json(self, **kwargs: Any) -> str:
        """The :meth:`to_dict` view as a JSON string (``kwargs`` go to :func:`json.dumps`)."""
        import json

        return json.dumps(self.to_dict(), **kwargs)

    def to_networkx(self):  # noqa: ANN201 - networkx is imported lazily
        """A ``networkx.DiGraph`` with variables as nodes and relations as labelled edges."""
        from torchxplain.idx.render import to_networkx

        return to_networkx(self)

    def to_dot(self) -> str:
        """Graphviz DOT text of the explanation graph."""
        from torchxplain.idx.render import to_dot

        return to_dot(self)

    def plot(self, ax: Any = None) -> ExplanationGraphDisplay:
        """Figure-2-style plot on ``ax`` (a new figure when ``None``); returns the display (``figure_``, ``ax_``)."""
        from torchxplain.viz import ExplanationGraphDisplay

        return ExplanationGraphDisplay.from_explanation(self, ax=ax)


def _build(
    bc: BayesianClassifier,
    kit: str,
    sigma: Tensor,
    log_post: Tensor | None,
    masks: dict[str, Tensor],
    pairs: Sequence[tuple[str, str]],
    explanandum: str | None,
    scores: Tensor | None = None,
) -> list[Explanation]:
    names = RELATION_NAMES[kit]
    any_rel = torch.zeros_like(masks[names[0]])
    for name in names:
        any_rel = any_rel | masks[name]
    if explanandum is not None:
        relevant_t, kept = connected(bc, any_rel, explanandum, pairs)
        masks = {name: masks[name] & kept for name in names}
    assignments = bc.decode(sigma)
    rows = {name: masks[name].tolist() for name in names}
    rel_rows = relevant_t.tolist() if explanandum is not None else None
    probs = None
    if log_post is not None:
        probs = log_post.gather(2, sigma[:, :, None]).squeeze(2).exp().tolist()
    cls_idx = [bc.index_of(c) for c in bc.classifications]
    score_rows = scores.tolist() if scores is not None else None
    out = []
    for b, assignment in enumerate(assignments):
        relations = {name: frozenset(p for p, hit in zip(pairs, rows[name][b]) if hit) for name in names}
        if rel_rows is not None:
            relevant = frozenset(v for v, hit in zip(bc.variables, rel_rows[b]) if hit)
        else:
            relevant = frozenset(v for rel in relations.values() for pair in rel for v in pair)
        probabilities = {bc.variables[i]: probs[b][i] for i in cls_idx} if probs is not None else {}
        related = set().union(*relations.values())
        sc = {p: s for p, s in zip(pairs, score_rows[b]) if p in related} if score_rows is not None else {}
        out.append(Explanation(kit, assignment, explanandum, relevant, relations, bc.observations, probabilities, sc))
    return out


def explain(
    bc: BayesianClassifier,
    inputs: Any,
    kit: str = "md",
    explanandum: str | None = None,
    **kwargs: Any,
) -> list[Explanation]:
    """Influence-driven explanations of ``inputs`` (one :class:`Explanation` per input).

    Args:
        bc: the classifier.
        inputs: a dict variable -> value name, a list of dicts, a DataFrame of value names, or integer
            codes ``(B, |O|)``.
        kit: ``"md"`` (Def. 7), ``"sd"`` (Def. 8), ``"cf"`` (Def. 9), ``"lime"`` or ``"shap"`` (Def. 10).
        explanandum: a classification to explain (Def. 5 connected explanation: relations reachable from
            it); ``None`` keeps the relations of every influence.
        **kwargs: for md/sd/cf: ``rtol``, ``max_cf_assignments``, ``max_memory``, ``show_progress``
            (see :func:`relation_tensors`); for lime/shap see
            :func:`torchxplain.idx.attribution.attribution_relations`.
    """
    (kit,) = _check_kits(kit)
    if explanandum is not None and explanandum not in bc.classifications:
        raise ValueError(f"explanandum must be a classification {bc.classifications}, got {explanandum!r}")
    codes = bc.encode(inputs)
    if kit in ATTRIBUTION_KITS:
        from torchxplain.idx.attribution import attribution_relations

        sigma, masks, pairs, scores = attribution_relations(bc, codes, kit, **kwargs)
        log_post, _ = bc(codes)
        return _build(bc, kit, sigma, log_post, masks, pairs, explanandum, scores)
    sigma, rel = relation_tensors(bc, codes, (kit,), **kwargs)
    log_post, _ = bc(codes)
    return _build(bc, kit, sigma, log_post, rel[kit], bc.influences, explanandum)

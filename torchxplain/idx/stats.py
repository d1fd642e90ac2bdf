"""Aggregate statistics over many explanations: relation shares (Table 4), agreement (Table 5),
violations of dialectical monotonicity (Table 6)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from torchxplain.idx._classifier import BayesianClassifier, check_classifier
from torchxplain.idx._relations import relation_tensors

#: (kit, relation) -> the column name :func:`relation_shares` gives its share (the paper's Table 4 headers).
SHARE_COLUMNS = {
    ("sd", "support"): "SD+",
    ("sd", "attack"): "SD-",
    ("md", "support"): "MD+",
    ("md", "attack"): "MD-",
    ("cf", "critical"): "CF!",
    ("cf", "potential"): "CF*",
}


def structural_share(bc: BayesianClassifier) -> float:
    """Percentage of influences between two classifications (Table 4's ``R^C`` columns)."""
    bc = check_classifier(bc)
    cls = set(bc.classifications)
    return 100.0 * sum(x in cls and y in cls for x, y in bc.influences) / len(bc.influences)


def shares_from_relations(relations: dict[str, dict[str, Tensor]]) -> dict[str, float]:
    """Percentage of (input, influence) pairs in each relation, from :func:`~torchxplain.idx.relation_tensors`'s
    output."""
    if not isinstance(relations, dict) or not all(isinstance(v, dict) for v in relations.values()):
        raise TypeError(
            "relations must be relation_tensors' output, a dict {kit: {relation name: (B, P) bool mask}}, got "
            f"{type(relations).__name__}"
        )
    out = {}
    for (kit, name), col in SHARE_COLUMNS.items():
        if kit in relations:
            mask = relations[kit][name]
            out[col] = 100.0 * torch.count_nonzero(mask).item() / max(mask.numel(), 1)  # a count, no float copy
    return out


def relation_shares(
    bc: BayesianClassifier, inputs: Any, kits: Sequence[str] = ("sd", "md", "cf"), **kwargs: Any
) -> dict[str, float]:
    """Table 4: the percentage of (input, influence) pairs in each relation, plus ``"R^C"``.

    Every influence of every input counts (the per-influence view), as in the paper's Table 4. Runs on the bulk
    path (:func:`~torchxplain.idx.relation_tensors`), so a million inputs take seconds; ``kwargs``
    (``rtol``, ``max_cf_assignments``, ``max_memory``, ``show_progress``) go to it.

    Example:
        >>> from torchxplain import idx
        >>> bc = idx.datasets.play_outside()
        >>> rows = idx.datasets.play_outside_data()[["w", "t", "p"]]
        >>> {k: round(v, 1) for k, v in idx.stats.relation_shares(bc, rows).items()}
        {'SD+': 75.6, 'SD-': 24.4, 'MD+': 53.3, 'MD-': 13.3, 'CF!': 31.1, 'CF*': 38.9, 'R^C': 20.0}
    """
    _, rel = relation_tensors(bc, inputs, tuple(kits), **kwargs)
    out = shares_from_relations(rel)
    out["R^C"] = structural_share(bc)
    return out


def _check_relations(named: dict[str, dict[str, Tensor]]) -> None:
    """Each argument maps ``"attack"`` and ``"support"`` to bool tensors, all of one shape ``(B, P)``."""
    shapes = {}
    for arg, rel in named.items():
        if not isinstance(rel, dict) or not {"attack", "support"} <= set(rel):
            raise ValueError(
                f"{arg} must map 'attack' and 'support' to bool (B, P) masks (relations(kit) of an ExplanationBatch), "
                f"got {sorted(rel) if isinstance(rel, dict) else type(rel).__name__}"
            )
        for name in ("attack", "support"):
            mask = rel[name]
            if not isinstance(mask, Tensor) or mask.dtype != torch.bool or mask.ndim != 2:
                raise ValueError(
                    f"{arg}[{name!r}] must be a 2-D bool tensor (B, P), got {getattr(mask, 'dtype', mask)}"
                )
            shapes[f"{arg}[{name!r}]"] = tuple(mask.shape)
    if len(set(shapes.values())) > 1:
        raise ValueError(
            f"the relation masks must have one shape (B, P) over the same inputs and pairs, got {shapes}; pass "
            "masks of one kit pair over the same pairs (e.g. md and sd, or lime and shap)"
        )


def agreement(first: dict[str, Tensor], second: dict[str, Tensor], columns: Tensor | None = None) -> float:
    """Table 5: percentage of (input, pair) cells where two dialectical kits agree on attack or support.

    ``first``/``second`` map ``"attack"``/``"support"`` to bool ``(B, P)`` over the same pairs; ``columns``
    optionally selects the pairs (e.g. the input-output influences).

    Raises:
        ValueError: masks that are not bool ``(B, P)`` tensors of one shape.
    """
    _check_relations({"first": first, "second": second})
    hit = (first["attack"] & second["attack"]) | (first["support"] & second["support"])
    if columns is not None:
        hit = hit[:, columns]
    return 100.0 * torch.count_nonzero(hit).item() / max(hit.numel(), 1)


def monotonicity_violations(relations: dict[str, Tensor], md: dict[str, Tensor]) -> float:
    """Table 6: percentage of a dialectical kit's relations that break dialectical monotonicity.

    A support (attack) violates it unless every other value of the influencer lowers (raises) the
    influencee's posterior, i.e. unless it is also an MD support (attack) over the same pairs.

    Raises:
        ValueError: masks that are not bool ``(B, P)`` tensors of one shape.
    """
    _check_relations({"relations": relations, "md": md})
    rel = relations["attack"] | relations["support"]
    bad = (relations["attack"] & ~md["attack"]) | (relations["support"] & ~md["support"])
    total = torch.count_nonzero(rel).item()
    return 100.0 * torch.count_nonzero(bad).item() / total if total else 0.0


__all__ = [
    "SHARE_COLUMNS",
    "agreement",
    "monotonicity_violations",
    "relation_shares",
    "shares_from_relations",
    "structural_share",
]

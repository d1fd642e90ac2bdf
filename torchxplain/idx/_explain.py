"""Influence-driven explanations of many inputs: :func:`explain` (one kit) and :func:`explain_batch` (several).

Both run the classifier once (:func:`~torchxplain.idx._relations.evaluate`: decisions, decided posteriors and
every relation of the influence-based kits in one pass), add the attribution kits' relations, restrict them to
the explanandum's connected explanation (Def. 5) when one is given, and keep everything as tensors in an
:class:`~torchxplain.idx._explanation.ExplanationBatch`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, overload

from torch import Tensor

from torchxplain._core import check_flag, check_int, settings
from torchxplain.idx._attribution import attribution_relations
from torchxplain.idx._classifier import BayesianClassifier, check_classifier
from torchxplain.idx._counterfactual import DEFAULT_MAX_CF_ASSIGNMENTS
from torchxplain.idx._explanation import Explanation, ExplanationBatch, KitRelations
from torchxplain.idx._kits import KITS, RELATION_KITS, check_explanandum, check_kit, check_kits, check_rtol
from torchxplain.idx._relations import connected, evaluate

ATTRIBUTION_OPTIONS = {
    "shap": {"background", "method", "background_size", "seed", "max_players", "max_table", "max_bits"},
    "lime": {"num_samples", "kernel_width", "alpha", "sampling", "seed"},
}


def _kit_relations(
    bc: BayesianClassifier,
    masks: dict[str, Tensor],
    pairs: Sequence[tuple[str, str]],
    scores: Tensor | None,
    explanandum: str | None,
) -> KitRelations:
    if explanandum is None:  # the relevant variables are derived from the masks when asked for
        return KitRelations(tuple(pairs), masks, None, scores)
    first, *rest = masks.values()
    any_rel = first.clone()
    for m in rest:
        any_rel |= m
    relevant, kept = connected(bc, any_rel, explanandum, pairs)
    return KitRelations(tuple(pairs), {name: m & kept for name, m in masks.items()}, relevant, scores)


def explain_batch(
    bc: BayesianClassifier,
    inputs: Any,
    kits: str | Sequence[str] = ("md", "sd", "cf"),
    explanandum: str | None = None,
    *,
    rtol: float | None = None,
    max_cf_assignments: int = DEFAULT_MAX_CF_ASSIGNMENTS,
    outputs: str | Sequence[str] | None = None,
    max_memory: int | str | None = None,
    show_progress: bool | None = None,
    **attribution_options: Any,
) -> ExplanationBatch:
    """Explanations of many inputs by several kits at once, kept as tensors (the bulk path).

    Args:
        bc: the classifier.
        inputs: a dict variable -> value name, a list of dicts, a DataFrame of value names, or integer codes
            ``(B, |O|)`` (see :meth:`BayesianClassifier.encode`).
        kits: kit names from ``"md"`` (Def. 7), ``"sd"`` (Def. 8), ``"cf"`` (Def. 9), ``"lime"``, ``"shap"``
            (Def. 10). The influence-based kits share one pass over the inputs.
        explanandum: a classification to explain (Def. 5 connected explanation: relations reachable from it);
            ``None`` keeps the relations of every influence.
        rtol: tie tolerance of the md/sd comparisons, and the tolerance under which a lime/shap value counts as
            zero (default ``64 * eps`` of the classifier's dtype).
        max_cf_assignments: refuse the cf kit above this many enumerated assignments.
        outputs: the classifications the lime/shap kits explain (default: all).
        max_memory, show_progress: budget of chunked intermediates and progress bars (default: ``tx.settings``).
        **attribution_options: options of :func:`~torchxplain.idx._shap.shap_values` /
            :func:`~torchxplain.idx._lime.lime_values` for the lime/shap kits.

    Returns:
        An :class:`~torchxplain.idx._explanation.ExplanationBatch`: ``sigma (B, n)``, ``log_prob (B, n)``, per kit
        ``relations(kit)`` -> ``(B, P)`` bool masks; ``explanations(kit)`` and ``to_frame()`` give names.

    Example:
        >>> from torchxplain import idx
        >>> bc = idx.datasets.play_outside()
        >>> rows = idx.datasets.play_outside_data()[["w", "t", "p"]]
        >>> batch = idx.explain_batch(bc, rows, kits=["md", "cf"])
        >>> batch.relations("md")["support"].shape  # (inputs, influences)
        torch.Size([18, 5])
    """
    kits = check_kits(kits, KITS)
    explanandum = check_explanandum(bc, explanandum)
    rtol = check_rtol(rtol)
    check_int(max_cf_assignments, "max_cf_assignments", 1, hint=f"e.g. {DEFAULT_MAX_CF_ASSIGNMENTS}")
    allowed = set().union(*(ATTRIBUTION_OPTIONS.get(k, set()) for k in kits))
    unknown = sorted(set(attribution_options) - allowed)
    if unknown:
        raise TypeError(
            f"explain got unexpected options {unknown} for kits {list(kits)}; the lime kit takes "
            f"{sorted(ATTRIBUTION_OPTIONS['lime'])}, the shap kit {sorted(ATTRIBUTION_OPTIONS['shap'])}"
        )
    user_bc = check_classifier(bc)
    bc = user_bc.computing()
    with settings.using(max_memory=max_memory, show_progress=show_progress):
        codes = bc.encode(inputs)
        result = evaluate(bc, codes, [k for k in kits if k in RELATION_KITS], rtol, max_cf_assignments)
        per_kit = {}
        for k in kits:
            if k in RELATION_KITS:
                per_kit[k] = _kit_relations(bc, result.relations[k], bc.influences, None, explanandum)
                continue
            options = {o: v for o, v in attribution_options.items() if o in ATTRIBUTION_OPTIONS[k]}
            _, masks, pairs, scores = attribution_relations(bc, codes, k, outputs, result.sigma, rtol, **options)
            per_kit[k] = _kit_relations(bc, masks, pairs, scores, explanandum)
    return ExplanationBatch(user_bc, result.sigma, result.log_prob, per_kit, explanandum)


@overload
def explain(
    bc: BayesianClassifier,
    inputs: Any,
    kit: str = ...,
    explanandum: str | None = ...,
    *,
    as_frame: Literal[False] = ...,
    **kwargs: Any,
) -> list[Explanation]: ...


@overload
def explain(
    bc: BayesianClassifier,
    inputs: Any,
    kit: str = ...,
    explanandum: str | None = ...,
    *,
    as_frame: Literal[True],
    **kwargs: Any,
) -> Any: ...


def explain(
    bc: BayesianClassifier,
    inputs: Any,
    kit: str = "md",
    explanandum: str | None = None,
    *,
    as_frame: bool = False,
    **kwargs: Any,
) -> list[Explanation] | Any:
    """Influence-driven explanations of ``inputs`` by one kit: one :class:`Explanation` per input.

    Args:
        bc: the classifier.
        inputs: a dict variable -> value name, a list of dicts, a DataFrame of value names, or integer codes
            ``(B, |O|)``.
        kit: one of ``"md"`` (Def. 7), ``"sd"`` (Def. 8), ``"cf"`` (Def. 9), ``"lime"`` or ``"shap"`` (Def. 10).
            For several kits at once use :func:`explain_batch` (they share one pass).
        explanandum: a classification to explain (Def. 5 connected explanation: relations reachable from it);
            ``None`` keeps the relations of every influence.
        as_frame: return a pandas DataFrame (one row per input, see
            :meth:`~torchxplain.idx._explanation.ExplanationBatch.to_frame`) instead of the list.
        **kwargs: ``rtol``, ``max_cf_assignments``, ``outputs``, ``max_memory``, ``show_progress`` and the
            lime/shap options, as in :func:`explain_batch`.

    Example:
        >>> from torchxplain import idx
        >>> bc = idx.datasets.play_outside()
        >>> ex = idx.explain(bc, {"w": "l", "t": "l", "p": "l"}, kit="md", explanandum="o")[0]
        >>> ex.assignment
        {'w': 'l', 't': 'l', 'p': 'l', 'r': '+', 'o': '-'}
        >>> sorted(ex.relations["support"]), sorted(ex.relations["attack"])
        ([('p', 'r'), ('r', 'o')], [('w', 'o')])
    """
    kit = check_kit(kit)
    check_flag(as_frame, "as_frame")
    batch = explain_batch(bc, inputs, (kit,), explanandum, **kwargs)
    return batch.to_frame() if as_frame else batch.explanations(kit)

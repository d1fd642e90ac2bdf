"""Attribution-based kits (Def. 10): SHAP-IDX and LIME-IDX relations over input-output influences ``O x C_o``.

Attributions explain ``P(sigma(a, y) | .)`` for each output ``y`` (the input's own decided value), with one player
per categorical observation (:mod:`torchxplain.idx._shap`, :mod:`torchxplain.idx._lime`). A positive value makes the
observation a supporter of ``y``, a negative value an attacker, and zero neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import Tensor

from torchxplain.idx._classifier import BayesianClassifier, check_classifier
from torchxplain.idx._kits import check_choice, check_rtol
from torchxplain.idx._lime import lime_from_decisions, lime_values, weighted_ridge
from torchxplain.idx._properties import tie_tolerance
from torchxplain.idx._shap import check_outputs, shap_from_decisions, shap_values

__all__ = ["attribution_relations", "lime_values", "shap_values", "weighted_ridge"]


def attribution_relations(
    bc: BayesianClassifier,
    codes: Tensor,
    kit: str,
    outputs: str | Sequence[str] | None = None,
    sigma: Tensor | None = None,
    rtol: float | None = None,
    **options: Any,
) -> tuple[Tensor, dict[str, Tensor], list[tuple[str, str]], Tensor]:
    """Relations of the LIME or SHAP kit over input-output influences ``O x C_o``.

    Args:
        bc: the classifier; ``codes``: validated codes ``(B, |O|)``.
        kit: ``"lime"`` or ``"shap"``; ``outputs``: the explained classifications (default: all).
        sigma: the decisions ``(B, n)`` when already known (else one forward pass computes them).
        rtol: values within this tolerance of 0 are neither attack nor support (default ``64 * eps`` of the
            classifier's dtype; attributions are differences of probabilities, so it is absolute). Without it,
            rounding noise of an exactly-zero attribution (``1e-16``) would read as a relation.
        **options: the options of :func:`~torchxplain.idx._shap.shap_values` or
            :func:`~torchxplain.idx._lime.lime_values` (not ``max_memory``/``show_progress``: use ``tx.settings``).

    Returns:
        ``(sigma (B, n), {"attack", "support"} -> (B, P) bool, pairs, scores (B, P))`` with the pairs ordered
        output-major: ``(o, y)`` for each output ``y`` and observation ``o``.
    """
    check_choice(kit, "kit", ("lime", "shap"))
    bc = check_classifier(bc).computing()
    outs = check_outputs(bc, outputs)
    sigma = bc(codes)[1] if sigma is None else sigma
    known = {
        "shap": ("background", "method", "background_size", "seed", "max_players", "max_table", "max_bits"),
        "lime": ("num_samples", "kernel_width", "alpha", "sampling", "seed"),
    }[kit]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise TypeError(f"the {kit} kit takes the options {known}, got unexpected {unknown}")
    if kit == "shap":
        values = shap_from_decisions(bc, codes, sigma, outs, **options)
    else:
        values = lime_from_decisions(bc, codes, sigma, outs, **options)
    scores = values.transpose(1, 2).reshape(codes.shape[0], -1)  # (B, n_out * |O|)
    checked = check_rtol(rtol)
    tol = tie_tolerance(bc.dtype) if checked is None else checked
    pairs = [(o, y) for y in outs for o in bc.observations]
    return sigma, {"attack": scores < -tol, "support": scores > tol}, pairs, scores

"""GOALS local scores as a ``shap.Explanation`` (for shap's distribution plots; the scores are not additive)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import Tensor


def local_explanation(scores: Tensor, x: Tensor, feature_names: Sequence[str] | None) -> Any:
    """A ``shap.Explanation`` of ``(Q, J)`` GOALS scores at inputs ``x`` ``(Q, J)``, with ``base_values=None``.

    The scores ``f(x) - f(x + xi_j e_j)`` do not sum to ``f(x) - E f``, so no base value makes shap's additive
    plots true; leaving it ``None`` makes them refuse (beeswarm, bar and scatter plots work).

    Raises:
        ImportError: shap is not installed (``pip install shap``).
    """
    try:
        import shap
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("to_shap() needs the shap package: pip install shap") from err
    names = list(feature_names) if feature_names is not None else [f"x{j}" for j in range(x.shape[1])]
    return shap.Explanation(
        values=scores.detach().cpu().double().numpy(),
        base_values=None,
        data=x.detach().cpu().double().numpy(),
        feature_names=names,
    )

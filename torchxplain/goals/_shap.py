"""GOALS local scores as a ``shap.Explanation`` (for shap's distribution plots; the scores are not additive).

Sign: a GOALS score is ``delta_j(x) = f(x) - f(x + xi_j e_j)``, negative where raising feature j raises the
output, the opposite of what shap's axes ("impact on model output") mean. The explanation therefore holds the
*negated* scores, ``f(x + xi_j e_j) - f(x)``: the change of the output when feature j is raised by ``xi_j``,
positive where the slope is positive, as a reader of a shap plot expects. :data:`OUTPUT_NAME` says so in the
explanation's ``output_names``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import Tensor

OUTPUT_NAME = "GOALS: f(x + xi_j e_j) - f(x), the output's change when feature j is raised by xi_j (= -score)"


def local_explanation(scores: Tensor, x: Tensor, feature_names: Sequence[str] | None) -> Any:
    """A ``shap.Explanation`` of ``(Q, J)`` GOALS scores at inputs ``x`` ``(Q, J)``: values ``-scores``
    ``(Q, J)`` (see the module docstring for the sign), ``base_values=None``, ``output_names`` :data:`OUTPUT_NAME`.

    The scores do not sum to ``f(x) - E f``, so no base value makes shap's additive plots true; leaving it
    ``None`` makes them refuse (beeswarm, bar and scatter plots work).

    Raises:
        ImportError: shap is not installed (``pip install shap``).
    """
    try:
        import shap
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("to_shap() needs the shap package: pip install shap") from err
    names = list(feature_names) if feature_names is not None else [f"x{j}" for j in range(x.shape[1])]
    return shap.Explanation(
        values=-scores.detach().cpu().double().numpy(),
        base_values=None,
        data=x.detach().cpu().double().numpy(),
        feature_names=names,
        output_names=OUTPUT_NAME,
    )

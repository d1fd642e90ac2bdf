"""Which output of a model each parsed ensemble explains, and how that output is described.

The default, the same for every library:

* regressors explain ``predict`` (every output of a multi-output regressor, or ``target=``);
* binary classifiers explain the positive class (index 1) on the model's own output scale: the probability
  ``predict_proba[:, 1]`` for scikit-learn trees and forests, the margin (log-odds) for boosting;
  ``target=0`` gives class 0 (``1 - p`` is not built: forests give ``predict_proba[:, 0]``, boosting gives
  the log-odds of class 0, ``-margin``);
* multiclass classifiers explain every class (one ensemble per class) unless ``target=`` picks one: the
  probability column for forests, the class's raw score (softmax logit) for boosting.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

OutputKind = Literal["outputs", "proba", "margin"]


@dataclass(frozen=True)
class OutputChoice:
    """One explained output: read raw column ``column`` of the model, negated when ``negate``.

    Attributes:
        column: the index among the model's raw outputs (its trees per iteration, or its probability columns).
        negate: ``True`` for class 0 of a binary boosted classifier (its log-odds are ``-margin``).
        target: the output/class index reported to the user (``None`` for a single-output regressor).
    """

    column: int
    negate: bool
    target: int | None


def check_target(target: Any, n: int, description: str) -> int:
    """Validate an explicit ``target`` among ``n`` outputs or classes and return it as an int.

    Raises:
        TypeError: ``target`` is not an integer.
        ValueError: out of range.
    """
    if isinstance(target, bool) or not isinstance(target, (int, np.integer)):
        raise TypeError(f"target must be an int output index, got {type(target).__name__} {str(target)[:40]}")
    if not 0 <= int(target) < n:
        raise ValueError(f"target must be in 0..{n - 1} for {description}, got {target}")
    return int(target)


def choose_outputs(target: Any, n: int, kind: OutputKind, description: str) -> list[OutputChoice]:
    """The outputs to explain for ``target`` (``None``: the default of the module docstring).

    Args:
        target: ``None`` or an output/class index.
        n: number of outputs (``"outputs"``) or classes (``"proba"``, ``"margin"``).
        kind: ``"outputs"`` for regressors, ``"proba"`` for probability columns, ``"margin"`` for boosted
            classifiers (one raw column when ``n == 2``, else one per class).
        description: the model's name, for messages.
    """
    binary_margin = kind == "margin" and n == 2
    if target is None:
        if kind == "proba" and n == 2:
            return [OutputChoice(1, False, 1)]
        if binary_margin:
            return [OutputChoice(0, False, 1)]
        if n == 1 and kind == "outputs":
            return [OutputChoice(0, False, None)]
        return [OutputChoice(c, False, c) for c in range(n)]
    t = check_target(target, n, description)
    if binary_margin:
        return [OutputChoice(0, t == 0, t)]
    return [OutputChoice(t, False, t)]


def describe_output(
    choice: OutputChoice, kind: OutputKind, raw: str, scale: str, n: int, labels: Sequence[Any] | None = None
) -> str:
    """A one-line statement of the explained output and its scale.

    Examples: ``"predict_proba[:, 1] (probability of class 1)"``, ``"decision_function (log-odds of class 1)"``,
    ``"-decision_function (log-odds of class 0)"``, ``"predict(raw_score=True)[:, 2] (softmax logit of class 2)"``,
    ``"predict (output units)"``.
    """
    t = choice.target
    label = ""
    if labels is not None and t is not None and t < len(labels) and str(labels[t]) != str(t):
        label = f", label {str(labels[t])[:30]!r}"
    if kind == "outputs":
        return f"{raw}[:, {t}] ({scale})" if t is not None and n > 1 else f"{raw} ({scale})"
    column = "" if kind == "margin" and n == 2 else f"[:, {choice.column}]"
    sign = "-" if choice.negate else ""
    return f"{sign}{raw}{column} ({scale} of class {t}{label})"

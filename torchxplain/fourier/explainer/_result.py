"""One call's values as one object: :class:`FourierExplanation`, and its views.

``explainer.explain(x)`` computes the values once; Captum's attribution tensor (:meth:`FourierExplanation.attribution`),
one value per player with names (:meth:`~FourierExplanation.player_values`), a ``shap.Explanation``
(:meth:`~FourierExplanation.to_shap`), first-order ``shapiq.InteractionValues`` (:meth:`~FourierExplanation.to_shapiq`)
and a DataFrame (:meth:`~FourierExplanation.to_frame`) are views of it: nothing is computed again.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from torch import Tensor

from torchxplain.fourier.explainer._bridges import to_shap_explanation, to_shapiq_values
from torchxplain.fourier.explainer._player_values import PlayerValues, player_data, player_labels


@dataclass(frozen=True, eq=False)
class FourierExplanation:
    """Interventional values of some rows, with what they are of, what they sum to and how sure they are.

    Attributes:
        values: ``(Q, m)`` one value per player (players ordered by id), ``(Q, m, C)`` for ``C`` outputs.
        base_values: the reference's output: ``()``/``(C,)`` against a background set, ``(Q,)``/``(Q, C)`` for
            per-row baselines or targets; Shapley values plus the base value give the explained output.
        stderr: standard errors of estimated values, shaped like ``values``; ``None`` when the values are exact
            (closed forms of a spectrum, enumeration through the model).
        player_ids: ``(m,)`` the players' ids. player_names: their ``m`` names.
        feature_names: the input columns' names (``None``: the inputs had none).
        data: ``(Q, n)`` the explained rows (inputs flattened to one row each).
        kind: ``"shapley"`` or ``"banzhaf"``.
        route: what produced the values (``"spectrum"``, ``"enumerate"``, ...).
        route_reason: how and why, where something was chosen: the black-box router's reason (also in the
            explainer's ``route``); on a tree model's leaf route, the leaf values' form (``dense`` tables or
            ``pairs`` of rows and background rows followed down the trees) with both forms' prices in seconds; a
            call in parts (outputs, chunks of rows) that chose differently gives each reason with its share of the
            parts. ``None`` where nothing was chosen.
        output_names: the ``C`` outputs' names when several are explained, else ``None``.

    Example:
        >>> import torch
        >>> import torchxplain as tx
        >>> model = lambda x: x[:, 0] * x[:, 1] + x[:, 2]
        >>> explainer = tx.FourierShap(model, torch.zeros(1, 3), method="enumerate")
        >>> explanation = explainer.explain(torch.ones(2, 3))
        >>> explanation.values[0], explanation.base_values, explanation.player_names
        (tensor([0.5000, 0.5000, 1.0000]), tensor(0.), ('player 0', 'player 1', 'player 2'))
        >>> explanation.stderr is None  # exact values
        True
    """

    values: Tensor
    base_values: Tensor
    stderr: Tensor | None
    player_ids: Tensor
    player_names: tuple[str, ...]
    feature_names: tuple[str, ...] | None
    data: Tensor
    kind: str
    route: str
    output_names: tuple[str, ...] | None
    _of_input: Tensor
    _attribution: tuple[Tensor, ...]
    _is_tuple: bool
    _masked: bool
    route_reason: str | None = None

    def attribution(self) -> Tensor | tuple[Tensor, ...]:
        """Captum's view: the values shaped like the inputs (each input feature gets its player's value; a last
        axis ``C`` for several outputs), a tuple for tuple inputs."""
        return self._attribution if self._is_tuple else self._attribution[0]

    def player_values(self) -> PlayerValues:
        """One value per player with the players' names (:class:`~torchxplain.fourier.PlayerValues`)."""
        return PlayerValues(self.values, self.player_names, self.player_ids, self.base_values)

    def per_feature(self) -> Tensor:
        """``(Q, n)`` (``(Q, n, C)``) each input feature's player's value."""
        return self.values[:, self._of_input]

    def to_shap(self) -> Any:
        """A ``shap.Explanation`` for shap's waterfall, beeswarm and force plots (needs ``shap``).

        Without a ``feature_mask`` in the call the columns are the input features (each gets its player's value)
        and ``data`` holds the inputs; with one, one column per player named as in :meth:`player_values`, and
        ``data`` holds one representative value per player and row (a one-hot block's level), so grouped
        beeswarms are coloured. Standard errors, when the values are estimated, go to shap's ``.error_std``.
        """
        labels = None
        names: tuple[str, ...] | None
        if self._masked:
            values, names = self.values, self.player_names
            data = player_data(self.data, self._of_input, self.values.shape[1])
            labels = player_labels(data, self._of_input, self.feature_names)
            error = self.stderr
        else:
            values, names, data = self.per_feature(), self.feature_names, self.data
            error = None if self.stderr is None else self.stderr[:, self._of_input]
        return to_shap_explanation(
            values.detach(),
            self.base_values.detach(),
            data,
            feature_names=names,
            output_names=list(self.output_names) if self.output_names else None,
            display_data=labels,
            error_std=None if error is None else error.detach(),
        )

    def to_shapiq(self) -> list[Any]:
        """One first-order ``shapiq.InteractionValues`` per row (index ``"SV"`` or ``"BV"``; needs ``shapiq``).
        Higher orders are computed by the explainer's ``to_shapiq(x, index=..., max_order=...)``."""
        if self.output_names:
            raise ValueError("to_shapiq explains one output; explain with target= one of the outputs")
        index = "SV" if self.kind == "shapley" else "BV"
        base = self.base_values if self.base_values.ndim else self.base_values.expand(self.values.shape[0])
        return to_shapiq_values({0: base, 1: self.values.detach()}, index, base, max_order=1)

    def to_frame(self) -> Any:
        """The values as a ``pandas.DataFrame``: one row per explained row, one column per player (and output),
        plus ``base_value``; with standard errors, a ``<player> stderr`` column beside each."""
        import pandas as pd

        values = self.values.detach().cpu()
        columns: dict[str, Any] = {}
        outputs = self.output_names or (None,)
        for c, output in enumerate(outputs):
            for j, name in enumerate(self.player_names):
                label = name if output is None else f"{name} [{output}]"
                columns[label] = (values[:, j] if output is None else values[:, j, c]).numpy()
                if self.stderr is not None:
                    err = self.stderr.detach().cpu()
                    columns[f"{label} stderr"] = (err[:, j] if output is None else err[:, j, c]).numpy()
        base = self.base_values.detach().cpu()
        if base.ndim == 0 or (self.output_names and base.ndim == 1):
            base = base.expand(values.shape[0], *base.shape)
        columns["base_value"] = base.numpy().tolist() if base.ndim > 1 else base.numpy()
        return pd.DataFrame(columns)


def joined_reasons(reasons: list[str]) -> str | None:
    """A call's ``route_reason`` from its parts' reasons (one per output and chunk of rows, in order): the one
    reason where all agree, else each distinct one once with its share of the parts (``"... (1 of 2 parts)"``);
    ``None`` for none."""
    if not reasons:
        return None
    counts = Counter(reasons)
    if len(counts) == 1:
        return reasons[0]
    return "; ".join(f"{reason} ({n} of {len(reasons)} parts)" for reason, n in counts.items())

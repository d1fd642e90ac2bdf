"""Which model outputs a Fourier explainer explains, and how a Captum ``target`` picks among them.

A regressor, a black box or a known spectrum has one output; a binary classifier explains its positive class by
default; a multiclass classifier explains every class. Each output has its index (the ``target`` a user passes)
and a name saying what it is and on which scale (``"predict_proba[:, 1] (probability)"``, ``"raw margin
(log-odds) of class 2"``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor


@dataclass(frozen=True)
class Outputs:
    """The explained outputs.

    Attributes:
        targets: the output index of each explained output (``None``: the model's only output).
        names: what each output is, and its scale.
    """

    targets: tuple[int | None, ...]
    names: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.targets)

    def select(self, target: Any) -> tuple[list[int], Tensor | None]:
        """The output columns a Captum ``target`` needs, and for a per-row target the ``(Q,)`` pick among them.

        ``None`` selects every output; an int one output; a list or tensor one output per row.

        Raises:
            ValueError: a target this explainer does not explain (the message lists the ones it does).
        """
        if target is None:
            return list(range(len(self))), None
        if isinstance(target, Tensor) and target.ndim == 0:
            target = int(target)
        if isinstance(target, (list, tuple, Tensor)):
            wanted = [self._column(t) for t in (target.tolist() if isinstance(target, Tensor) else target)]
            columns = sorted(set(wanted))
            pick = torch.tensor([columns.index(c) for c in wanted])
            return columns, pick
        return [self._column(target)], None

    def combine(self, values: list[Tensor], pick: Tensor | None, target: Any) -> Tensor:
        """Values of the selected outputs -> one tensor: the single output's, per row picked, or stacked last."""
        if pick is not None:
            stacked = torch.stack(values, dim=-1)
            index = pick.to(stacked.device).reshape((-1,) + (1,) * (stacked.ndim - 1))
            return torch.take_along_dim(stacked, index.expand(*stacked.shape[:-1], 1), dim=-1)[..., 0]
        if len(values) == 1 and (target is not None or len(self) == 1):
            return values[0]
        return torch.stack(values, dim=-1)

    def _column(self, target: Any) -> int:
        if isinstance(target, bool) or not isinstance(target, int):
            raise TypeError(f"target must be an int output index (or a list/tensor of them), got {target!r:.40}")
        if target in self.targets:
            return self.targets.index(target)
        if self.targets == (None,):
            raise ValueError(
                f"this explainer was built for target=None (a single-output model); got target={target}. "
                "Build one explainer per output column"
            )
        built = self.targets[0] if len(self) == 1 else list(self.targets)
        raise ValueError(
            f"this explainer was built for target={built}; got target={target}. Build one explainer per output "
            "column, or from_trees(model, background) without target for every class"
        )


def single_output(target: int | None, name: str) -> Outputs:
    """The outputs of a one-output explainer."""
    return Outputs((target,), (name,))

"""Dataset-level reductions of attributions as ``torchmetrics`` metrics: their states all-reduce across ranks."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

from torchxplain._core import check_int


class MeanAbsAttribution(Metric):
    """Mean ``|attribution|`` per feature over every row seen on every rank (sums all-reduced, then divided).

    Args:
        n_features: values per row once attributions are flattened to ``(B, n_features)``.
        **kwargs: passed to ``torchmetrics.Metric`` (e.g. ``sync_on_compute``).

    Attributes:
        total_rows: rows seen on all ranks, set by :meth:`compute`.
    """

    is_differentiable = False
    higher_is_better = None
    full_state_update = False
    total: Tensor
    count: Tensor

    def __init__(self, n_features: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.n_features = check_int(n_features, "n_features", 1, hint="the width of the attributions' rows")
        self.total_rows = 0
        self.add_state("total", torch.zeros(n_features, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")

    def update(self, attributions: Tensor) -> None:
        """Add ``(B, ...)`` attributions whose rows flatten to ``n_features`` values.

        Raises:
            ValueError: the rows do not flatten to ``n_features`` values.
        """
        flat = attributions.detach().reshape(attributions.shape[0], -1)
        if flat.shape[1] != self.n_features:
            raise ValueError(f"attributions have {flat.shape[1]} features per row, expected {self.n_features}")
        self.total += flat.abs().sum(0).to(self.total.dtype)
        self.count += flat.shape[0]

    def compute(self) -> Tensor:
        """``(n_features,)`` float64 mean ``|attribution|`` over every row seen on every rank (a collective call).

        Raises:
            ValueError: no row was seen on any rank (no ``update`` since construction or ``reset``): there is no
                mean (it was NaN).
        """
        self.total_rows = int(self.count)  # the states are all-reduced while compute runs
        if self.total_rows == 0:  # the same on every rank (the count is all-reduced): no rank waits on another
            raise ValueError(
                "MeanAbsAttribution.compute() before any attribution rows were seen: call update(attributions) "
                "first (reset() empties the metric)"
            )
        return self.total / self.count

    def _wrap_compute(self, compute: Callable[..., Any]) -> Callable[..., Any]:
        """torchmetrics' wrapper, without its generic 'compute before update' warning: :meth:`compute` says what
        is wrong when no rank saw a row, and a rank that saw none while others did is no error."""
        wrapped = super()._wrap_compute(compute)

        @functools.wraps(compute)
        def checked(*args: Any, **kwargs: Any) -> Any:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="The ``compute`` method of metric", category=UserWarning)
                return wrapped(*args, **kwargs)

        return checked


__all__ = ["MeanAbsAttribution"]

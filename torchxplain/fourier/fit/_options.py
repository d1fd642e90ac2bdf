"""The black-box fit's options (:class:`FitOptions`) and the validation of its arguments at the public boundary."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import torch
from torch import Tensor

from torchxplain._core.devices import check_device
from torchxplain._core.inputs import dense_players, player_ids, rows
from torchxplain._core.seeding import check_seed
from torchxplain._core.settings import parse_memory
from torchxplain._core.validation import check_flag, check_float_dtype, check_int, check_number
from torchxplain.fourier.fit._report import TargetMetric


@dataclass(frozen=True)
class FitOptions:
    """The less common knobs of :func:`~torchxplain.fit_sparse_fourier` (and of ``FourierShap(model, ...)``).

    Budgets count queries and terms, so the same seed gives the same spectrum on any machine at any load;
    ``time_budget`` is the one exception, off by default.

    Attributes:
        target_metric: with a background, what ``target_r2`` applies to: ``"shap"`` (the estimated R² of the
            SHAP values on held-out rows) or ``"hybrid"`` (the surrogate's pointwise R² on the held-out hybrids).
        n_validation: queries of the held-out check (with a background: pair games of held-out rows; without:
            uniform points of the cube, ``0`` skips it).
        time_budget: seconds the hybrid ladder may plan for (``None``: no time limit, the default). A stage that
            would overrun it is not started and the report says so.
        batch_size: rows per call of the model.
        device: where queries are built and the model is called (default: the model's parameters, else the
            rows', cpu).
        dtype: dtype of the query tensors (default: the model's, else the rows').
        show_progress: progress bars (``None``: ``tx.settings.show_progress``).
        max_memory: memory budget for chunked intermediates (bytes or e.g. ``"1GB"``).
        max_thresholds: continuous inputs: most thresholds per column of the encoding (the midpoints of the
            column's values in data and background, kept by equal counts beyond the cap; ``None``: every one).
        one_hot: ``True`` declares every multi-feature player one-hot and checks it on the data and background
            (an error names the first bad row and player).
        threshold: drop terms with ``|a_f| < threshold`` after the fit.
        support: ``(s, n)`` candidate frequencies for ``method="regression"`` on the cube.
        n_bits: ``method="hashing"`` on the cube: ``b``, each hash has ``2^b`` buckets.
        n_hashes: ``method="hashing"``: the number of independent hash matrices.
        n_delays: ``method="hashing"``: random delays per hash (the decoding's signature length).
        n_refit: ``method="hashing"``: fresh uniform queries for the least-squares refit of the found support.
        singleton_tol: ``method="hashing"``: a bucket is a singleton when its residual energy after fitting one
            frequency is at most this share.

    Example:
        >>> import torchxplain as tx
        >>> options = tx.fourier.FitOptions(time_budget=60.0, batch_size=1024)
        >>> options.time_budget, options.batch_size, options.target_metric
        (60.0, 1024, 'shap')
    """

    target_metric: TargetMetric = "shap"
    n_validation: int = 65536
    time_budget: float | None = None
    batch_size: int = 4096
    device: torch.device | str | None = None
    dtype: torch.dtype | None = None
    show_progress: bool | None = None
    max_memory: int | str | None = None
    max_thresholds: int | None = 128  # the encoding's floor was >= 0.9995 on every case measured
    one_hot: bool | None = None
    threshold: float | None = None
    support: Any = None
    n_bits: int | None = None
    n_hashes: int | None = None
    n_delays: int | None = None
    n_refit: int | None = None
    singleton_tol: float = 0.3

    def __post_init__(self) -> None:
        if self.target_metric not in ("shap", "hybrid"):
            raise ValueError(f"target_metric must be 'shap' or 'hybrid', got {self.target_metric!r}")
        check_int(self.n_validation, "n_validation", minimum=0)
        check_int(self.batch_size, "batch_size", minimum=1)
        check_int(self.max_thresholds, "max_thresholds", minimum=1, optional=True)
        for name in ("n_bits", "n_hashes", "n_delays", "n_refit"):
            check_int(getattr(self, name), name, minimum=1, optional=True)
        budget = self.time_budget
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float)) or not budget > 0):
            raise ValueError(f"time_budget must be a positive number of seconds or None, got {budget!r}")
        if self.threshold is not None:
            check_number(self.threshold, "threshold", at_least=0, hint="a non-negative amplitude, or None")
        check_number(self.singleton_tol, "singleton_tol", greater_than=0, less_than=1)
        if self.dtype is not None:
            check_float_dtype(self.dtype)
        if self.device is not None:
            check_device(self.device)
        if self.one_hot not in (None, True, False):
            raise TypeError(f"one_hot must be True, False or None, got {self.one_hot!r}")
        if self.show_progress is not None:
            check_flag(self.show_progress, "show_progress")
        if self.max_memory is not None:
            parse_memory(self.max_memory)  # bytes or e.g. "1GB", at least 1 MiB: refused now, not at the fit

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The option names (keyword arguments ``FourierShap(model, ...)`` forwards into the options)."""
        return tuple(f.name for f in fields(cls))


def binary_rows(x: object, name: str, n: int, device: torch.device) -> Tensor:
    """A binary ``(rows, n)`` input (tensor, numpy, list, DataFrame) as a bool tensor on ``device``."""
    return rows(x, name, n_features=n, device=device, values="binary").tensor.to(device=device).bool()


def players(groups: object, n: int, device: torch.device) -> tuple[Tensor, int]:
    """``(player index 0..m-1 per feature, m)`` from ``groups`` under the one player-id contract (singletons
    when ``None``); players are the distinct ids in increasing order."""
    ids = player_ids(groups, n, "groups", device)
    if ids is None:
        return torch.arange(n, device=device), n
    index, _, m = dense_players(ids)
    return index, m


def validation_seed(seed: int | torch.Generator) -> int:
    """A seed for the held-out draws, independent of the fit's (and reproducible); ``seed`` checked (a
    non-negative int or a ``torch.Generator``: ``"abc"``, ``1.5`` and ``-1`` are refused)."""
    base = seed.initial_seed() if isinstance(seed, torch.Generator) else check_seed(seed)
    return (base * 1_000_003 + 12_345) % 2**62


def fit_options_from(
    named: dict[str, Any], max_memory: int | str | None = None, show_progress: bool | None = None
) -> FitOptions:
    """A :class:`FitOptions` from ``options=`` and option fields passed by name (``FourierShap(model, ...,
    time_budget=60)``); unknown names are refused with the list of known ones."""
    base = named.pop("options", None)
    if base is not None and not isinstance(base, FitOptions):
        raise TypeError(f"options must be a FitOptions, got {type(base).__name__}")
    unknown = sorted(set(named) - set(FitOptions.names()))
    if unknown:
        raise TypeError(f"unexpected fit options {unknown}; FitOptions takes {list(FitOptions.names())}")
    merged = {**({} if base is None else {f: getattr(base, f) for f in FitOptions.names()}), **named}
    if merged.get("max_memory") is None:
        merged["max_memory"] = max_memory
    if merged.get("show_progress") is None:
        merged["show_progress"] = show_progress
    return FitOptions(**merged)

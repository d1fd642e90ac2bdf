"""Querying a black box for a fit: batches on its device and dtype, every answer checked, rows counted.

Dtype policy for the queries (stated once): an explicit ``dtype``; else the dtype of an ``nn.Module``'s first
floating parameter; else the floating dtype of the user's rows (``background``/``data``), so a float64 plain
callable fed float64 rows is queried in float64; else ``torch.get_default_dtype()``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
from torch import Tensor, nn

from torchxplain._core import chunk_bounds, progress


def model_placement(
    f: object,
    device: torch.device | str | None,
    dtype: torch.dtype | None,
    rows: Tensor | None = None,
) -> tuple[torch.device, torch.dtype]:
    """Device and dtype of the queries (module policy); the device defaults to the parameters', else cpu."""
    param = next(f.parameters(), None) if isinstance(f, nn.Module) else None
    if device is None:
        device = param.device if param is not None else (rows.device if rows is not None else torch.device("cpu"))
    if dtype is None:
        if param is not None and param.is_floating_point():
            dtype = param.dtype
        elif rows is not None and rows.is_floating_point():
            dtype = rows.dtype
        else:
            dtype = torch.get_default_dtype()
    return torch.device(device), dtype


class Oracle:
    """Queries ``f`` in batches on its device and dtype, checks each answer, counts rows and batches.

    Args:
        f: the black box, ``(B, n)`` float tensor -> ``(B,)`` or ``(B, C)``.
        n_features: ``n``.
        device, dtype: where and in which dtype the queries are made (:func:`model_placement`).
        batch_size: rows per call.
        target: output column for ``(B, C)`` outputs.
    """

    def __init__(
        self,
        f: Callable[[Tensor], Tensor],
        n_features: int,
        device: torch.device,
        dtype: torch.dtype,
        batch_size: int,
        target: int | None,
    ) -> None:
        self.f, self.n, self.device, self.dtype = f, n_features, device, dtype
        self.batch_size, self.target = batch_size, target
        self.phase = "fit"
        self.rows = 0
        self.batches = 0
        self.seconds = 0.0
        self.cpu_seconds = 0.0
        self.out_dtype: torch.dtype | None = None
        self.domain_note = ""  # where the fit queries beyond the user's rows (said when f is not finite there)

    def __call__(self, x: Tensor) -> Tensor:
        """``(B, n)`` bool inputs -> ``(B,)`` float64 outputs of ``f`` (its ``target`` column)."""
        bounds = chunk_bounds(x.shape[0], self.batch_size)
        show = None if len(bounds) > 1 else False
        parts = [self._batch(x[a:b]) for a, b in progress(bounds, show, desc=f"querying the model ({self.phase})")]
        return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.float64, device=x.device)

    def seconds_per_row(self) -> float:
        """Measured seconds per queried row so far (0 before any query)."""
        return self.seconds / self.rows if self.rows else 0.0

    def _batch(self, x: Tensor) -> Tensor:
        last = self.rows + x.shape[0] - 1
        where = f"query batch {self.batches} ({self.phase} phase, rows {self.rows}..{last})"
        start, cpu = time.perf_counter(), time.process_time()
        with torch.no_grad():
            out = self.f(x.to(device=self.device, dtype=self.dtype))
        self.seconds += time.perf_counter() - start
        self.cpu_seconds += time.process_time() - cpu
        if not isinstance(out, Tensor):
            raise TypeError(f"f must return a torch.Tensor, got {type(out).__name__} in {where}")
        if out.is_complex() or out.ndim not in (1, 2) or out.shape[0] != x.shape[0]:
            raise ValueError(
                f"f must map a ({x.shape[0]}, {self.n}) batch to shape ({x.shape[0]},) or ({x.shape[0]}, C) "
                f"real values; {where} returned shape {tuple(out.shape)} and dtype {out.dtype}"
            )
        if out.ndim == 2:
            if out.shape[1] > 1 and self.target is None:
                raise ValueError(f"f returns {out.shape[1]} outputs per row ({where}); pass target= to pick")
            column = 0 if self.target is None else self.target
            if column >= out.shape[1]:
                raise ValueError(f"target={self.target} but f returns {out.shape[1]} outputs ({where})")
            out = out[:, column]
        elif self.target not in (None, 0):
            raise ValueError(f"target={self.target} but f returns one output per row ({where})")
        bad = ~torch.isfinite(out)
        if bool(bad.any()):
            row = int(bad.nonzero()[0, 0])
            raise ValueError(
                f"f returned NaN or infinite values in {where}: first at row {self.rows + row}, "
                f"input {shown_row(x[row])}{self.domain_note}"
            )
        if self.out_dtype is None:
            self.out_dtype = out.dtype if out.is_floating_point() else torch.get_default_dtype()
        self.rows += x.shape[0]
        self.batches += 1
        return out.detach().to(device=x.device, dtype=torch.float64)


def shown_row(row: Tensor, limit: int = 16) -> str:
    """One query row as the model received it, for a message: 0/1 entries as ints, real ones as floats (a
    continuous row was shown truncated to ints), at most ``limit`` entries."""
    values = row[:limit].tolist()
    binary = row.dtype == torch.bool or bool(((row == 0) | (row == 1)).all())
    shown = ", ".join(str(int(v)) if binary else f"{float(v):.6g}" for v in values)
    more = f", ... ({row.shape[0]} entries)" if row.shape[0] > limit else ""
    return f"[{shown}{more}]"

"""Continuous black boxes (``FourierShap(model, background, data=)`` on non-0/1 rows) — issue 32: rows outside the
fitted range, degenerate columns, the model's own failures and arguments. Each result against brute force over
coalitions of the model itself (``tests.fourier.brute_force``) or an expected clear error."""

from __future__ import annotations

import re

import torch

import torchxplain as tx
from tests.robustness.harness import result_case

FS = "torchxplain.FourierShap"


def quarters(rows: int, p: int, seed: int) -> torch.Tensor:
    """Rows on a grid of quarters (exact in every float dtype)."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(-8, 9, (rows, p), generator=gen).double() / 4


def nan_right(x: torch.Tensor) -> torch.Tensor:
    """A model undefined right of 1.5 in column 0."""
    x = x.double()
    return torch.where(x[:, 0] > 1.5, float("nan"), x.sum(1))


@result_case(FS, "a model NaN on a continuous row: the message quotes the row as queried (it was cast to int)")
def _():
    try:
        tx.FourierShap(nan_right, quarters(12, 3, 0), show_progress=False)
    except ValueError as err:
        found = re.search(r"input \[([^\]]*)\]", str(err))
        assert found is not None, str(err)
        row = torch.tensor([float(v) for v in found.group(1).split(", ")], dtype=torch.float64)
        assert bool(torch.isnan(nan_right(row[None]))), f"the quoted row {row.tolist()} is not one the model fails on"
        assert row[0] > 1.5 and bool((row * 4 == (row * 4).round()).all()), row  # real values, not ints
    else:
        raise AssertionError("a model that returns NaN on the fit's hybrids must be refused")

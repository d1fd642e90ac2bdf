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


@result_case(FS, "continuous rows where every column holds one value: the constant fit (torch.cat failed)")
def _():
    from tests.fourier.brute_force import model_shapley

    row = torch.tensor([[0.5, 2.5, -1.25]], dtype=torch.float64)
    model = lambda x: torch.tanh(x.double()).sum(1) + x.double()[:, 0] * x.double()[:, 2]  # noqa: E731
    explainer = tx.FourierShap(model, row.expand(6, 3), data=row.expand(9, 3), show_progress=False)
    report = explainer.fit_report
    assert report.r2_shap == 1.0 and report.stopped == "no column varies over the fit's rows", report
    torch.testing.assert_close(explainer.expected_value(), model(row)[0])  # the model itself at the one row
    same = row.expand(2, 3)
    want = torch.from_numpy(
        model_shapley(lambda z: model(torch.from_numpy(z)).numpy(), same.numpy(), row.numpy(), [0, 1, 2])
    )
    torch.testing.assert_close(explainer.attribute(same), want)

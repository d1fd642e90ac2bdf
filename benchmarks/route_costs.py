"""Measure the router's cost constants: our own algebra's seconds per unit on one thread, beside the reference
workload that scales them to another machine (``torchxplain.fourier.sources._route``).

Prints, for this machine: the reference workload's seconds (``REFERENCE_SECONDS``), enumeration's own seconds per
model row and column (``ENUMERATE_PER_ROW``), tabulation's per grid point and player (``TABULATE_PER_POINT``), and
the binary and continuous fits' per hybrid sample over their ladders (``FIT_PER_SAMPLE``), each as CPU seconds
outside the model (the fit reports split them). Run: ``PYTHONPATH=. python benchmarks/route_costs.py``.
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np
import torch
from torch import nn

import torchxplain as tx
from torchxplain.fourier.fit import enumeration_queries
from torchxplain.fourier.fit._enumerate import enumerate_values
from torchxplain.fourier.sources._route import reference_seconds


def _mlp(p: int) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(p, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1), nn.Flatten(0))


def _own(report: tx.fourier.FitReport) -> float:
    assert report.cpu_time_s is not None and report.model_cpu_time_s is not None
    return report.cpu_time_s - report.model_cpu_time_s


def main() -> None:
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    print(f"load average {os.getloadavg()}; one thread")
    print(f"REFERENCE_SECONDS   {reference_seconds(torch.device('cpu')):.3e} s")
    x, bg = torch.randn(20, 10, dtype=torch.float64), torch.randn(40, 10, dtype=torch.float64)
    start = time.process_time()
    enumerate_values(lambda z: z[:, 0], x, bg, torch.arange(10), 10, "shapley")  # a model that costs nothing
    rows = enumeration_queries(x, bg, torch.arange(10), 10)
    print(f"ENUMERATE_PER_ROW   {(time.process_time() - start) / rows / 10:.3e} s per model row and column")
    rng = np.random.default_rng(0)
    one_hot = torch.as_tensor(np.eye(12)[rng.integers(0, 12, (3000, 4))].reshape(3000, -1), dtype=torch.float32)
    report = tx.FourierShap(_mlp(48), one_hot[:40], data=one_hot, groups="auto", method="tabulate").fit_report
    grid = report.params["grid"]
    print(f"TABULATE_PER_POINT  {_own(report) / grid / 4:.3e} s per grid point and player ({grid:,} points)")
    bits = torch.as_tensor(rng.integers(0, 2, (2000, 20)), dtype=torch.float32)
    report = tx.FourierShap(_mlp(20), bits[:40], data=bits, method="fit").fit_report
    print(f"FIT_PER_SAMPLE[binary]      {_own(report) / report.n_queries:.3e} s ({report.n_queries:,} samples)")
    rows_c = torch.randn(400, 10)
    report = tx.FourierShap(_mlp(10), rows_c[:40], data=rows_c, method="fit").fit_report
    print(f"FIT_PER_SAMPLE[continuous]  {_own(report) / report.n_queries:.3e} s ({report.n_queries:,} samples)")


if __name__ == "__main__":
    main()

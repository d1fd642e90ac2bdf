"""Measure the router's cost constants: our own algebra's seconds per unit on one thread, beside the reference
workload that scales them to another machine (``torchxplain.fourier.sources._route``).

Prints, for this machine: the reference workload's seconds (``REFERENCE_SECONDS``); then, on the black-box
benchmark's cases (``_blackbox_cases.py``: trained models, 40 background rows; a case whose data is missing is
skipped), enumeration's and the correction's own CPU seconds per model row (the whole call's CPU time less the
model's, as its oracle counts it), scaled to ``REFERENCE_SECONDS``: enumeration's per model row and column
(``ENUMERATE_PER_ROW``), the correction's as a constant plus a part per player (``CORRECT_PER_ROW``, least squares
over the cases; its build counted as the router prices it, once for 1,000 rows); beside each, the model rows the
router's forecast and what the rows spent, and the predicted against the measured seconds for 1,000 rows. Then
tabulation's per grid point and player (``TABULATE_PER_POINT``) and the binary and continuous fits' per hybrid
sample over their ladders (``FIT_PER_SAMPLE``). Run:
``TORCHXPLAIN_DATA=... PYTHONPATH=. python benchmarks/route_costs.py [--rows 50] [--cases diabetes,tanh40,...]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _blackbox_cases as cases  # noqa: E402
from _data import DatasetMissing  # noqa: E402

import torchxplain as tx  # noqa: E402
from torchxplain.fourier.sources import _route  # noqa: E402

ROUTED_ROWS = 1000
"""Rows a constructor prices its routes for (``ASSUMED_ROWS``): the correction's build is spread over as many."""


def _mlp(p: int) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(p, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1), nn.Flatten(0))


def _own(report: tx.fourier.FitReport) -> float:
    assert report.cpu_time_s is not None and report.model_cpu_time_s is not None
    return report.cpu_time_s - report.model_cpu_time_s


def routed(name: str, rows: int, slowdown: float) -> list[tuple[str, int, float]]:
    """Pin each exact-or-corrected route the router prices on case ``name``; print its own cost per model row at
    the reference speed, and its predicted against its measured CPU seconds for :data:`ROUTED_ROWS` rows. Returns
    ``(method, players or columns (enumeration's unit), own seconds per model row at the reference)`` per route."""
    case = cases.case(name, Path.home() / ".cache" / "torchxplain-bench")
    model = case.module if case.module is not None else case.f
    x = case.rows[:rows]
    auto = tx.FourierShap(model, case.background, data=case.pool, show_progress=False)
    priced = {c["method"]: c for c in auto.fit_report.route}
    print(f"{name}: {case.m} players, the router takes {auto.fit_report.method}")
    out = []
    for method in ("enumerate", "correct"):
        candidate = priced.get(method)
        if candidate is None or candidate["seconds"] is None:
            continue
        start = time.process_time()
        explainer = tx.FourierShap(model, case.background, data=case.pool, show_progress=False, method=method)
        build = time.process_time() - start
        oracle = explainer.provider.oracle  # type: ignore[attr-defined]
        built_rows, built_model = oracle.rows, oracle.cpu_seconds
        start = time.process_time()
        explainer.explain(x)
        spent = time.process_time() - start
        scale = ROUTED_ROWS / x.shape[0]
        row_rows, row_model = (oracle.rows - built_rows) * scale, (oracle.cpu_seconds - built_model) * scale
        model_rows = built_rows + row_rows
        own = (build - built_model + (spent - (oracle.cpu_seconds - built_model)) * scale) / model_rows / slowdown
        measured = build + spent * scale
        print(
            f"  {method:9s} {own * 1e6:.3f} µs own per model row at the reference ({own / case.m * 1e9:.2f} ns a "
            f"player); model {(built_model + row_model) / model_rows * 1e6:.3f} µs per row; model rows "
            f"{model_rows:,.0f} spent, {candidate['model_rows']:,} forecast; {measured:.2f} s CPU measured, "
            f"{candidate['seconds']:.2f} s predicted ({candidate['seconds'] / measured:.2f}x)"
        )
        out.append((method, case.background.shape[1] if method == "enumerate" else case.m, own))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=50, help="rows explained per case (the build spread over 1,000)")
    parser.add_argument("--cases", default="diabetes,tanh40,sgemm,gb1_mlp,gb1_forest")
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    print(f"load average {os.getloadavg()}; one thread")
    reference = _route.reference_seconds(torch.device("cpu"))
    slowdown = reference / _route.REFERENCE_SECONDS
    print(f"REFERENCE_SECONDS   {reference:.3e} s (the router's constant: {_route.REFERENCE_SECONDS:.3e})")
    measured: list[tuple[str, int, float]] = []
    with tx.settings.show_progress(False):
        for name in args.cases.split(","):
            try:
                measured += routed(name, args.rows, slowdown)
            except DatasetMissing as err:
                print(f"{name}: skipped ({err})")
    enumerated = [own / columns for method, columns, own in measured if method == "enumerate"]
    if enumerated:
        print(f"ENUMERATE_PER_ROW   {np.median(enumerated):.3e} s per model row and column (median of the cases)")
    corrected = [(players, own) for method, players, own in measured if method == "correct"]
    if len(corrected) >= 2:
        m, own = np.array(corrected, dtype=float).T
        slope, constant = np.polyfit(m, own, 1)
        print(f"CORRECT_PER_ROW     ({constant:.3e}, {slope:.3e}) s per model row: a constant and a part per player")
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

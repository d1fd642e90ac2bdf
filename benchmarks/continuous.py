"""Black-box SHAP on continuous inputs: FourierSHAP against shap, shapiq and Captum, side by side in one run.

Settings (``benchmarks/_continuous_cases.py``; MLPs trained once and cached): diabetes (10 features), Friedman #1
(10), breast cancer (30, probability output), ``make_regression`` with 50 features and pairwise products. 40
background rows drawn from the training split; the explained rows are the test split.

Reference: exact enumeration of the ``2^p`` coalitions of every (row, background row) pair for ``p <= 12``
(``benchmarks/_blackbox_truth.py``), else a permutation reference whose permutations per pair are doubled until
two independent halves agree to R² 0.999 (the check is printed).

Peers (``benchmarks/_continuous_peers.py``): shap PermutationExplainer and KernelExplainer (defaults and
``l1_reg=False``), shapiq KernelSHAP and kADD-SHAP at KernelExplainer's default budget, Captum
ShapleyValueSampling and KernelShap averaged over the background rows as baselines.

Ours, as the guide writes it, fresh objects: ``tx.FourierShap(mlp, background, data=X_train)`` (the fit with its
held-out check) and its first ``attribute`` of every test row; its R² is on the reference rows (the peers' on their
first few).

Columns: R² of the SHAP values against the reference, model queries (per row for the peers; the fit's and its
check's for ours), fit seconds, values ms/row, and the cost per row amortized over 1,000 rows (fit / 1,000 +
values). Targets: R² >= 0.99 (>= 0.95 on the
50-feature case, or warned); amortized >= 10x and values >= 100x the fastest peer that reaches R² >= 0.99. One
thread, one process; the load average is printed (a loaded machine: read times as ratios).

    python benchmarks/continuous.py [--quick] [--threads 1|default] [--settings a,b] [--json out]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits
from torch import Tensor

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _blackbox_truth as truth  # noqa: E402
import _continuous_cases as cases  # noqa: E402
from _continuous_peers import PEERS, Counter, run_peer  # noqa: E402

import torchxplain as tx  # noqa: E402

EXACT_MAX_FEATURES = 12
R2_TARGET = {"regression50": 0.95}  # else 0.99


def reference(setting: cases.Setting, rows: Tensor, background: Tensor) -> tuple[Tensor, str]:
    """Reference SHAP values ``(R, p)`` and how they were obtained."""
    p = rows.shape[1]
    f = Counter(setting.f)
    groups = torch.arange(p)
    start = time.perf_counter()
    if p <= EXACT_MAX_FEATURES:
        values = truth.exact_by_pairs(f, rows, background, groups, max_players=EXACT_MAX_FEATURES)
        how = f"exact enumeration of 2^{p} coalitions per pair"
    else:
        values, how = truth.converged_permutation(f, rows, background, groups)
    return values, f"{how}; {f.rows:,} queries, {time.perf_counter() - start:.1f} s"


def load() -> str:
    one, five, fifteen = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return f"{one:.1f} / {five:.1f} / {fifteen:.1f} on {os.cpu_count()} cores"


def run_setting(setting: cases.Setting, args: argparse.Namespace, results: list[dict]) -> None:
    gen = torch.Generator().manual_seed(0)
    background = setting.x_train[torch.randperm(setting.x_train.shape[0], generator=gen)[: args.background]]
    rows = setting.x_test
    p = rows.shape[1]
    truth_rows = rows[: args.truth_rows if p > EXACT_MAX_FEATURES else args.exact_rows]
    peer_rows = rows[: args.peer_rows]
    ref, how = reference(setting, truth_rows, background)
    gap = ref.sum(1) - (setting.f(truth_rows) - setting.f(background).mean())
    print(
        f"\n=== {setting.name}: p={p}, {setting.x_train.shape[0]} training / {rows.shape[0]} test rows, "
        f"{background.shape[0]} background rows; {setting.note}\n    reference on {truth_rows.shape[0]} test rows "
        f"(the peers' R² on the first {peer_rows.shape[0]}): {how}; efficiency gap {float(gap.abs().max()):.1e}"
    )
    cell = []
    for name in PEERS:
        values, row_s, queries, done, note = run_peer(name, setting.f, peer_rows, background, args.cap_s)
        acc = float("nan") if values is None else truth.r2(ref[:done], torch.as_tensor(values))
        cell.append(
            {
                "contender": name,
                "r2": acc,
                "queries": "-" if values is None else f"{queries:,.0f}/row",
                "fit_s": 0.0,
                "row_ms": row_s * 1e3,
                "amortized_ms": row_s * 1e3,
                "note": note,
            }
        )
    cell.insert(0, ours(setting, background, truth_rows, ref))
    print_cell(cell)
    print_ratios(cell, R2_TARGET.get(setting.name, 0.99))
    results.append({"setting": setting.name, "p": p, "reference": how, "rows": cell})


def ours(setting: cases.Setting, background: Tensor, truth_rows: Tensor, ref: Tensor) -> dict:
    """FourierSHAP as the guide writes it, fresh objects: the constructor (the fit, its held-out check included)
    and the first ``attribute`` of every test row."""
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", tx.fourier.FitQualityWarning)
        explainer = tx.FourierShap(setting.model, background, data=setting.x_train, show_progress=False)
    fit_s = time.perf_counter() - start
    rows = setting.x_test
    start = time.perf_counter()
    values = explainer.attribute(rows)
    row_ms = (time.perf_counter() - start) * 1e3 / rows.shape[0]
    report = explainer.fit_report
    warned = any(issubclass(w.category, tx.fourier.FitQualityWarning) for w in caught)
    note = (
        f"{report.method}: est. SHAP R² {report.r2_shap:.4f} ± {report.r2_shap_se:.4f}, {report.n_terms:,} terms, "
        f"stopped: {report.stopped}{'; FitQualityWarning' if warned else ''}"
    )
    return {
        "contender": "FourierSHAP (ours)",
        "r2": truth.r2(ref, values[: ref.shape[0]].detach().double()),
        "queries": f"{report.n_queries:,} fit + {report.n_validation_queries:,} check",
        "fit_s": fit_s,
        "row_ms": row_ms,
        "amortized_ms": fit_s * 1e3 / 1000 + row_ms,
        "note": note,
    }


def print_ratios(cell: list[dict], target: float) -> None:
    """Ours against the fastest peer that reaches R² >= 0.99 (the targets: amortized >= 10x, values >= 100x)."""
    mine, peers = cell[0], [c for c in cell[1:] if c["r2"] >= 0.99]
    met = "met" if mine["r2"] >= target else "MISSED"
    print(f"  R² target {target}: ours {mine['r2']:.4f} ({met})")
    if not peers:
        print("  no peer reaches R² >= 0.99 on these rows: no speed ratio")
        return
    fastest = min(peers, key=lambda c: c["amortized_ms"])
    print(
        f"  against {fastest['contender']} (the fastest peer at R² >= 0.99): amortized over 1,000 rows "
        f"{fastest['amortized_ms'] / mine['amortized_ms']:.1f}x (target 10x), values per row "
        f"{fastest['row_ms'] / mine['row_ms']:.0f}x (target 100x)"
    )


def print_cell(cell: list[dict]) -> None:
    header = ["contender", "R²", "model queries", "fit s", "values ms/row", "amortized ms/row (1,000 rows)", "note"]
    table = [
        [
            c["contender"],
            f"{c['r2']:.4f}",
            c["queries"],
            f"{c['fit_s']:.2f}",
            f"{c['row_ms']:.3f}",
            f"{c['amortized_ms']:.3f}",
            c["note"],
        ]
        for c in cell
    ]
    widths = [max(len(str(r[i])) for r in [header, *table]) for i in range(len(header) - 1)]
    for r in [header, *table]:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths)) + "  " + r[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rows and a smaller background")
    parser.add_argument("--threads", default="1", help="'1' (pinned, the default) or 'default'")
    parser.add_argument("--settings", default=",".join(cases.NAMES))
    parser.add_argument("--json", help="write the measured numbers to this file")
    parser.add_argument("--cache", default=str(Path.home() / ".cache" / "torchxplain-bench"), help="trained models")
    args = parser.parse_args()
    args.background, args.exact_rows, args.truth_rows, args.peer_rows = (
        (10, 20, 5, 2) if args.quick else (40, 100, 20, 5)
    )
    args.cap_s = 20.0 if args.quick else 120.0
    default_threads = torch.get_num_threads()
    threads = default_threads if args.threads == "default" else int(args.threads)
    torch.set_num_threads(threads)
    print(f"torch {torch.__version__}, {threads} thread(s) (default here: {default_threads}); load average {load()}")
    results: list[dict] = []
    with threadpool_limits(threads):
        for name in args.settings.split(","):
            run_setting(cases.setting(name, Path(args.cache)), args, results)
    print(f"\nload average at the end: {load()}")
    if args.json:
        Path(args.json).write_text(json.dumps({"threads": threads, "results": results}, indent=1))


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()

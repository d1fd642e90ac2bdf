"""Exact tree SHAP: torchxplain against shap, woodelf-explainer and FastTreeSHAP, side by side in one run.

The seed paper's tree grid: 20-tree random forests of depth 3, 5 and 8 on the four binary / one-hot data sets
(Entacmaea n = 13, SGEMM n = 40 one-hot, GB1 n = 80 one-hot, avGFP n = 236 binary; read from ../shared/data),
Q = 100, 1,000 and 10,000 queries against |D| = 100 background rows, plus |D| = 1,000 at Q = 1,000. Every
contender gets the full background and explains the same queries; values are in float64 (``--dtype``).

Columns (one table per thread setting: one thread, then the library default):
  k, fam, kernel       spectrum size, support families, the kernel the cost model picked
  extract              seconds to extract the exact spectrum (``tx.tree_spectrum``)
  build, explain       the plan's one-off build (families, moments, tables) and the explain of the Q queries
  ours                 build + explain (the kernel alone, spectrum given)
  shap× wood× fts×     each peer's total time (constructor + values) over ours
  best×                the fastest peer over ours; best×+ex over ours plus the extraction
  expl×                the fastest peer over the public explainer (FourierShap.from_trees + attribute)
  err                  max |ours - shap| / max |shap| (shap's kernel works in float32: ~1e-8 is its floor)
Targets (issue 13): depth ≤ 5: best× ≥ 1 at Q = 100 and ≥ 10 at Q ≥ 1,000; depth 8: best× ≥ 1 at Q ≥ 1,000.

``--continuous``: random forest (50 trees, depth 5) and XGBoost (100 trees, depth 6) on scikit-learn's breast
cancer and diabetes data, Q × |D| = 100 × 100 and 1,000 × 100; every split threshold is a binary feature and
values are per original feature. shap keeps thresholds in float32, so exactness is also checked against brute
force over coalitions (diabetes, 10 features, first 5 queries).

    python benchmarks/trees.py [--quick] [--device cpu|cuda] [--threads 1 0] [--continuous] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sklearn.ensemble import RandomForestRegressor
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import DatasetMissing, entacmaea, gb1, sgemm  # noqa: E402
from _tree_continuous import run_continuous  # noqa: E402
from _tree_peers import PEERS, available_peers, avgfp, ours_explainer, ours_kernel, timed, use_clock  # noqa: E402

import torchxplain as tx  # noqa: E402

CELLS = [(100, 100), (1_000, 100), (10_000, 100), (1_000, 1_000)]  # (Q, |D|)


def datasets(names: list[str], seed: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """``(name, x, y)`` of the requested data sets (skipped with a note when absent)."""
    loaders = {
        "entacmaea": lambda: entacmaea(),
        "sgemm": lambda: sgemm(),
        "gb1": lambda: gb1(),
    }
    out = []
    for name in names:
        try:
            if name == "avgfp":
                x, y = avgfp(40_000, seed)
                out.append(("avGFP", x, y))
            else:
                d = loaders[name]()
                out.append((d.name, d.x.double().numpy(), d.y.double().numpy()))
        except (DatasetMissing, FileNotFoundError) as err:
            print(f"skipping {name}: {err}")
    return out


def split(x: np.ndarray, y: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Train rows, background pool (1,000 held-out rows) and query pool (10,000 rows, drawn with replacement when
    the data set is smaller)."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(x))
    held = min(len(x) // 3, 12_000)
    test, train = order[:held], order[held:]
    background = x[test[:1000]]
    pool = x[test[1000:]] if len(test) > 1000 + 100 else x[train]
    queries = pool[rng.integers(0, len(pool), 10_000)] if len(pool) < 10_000 else pool[:10_000]
    return x[train], y[train], background, queries


def run_cell(model, spectrum, background, queries, args, device, dtype, peers) -> dict[str, Any]:
    """One (Q, |D|) cell: ours (kernel and explainer) and every available peer on the same rows."""
    sync = device.type == "cuda"
    bg_t = torch.tensor(background, dtype=dtype, device=device)
    q_t = torch.tensor(queries, dtype=dtype, device=device)
    ours = ours_kernel(spectrum.to(device=device, dtype=dtype), bg_t, q_t, args.repeat, sync)
    row: dict[str, Any] = {k: v for k, v in ours.items() if k != "values"}
    row["explainer"] = ours_explainer(model, bg_t, q_t, args.repeat, sync)
    reference = None
    for name, fn in PEERS.items():
        if peers[name] != "ok" or name in args.skip_peers:
            row[name] = float("nan")
            continue
        row[name], values = timed(lambda fn=fn: fn(model, background, queries), args.repeat)
        if name == "shap":
            reference = values
        elif reference is not None:
            row[f"err_{name}"] = float(np.abs(values - reference).max() / np.abs(reference).max())
    if reference is not None:
        row["err"] = float(np.abs(ours["values"] - reference).max() / np.abs(reference).max())
    return row


def target(depth: int, q: int) -> float | None:
    """The speed target of a cell (issue 13): the fastest peer's time over ours must reach it."""
    if depth <= 5:
        return 1.0 if q < 1000 else 10.0
    return 1.0 if q >= 1000 else None


def report(rows: list[dict[str, Any]], threads: int) -> None:
    print(f"\n== {threads} thread(s)")
    head = (
        f"{'data':>9} {'n':>3} {'d':>1} {'Q':>6} {'|D|':>5} {'k':>6} {'fam':>5} {'kernel':>13} {'extract':>8} "
        f"{'build':>7} {'explain':>8} {'ours':>7} {'shap×':>7} {'wood×':>7} {'fts×':>7} {'best×':>7} "
        f"{'best×+ex':>8} {'expl×':>7} {'err':>8} target"
    )
    print(head)
    for r in rows:
        peers = [r[p] for p in PEERS if np.isfinite(r[p])]
        best = min(peers) if peers else float("nan")
        r["best_ratio"] = best / r["total"]
        r["best_ratio_with_extraction"] = best / (r["total"] + r["extract"])
        r["explainer_ratio"] = best / r["explainer"]
        goal = target(r["depth"], r["Q"])
        verdict = "-" if goal is None else ("met" if r["best_ratio"] >= goal else f"MISSED (<{goal:g}x)")
        r["target"] = verdict
        ratios = " ".join(f"{r[p] / r['total']:>7.2f}" for p in PEERS)
        print(
            f"{r['data']:>9} {r['n']:>3} {r['depth']:>1} {r['Q']:>6} {r['B']:>5} {r['k']:>6} {r['families']!s:>5} "
            f"{r['kernel']:>13} {r['extract']:>8.4f} {r['build']:>7.4f} {r['explain']:>8.4f} {r['total']:>7.4f} "
            f"{ratios} {r['best_ratio']:>7.2f} {r['best_ratio_with_extraction']:>8.2f} {r['explainer_ratio']:>7.2f} "
            f"{r.get('err', float('nan')):>8.1e} {verdict}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="Entacmaea and SGEMM, depths 3 and 5, Q = 100, 1 thread")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float64", choices=["float32", "float64"])
    parser.add_argument("--datasets", nargs="+", default=["entacmaea", "sgemm", "gb1", "avgfp"])
    parser.add_argument("--depths", type=int, nargs="+", default=[3, 5, 8])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 0], help="thread settings (0: the default)")
    parser.add_argument("--trees", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-peers", nargs="*", default=[], help="peers not to run (shap, woodelf, fasttreeshap)")
    parser.add_argument("--continuous", action="store_true", help="the continuous grid instead of the binary one")
    parser.add_argument("--json", type=Path, help="also write every row to this JSON file")
    parser.add_argument(
        "--memory",
        action="store_true",
        help="only the memory case (issue 13): GB1 depth 8, Q = 10,000, max_memory='1GB', in a fresh process",
    )
    parser.add_argument(
        "--clock",
        default="wall",
        choices=["wall", "cpu"],
        help="wall-clock time, or process CPU time (for one-thread runs on a machine shared with other jobs)",
    )
    args = parser.parse_args()
    cells = CELLS
    if args.quick:
        args.datasets, args.depths, args.threads, args.repeat = ["entacmaea", "sgemm"], [3, 5], [1], 1
        cells = [(100, 100)]
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    if args.memory:
        return memory_case(args, device, dtype)
    use_clock(args.clock)
    peers = available_peers()
    default_threads = torch.get_num_threads()
    print(f"peers: {peers}")
    print(
        f"device {device}, {args.dtype}; default threads {default_threads}; {args.trees}-tree random forests; "
        f"{args.clock} clock; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    rows: list[dict[str, Any]] = []
    if args.continuous:
        rows = run_continuous(args, peers, quick=args.quick)
    else:
        for threads in args.threads:
            count = threads or default_threads
            torch.set_num_threads(count)
            block: list[dict[str, Any]] = []
            with threadpool_limits(count):
                for name, x, y in datasets(args.datasets, args.seed):
                    train_x, train_y, background, queries = split(x, y, args.seed)
                    for depth in args.depths:
                        model = RandomForestRegressor(
                            n_estimators=args.trees, max_depth=depth, random_state=args.seed, n_jobs=1
                        ).fit(train_x, train_y)
                        extract, spectrum = timed(lambda m=model: tx.tree_spectrum(m), args.repeat)
                        for q, b in cells:
                            row = run_cell(model, spectrum, background[:b], queries[:q], args, device, dtype, peers)
                            row.update(data=name, n=x.shape[1], depth=depth, Q=q, B=b, k=len(spectrum))
                            row.update(extract=extract, threads=count)
                            block.append(row)
                            report_line(row)
            rows += block
            report(block, count)
    torch.set_num_threads(default_threads)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=str))


def memory_case(args: argparse.Namespace, device: torch.device, dtype: torch.dtype) -> None:
    """Extraction and values of GB1 depth 8 for Q = 10,000 under ``max_memory="1GB"``: peak resident set of this
    process (``getrusage``; Python, torch, the data and the forest included) against 1.5 × the budget."""
    import resource

    ((name, x, y),) = datasets(["gb1"], args.seed)
    train_x, train_y, background, queries = split(x, y, args.seed)
    model = RandomForestRegressor(n_estimators=args.trees, max_depth=8, random_state=args.seed, n_jobs=1)
    model.fit(train_x, train_y)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    with tx.settings.max_memory("1GB"):
        explainer = tx.FourierShap.from_trees(model, torch.tensor(background[:100], dtype=dtype, device=device))
        phi = explainer.attribute(torch.tensor(queries, dtype=dtype, device=device))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(
        f"{name} depth 8, k={len(explainer.spectrum)}, Q={len(queries)}, |D|=100, max_memory='1GB': values "
        f"{tuple(phi.shape)}; peak resident {peak:.2f} GiB (before extraction {before:.2f} GiB); "
        f"target ≤ 1.5 GiB: {'met' if peak <= 1.5 else 'MISSED'}"
    )


def report_line(row: dict[str, Any]) -> None:
    """Progress: one line per cell as it finishes (the table is printed again at the end)."""
    peers = {p: row[p] / row["total"] for p in PEERS if np.isfinite(row[p])}
    print(f"  {row['data']} d={row['depth']} Q={row['Q']} |D|={row['B']}: ours {row['total']:.4f}s, ratios {peers}")


if __name__ == "__main__":
    main()

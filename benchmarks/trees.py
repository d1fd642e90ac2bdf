"""Exact tree SHAP on the public call: ``FourierShap.from_trees(model, X_bg).attribute(X)`` against shap,
woodelf-explainer and FastTreeSHAP, side by side in one process.

Ours is timed as a user calls it: a fresh explainer (the model's parse, the spectrum's extraction, the value plan's
families, moments and tables) and its first ``attribute``; each peer with its constructor. Every peer gets the full
background. A peer counts only where it is exact: where its values match the direct reference (each leaf's closed
form, :mod:`_tree_reference`, itself checked against all 2^p coalitions of the model's own output) to ``1e-6`` of
the values' scale (the peers compute in float32); the others are shown in brackets and left out of ``best``.

Sections (``--sections``; all by default):
  binary        the paper's grid: 20-tree random forests of depth 3, 5 and 8 on Entacmaea (n = 13), SGEMM (40
                one-hot), GB1 (80 one-hot) and avGFP (236 binary); Q = 100, 1,000, 10,000 against |D| = 100 and Q =
                1,000 against |D| = 1,000. Targets: depth ≤ 5 ≥ 3× the fastest exact peer at Q = 100 and
                ≥ 10× at Q ≥ 1,000; depth 8 ≥ 1× at Q = 100 and ≥ 3× at Q ≥ 1,000.
  continuous    breast cancer and diabetes (random forest, XGBoost) and a 15 + 2-categorical DataFrame (XGBoost,
                LightGBM 100 × 31 leaves, HistGradientBoosting defaults), Q = 100 and 1,000 × |D| = 100; "first" is the
                first fresh call of the process on that model (cold), "best" the best of the repeats. Target: ≥ 5× the
                fastest exact peer at Q = 1,000, first call.
  interactions  interaction_values SII and k-SII (max_order 2) on GB1 depth 5, 1,000 rows: today's route (the
                dense kernel, called directly) against the public function (the cost model picks the small-support
                tables); equality to each other, and to shapiq's ExactComputer over all 2^13 coalitions on
                Entacmaea. Target: ≥ 10×, equal to 1e-12.
  profile       where the public call's time goes, phase by phase (:mod:`_tree_profile`).
  grid          issue 31: models at their libraries' defaults — XGBoost 100 × 6, 500 × 6, 100 × 8, 100 × 10; LightGBM
                100 and 500; RandomForestRegressor(100) at default depth and max_depth=8; HistGradientBoosting;
                GradientBoosting; CatBoost 1,000 × 6 and 200; XGBoost and LightGBM on a DataFrame with two native
                category columns — on 5,000 rows of a 15-numeric + 2-categorical table, Q ∈ {100, 1,000, 10,000} ×
                |D| ∈ {100, 1,000, 10,000} (``--grid-cells``), against woodelf 0.4.8, shapiq 1.8's interventional
                TreeExplainer and shap 0.54 (full background): every call in its own process (CPU seconds, peak
                RSS), values against the direct reference, the ratio fastest exact peer ÷ ours (:mod:`_tree_grid`).
                Run it with the peers' interpreter: ``PYTHONPATH=$PWD ~/.peers312/bin/python benchmarks/trees.py
                --sections grid``. Targets: peak RSS < 4 GB, ratio ≥ 1 everywhere, ≥ 3 at Q ≥ 1,000 with |D| ≤ 1,000.

One table per thread setting (``--threads``: 1 = torch.set_num_threads(1) + threadpoolctl, 0 = the default). On a
machine shared with other jobs use ``--clock cpu`` (process CPU time), and for the default threads start the process
with ``OMP_WAIT_POLICY=PASSIVE``: torch's OpenMP threads otherwise spin while the cores are taken by other jobs, and
every parallel operation waits a scheduler slice (10-40x slower on this 2-core machine at load 3). The load average
and the wait policy are printed with every table.

    python benchmarks/trees.py [--quick] [--sections binary continuous interactions profile] [--threads 1 0]
        [--clock wall|cpu] [--device cpu|cuda] [--json out.json]
    python benchmarks/trees.py --memory    # GB1 depth 8, Q = 10,000 under max_memory='1GB': peak resident set
    PYTHONPATH=$PWD ~/.peers312/bin/python benchmarks/trees.py --sections grid [--quick] [--grid-models ...]
        [--grid-cells 100x100 1000x100 ...] [--budget 600] [--threads 1 0]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sklearn.ensemble import RandomForestRegressor
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _tree_peers  # noqa: E402
from _data import DatasetMissing, entacmaea, gb1, sgemm  # noqa: E402
from _tree_continuous import models as continuous_models  # noqa: E402
from _tree_continuous import positive_class  # noqa: E402
from _tree_peers import PEERS, available_peers, avgfp, timed, use_clock  # noqa: E402
from _tree_profile import print_profile, profile_call  # noqa: E402
from _tree_reference import coalition_values, direct_values  # noqa: E402

import torchxplain as tx  # noqa: E402

CELLS = [(100, 100), (1_000, 100), (10_000, 100), (1_000, 1_000)]  # (Q, |D|)
EXACT = 1e-6  # a peer matches the reference within this fraction of the values' scale (float32 peers)
CHECKED = 10  # queries checked against the direct reference per cell


def datasets(names: list[str], seed: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """``(name, x, y)`` of the requested data sets (skipped with a note when absent)."""
    loaders = {"entacmaea": entacmaea, "sgemm": sgemm, "gb1": gb1}
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


def public_call(model: Any, background: Any, queries: Any) -> np.ndarray:
    """The call users make: a fresh explainer and its first attribute (back on the host, so a device call has
    finished when it returns)."""
    return tx.FourierShap.from_trees(model, background).attribute(queries).detach().cpu().numpy()


def on_device(x: Any, device: str) -> Any:
    """``x`` as the public call takes it on ``device``: as it is on the CPU (a DataFrame stays a DataFrame), else a
    float64 tensor there (the explainer lives on its background's device)."""
    return x if device == "cpu" else torch.tensor(np.asarray(x, dtype=np.float64), device=device)


def rows_of(x: Any, rows: slice | np.ndarray) -> Any:
    return x.iloc[rows] if hasattr(x, "iloc") else x[rows]


def compare(
    model: Any, background: Any, queries: Any, ours: np.ndarray, args: argparse.Namespace, peers: dict[str, str]
):
    """The cell's row: ours and every peer timed, and their errors against the direct reference."""
    check = rows_of(queries, slice(0, CHECKED))
    reference = direct_values(model, np.asarray(check, dtype=np.float64), np.asarray(background, dtype=np.float64))
    references = [reference]
    if hasattr(model, "predict_proba") and not hasattr(model, "get_booster"):  # a peer may explain class 0
        references.append(direct_values(model, np.asarray(check), np.asarray(background), target=0))
    scale = max(float(np.abs(reference).max()), 1e-12)
    row: dict[str, Any] = {"err": float(np.abs(ours[:CHECKED] - reference).max() / scale)}
    for name, fn in PEERS.items():
        if peers[name] != "ok" or name in args.skip_peers:
            row[name], row[f"exact_{name}"] = float("nan"), False
            continue
        row[name], values = timed(lambda fn=fn: fn(model, background, queries), args.repeat)
        values = positive_class(np.asarray(values), len(queries))[:CHECKED]
        error = min(float(np.abs(values - r).max()) / scale for r in references)
        row[f"err_{name}"], row[f"exact_{name}"] = error, error <= EXACT
        if name == "shap":
            row["diff_shap"] = float(np.abs(values - ours[:CHECKED]).max()) / scale
    return row


def binary_target(depth: int, q: int) -> float:
    if depth <= 5:
        return 3.0 if q < 1000 else 10.0
    return 1.0 if q < 1000 else 3.0


def run_binary(args: argparse.Namespace, peers: dict[str, str]) -> list[dict[str, Any]]:
    rows = []
    for name, x, y in datasets(args.datasets, args.seed):
        train_x, train_y, background, queries = split(x, y, args.seed)
        for depth in args.depths:
            model = RandomForestRegressor(n_estimators=args.trees, max_depth=depth, random_state=args.seed, n_jobs=1)
            model.fit(train_x, train_y)
            for q, b in args.cells:
                bg_t = torch.tensor(background[:b], device=args.device)
                q_t = torch.tensor(queries[:q], device=args.device)
                seconds, ours = timed(lambda m=model, b=bg_t, x=q_t: public_call(m, b, x), args.repeat)
                row = dict(data=name, n=x.shape[1], depth=depth, Q=q, B=b, ours=seconds)
                row.update(compare(model, background[:b], queries[:q], ours, args, peers))
                row["target"] = binary_target(depth, q)
                rows.append(row)
                print_row(row, f"{name:>9} n={x.shape[1]:<3} d={depth} Q={q:<6} |D|={b:<5}")
    return rows


def run_continuous(args: argparse.Namespace, peers: dict[str, str]) -> list[dict[str, Any]]:
    rows = []
    for case in continuous_models(args.seed):
        x, model = case["x"], case["fitted"]
        rng = np.random.default_rng(args.seed)
        background = rows_of(x, rng.permutation(len(x))[:100])
        for q in args.continuous_q:
            queries = rows_of(x, rng.integers(0, len(x), q))
            bg_d, q_d = on_device(background, args.device), on_device(queries, args.device)
            start = _tree_peers.clock()
            ours = public_call(model, bg_d, q_d)
            first = _tree_peers.clock() - start
            best, _ = timed(lambda m=model, b=bg_d, x=q_d: public_call(m, b, x), args.repeat)
            row = dict(data=case["data"], model=case["model"], Q=q, B=100, ours=first, best=best, target=5.0)
            row.update(compare(model, background, queries, ours, args, peers))
            if case["data"] == "diabetes" and q == args.continuous_q[0]:  # the reference against all 2^10 coalitions
                few = queries[:3]
                exact = coalition_values(case["output"], few, background)
                ref = direct_values(model, few, background)
                row["reference_vs_coalitions"] = float(np.abs(ref - exact).max() / np.abs(exact).max())
            rows.append(row)
            label = f"{case['data']:>13} {case['model']:<15} Q={q:<5} |D|=100 best {best * 1e3:7.1f} ms"
            print_row(row, label)
    return rows


def print_row(row: dict[str, Any], label: str) -> None:
    exact = [row[p] for p in PEERS if row.get(f"exact_{p}") and np.isfinite(row[p])]
    best = min(exact) if exact else float("nan")
    row["best_exact_peer"] = best
    row["ratio"] = best / row["ours"]
    verdict = "no exact peer" if not exact else ("met" if row["ratio"] >= row["target"] else "MISSED")
    row["verdict"] = verdict
    parts = []
    for p in PEERS:
        if not np.isfinite(row[p]):
            continue
        cell = f"{p} {row[p] / row['ours']:.2f}x"
        parts.append(cell if row.get(f"exact_{p}") else f"[{cell} err {row[f'err_{p}']:.0e}]")
    print(
        f"{label} ours {row['ours'] * 1e3:8.1f} ms | {' '.join(parts)} | best× {row['ratio']:6.2f} "
        f"(target {row['target']:g}×: {verdict}) | err {row['err']:.1e}",
        flush=True,
    )


def run_interactions(args: argparse.Namespace) -> list[dict[str, Any]]:
    """SII and k-SII order 2 on GB1 depth 5 (1,000 rows): the dense kernel against the plan; Entacmaea vs shapiq."""
    from torchxplain.fourier.values.interactions._kernel import _interaction_values

    rows = []
    for name, x, y in datasets(["gb1", "entacmaea"], args.seed):
        train_x, train_y, background, queries = split(x, y, args.seed)
        model = RandomForestRegressor(n_estimators=args.trees, max_depth=5, random_state=args.seed, n_jobs=1)
        model.fit(train_x, train_y)
        spectrum = tx.tree_spectrum(model)
        q = 1000 if name == "GB1" else 5
        spectrum = spectrum.to(args.device)
        bg, qs = torch.tensor(background[:100], device=args.device), torch.tensor(queries[:q], device=args.device)
        for index in ("SII", "k-SII"):
            term = tx.fourier.precompute_background(spectrum, bg)
            start = _tree_peers.clock()
            dense = _interaction_values(qs, term, None, spectrum.n_features, index, 2)
            today = _tree_peers.clock() - start
            seconds, ours = timed(
                lambda s=spectrum, x=qs, b=bg, i=index: tx.fourier.interaction_values(s, x, b, index=i, max_order=2), 3
            )
            plan = tx.fourier.value_plan(spectrum, bg)
            plan.interaction_values(qs, index, 2)  # the route the public call took (the cost model's choice)
            route = plan.describe()["choices"][f"{index} up to order 2"]["kernel"]
            diff = max(float((dense[t] - ours[t]).abs().max()) for t in ours)
            row = dict(data=name, index=index, Q=q, dense=today, ours=seconds, ratio=today / seconds, diff=diff)
            if name == "Entacmaea":
                row["vs_shapiq"] = _shapiq_difference(model, index, queries[:q], background[:100], ours)
            rows.append(row)
            extra = f", shapiq exact: {row['vs_shapiq']:.1e}" if "vs_shapiq" in row else ""
            verdict = "met" if row["ratio"] >= 10 else "MISSED" if q >= 1000 else "(the target is for 1,000 rows)"
            print(
                f"{name:>9} {index:<5} Q={q:<5} dense kernel {today * 1e3:8.1f} ms, public call {seconds * 1e3:7.1f} "
                f"ms ({route}): {row['ratio']:.1f}x (target 10x: {verdict}), max diff {diff:.1e}{extra}",
                flush=True,
            )
    return rows


def _shapiq_difference(model: Any, index: str, queries: np.ndarray, background: np.ndarray, ours: dict) -> float:
    """Largest difference of our values from shapiq's ExactComputer on the model's own interventional game."""
    import shapiq

    worst = 0.0
    for row, x in enumerate(queries):

        def game(coalitions: np.ndarray, x: np.ndarray = x) -> np.ndarray:
            hybrid = np.where(coalitions[:, None, :], x[None, None, :], background[None])
            return model.predict(hybrid.reshape(-1, len(x))).reshape(len(coalitions), -1).mean(1)

        computer = shapiq.ExactComputer(n_players=len(x), game=game)
        values = computer(index=index, order=2)
        for interaction, value in values.dict_values.items():
            t = len(interaction)
            mine = ours[t][(row, *interaction)] if t else ours[0][row]
            worst = max(worst, abs(float(mine) - float(value)))
    return worst


def run_profile(args: argparse.Namespace) -> None:
    for name, x, y in datasets(["gb1", "avgfp"], args.seed):
        train_x, train_y, background, queries = split(x, y, args.seed)
        for depth in (5, 8):
            model = RandomForestRegressor(n_estimators=args.trees, max_depth=depth, random_state=args.seed, n_jobs=1)
            model.fit(train_x, train_y)
            for q in (100, 1000):
                total, parts = profile_call(model, torch.tensor(background[:100]), torch.tensor(queries[:q]), 5)
                print_profile(f"{name} depth {depth}, Q = {q}, |D| = 100", total, parts)
    for case in continuous_models(args.seed):
        if case["data"] != "tabular15+2":
            continue
        x = case["x"]
        total, parts = profile_call(case["fitted"], x.iloc[:100], x.iloc[1000:2000], 3)
        print_profile(f"tabular 15 + 2 categorical, {case['model']}, Q = 1,000, |D| = 100", total, parts)


def memory_case(args: argparse.Namespace) -> None:
    """Extraction and values of GB1 depth 8 for Q = 10,000 under ``max_memory="1GB"``: peak resident set of this
    process (``getrusage``; Python, torch, the data and the forest included) against 1.5 × the budget."""
    import resource

    ((name, x, y),) = datasets(["gb1"], args.seed)
    train_x, train_y, background, queries = split(x, y, args.seed)
    model = RandomForestRegressor(n_estimators=args.trees, max_depth=8, random_state=args.seed, n_jobs=1)
    model.fit(train_x, train_y)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    with tx.settings.max_memory("1GB"):
        explainer = tx.FourierShap.from_trees(model, torch.tensor(background[:100]))
        phi = explainer.attribute(torch.tensor(queries))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(
        f"{name} depth 8, k={len(explainer.spectrum)}, Q={len(queries)}, |D|=100, max_memory='1GB': values "
        f"{tuple(phi.shape)}; peak resident {peak:.2f} GiB (before extraction {before:.2f} GiB); "
        f"target ≤ 1.5 GiB: {'met' if peak <= 1.5 else 'MISSED'}"
    )


def run_grid(args: argparse.Namespace, threads: int) -> list[dict[str, Any]]:
    """The issue-31 grid (:mod:`_tree_grid`) under one thread setting (0: the default threads)."""
    import _tree_grid

    cells = [tuple(int(v) for v in c.split("x")) for c in args.grid_cells]
    rows = _tree_grid.run_grid(args.grid_models, cells, threads, args.budget, args.grid_peers, args.clock)
    done = [r for r in rows if np.isfinite(r["ratio"])]
    met = [r for r in done if r["ratio"] >= (3.0 if r["Q"] >= 1000 and r["B"] <= 1000 else 1.0)]
    peaks = [r["ours"].get("peak_mb", float("nan")) for r in rows]
    errors = [r["ours"].get("err", float("nan")) for r in rows]
    gaps = [r["ours"].get("eff", float("nan")) for r in rows]
    print(
        f"grid, {threads or 'default'} thread(s): target met in {len(met)} of {len(done)} cells with an exact peer; "
        f"our peak RSS max {np.nanmax(peaks):.0f} MB (target < 4096); our error max {np.nanmax(errors):.1e} and "
        f"efficiency gap max {np.nanmax(gaps):.1e} of the values' scale",
        flush=True,
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="Entacmaea and GB1 depth 5, Q = 100/1,000, one thread")
    parser.add_argument("--sections", nargs="+", default=["binary", "continuous", "interactions", "profile"])
    parser.add_argument("--datasets", nargs="+", default=["entacmaea", "sgemm", "gb1", "avgfp"])
    parser.add_argument("--depths", type=int, nargs="+", default=[3, 5, 8])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 0], help="thread settings (0: the default)")
    parser.add_argument("--trees", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-peers", nargs="*", default=[], help="peers not to run (shap, woodelf, fasttreeshap)")
    parser.add_argument("--json", type=Path, help="also write every row to this JSON file")
    parser.add_argument("--grid-models", nargs="+", default=None, help="grid models (default: all of _tree_grid)")
    parser.add_argument(
        "--grid-cells",
        nargs="+",
        default=["100x100", "1000x100", "10000x100", "1000x1000", "100x1000", "10000x1000", "100x10000", "1000x10000"],
        help="grid cells QxB",
    )
    parser.add_argument("--grid-peers", nargs="*", default=["woodelf", "shapiq", "shap"])
    parser.add_argument("--budget", type=float, default=600.0, help="seconds per grid call before it is projected")
    parser.add_argument("--memory", action="store_true", help="only the memory case, in a fresh process")
    parser.add_argument("--clock", default="wall", choices=["wall", "cpu"], help="wall-clock or process CPU time")
    parser.add_argument(
        "--device", default="cpu", help="where our explainer runs (cpu, cuda); the peers run on the CPU"
    )
    args = parser.parse_args()
    args.cells, args.continuous_q = CELLS, [100, 1000]
    if args.grid_models is None:
        import _tree_grid

        args.grid_models = list(_tree_grid.MODELS)
    if args.quick:
        args.datasets, args.depths, args.threads, args.repeat = ["entacmaea", "gb1"], [5], [1], 2
        args.cells, args.continuous_q = [(100, 100), (1000, 100)], [1000]
        args.grid_models = ["xgb100x6", "lgbm100", "rf100x8", "xgb-mixed"]
        args.grid_cells, args.budget = ["100x100", "1000x100"], min(args.budget, 120.0)
    if args.memory:
        return memory_case(args)
    use_clock(args.clock)
    peers = available_peers()
    default_threads = torch.get_num_threads()
    policy = os.environ.get("OMP_WAIT_POLICY", "unset (OpenMP's default: spin)")
    print(f"peers: {peers}\n{args.clock} clock; default threads {default_threads}; {os.cpu_count()} CPUs")
    print(f"OMP_WAIT_POLICY {policy}")
    results: dict[str, Any] = {}
    for threads in args.threads:
        count = threads or default_threads
        torch.set_num_threads(count)
        with threadpool_limits(count):
            for section in args.sections:
                print(
                    f"\n== {section}, {count} thread(s), load average {os.getloadavg()[0]:.1f} at {time.strftime('%X')}"
                )
                if section == "binary":
                    results[f"binary_{count}"] = run_binary(args, peers)
                elif section == "continuous":
                    results[f"continuous_{count}"] = run_continuous(args, peers)
                elif section == "interactions" and threads == args.threads[0]:
                    results["interactions"] = run_interactions(args)
                elif section == "profile" and threads == args.threads[0]:
                    run_profile(args)
                elif section == "grid":
                    results[f"grid_{count}"] = run_grid(args, threads)
    torch.set_num_threads(default_threads)
    grid = [r for key, rows in results.items() if key.startswith(("binary", "continuous")) for r in rows]
    if grid:
        print(f"\nours against the direct reference, every cell: max {max(r['err'] for r in grid):.1e} of the scale")
    for key, label in (("diff_shap", "ours against shap"), ("err_shap", "shap against the direct reference")):
        found = [r[key] for r in grid if key in r]
        if found:
            print(f"{label}, every cell: max {max(found):.1e} of the scale")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()

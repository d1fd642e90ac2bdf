"""The tree grid (issue 31): models at their libraries' defaults, the user's whole call against the exact peers.

Every (model, Q, |D|, contender) call runs in a fresh subprocess (``python benchmarks/_tree_grid.py --child SPEC``)
so its peak resident set is its own: the child loads the pickled model and the data, starts its clock (``--clock``:
process CPU time on a shared machine, wall time for the default threads, where CPU time would add the threads up)
and its peak-RSS reading, makes the call a user makes — a fresh explainer and its
first explanation — and reports seconds, peak RSS (absolute and over the loaded state) and the values of the first
rows. Contenders:

* ``ours``: ``tx.FourierShap.from_trees(model, background).attribute(queries)`` (the route the cost model picks);
* ``woodelf``: ``WoodelfExplainer(model, background).shap_values(queries)`` (woodelf-explainer 0.4.8);
* ``shapiq``: ``TreeExplainer(model, mode="interventional", reference_dataset=background, index="SV", max_order=1)``
  and ``explain_X`` (shapiq 1.8; it hands large jobs to woodelf itself);
* ``shap``: ``shap.TreeExplainer(model, shap.maskers.Independent(background, max_samples=len(background)))`` (the full
  background; shap 0.54).

The peers get a mixed frame's ``category`` columns as category codes, converted off the clock: none of them takes
the strings (measured: shapiq then matches the reference on both mixed models; woodelf refuses categorical splits
and shap is refused on XGBoost's and off by about the values' scale on LightGBM's).

Values are checked on the first rows against the direct leaf reference (:mod:`_tree_reference`, itself checked
against all ``2^p`` coalitions of the model's own predict in the ``continuous`` section and the tests); a contender
counts as exact within ``1e-6`` of the values' scale (the peers compute in float32). Each call's values are also
checked against the model's own ``predict`` by efficiency (values plus the background's mean output give the
output; column ``eff``, as a fraction of the same scale; XGBoost and LightGBM predict in float32). A call over the
time budget is stopped and its time projected from the contender's largest finished cell of that model (linear in
``Q·|D|`` for shap and shapiq's own kernel, in ``Q + |D|`` for woodelf), marked ``~``; a call projected past three
budgets is not started. A contender that fails (rather than runs long) is never projected: its later cells run.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import subprocess
import sys
import time
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("TORCHXPLAIN_BENCH_CACHE", "/tmp/torchxplain_tree_grid"))
TRAIN, POOL = 5_000, 10_000
CHECKED = 10
EXACT = 1e-6
CONTENDERS = ("ours", "woodelf", "shapiq", "shap")

# name -> (library, constructor keyword arguments beyond the defaults, data: "numeric" or "mixed")
MODELS: dict[str, tuple[str, dict[str, Any], str]] = {
    "xgb100x6": ("xgboost", {}, "numeric"),
    "xgb500x6": ("xgboost", {"n_estimators": 500}, "numeric"),
    "xgb100x8": ("xgboost", {"max_depth": 8}, "numeric"),
    "xgb100x10": ("xgboost", {"max_depth": 10}, "numeric"),
    "lgbm100": ("lightgbm", {}, "numeric"),
    "lgbm500": ("lightgbm", {"n_estimators": 500}, "numeric"),
    "rf100": ("forest", {}, "numeric"),
    "rf100x8": ("forest", {"max_depth": 8}, "numeric"),
    "histgb": ("histgb", {}, "numeric"),
    "gbr": ("gbr", {}, "numeric"),
    "catboost1000x6": ("catboost", {}, "numeric"),
    "catboost200": ("catboost", {"iterations": 200}, "numeric"),
    "xgb-mixed": ("xgboost", {"enable_categorical": True}, "mixed"),
    "lgbm-mixed": ("lightgbm", {}, "mixed"),
}


def frames(kind: str, seed: int = 0) -> tuple[Any, np.ndarray]:
    """25,000 rows: 15 numeric columns and two categorical variables — one-hot (``numeric``: 25 columns) or as
    ``category`` columns (``mixed``: 17 columns); 5,000 train, then the background pool, then the query pool."""
    import pandas as pd

    sys.path.insert(0, str(HERE))
    from _tree_continuous import tabular_frame

    frame, y = tabular_frame(rows=TRAIN + 2 * POOL, seed=seed)
    if kind == "numeric":
        return frame, y
    out = frame[[f"num_{i}" for i in range(15)]].copy()
    for name, levels in (("colour", 4), ("shape", 6)):
        codes = frame[[f"{name}_{i}" for i in range(levels)]].to_numpy().argmax(1)
        out[name] = pd.Categorical(np.array([f"{name}{c}" for c in codes]))
    return out, y


def fitted(name: str) -> Path:
    """The pickled fitted model (fitted on first use, one thread)."""
    path = CACHE / f"{name}.pkl"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    library, extra, data = MODELS[name]
    frame, y = frames(data)
    x, target = frame.iloc[:TRAIN], y[:TRAIN]
    if library == "xgboost":
        import xgboost

        model = xgboost.XGBRegressor(random_state=0, n_jobs=1, **extra)
    elif library == "lightgbm":
        import lightgbm

        model = lightgbm.LGBMRegressor(random_state=0, n_jobs=1, verbose=-1, **extra)
    elif library == "catboost":
        import catboost

        model = catboost.CatBoostRegressor(random_seed=0, thread_count=1, verbose=0, allow_writing_files=False, **extra)
    elif library == "forest":
        from sklearn.ensemble import RandomForestRegressor

        model = RandomForestRegressor(random_state=0, n_jobs=1, **extra)
    elif library == "histgb":
        from sklearn.ensemble import HistGradientBoostingRegressor

        model = HistGradientBoostingRegressor(random_state=0, **extra)
    else:
        from sklearn.ensemble import GradientBoostingRegressor

        model = GradientBoostingRegressor(random_state=0, **extra)
    model.fit(x, target)
    path.write_bytes(pickle.dumps(model))
    return path


# --- the child: one call -----------------------------------------------------------------------------------------
def _limit_threads(threads: int) -> None:
    import torch

    if threads:
        torch.set_num_threads(threads)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _call(contender: str, model: Any, background: Any, queries: Any) -> np.ndarray:
    """The user's whole call of ``contender``: constructor and first explanation."""
    if contender == "ours":
        import torchxplain as tx

        return tx.FourierShap.from_trees(model, background).attribute(queries).detach().cpu().numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if contender == "woodelf":
            import woodelf

            explainer = woodelf.WoodelfExplainer(model, background, feature_perturbation="interventional")
            return np.asarray(explainer.shap_values(queries, verbose=False))
        if contender == "shapiq":
            import shapiq

            explainer = shapiq.TreeExplainer(
                model, mode="interventional", reference_dataset=np.asarray(background), index="SV", max_order=1
            )
            found = explainer.explain_X(np.asarray(queries))
            return np.stack([v.get_n_order_values(1) for v in found])
        import shap

        masker = shap.maskers.Independent(np.asarray(background), max_samples=len(background))
        explainer = shap.TreeExplainer(model, masker, feature_perturbation="interventional")
        return np.asarray(explainer.shap_values(np.asarray(queries), check_additivity=False))


def _codes(frame: Any) -> Any:
    """``frame`` with its ``category`` columns as their category codes (float): the encoding XGBoost and LightGBM
    give pandas categories, and the only form the peers accept (a frame of strings is refused by all three)."""
    out = frame.copy()
    for name in out.columns:
        if str(out[name].dtype) == "category":
            out[name] = out[name].cat.codes.astype(np.float64)
    return out


def child(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one call in this process and return its measurements (the ``--child`` entry point)."""
    from threadpoolctl import threadpool_limits

    _limit_threads(spec["threads"])
    frame, _ = frames(MODELS[spec["model"]][2])
    model = pickle.loads(Path(spec["path"]).read_bytes())
    background = frame.iloc[TRAIN : TRAIN + spec["B"]]
    queries = frame.iloc[TRAIN + POOL : TRAIN + POOL + spec["Q"]]
    if spec["contender"] == "ours":
        from torchxplain import FourierShap  # noqa: F401  (imported before the clock, as a user does: so are the peers)
    else:
        __import__({"woodelf": "woodelf", "shapiq": "shapiq", "shap": "shap"}[spec["contender"]])
    given = (background, queries) if spec["contender"] == "ours" else (_codes(background), _codes(queries))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with threadpool_limits(spec["threads"] or None):
        clock = time.perf_counter if spec["clock"] == "wall" else time.process_time
        start = clock()
        values = _call(spec["contender"], model, *given)
        seconds = clock() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    values = np.asarray(values, dtype=np.float64).reshape(len(queries), -1)[:CHECKED]
    # efficiency against the model's own output, off the clock: values + background mean = predict
    output = np.asarray(model.predict(queries.iloc[:CHECKED]), dtype=np.float64)
    gap = values.sum(1) - (output - np.asarray(model.predict(background), dtype=np.float64).mean())
    return {
        "seconds": seconds,
        "peak_mb": peak,
        "loaded_mb": before,
        "values": values.tolist(),
        "efficiency_gap": float(np.abs(gap).max()),
    }


# --- the parent ----------------------------------------------------------------------------------------------------
def run_child(spec: dict[str, Any], budget: float) -> dict[str, Any]:
    """One call in a fresh process; ``{"error": ...}`` when it fails or runs past ``budget`` seconds."""
    env = {**os.environ, "PYTHONPATH": str(HERE.parent), "OMP_WAIT_POLICY": "PASSIVE"}
    if spec["threads"]:
        env.update(OMP_NUM_THREADS=str(spec["threads"]), MKL_NUM_THREADS=str(spec["threads"]))
    try:
        done = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)],
            capture_output=True,
            text=True,
            timeout=budget,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"over {budget:.0f} s"}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": last[:160]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def reference(name: str, q: int, b: int) -> np.ndarray:
    """The direct leaf reference of the first checked rows (independent of the explainer's machinery)."""
    return _reference(name, min(q, CHECKED), b)


@lru_cache(maxsize=4)
def _reference(name: str, q: int, b: int) -> np.ndarray:
    """:func:`reference` once per (model, rows, background): cells of one |D| share it."""
    from _tree_reference import direct_values

    frame, _ = frames(MODELS[name][2])
    model = pickle.loads(fitted(name).read_bytes())
    background = frame.iloc[TRAIN : TRAIN + b]
    queries = frame.iloc[TRAIN + POOL : TRAIN + POOL + q]
    return direct_values(model, queries, background)


def project(done: dict[tuple[int, int], float], q: int, b: int, contender: str) -> float | None:
    """A contender's time at ``(q, b)`` from its largest finished cell of the model (module docstring)."""
    if not done:
        return None
    (q0, b0), seconds = max(done.items(), key=lambda item: item[0][0] * item[0][1])
    growth = (q * b) / (q0 * b0) if contender in ("shap", "shapiq") else (q + b) / (q0 + b0)
    return seconds * max(growth, 1.0)


def run_grid(
    models: list[str], cells: list[tuple[int, int]], threads: int, budget: float, peers: list[str], clock: str = "cpu"
) -> list:
    """Every (model, cell): each contender's seconds (or projection), peak RSS and error; prints one line per cell."""
    rows = []
    print(
        f"{'model':<15} {'Q':>6} {'|D|':>6} | {'ours s':>8} {'peak MB':>8} {'err':>8} {'eff':>8} | "
        + " ".join(f"{p + ' s':>12}" for p in peers)
        + f" | {'fastest exact peer':>18} | {'ratio':>7}",
        flush=True,
    )
    for name in models:
        path = str(fitted(name))
        finished: dict[str, dict[tuple[int, int], float]] = {c: {} for c in CONTENDERS}
        failed: set[str] = set()  # contenders that failed (not ran long) on a smaller cell: run, never projected
        for q, b in cells:
            ref = reference(name, q, b)
            scale = max(float(np.abs(ref).max()), 1e-12)
            row: dict[str, Any] = {"model": name, "Q": q, "B": b, "threads": threads, "load": os.getloadavg()[0]}
            for contender in ("ours", *peers):
                projected = None if contender in failed else project(finished[contender], q, b, contender)
                if contender != "ours" and projected is not None and projected > 3 * budget:
                    row[contender] = {"projected": projected, "error": "projected past 3x the budget"}
                    continue
                spec = {"model": name, "path": path, "Q": q, "B": b, "contender": contender}
                spec.update(threads=threads, clock=clock)
                got = run_child(spec, budget)
                if "values" in got:
                    values = np.asarray(got.pop("values"))[:, : ref.shape[1]]
                    got["err"] = float(np.abs(values - ref[: len(values)]).max()) / scale
                    got["eff"] = got.pop("efficiency_gap") / scale
                    got["exact"] = got["err"] <= EXACT
                    finished[contender][(q, b)] = got["seconds"]
                elif not got["error"].startswith("over "):
                    failed.add(contender)
                elif projected is not None:
                    got["projected"] = projected
                row[contender] = got
            _finish(row, peers)
            rows.append(row)
    return rows


def _time(entry: dict[str, Any]) -> tuple[float, str]:
    if "seconds" in entry:
        return entry["seconds"], f"{entry['seconds']:.3f}"
    if "projected" in entry:
        return entry["projected"], f"~{entry['projected']:.1f}"
    return float("nan"), "n/a"


def _finish(row: dict[str, Any], peers: list[str]) -> None:
    """Fastest exact peer, the ratio, and the printed line of one cell."""
    ours = row["ours"]
    exact = {}
    cells = []
    for peer in peers:
        entry = row.get(peer, {})
        seconds, text = _time(entry)
        if "seconds" in entry and not entry.get("exact"):
            text = f"[{text} err {entry['err']:.0e}]"
        elif "error" in entry and "projected" not in entry:
            text = entry["error"][:12]
        else:
            exact[peer] = seconds
        cells.append(f"{text:>12}")
    best_peer = min(exact, key=exact.get) if exact else None
    our_seconds = ours.get("seconds", float("nan"))
    row["best_peer"] = best_peer
    row["ratio"] = exact[best_peer] / our_seconds if best_peer else float("nan")
    ours_text = (
        f"{our_seconds:8.3f} {ours.get('peak_mb', float('nan')):8.0f} {ours.get('err', float('nan')):8.0e}"
        f" {ours.get('eff', float('nan')):8.0e}"
    )
    if "error" in ours:
        ours_text = f"{ours['error'][:35]:>35}"
    marker = "~" if best_peer and "projected" in row[best_peer] and "seconds" not in row[best_peer] else ""
    print(
        f"{row['model']:<15} {row['Q']:>6} {row['B']:>6} | {ours_text} | {' '.join(cells)} | "
        f"{(best_peer or 'none'):>18} | {marker}{row['ratio']:6.2f}x  (load {row['load']:.1f})",
        flush=True,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", required=True)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    print(json.dumps(child(json.loads(args.child))))

"""The continuous part of the tree benchmark: thresholds as binary features, values per original feature.

Random forests (50 trees, depth 5) and XGBoost (100 trees, depth 6) on scikit-learn's breast cancer (30
features, the positive class: probability for the forest, margin for XGBoost) and diabetes (10 features) data.
shap's kernel keeps thresholds in float32, so on rows near a split it follows another path than the model;
exactness is therefore also measured against brute force over all 2^10 coalitions on diabetes. woodelf explains
class 0 of a scikit-learn forest classifier (its values are minus class 1's there: err_vs_woodelf ≈ 2).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import torch
from _tree_peers import PEERS, timed
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from threadpoolctl import threadpool_limits

import torchxplain as tx
from torchxplain.fourier.values._plan import ValuePlan

CELLS = [(100, 100), (1_000, 100)]


def models(seed: int) -> list[tuple[str, str, Any, np.ndarray, np.ndarray, Any]]:
    """``(data, model name, fitted model, x, y, output function)`` for the four continuous cases."""
    import xgboost

    out = []
    for data, (x, y) in (
        ("breast_cancer", load_breast_cancer(return_X_y=True)),
        ("diabetes", load_diabetes(return_X_y=True)),
    ):
        classify = data == "breast_cancer"
        forest = (RandomForestClassifier if classify else RandomForestRegressor)(
            n_estimators=50, max_depth=5, random_state=seed, n_jobs=1
        ).fit(x, y)
        boost = (xgboost.XGBClassifier if classify else xgboost.XGBRegressor)(
            n_estimators=100, max_depth=6, random_state=seed, n_jobs=1
        ).fit(x, y)
        forest_out = (lambda m: lambda z: m.predict_proba(z)[:, 1])(forest) if classify else forest.predict
        boost_out = (lambda m: lambda z: m.predict(z, output_margin=True).astype(np.float64))(boost)
        out += [(data, "rf50-d5", forest, x, y, forest_out), (data, "xgb100-d6", boost, x, y, boost_out)]
    return out


def positive_class(values: np.ndarray, q: int) -> np.ndarray:
    """A classifier's values for class 1 from shap's ``(Q, p, 2)`` or the older list format ``(2, Q, p)``."""
    if values.ndim < 3:
        return values
    return values[1] if values.shape[0] == 2 and values.shape[1] == q else values[..., 1]


def brute_force(predict, queries: np.ndarray, background: np.ndarray) -> np.ndarray:
    """Shapley values over all coalitions of the ``p`` features, through the model's own output function."""
    p = queries.shape[1]
    masks = np.array(list(itertools.product([0, 1], repeat=p)), dtype=bool)[:, ::-1]
    hybrid = np.where(masks[None, :, None, :], queries[:, None, None, :], background[None, None])
    v = predict(hybrid.reshape(-1, p)).reshape(len(queries), len(masks), len(background)).mean(2)
    from math import factorial

    phi = np.zeros((len(queries), p))
    for s in range(2**p):
        size = bin(s).count("1")
        for i in range(p):
            if not (s >> i) & 1:
                phi[:, i] += factorial(size) * factorial(p - size - 1) / factorial(p) * (v[:, s | (1 << i)] - v[:, s])
    return phi


def kernel_alone(spectrum, encoding, background, queries, dtype, repeat) -> tuple[float, float, str, np.ndarray]:
    """Plan build + explain (queries encoded inside the timing), values per original feature."""
    used, groups = torch.unique(encoding.groups, return_inverse=True)
    bits_bg = encoding.transform(torch.tensor(background)).to(dtype)
    q = torch.tensor(queries)

    def fresh():
        plan = ValuePlan(spectrum.to(dtype), bits_bg, groups, len(used))
        return plan, plan.shapley(encoding.transform(q).to(dtype))

    total, (plan, phi) = timed(fresh, repeat)
    explain, _ = timed(lambda: plan.shapley(encoding.transform(q).to(dtype)), repeat)
    full = np.zeros((len(queries), encoding.n_features))
    full[:, used.numpy()] = phi.numpy()
    return total, explain, plan.describe()["choices"]["shapley"]["kernel"], full


def run_continuous(args, peers: dict[str, str], quick: bool) -> list[dict[str, Any]]:
    """The continuous grid once per thread setting of ``args.threads`` (0: the library default)."""
    default, rows = torch.get_num_threads(), []
    for setting in [1] if quick else args.threads:
        count = setting or default
        torch.set_num_threads(count)
        print(f"== {count} thread(s)")
        with threadpool_limits(count):
            rows += _continuous_block(args, peers, quick, count)
    torch.set_num_threads(default)
    return rows


def _continuous_block(args, peers: dict[str, str], quick: bool, threads: int) -> list[dict[str, Any]]:
    dtype = getattr(torch, args.dtype)
    rows = []
    for data, name, model, x, _, predict in models(args.seed):
        rng = np.random.default_rng(args.seed)
        background = x[rng.permutation(len(x))[:100]]
        encoding = tx.fourier.TreeEncoding.from_model(model)
        extract, spectrum = timed(lambda m=model, e=encoding: tx.tree_spectrum(m, encoding=e), args.repeat)
        for q, b in CELLS[:1] if quick else CELLS:
            queries = x[rng.integers(0, len(x), q)]
            total, explain, kernel, ours = kernel_alone(spectrum, encoding, background[:b], queries, dtype, args.repeat)
            row: dict[str, Any] = dict(
                threads=threads,
                data=data,
                model=name,
                n_binary=encoding.n_binary,
                k=len(spectrum),
                Q=q,
                B=b,
                kernel=kernel,
                extract=extract,
                total=total,
                explain=explain,
                build=total - explain,
            )
            for peer, fn in PEERS.items():
                if peers[peer] != "ok" or peer in args.skip_peers:
                    row[peer] = float("nan")
                    continue
                row[peer], values = timed(
                    lambda fn=fn, m=model, bg=background[:b], qs=queries: fn(m, bg, qs), args.repeat
                )
                values = positive_class(values, len(queries))
                row[f"err_vs_{peer}"] = float(np.abs(ours - values).max() / np.abs(values).max())
            if data == "diabetes":
                exact = brute_force(predict, queries[:5], background[:b])
                row["err_vs_brute_force"] = float(np.abs(ours[:5] - exact).max() / np.abs(exact).max())
                if peers.get("shap") == "ok" and "shap" not in args.skip_peers:
                    ref = PEERS["shap"](model, background[:b], queries[:5])
                    row["shap_err_vs_brute_force"] = float(np.abs(ref - exact).max() / np.abs(exact).max())
            rows.append(row)
            print_row(row)
    return rows


def print_row(r: dict[str, Any]) -> None:
    best = min((r[p] for p in PEERS if np.isfinite(r[p])), default=float("nan"))
    r["best_ratio"], r["best_ratio_with_extraction"] = best / r["total"], best / (r["total"] + r["extract"])
    ratios = " ".join(f"{p}× {r[p] / r['total']:.2f}" for p in PEERS)
    errors = " ".join(f"{k} {v:.1e}" for k, v in r.items() if k.startswith(("err", "shap_err")))
    goal = 1.0 if r["Q"] < 1000 else 10.0
    r["target"] = "met" if r["best_ratio"] >= goal else f"MISSED (<{goal:g}x)"
    print(
        f"{r['data']:>13} {r['model']:>9} n_bin={r['n_binary']:<4} k={r['k']:<7} Q={r['Q']:<5} |D|={r['B']:<4} "
        f"{r['kernel']}: extract {r['extract']:.3f}s build {r['build']:.3f}s explain {r['explain']:.3f}s | {ratios} | "
        f"best× {r['best_ratio']:.2f} (+extract {r['best_ratio_with_extraction']:.2f}) {r['target']} | {errors}",
        flush=True,
    )

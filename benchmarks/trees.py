"""FourierSHAP on tree ensembles against shap's interventional TreeExplainer, measured in one run.

The seed paper's tree benchmark (its Appendix E.2): random forests of 20 trees, 100 queries, 100 background rows,
depths 3, 5 and 8, on binary / one-hot data: Entacmaea (n = 13), SGEMM (40), GB1 (80) and avGFP (236, mutated or
not at each site), read from ``../shared/data`` and replaced by random binary data of the same width when absent.
For each case it prints the spectrum size, the time to extract the exact spectrum (and prune it to 99.95% of the
non-constant energy), the time of the values, the ratio TreeExplainer / FourierSHAP (values only, and extraction +
values against TreeExplainer's construction + values) and the R² of FourierSHAP's values against TreeExplainer's.

    python benchmarks/trees.py [--quick] [--device cpu|cuda] [--depths 3 5 8] [--threads 1] [--continuous]
"""

from __future__ import annotations

import argparse
import re
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from sklearn.ensemble import RandomForestRegressor
from threadpoolctl import threadpool_limits

from torchxplain import FourierShap, tree_spectrum
from torchxplain.data.landscapes import load_entacmaea

DATA_ROOT = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
SGEMM_PARAMS = (
    "MWG",
    "NWG",
    "KWG",
    "MDIMC",
    "NDIMC",
    "MDIMA",
    "NDIMB",
    "KWI",
    "VWM",
    "VWN",
    "STRM",
    "STRN",
    "SA",
    "SB",
)


def _one_hot(frame: pd.DataFrame) -> np.ndarray:
    return np.concatenate(
        [(frame[c].to_numpy()[:, None] == np.sort(frame[c].unique())[None]).astype(np.float64) for c in frame.columns],
        axis=1,
    )


def _csv(*parts: str) -> pd.DataFrame:
    path = DATA_ROOT.joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(path)
    return pd.read_csv(path)


def entacmaea() -> tuple[np.ndarray, np.ndarray]:
    """All 2^13 Entacmaea genotypes (Poelwijk et al. 2019, shipped with the package), red brightness."""
    x, y = load_entacmaea("brightness_red", dtype=torch.float64)
    return x.numpy(), y.numpy()


def sgemm() -> tuple[np.ndarray, np.ndarray]:
    """SGEMM GPU kernel runs (20k-row subsample): 14 parameters one-hot = 40 bits; log mean run time."""
    frame = _csv("sgemm_gpu_subsample", "sgemm_subsample_20k.csv")
    return _one_hot(frame[list(SGEMM_PARAMS)]), np.log(frame["run_mean_ms"].to_numpy())


def gb1() -> tuple[np.ndarray, np.ndarray]:
    """GB1 four-site landscape (Wu et al. 2016): 4 sites x 20 residues one-hot = 80 bits; fitness."""
    frame = _csv("gb1_wu2016", "gb1_wu2016.csv.gz")
    sites = frame["variant"].str.split("", expand=True).iloc[:, 1:5]
    return _one_hot(sites), frame["fitness"].to_numpy()


def avgfp() -> tuple[np.ndarray, np.ndarray]:
    """avGFP (Sarkisyan et al. 2016): 1 where site 1..236 is mutated; target log brightness (stop codons dropped)."""
    frame = _csv("avgfp_sarkisyan2016", "avgfp_sarkisyan2016_aa.csv.gz")
    frame = frame[~frame.aa_genotype_native.str.contains(r"\*")]
    x = np.zeros((len(frame), 236))
    for row, genotype in enumerate(frame.aa_genotype_native):
        if genotype != "wt":
            sites = [int(re.match(r"[A-Z](\d+)", m).group(1)) for m in genotype.split(":")]
            x[row, [s - 1 for s in sites if 1 <= s <= 236]] = 1.0
    return x, frame.log_brightness.to_numpy()


def load(n: int, rows: int, seed: int) -> tuple[str, np.ndarray, np.ndarray]:
    """``(name, x, y)`` for width ``n``; random binary data when the real data set is absent."""
    loaders = {13: ("Entacmaea", entacmaea), 40: ("SGEMM", sgemm), 80: ("GB1", gb1), 236: ("avGFP", avgfp)}
    try:
        name, loader = loaders[n]
        x, y = loader()
    except (FileNotFoundError, KeyError):
        rng = np.random.default_rng(seed)
        x = rng.integers(0, 2, (rows, n)).astype(np.float64)
        y = x @ rng.normal(size=n) + 2 * x[:, 0] * x[:, 1] + 0.1 * rng.normal(size=rows)
        name = f"random-{n}"
    rng = np.random.default_rng(seed)
    keep = rng.permutation(len(x))[:rows]
    return name, x[keep], y[keep]


def timed(fn, repeat: int):
    out = fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def r2(pred: np.ndarray, ref: np.ndarray) -> float:
    return float(1.0 - ((pred - ref) ** 2).sum() / max(((ref - ref.mean()) ** 2).sum(), 1e-300))


def run_case(n: int, depth: int, args: argparse.Namespace) -> list[dict]:
    import shap

    name, x, y = load(n, args.rows, args.seed)
    split = int(0.9 * len(x))
    model = RandomForestRegressor(n_estimators=args.trees, max_depth=depth, random_state=args.seed, n_jobs=1).fit(
        x[:split], y[:split]
    )
    test = x[split:]
    background, queries = test[: args.background], test[args.background : args.background + args.queries]
    if len(queries) < args.queries:  # small data sets: draw the queries from the training rows
        queries = x[: args.queries]
    dev = torch.device(args.device)
    dtype = getattr(torch, args.dtype)
    bg_t = torch.tensor(background, dtype=dtype, device=dev)
    q_t = torch.tensor(queries, dtype=dtype, device=dev)

    def shap_all():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            te = shap.TreeExplainer(model, data=background, feature_perturbation="interventional")
            return te, te.shap_values(queries, check_additivity=False)

    t_shap_total, (te, ref) = timed(shap_all, args.repeat)
    t_shap_values, ref = timed(lambda: te.shap_values(queries, check_additivity=False), args.repeat)
    t_extract, exact = timed(lambda: tree_spectrum(model, device=dev), args.repeat)
    rows = []
    for label, energy in (("unpruned", None), ("pruned", 0.9995)):
        t_build, explainer = timed(lambda e=energy: FourierShap.from_trees(model, bg_t, energy=e), args.repeat)
        t_values, ours = timed(lambda ex=explainer: ex.attribute(q_t).detach(), args.repeat)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        ours = ours.cpu().numpy()
        rows.append(
            {
                "data": name,
                "n": n,
                "depth": depth,
                "spectrum": label,
                "k": len(explainer.spectrum),
                "k_exact": len(exact),
                "extract_s": t_build,
                "values_s": t_values,
                "shap_values_s": t_shap_values,
                "ratio_values": t_shap_values / t_values,
                "ratio_total": t_shap_total / (t_build + t_values),
                "r2": r2(ours.ravel(), ref.ravel()),
                "max_err": float(np.abs(ours - ref).max()),
                "extract_exact_s": t_extract,
            }
        )
    return rows


def continuous_case(name: str, x: np.ndarray, y: np.ndarray, depth: int, args: argparse.Namespace) -> dict:
    """One continuous data set: thresholds become binary features grouped per original feature (unpruned)."""
    import shap

    model = RandomForestRegressor(n_estimators=args.trees, max_depth=depth, random_state=args.seed, n_jobs=1).fit(x, y)
    background, queries = x[: args.background], x[args.background : args.background + args.queries]
    dtype = getattr(torch, args.dtype)

    def shap_all():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            te = shap.TreeExplainer(model, data=background, feature_perturbation="interventional")
            return te.shap_values(queries, check_additivity=False)

    bg_t = torch.tensor(background, dtype=dtype, device=args.device)
    q_t = torch.tensor(queries, dtype=dtype, device=args.device)
    t_shap, ref = timed(shap_all, args.repeat)
    t_build, explainer = timed(lambda: FourierShap.from_trees(model, bg_t), args.repeat)
    t_values, ours = timed(lambda: explainer.attribute(q_t).detach().cpu().numpy(), args.repeat)
    return {
        "data": name,
        "n": explainer.encoder.n_binary,
        "depth": depth,
        "spectrum": "grouped",
        "k": len(explainer.spectrum),
        "k_exact": len(explainer.spectrum),
        "extract_s": t_build,
        "values_s": t_values,
        "shap_values_s": t_shap,
        "ratio_values": t_shap / t_values,
        "ratio_total": t_shap / (t_build + t_values),
        "r2": r2(ours.ravel(), ref.ravel()),
        "max_err": float(np.abs(ours - ref).max()),
        "extract_exact_s": t_build,
    }


def run_continuous(depth: int, args: argparse.Namespace) -> list[dict]:
    """scikit-learn's diabetes and breast-cancer data (continuous inputs, values per original feature)."""
    from sklearn.datasets import load_breast_cancer, load_diabetes

    return [
        continuous_case(name, *loader(return_X_y=True), depth, args)
        for name, loader in (("diabetes", load_diabetes), ("breast_cancer", load_breast_cancer))
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="depths 3 and 5, n in {13, 40}, 30 x 30 rows")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--depths", type=int, nargs="+", default=[3, 5, 8])
    parser.add_argument("--widths", type=int, nargs="+", default=[13, 40, 80, 236])
    parser.add_argument("--trees", type=int, default=20)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--background", type=int, default=100)
    parser.add_argument("--rows", type=int, default=5000, help="rows drawn from each data set (90%% to fit)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="torch and BLAS threads (0: library default)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--continuous",
        action="store_true",
        help="also time continuous inputs (diabetes, breast cancer; grouped thresholds)",
    )
    parser.add_argument(
        "--continuous-depths",
        type=int,
        nargs="+",
        default=[3, 5],
        help="depths of the continuous cases (the grouped kernel's parity intermediates grow with "
        "the number of thresholds, so depth 8 needs tens of GB at the default memory budget)",
    )
    parser.add_argument(
        "--dtype",
        default="float32",
        choices=["float32", "float64"],
        help="dtype of the values (TreeExplainer's interventional kernel itself works in float32)",
    )
    args = parser.parse_args()
    if args.quick:
        args.depths, args.widths, args.queries, args.background, args.repeat = [3, 5], [13, 40], 30, 30, 1
    default_threads = torch.get_num_threads()
    threads = args.threads or default_threads
    torch.set_num_threads(threads)
    print(
        f"threads: {threads} (default would be {default_threads}); device {args.device}, {args.dtype}; "
        f"{args.trees} trees, {args.queries} queries x {args.background} background"
    )
    rows = []
    with threadpool_limits(threads):
        for n in args.widths:
            for depth in args.depths:
                rows += run_case(n, depth, args)
                last = rows[-2:]
                for r in last:
                    print(
                        f"{r['data']:>10} n={r['n']:<3} depth={r['depth']} {r['spectrum']:>8}: k={r['k']:>7} "
                        f"(exact {r['k_exact']}) extract {r['extract_s']:.3f}s values {r['values_s']:.3f}s "
                        f"TreeExplainer {r['shap_values_s']:.3f}s ratio {r['ratio_values']:.2f} "
                        f"(total {r['ratio_total']:.2f}) R2 {r['r2']:.6f} max err {r['max_err']:.2e}",
                        flush=True,
                    )
        if args.continuous:
            for depth in args.continuous_depths:
                rows += run_continuous(depth, args)
                for r in rows[-2:]:
                    print(
                        f"{r['data']:>13} n_bin={r['n']:<4} depth={r['depth']}: k={r['k']:>7} "
                        f"build {r['extract_s']:.3f}s values {r['values_s']:.3f}s TreeExplainer "
                        f"{r['shap_values_s']:.3f}s ratio {r['ratio_values']:.2f} (total {r['ratio_total']:.2f}) "
                        f"R2 {r['r2']:.6f} max err {r['max_err']:.2e}",
                        flush=True,
                    )
    frame = pd.DataFrame(rows)
    print(frame.to_string(index=False, float_format=lambda v: f"{v:.4g}"))


if __name__ == "__main__":
    main()

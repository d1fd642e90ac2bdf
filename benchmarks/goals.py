"""GOALS benchmarks: speed against the per-feature explicit-B^(j) loop, accuracy against RATE and random
forests on the Eq. 17-18 simulation design, and the heterogeneous-stock mice (skipped when absent).

    python benchmarks/goals.py                 # everything (speed, accuracy with 10 replicates, mice)
    python benchmarks/goals.py --quick         # small sizes, 2 replicates, mice on 2,000 SNPs
    python benchmarks/goals.py --study speed   # one study: speed | accuracy | mice
    python benchmarks/goals.py --mice          # the whole-genome per-stage table (same as --study mice)
    python benchmarks/goals.py --device cuda --quick --study speed   # on a GPU
    python benchmarks/goals.py --study accuracy --ard --designs 25   # adds GOALS on GPyTorch-fitted ARD GPs

Mice: per-stage seconds and GFLOP/s of GOALS on the whole genome (set-up reported separately), each product
stage next to torch.matmul measured around it in the same process (see benchmarks/goals_stages.py), on one
thread and on the default threads, then the float32-product results against the float64 path.

Speed: the peer is the official algorithm, one explicit N x N matrix ``B^(j) = K o exp(-theta[xi^2 -
2 xi (x_j 1^T - 1 x_j^T)])`` and ``delta_j = (K - B^(j)T) alpha`` per feature, in torch on the same device and
dtype, with K and alpha shared (their cost is reported separately). When J is large the loop runs on the first
features and is extrapolated linearly. Timings use one thread (torch and BLAS), then the default.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import gpytorch
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import goals_stages  # noqa: E402

from torchxplain import Goals
from torchxplain.data import simulate_goals_design
from torchxplain.goals import median_lengthscale, rate

MICE = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "mice_hs"


class _GP(gpytorch.models.ExactGP):
    def __init__(self, x, y, lengthscale, outputscale, noise, const):
        lik = gpytorch.likelihoods.GaussianLikelihood(noise_constraint=gpytorch.constraints.GreaterThan(1e-6))
        super().__init__(x, y, lik)
        self.mean_module = gpytorch.means.ConstantMean()
        self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())
        self.covar_module.base_kernel.lengthscale = lengthscale
        self.covar_module.outputscale = outputscale
        self.likelihood.noise = noise
        self.mean_module.constant.data.fill_(const)
        self.to(device=x.device, dtype=x.dtype)

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


def fit_gp(x: torch.Tensor, y: torch.Tensor) -> _GP:
    """RBF GP with the median-heuristic lengthscale and ML-II (outputscale, noise, constant mean = mean(y)).

    The marginal likelihood in (s, sigma^2) is maximised exactly through one eigendecomposition of the
    unit-scale kernel matrix (float64), then the hyperparameters are written into a GPyTorch ExactGP.
    """
    ls = median_lengthscale(x)
    x64 = x.double()
    d2 = torch.cdist(x64, x64).square()
    evals, evecs = torch.linalg.eigh(torch.exp(-d2 / (2 * ls**2)))
    evals = evals.clamp_min(0)
    c = float(y.double().mean())
    proj = (evecs.T @ (y.double() - c)).square()
    params = torch.zeros(2, dtype=torch.float64, device=x.device, requires_grad=True)  # log s, log sigma^2
    opt = torch.optim.LBFGS([params], max_iter=200, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        var = params[0].exp() * evals + params[1].exp()
        loss = 0.5 * ((proj / var).sum() + var.log().sum())
        loss.backward()
        return loss

    opt.step(closure)
    s, noise = float(params[0].detach().exp()), float(params[1].detach().exp())
    return _GP(x, y, ls, s, max(noise, 2e-6), c)


def fit_gp_ard(x: torch.Tensor, y: torch.Tensor, iters: int = 100, lr: float = 0.1) -> _GP:
    """ARD-RBF GP fitted with GPyTorch (Adam on the exact marginal likelihood, Cholesky solves forced),
    every lengthscale started at the median heuristic."""
    model = _GP(x, y, median_lengthscale(x), 1.0, 0.5, float(y.double().mean()))
    model.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel(ard_num_dims=x.shape[1]))
    model.covar_module.base_kernel.lengthscale = median_lengthscale(x)
    model.to(x.dtype).train()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(model.likelihood, model)
    with gpytorch.settings.max_cholesky_size(10**9):
        for _ in range(iters):
            opt.zero_grad()
            (-mll(model(x), y)).backward()
            opt.step()
    return model.eval()


def pin_threads(n: int | None):
    """Context manager: ``n`` threads for torch and BLAS (``None``: the defaults)."""
    from contextlib import contextmanager

    from threadpoolctl import threadpool_limits

    @contextmanager
    def ctx():
        if n is None:
            yield
            return
        old = torch.get_num_threads()
        try:
            with threadpool_limits(n):
                torch.set_num_threads(n)
                yield
        finally:
            torch.set_num_threads(old)

    return ctx()


def explicit_b_loop(
    k: torch.Tensor, alpha: torch.Tensor, x: torch.Tensor, theta: float, xi: float, features: range
) -> torch.Tensor:
    """The official per-feature algorithm (Eq. 12-13) on the training rows: ``(N, len(features))``."""
    out = torch.empty(x.shape[0], len(features), dtype=x.dtype, device=x.device)
    for c, j in enumerate(features):
        diff = x[:, j, None] - x[None, :, j]
        b = k * torch.exp(-theta * (xi**2 - 2.0 * xi * diff))
        out[:, c] = (k - b.T) @ alpha
    return out


def _time(fn, *args, repeat: int = 1, reset=None) -> tuple[float, object]:
    """Best wall time of ``fn(*args)`` over ``repeat`` runs (``reset()`` before each, untimed), and its result."""
    best, out = math.inf, None
    for _ in range(repeat):
        if reset is not None:
            reset()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = fn(*args)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _explainer(model) -> Goals:
    goals = Goals(model)
    goals.backend.prepare()
    return goals


def speed_study(quick: bool, device: str) -> None:
    sizes = [(500, 500), (1000, 4000)] if quick else [(1000, 1000), (2000, 10_000)]
    print("\n== Speed: batched GOALS vs the per-feature explicit-B^(j) loop (float32, training rows) ==")
    print(f"device={device}; default torch threads={torch.get_num_threads()}; {goals_stages.machine_load()}")
    header = (
        f"{'N':>6} {'J':>7} {'threads':>8} {'setup s':>8} {'batched s':>10} {'loop s':>10} {'loop n':>10} "
        f"{'ratio':>8} {'max|diff|':>10}"
    )
    print(header)
    for n, j in sizes:
        g = torch.Generator().manual_seed(0)
        x = torch.randn(n, j, generator=g).to(device)
        y = x[:, 0] - x[:, 1] * x[:, 2] + 0.3 * torch.randn(n, generator=g).to(device)
        ls = math.sqrt(j)  # theta = 1/(2J): the median heuristic for standardised inputs, within 2x
        model = _GP(x, y, ls, 1.0, 0.1, 0.0)
        for threads in (1, None):
            with pin_threads(threads):
                setup, goals = _time(_explainer, model)
                batched, scores = _time(goals.attribute, x, repeat=2, reset=goals.backend.clear_cache)
                k = goals.backend.gram.float()
                alpha = goals.backend.alpha.float()
                theta = 1.0 / (2.0 * ls**2)
                n_loop = j if j <= 1000 else 20
                loop, ref = _time(explicit_b_loop, k, alpha, x, theta, 1.0, range(n_loop))
            loop_total = loop * j / n_loop
            diff = float((ref - scores[:, :n_loop]).abs().max())
            label = "1" if threads == 1 else f"{torch.get_num_threads()}(def)"
            print(
                f"{n:>6} {j:>7} {label:>8} {setup:>8.2f} {batched:>10.3f} {loop_total:>10.2f} "
                f"{n_loop:>10} {loop_total / batched:>7.0f}x {diff:>10.2e}"
            )
    print(
        "setup = K, float64 Cholesky, alpha and the float32 factors (shared with the loop); the batched time is a "
        "fresh computation (cache cleared); loop s is extrapolated when loop n < J"
    )


def _auc(scores: np.ndarray, causal: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(causal, scores))


def accuracy_study(quick: bool, replicates: int, ard: bool = False, designs: str = "all") -> None:
    from sklearn.ensemble import RandomForestRegressor

    designs_ = {"25": [(500, 25, 5)], "100": [(500, 100, 10)], "all": [(500, 25, 5), (500, 100, 10)]}
    designs_list = designs_["25"] if quick else designs_[designs]
    settings = [(v2, rho) for v2 in (0.3, 0.6) for rho in (0.5, 1.0)]
    methods = ["GOALS |mean|", "GOALS z", "GOALS mean|d|", "RATE", "RF impurity"]
    if ard:
        methods += ["ARD |mean|", "ARD mean|d|"]
    print(f"\n== Accuracy: ROC-AUC of the causal-feature ranking, {replicates} replicates (mean +- sd) ==")
    print(f"{'N':>4} {'J':>4} {'C':>3} {'v2':>4} {'rho':>4} " + " ".join(f"{m:>15}" for m in methods))
    for n, j, c in designs_list:
        for v2, rho in settings:
            aucs = {m: [] for m in methods}
            for rep in range(replicates):
                d = simulate_goals_design(n=n, n_features=j, n_causal=c, v2=v2, rho=rho, seed=1000 * rep + 7)
                model = fit_gp(d.x, d.y)
                goals = Goals(model, xi=1.0)
                imp = goals.global_importance()
                mean_abs = goals.global_importance(reduction="mean_abs").score
                f_mean, f_cov = goals.backend.latent_posterior()
                rate_scores, _ = rate(d.x, f_mean, f_cov)
                rf = RandomForestRegressor(n_estimators=200, random_state=rep, n_jobs=1).fit(d.x.numpy(), d.y.numpy())
                causal = d.causal.numpy()
                aucs["GOALS |mean|"].append(_auc(imp.mean.abs().numpy(), causal))
                aucs["GOALS z"].append(_auc(imp.z.numpy(), causal))
                aucs["GOALS mean|d|"].append(_auc(mean_abs.numpy(), causal))
                aucs["RATE"].append(_auc(rate_scores.numpy(), causal))
                aucs["RF impurity"].append(_auc(rf.feature_importances_, causal))
                if ard:
                    goals_ard = Goals(fit_gp_ard(d.x, d.y), xi=1.0)
                    aucs["ARD |mean|"].append(_auc(goals_ard.global_importance().mean.abs().numpy(), causal))
                    aucs["ARD mean|d|"].append(
                        _auc(goals_ard.global_importance(reduction="mean_abs").score.numpy(), causal)
                    )
            cells = " ".join(f"{np.mean(v):>8.3f}+-{np.std(v):.3f}" for v in aucs.values())
            print(f"{n:>4} {j:>4} {c:>3} {v2:>4} {rho:>4} {cells}")
    print("GP: RBF, median-heuristic lengthscale, ML-II outputscale and noise; xi = 1 SD; RATE: X^+ f, full KL")


def load_mice(trait: str, n_snps: int | None = None):
    """Standardised genotypes (SNPs with MAF > 5%, optionally the first ``n_snps``), the standardised trait
    (rows where it is observed), SNP names, chromosomes and positions (Mbp)."""
    import pandas as pd

    z = np.load(MICE / "mice.npz")
    pheno = pd.read_csv(MICE / "mice_pheno.csv")
    geno = z["X"].astype(np.float32)
    maf = geno.mean(0) / 2.0
    keep = np.flatnonzero(np.minimum(maf, 1.0 - maf) > 0.05)[:n_snps]
    y_all = pheno[trait].to_numpy(dtype=float)
    rows = np.isfinite(y_all)
    xg = geno[rows][:, keep]
    x = torch.from_numpy((xg - xg.mean(0)) / xg.std(0))
    y = torch.from_numpy(((y_all[rows] - y_all[rows].mean()) / y_all[rows].std()).astype(np.float32))
    return x, y, [str(s) for s in z["snp_id"][keep]], z["chr"][keep], z["mbp"][keep]


def mice_study(out: Path, quick: bool = False, device: str = "cpu") -> None:
    import pandas as pd

    if not ((MICE / "mice.npz").exists() and (MICE / "mice_pheno.csv").exists()):
        print(f"\n== Mice: skipped ({MICE} not found; the data are not shipped) ==")
        return
    traits = ("Obesity.EndNormalBW",) if quick else ("Obesity.EndNormalBW", "Biochem.HDL")
    out.mkdir(parents=True, exist_ok=True)
    for trait in traits:
        x, y, names, chrom, mbp = load_mice(trait, 2000 if quick else None)
        x, y = x.to(device), y.to(device)
        print(
            f"\n== Mice (Valdar et al. 2006, BGLR), {trait}: N={x.shape[0]} mice, J={x.shape[1]} SNPs "
            f"with MAF > 5%{' (first 2,000: --quick)' if quick else ''}, {device} =="
        )
        t0 = time.perf_counter()
        model = fit_gp(x, y)
        print(
            f"ML-II {time.perf_counter() - t0:.1f} s (eigh); lengthscale="
            f"{float(model.covar_module.base_kernel.lengthscale.detach()):.1f}, "
            f"outputscale={float(model.covar_module.outputscale.detach()):.3f}, "
            f"noise={float(model.likelihood.noise.detach()):.3f}"
        )
        goals = None
        for threads in (1, None) if x.device.type == "cpu" else (None,):
            with pin_threads(threads):
                stages, goals = goals_stages.stage_table(model, x, names)
            label = "1 thread" if threads == 1 else f"default threads ({torch.get_num_threads()})"
            label = label if x.device.type == "cpu" else str(x.device)
            print(f"-- {label}")
            goals_stages.print_table(stages, goals_stages.machine_load())
        assert goals is not None
        imp = goals.global_importance()
        with pin_threads(None):
            print(goals_stages.compare_with_float64(goals))
        frame = imp.to_frame()
        frame["chr"] = chrom[frame["index"]]
        frame["mbp"] = mbp[frame["index"]]
        with pd.option_context("display.width", 140, "display.max_columns", 20):
            print(
                frame.head(10)[["rank", "feature", "chr", "mbp", "mean", "sd", "lower", "upper", "z"]].to_string(
                    index=False, float_format=lambda v: f"{v:.4g}"
                )
            )
        imp.plot_manhattan(chrom, mbp, statistic="z").save(out / f"goals_mice_{trait}.png", dpi=120)
        imp.plot(top=20).save(out / f"goals_mice_{trait}_top20.png", dpi=120)
        frame.head(100).to_csv(out / f"goals_mice_{trait}_top100.csv", index=False)
    print(f"plots and tables written to {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes, 2 replicates, mice on 2,000 SNPs")
    parser.add_argument("--device", default="cpu", help="torch device for the speed and mice studies (default cpu)")
    parser.add_argument("--study", choices=["all", "speed", "accuracy", "mice"], default="all")
    parser.add_argument("--mice", action="store_true", help="only the mice study (same as --study mice)")
    parser.add_argument("--replicates", type=int, default=None, help="accuracy replicates (default 10; quick 2)")
    parser.add_argument("--ard", action="store_true", help="also GOALS on GPyTorch-fitted ARD GPs (slow)")
    parser.add_argument("--designs", choices=["25", "100", "all"], default="all", help="accuracy designs (J)")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(tempfile.gettempdir()) / "torchxplain_goals",
        help="where the mice plots and tables go",
    )
    args = parser.parse_args()
    if args.mice:
        args.study = "mice"
    os.environ.setdefault("TORCHXPLAIN_PROGRESS", "0")
    import matplotlib

    matplotlib.use("Agg")
    if args.study in ("all", "speed"):
        speed_study(args.quick, args.device)
    if args.study in ("all", "accuracy"):
        accuracy_study(args.quick, args.replicates or (2 if args.quick else 10), args.ard, args.designs)
    if args.study in ("all", "mice"):
        mice_study(args.out, args.quick, args.device)


if __name__ == "__main__":
    main()

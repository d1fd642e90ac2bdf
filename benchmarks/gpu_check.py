"""One short device check: the ``gpu``-marked tests, each benchmark's quick mode on the device, and one table.

On a CUDA machine it runs ``pytest -m gpu`` and every benchmark with ``--device cuda --quick`` (each in its own
process, with a time limit; the black-box benchmark on two of its settings), then measures four headline numbers
on the device itself:

* the Eq. 5 kernel (``tx.fourier.shapley_values``) in GFLOP/s next to ``torch.matmul`` on the same GEMM shapes;
* the tree kernel's rows/s (``FourierShap.from_trees(...).attribute``) on a one-hot forest;
* GOALS seconds for all local scores and the global importances with variances (HS mice when present, else a
  synthetic design of the same shape);
* IDX seconds for MD + SD + CF on all 1,080 inputs of the Child network.

Without CUDA it says so and runs the same on the CPU (``--device cpu``), which is what the test suite does.

    python benchmarks/gpu_check.py [--device cuda|cpu] [--timeout 240] [--skip-benchmarks] [--only trees,idx]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

import torchxplain as tx

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ("fourier_values", "trees", "blackbox", "interactions", "goals", "goals_bnn", "idx", "scale")
NO_DEVICE_FLAG = {"interactions"}
EXTRA_FLAGS = {"blackbox": ["--settings", "entacmaea,gb1_forest"]}  # two settings keep it inside --timeout


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def best_time(fn: Callable[[], object], device: str, repeat: int = 3) -> float:
    """Best wall time of ``repeat`` calls after one warm-up."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        sync(device)
        start = time.perf_counter()
        fn()
        sync(device)
        best = min(best, time.perf_counter() - start)
    return best


def eq5_rate(device: str) -> tuple[float, float]:
    """GFLOP/s of the Eq. 5 kernel (4·Q·|D|·k·n flops) and of ``torch.matmul`` on its GEMM shapes."""
    q, b, k, n = (1000, 100, 5000, 80) if device == "cuda" else (100, 50, 1000, 40)
    gen = torch.Generator().manual_seed(0)
    spec = tx.FourierSpectrum(torch.rand(k, n, generator=gen) < 3.0 / n, torch.randn(k, generator=gen)).to(device)
    x = torch.randint(0, 2, (q, n), generator=gen).float().to(device)
    bg = torch.randint(0, 2, (b, n), generator=gen).float().to(device)
    kernel = best_time(lambda: tx.fourier.shapley_values(spec, x, bg, kernel="gemm"), device)
    rows = q * b if device == "cuda" else 4096
    a, f, w = (
        torch.randn(rows, n, device=device),
        torch.randn(n, k, device=device),
        torch.randn(rows, k, device=device),
    )
    matmul = best_time(lambda: (a @ f, w @ f.T), device)
    return 4.0 * q * b * k * n / kernel / 1e9, 4.0 * rows * n * k / matmul / 1e9


def tree_rows_per_second(device: str) -> float:
    """Rows/s of exact tree SHAP values on a 20-tree depth-5 forest of 4 one-hot variables (20 levels each)."""
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(0)
    codes = rng.integers(0, 20, size=(3000, 4))
    x = np.zeros((3000, 80))
    x[np.arange(3000)[:, None], 20 * np.arange(4) + codes] = 1.0
    y = np.sin(codes[:, 0]) + codes[:, 1] * (codes[:, 2] > 10) + rng.normal(scale=0.1, size=3000)
    forest = RandomForestRegressor(n_estimators=20, max_depth=5, random_state=0).fit(x, y)
    background = torch.tensor(x[:100], dtype=torch.float32, device=device)
    queries = torch.tensor(x[100 : 100 + (10_000 if device == "cuda" else 1000)], dtype=torch.float32, device=device)
    explainer = tx.FourierShap.from_trees(forest, background)
    return queries.shape[0] / best_time(lambda: explainer.attribute(queries), device)


def goals_seconds(device: str) -> tuple[float, str]:
    """Seconds for all local scores plus global importances (with variances) of a fitted GP."""
    import gpytorch

    path = ROOT.parent / "shared" / "data" / "mice_hs" / "mice.npz"
    if path.exists():
        genotypes = np.load(path)
        x = torch.tensor(genotypes[next(iter(genotypes.files))][:, :2000], dtype=torch.float64)
        label = f"mice {tuple(x.shape)}"
    else:
        x = torch.randint(0, 3, (1814, 2000), generator=torch.Generator().manual_seed(0)).double()
        label = f"synthetic {tuple(x.shape)}"
    y = x[:, :5].sum(1) + 0.1 * torch.randn(x.shape[0], dtype=torch.float64)
    likelihood = gpytorch.likelihoods.GaussianLikelihood().double()

    class GP(gpytorch.models.ExactGP):
        def __init__(self) -> None:
            super().__init__(x, y, likelihood)
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())
            self.covar_module.base_kernel.lengthscale = float(x.shape[1]) ** 0.5
            self.likelihood.noise = torch.tensor(0.5, dtype=torch.float64)

        def forward(self, z: torch.Tensor) -> gpytorch.distributions.MultivariateNormal:
            return gpytorch.distributions.MultivariateNormal(self.mean_module(z), self.covar_module(z))

    gp = GP().double().to(device)
    gp.eval()
    goals = tx.Goals(gp)
    xd = x.to(device)

    def fresh() -> object:  # the backend caches the training-row scores: clear them so each call computes
        goals.backend.clear_cache()
        return goals.attribute(xd), goals.global_importance()

    return best_time(fresh, device, repeat=1), label


def idx_seconds(device: str) -> float:
    """Seconds for MD + SD + CF relations of every input of the Child network (the bulk path)."""
    from torchxplain import idx

    bc = idx.datasets.child()
    inputs = idx.datasets.all_inputs(bc)
    return best_time(lambda: [idx.explain(bc, inputs, kit=kit) for kit in ("md", "sd", "cf")], device, repeat=1)


def run(command: list[str], timeout: float) -> tuple[str, float]:
    """Run a command from the repository root; ``("ok" | "failed (rc)" | "timed out", seconds)``."""
    start = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timed out", time.perf_counter() - start
    status = "ok" if done.returncode == 0 else f"failed ({done.returncode}): {done.stderr.strip()[-200:]}"
    return status, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds per test or benchmark process")
    parser.add_argument("--skip-benchmarks", action="store_true", help="only the headline table")
    parser.add_argument("--only", default=",".join(BENCHMARKS), help="comma-separated benchmarks to run")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda, but torch sees no CUDA device")
    if args.device == "cuda":
        print(f"device: {torch.cuda.get_device_name()}")
    else:
        torch.set_num_threads(1)
        if not torch.cuda.is_available():
            print("no CUDA device here: running the CPU quick modes instead")
    steps: list[tuple[str, str, float]] = []
    if not args.skip_benchmarks:
        steps.append(("pytest -m gpu", *run([sys.executable, "-m", "pytest", "-q", "-m", "gpu"], args.timeout)))
        chosen = [name for name in args.only.split(",") if name]
        unknown = sorted(set(chosen) - set(BENCHMARKS))
        if unknown:
            parser.error(f"--only: unknown benchmarks {unknown}; known: {list(BENCHMARKS)}")
        for name in chosen:
            flags = (
                ["--quick"] + ([] if name in NO_DEVICE_FLAG else ["--device", args.device]) + EXTRA_FLAGS.get(name, [])
            )
            steps.append(
                (f"{name} {' '.join(flags)}", *run([sys.executable, f"benchmarks/{name}.py", *flags], args.timeout))
            )
    kernel, matmul = eq5_rate(args.device)
    rows = tree_rows_per_second(args.device)
    goals, label = goals_seconds(args.device)
    child = idx_seconds(args.device)
    print(f"\n{'step':<44} {'status':<12} seconds")
    for name, status, seconds in steps:
        print(f"{name:<44} {status:<12} {seconds:7.1f}")
    print(f"\n{'headline (' + args.device + ')':<44} value")
    print(f"{'Eq. 5 kernel GFLOP/s':<44} {kernel:.1f}")
    print(f"{'torch.matmul GFLOP/s (same shapes)':<44} {matmul:.1f}")
    print(f"{'Eq. 5 / matmul':<44} {kernel / matmul:.2f}")
    print(f"{'tree kernel rows/s (GB1-like, depth 5)':<44} {rows:.0f}")
    print(f"{'GOALS local + global seconds (' + label + ')':<44} {goals:.2f}")
    print(f"{'IDX Child MD+SD+CF seconds (1,080 inputs)':<44} {child:.3f}")
    failed = [name for name, status, _ in steps if status != "ok"]
    if failed:
        print(f"\nnot ok: {failed}")
        sys.exit(1)


if __name__ == "__main__":
    main()

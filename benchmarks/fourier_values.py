"""The value kernels on random sparse spectra: speed of both kernels, GEMM efficiency, and the memory budget.

1. **Speed.** ``tx.fourier.shapley_values`` with ``kernel="gemm"`` (two GEMMs per chunk of (query, background)
   pairs, ``4·Q·|D|·k·n`` useful flops, whose rate is compared with ``torch.matmul`` on the same shapes) and with
   ``kernel="small_support"`` (tables over the patterns of support families), and which one ``"auto"`` picks.
2. **Memory**: Q = 20,000, |D| = 100, k = 20,000, n = 200 (about three features per frequency) with
   ``max_memory="1GB"``, each kernel in a fresh process, peak resident set from ``getrusage`` (the whole process:
   Python, torch and the inputs included) and, for the dense kernel, which would run for hours on a CPU, the peak
   of a psutil sampler over its first ``--gemm-seconds`` seconds (its chunks all have the same size, so the peak is
   reached in the first one). Target: below 1.5 GB.

    python benchmarks/fourier_values.py [--device cuda] [--dtype float64] [--quick]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import threading
import time

import psutil
import torch
from threadpoolctl import threadpool_limits

from torchxplain import FourierSpectrum
from torchxplain.fourier import precompute_background, shapley_values
from torchxplain.fourier.values._plan import ValuePlan

CASES = [(100, 100, 1_000, 40), (100, 100, 20_000, 80), (1_000, 100, 5_000, 236)]
BUDGET_CASE = (20_000, 100, 20_000, 200)
BUDGET = "1GB"


def random_problem(q: int, b: int, k: int, n: int, dtype: torch.dtype, device: str, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    freq = torch.rand(k, n, generator=gen) < 3.0 / n  # about three features per frequency
    spec = FourierSpectrum(freq, torch.randn(k, generator=gen, dtype=torch.float64).to(dtype)).to(device)
    x = torch.randint(0, 2, (q, n), generator=gen).to(device=device, dtype=dtype)
    bg = torch.randint(0, 2, (b, n), generator=gen).to(device=device, dtype=dtype)
    return spec, x, bg


def timed(fn, device: str, repeat: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def matmul_rate(rows: int, n: int, k: int, dtype: torch.dtype, device: str, repeat: int) -> float:
    """GFLOP/s of the two GEMM shapes of one kernel chunk: (rows×n)@(n×k) and (rows×k)@(k×n)."""
    a = torch.randn(rows, n, dtype=dtype, device=device)
    f = torch.randn(n, k, dtype=dtype, device=device)
    w = torch.randn(rows, k, dtype=dtype, device=device)
    seconds = timed(lambda: (a @ f, w @ f.T), device, repeat)
    return 4.0 * rows * n * k / seconds / 1e9


def speed_case(q, b, k, n, dtype, device, max_memory, repeat) -> dict:
    spec, x, bg = random_problem(q, b, k, n, dtype, device)
    out = {"gemm": timed(lambda: shapley_values(spec, x, bg, max_memory=max_memory, kernel="gemm"), device, repeat)}
    out["small_support"] = timed(
        lambda: shapley_values(spec, x, bg, max_memory=max_memory, kernel="small_support"), device, repeat
    )
    plan = ValuePlan(spec, bg, None, n)
    plan.shapley(x)
    out["auto_picks"] = plan.describe()["choices"]["shapley"]["kernel"]
    out["gflops"] = 4.0 * q * b * k * n / out["gemm"] / 1e9
    out["matmul"] = max(matmul_rate(rows, n, k, dtype, device, repeat) for rows in (b, 4 * b, 16 * b))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--max-memory", default="512MB")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="only the smallest case, no memory case")
    parser.add_argument("--gemm-seconds", type=float, default=60.0, help="how long the dense memory run is sampled")
    parser.add_argument("--budget-case", choices=["auto", "gemm", "small_support"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    dtype = getattr(torch, args.dtype)
    if args.budget_case:
        return budget_case(args.device, dtype, args.budget_case, args.gemm_seconds)
    cases = CASES[:1] if args.quick else CASES
    default_threads = torch.get_num_threads()
    for threads in (1, default_threads) if args.device == "cpu" else (None,):
        label = f"{threads} thread(s)" if threads else "cuda"
        print(f"\n== value kernels, {args.dtype}, {args.device}, {label}, budget {args.max_memory}")
        print(
            f"{'Q':>6} {'|D|':>5} {'k':>7} {'n':>4} {'gemm s':>9} {'GFLOP/s':>8} {'of matmul':>9} "
            f"{'tables s':>9} {'gemm/tables':>11} {'auto picks':>13}"
        )
        with threadpool_limits(threads):
            if threads:
                torch.set_num_threads(threads)
            for q, b, k, n in cases:
                r = speed_case(q, b, k, n, dtype, args.device, args.max_memory, args.repeat)
                print(
                    f"{q:>6} {b:>5} {k:>7} {n:>4} {r['gemm']:>9.3f} {r['gflops']:>8.1f} "
                    f"{r['gflops'] / r['matmul']:>9.1%} {r['small_support']:>9.3f} "
                    f"{r['gemm'] / r['small_support']:>11.1f} {r['auto_picks']:>13}"
                )
        torch.set_num_threads(default_threads)
    if not args.quick:
        q, b, k, n = BUDGET_CASE
        print(
            f"\n== memory: Q={q}, |D|={b}, k={k}, n={n}, max_memory={BUDGET!r}, {args.dtype}, 1 thread; "
            "each kernel in a fresh process (peak resident set of the whole process)"
        )
        for kernel in ("auto", "gemm"):
            command = [
                sys.executable,
                __file__,
                "--budget-case",
                kernel,
                "--device",
                args.device,
                "--dtype",
                args.dtype,
            ]
            if kernel == "gemm":
                command += ["--gemm-seconds", str(args.gemm_seconds)]
            subprocess.run(command, check=True)


def budget_case(device: str, dtype: torch.dtype, kernel: str, gemm_seconds: float) -> None:
    """One run of the memory case in this (fresh) process; prints the peak resident set."""
    q, b, k, n = BUDGET_CASE
    torch.set_num_threads(1)
    spec, x, bg = random_problem(q, b, k, n, dtype, device)
    process, peak, done = psutil.Process(), [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], process.memory_info().rss)
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    term = precompute_background(spec, bg)
    worker = threading.Thread(
        target=lambda: shapley_values(spec, x, term, max_memory=BUDGET, kernel=kernel), daemon=True
    )
    with threadpool_limits(1):
        worker.start()
        worker.join(timeout=gemm_seconds if kernel == "gemm" else None)  # the dense run takes hours on a CPU
    finished = not worker.is_alive()
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    rusage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    (plan,) = term.plans.values()
    chosen = plan.describe()["choices"].get("shapley", {}).get("kernel", kernel)
    status = f"{seconds:.1f} s" if finished else f"stopped after {seconds:.0f} s (chunks of equal size)"
    print(
        f"kernel={kernel} (ran {chosen}): {status}; peak resident {max(rusage, peak[0]) / 2**30:.2f} GiB "
        f"(getrusage {rusage / 2**30:.2f}, sampler {peak[0] / 2**30:.2f}); target < 1.5 GiB",
        flush=True,
    )
    if not finished:
        os._exit(0)  # the dense run is still going: end the process without waiting for it


if __name__ == "__main__":
    main()

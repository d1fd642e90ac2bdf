"""Achieved GFLOP/s of the Eq. 5 kernel (``tx.fourier.shapley_values``) against ``torch.matmul`` in the same run.

The kernel does two GEMMs per chunk of (query, background) pairs, ``C = D Fᵀ`` and ``Φ = (S ∘ w(C)) F``, so its
useful work is ``4 · Q · |D| · k · n`` flops; the rest (``w(C)``, ``S ∘``, the reduction over the background) is
elementwise. The reference rate is ``torch.matmul`` on the same GEMM shapes and dtype. Peak memory is the growth of
the process's peak resident set (CPU) or ``torch.cuda.max_memory_allocated`` (CUDA).

    python benchmarks/fourier_values.py [--device cuda] [--dtype float64] [--quick]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time

import torch
from threadpoolctl import threadpool_limits

from torchxplain.fourier import FourierSpectrum, shapley_values

CASES = [(100, 100, 1_000, 40), (100, 100, 20_000, 80), (1_000, 100, 5_000, 236)]
BUDGET_CASE = (1_000, 100, 20_000, 80)


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


def peak_memory_mb(device: str) -> float:
    if device == "cuda":
        return torch.cuda.max_memory_allocated() / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_case(q, b, k, n, dtype, device, max_memory, repeat):
    spec, x, bg = random_problem(q, b, k, n, dtype, device)
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    before = peak_memory_mb(device)
    seconds = timed(lambda: shapley_values(spec, x, bg, max_memory=max_memory), device, repeat)
    grown = peak_memory_mb(device) - (0.0 if device == "cuda" else before)
    gflops = 4.0 * q * b * k * n / seconds / 1e9
    # the reference: the best torch.matmul rate over GEMMs of this k and n with a range of row counts
    ref = max(matmul_rate(rows, n, k, dtype, device, repeat) for rows in (b, 4 * b, 16 * b))
    return seconds, gflops, ref, grown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--max-memory", default="512MB")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="only the smallest case")
    parser.add_argument("--budget-case", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    dtype = getattr(torch, args.dtype)
    if args.budget_case:
        return budget_case(args.device, dtype)
    cases = CASES[:1] if args.quick else CASES
    default_threads = torch.get_num_threads()
    for threads in (1, default_threads) if args.device == "cpu" else (None,):
        label = f"{threads} thread(s)" if threads else "cuda"
        print(f"\n== Eq. 5 kernel vs torch.matmul, {args.dtype}, {args.device}, {label}, budget {args.max_memory}")
        print(
            f"{'Q':>6} {'|D|':>5} {'k':>7} {'n':>4} {'seconds':>9} {'GFLOP/s':>9} {'matmul':>9} {'ratio':>7}"
            f" {'peak MB':>9}"
        )
        with threadpool_limits(threads):
            if threads:
                torch.set_num_threads(threads)
            for q, b, k, n in cases:
                seconds, gflops, ref, grown = run_case(q, b, k, n, dtype, args.device, args.max_memory, args.repeat)
                print(
                    f"{q:>6} {b:>5} {k:>7} {n:>4} {seconds:>9.3f} {gflops:>9.1f} {ref:>9.1f} {gflops / ref:>7.1%}"
                    f" {grown:>9.0f}"
                )
        torch.set_num_threads(default_threads)
    if not args.quick:
        q, b, k, n = BUDGET_CASE
        print(
            f"\n== memory budget: Q={q}, |D|={b}, k={k}, n={n} with max_memory='2GB' ({args.dtype}, 1 thread, "
            "fresh process so the peak resident set is this case's)"
        )
        subprocess.run(
            [sys.executable, __file__, "--budget-case", "--device", args.device, "--dtype", args.dtype], check=True
        )


def budget_case(device: str, dtype: torch.dtype) -> None:
    q, b, k, n = BUDGET_CASE
    torch.set_num_threads(1)
    with threadpool_limits(1):
        seconds, gflops, ref, grown = run_case(q, b, k, n, dtype, device, "2GB", 1)
    print(
        f"{seconds:.2f} s, {gflops:.1f} GFLOP/s ({gflops / ref:.1%} of matmul), "
        f"peak memory growth {grown:.0f} MB (budget 2048 MB)"
    )


if __name__ == "__main__":
    main()

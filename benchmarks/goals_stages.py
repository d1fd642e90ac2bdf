"""Per-stage timing of GOALS on one fitted GP, each product stage next to ``torch.matmul`` measured in the same run.

Used by ``benchmarks/goals.py --mice``. Stages (training rows, N x J):

* set-up: kernel matrix (an ``N x N x J`` distance product, float64), Cholesky factor, ``alpha``, the centred
  float32 kernel and the explicit inverse factor the float32 products use;
* local scores: the ``N x N x J`` product ``(K - k0)(alpha o ut)`` plus float64 elementwise work;
* global means: means of the cached local scores (no product is redone);
* S4 variances + intervals: the ``N x N x J`` product ``(K - k0) vt`` and the triangular product
  ``L^{-1} c`` (``N^2 J`` useful flops), then 95% intervals.

GFLOP counts are the useful flops of the products (2 per multiply-add; the triangular product counts its
lower triangle only). The matmul rate is torch.matmul on an ``N x N`` times ``N x 1024`` product in the
stage's dtype, measured right before and right after the stage (the mean is shown), so both see the same load.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

import torchxplain as tx
from torchxplain import Goals


def sync(device: torch.device) -> None:
    """Wait for queued GPU work (no-op on CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_rate(n: int, dtype: torch.dtype, device: torch.device, cols: int = 1024, repeat: int = 3) -> float:
    """Best GFLOP/s of ``torch.matmul`` on ``(n, n) @ (n, cols)`` in ``dtype`` on ``device``."""
    a = torch.randn(n, n, dtype=dtype, device=device)
    b = torch.randn(n, cols, dtype=dtype, device=device)
    a @ b
    best = float("inf")
    for _ in range(repeat):
        sync(device)
        start = time.perf_counter()
        a @ b
        sync(device)
        best = min(best, time.perf_counter() - start)
    return 2.0 * n * n * cols / best / 1e9


@dataclass
class Stage:
    """One row of the table."""

    name: str
    seconds: float
    gflop: float
    matmul: float  # GFLOP/s of torch.matmul around the stage (0: no product in this stage)
    dtype: torch.dtype

    def row(self) -> str:
        rate = self.gflop / self.seconds if self.seconds > 0 and self.gflop > 0 else 0.0
        ratio = f"{rate / self.matmul:6.0%}" if self.matmul > 0 and rate > 0 else "     -"
        gflops = f"{rate:8.1f}" if rate > 0 else "       -"
        mm = f"{self.matmul:8.1f}" if self.matmul > 0 else "       -"
        return f"{self.name:<34} {self.seconds:8.3f} {self.gflop:8.1f} {gflops} {mm} {ratio}  {str(self.dtype)[6:]}"


def _timed_stage(
    name: str, fn: Callable[[], Any], gflop: float, n: int, dtype: torch.dtype, device: torch.device
) -> tuple[Stage, Any]:
    before = matmul_rate(n, dtype, device) if gflop > 0 else 0.0
    sync(device)
    start = time.perf_counter()
    out = fn()
    sync(device)
    seconds = time.perf_counter() - start
    after = matmul_rate(n, dtype, device) if gflop > 0 else 0.0
    return Stage(name, seconds, gflop, (before + after) / 2.0, dtype), out


def stage_table(model: Any, x: torch.Tensor, feature_names: list[str] | None = None) -> tuple[list[Stage], Goals]:
    """Time GOALS' stages on a fitted RBF GP whose training inputs are ``x`` ``(N, J)`` (float32 products).

    Returns the stages and the explainer (its training statistics cached).
    """
    n, j = x.shape
    dev = x.device
    dt = tx.settings.dtype_policy.compute_dtype(x)
    setup_gflop = (2.0 * n * n * j + n**3 / 3.0 + (n**3 if dt != torch.float64 else 0.0)) / 1e9

    def setup() -> Goals:
        goals = Goals(model, xi=1.0, feature_names=feature_names)
        goals.backend.prepare(dt)
        return goals

    stages = []
    stage, goals = _timed_stage("kernel + Cholesky (set-up)", setup, setup_gflop, n, torch.float64, dev)
    stages.append(stage)
    backend = goals.backend
    stage, _ = _timed_stage(
        "local scores (all N x J)", lambda: backend.training_stats(False), 2.0 * n * n * j / 1e9, n, dt, dev
    )
    stages.append(stage)
    stage, mean = _timed_stage(
        "global means (from the local scores)", lambda: backend.training_stats(False).mean, 0.0, n, dt, dev
    )
    stages.append(stage)

    def variances() -> Any:
        backend.training_stats(True)
        return goals.global_importance().interval(0.95)

    stage, _ = _timed_stage("S4 variances + 95% intervals", variances, 3.0 * n * n * j / 1e9, n, dt, dev)
    stages.append(stage)
    return stages, goals


def print_table(stages: list[Stage], load: str) -> None:
    """Print the stage table and the total after set-up."""
    print(f"{'stage':<34} {'seconds':>8} {'GFLOP':>8} {'GFLOP/s':>8} {'matmul':>8} {'ratio':>6}  dtype")
    for stage in stages:
        print(stage.row())
    after = sum(s.seconds for s in stages[1:])
    print(f"{'total after set-up':<34} {after:8.3f}    ({load})")


def machine_load() -> str:
    """The 1-minute load average and the CPU count, as a string."""
    try:
        one = os.getloadavg()[0]
    except OSError:
        return "load unknown"
    return f"load average {one:.1f} on {os.cpu_count()} CPUs"


def compare_with_float64(goals: Goals, top: int = 20) -> str:
    """Recompute the training statistics with float64 products and compare: the top-``top`` features by
    ``|mean|``, their global means, all S4 variances (relative) and the local scores (relative to each
    feature's largest score). Float64 accumulations are compared, before any rounding to the model's dtype."""
    backend = goals.backend
    fast = backend.training_stats(True)
    backend.clear_cache()
    with tx.settings.dtype_policy("float64"):
        ref = backend.training_stats(True)
    backend.clear_cache()
    fast_var, ref_var = fast.variance(), ref.variance()
    assert fast_var is not None and ref_var is not None
    order = torch.argsort(ref.mean.abs(), descending=True)[:top]
    same = torch.equal(torch.argsort(fast.mean.abs(), descending=True)[:top], order)
    mean_rel = float(((fast.mean - ref.mean).abs() / ref.mean.abs())[order].max())
    var_rel = float(((fast_var - ref_var).abs() / ref_var).max())
    scale = ref.local.abs().max(0).values
    local_rel = float(((fast.local.double() - ref.local).abs().max(0).values / scale).max())
    return (
        f"vs the float64 path: top {top} features identical: {same}; their global means within {mean_rel:.1e} "
        f"relative; S4 variances within {var_rel:.1e} relative (all J); local scores within {local_rel:.1e} of "
        "each feature's largest |score|"
    )

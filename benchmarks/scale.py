"""Rows/second explained by FourierSHAP on 1 vs 2 processes (Lightning DDP on CPU), and a per-GPU projection.

Peers measured in the same run, on the same explainer and rows:

* ``kernel only``: ``tx.fourier.shapley_values`` on the detached spectrum, batch by batch, in this process;
* ``direct attribute``: ``explainer.attribute`` batch by batch in this process (1 thread, then the default count);
* ``lightning x1``: ``Trainer.predict(ExplainModule(...))`` with an ``ExplanationWriter``, 1 process, 1 thread;
* ``lightning ddp x2``: the same with ``devices=2, strategy="ddp"``, each process pinned to 1 thread.

Throughput counts the predict loop only (barrier to barrier, no process start-up); the wall time of each launch,
start-up included, is printed too. The projection divides an assumed GPU GEMM rate by the Eq. 5 work per row,
``4 · |D| · k · n`` flops (two GEMMs per chunk of (query, background) pairs), scaled by the fraction of the
``torch.matmul`` rate that the kernel reaches on this machine; it is a projection, not a measurement.

With ``--device cuda`` the same peers run on one GPU (``lightning x1`` with ``accelerator="gpu", devices=1``; the
2-process DDP peer is a CPU comparison and is skipped), and the kernel's measured GFLOP/s is printed next to the
GPU's own ``torch.matmul`` rate on the kernel's GEMM shapes: a measurement that replaces the projection.

    python benchmarks/scale.py [--quick] [--rows N] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import torch
from threadpoolctl import threadpool_limits

# NVIDIA H200 (GH100, like the H100 SXM) datasheet peaks, dense: FP32 on CUDA cores and TF32 on tensor cores.
GPU_FP32_TFLOPS = 67.0
GPU_TF32_TFLOPS = 494.0
PROBLEM = {"n": 60, "k": 2000, "background": 100}


def make_problem(rows: int, dtype: torch.dtype = torch.float32, seed: int = 0, device: str = "cpu"):
    """A random spectrum (about three features per frequency), background and binary rows, on ``device``."""
    from torchxplain import FourierShap, FourierSpectrum

    n, k, b = PROBLEM["n"], PROBLEM["k"], PROBLEM["background"]
    gen = torch.Generator().manual_seed(seed)
    freq = torch.rand(k, n, generator=gen) < 3.0 / n
    spectrum = FourierSpectrum(freq, torch.randn(k, generator=gen, dtype=dtype))
    background = torch.randint(0, 2, (b, n), generator=gen).to(dtype)
    x = torch.randint(0, 2, (rows, n), generator=gen).to(dtype)
    return FourierShap.from_spectrum(spectrum, background, max_memory="256MB").to(device), x.to(device)


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def flops_per_row() -> float:
    return 4.0 * PROBLEM["background"] * PROBLEM["k"] * PROBLEM["n"]


def worker(devices: int, rows: int, batch_size: int, out_dir: str, device: str = "cpu") -> None:
    """Run Trainer.predict on ``devices`` processes (CPU; or one GPU), re-launched by DDP with the same argv."""
    import lightning.pytorch as pl
    from lightning.pytorch.callbacks import Callback
    from torch.utils.data import DataLoader, TensorDataset

    from torchxplain.integrations import ExplainModule, ExplanationWriter

    torch.set_num_threads(1)

    class Clock(Callback):
        def on_predict_start(self, trainer, pl_module):
            trainer.strategy.barrier()
            self.start = time.perf_counter()

        def on_predict_end(self, trainer, pl_module):
            trainer.strategy.barrier()
            if trainer.is_global_zero:
                seconds = time.perf_counter() - self.start
                print("RESULT " + json.dumps({"seconds": seconds, "rows": rows}), flush=True)

    explainer, x = make_problem(rows)
    trainer = pl.Trainer(
        accelerator="gpu" if device == "cuda" else "cpu",
        devices=devices,
        strategy="ddp" if devices > 1 else "auto",
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[ExplanationWriter(out_dir), Clock()],
    )
    with threadpool_limits(1):
        trainer.predict(
            ExplainModule(explainer), DataLoader(TensorDataset(x), batch_size=batch_size), return_predictions=False
        )
    if torch.distributed.is_initialized():  # gloo can abort at interpreter exit without this
        torch.distributed.destroy_process_group()


def launch(devices: int, rows: int, batch_size: int, device: str = "cpu") -> tuple[float, float]:
    """(predict-loop seconds, wall seconds including start-up) of a fresh worker process."""
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, TORCHXPLAIN_PROGRESS="0", PYTHONWARNINGS="ignore")
        start = time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                os.path.abspath(__file__),
                "--worker",
                str(devices),
                "--rows",
                str(rows),
                "--batch-size",
                str(batch_size),
                "--out",
                out,
                "--device",
                device,
            ],
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - start
        if done.returncode:
            raise RuntimeError(f"worker with {devices} process(es) failed:\n{done.stderr[-3000:]}")
        from torchxplain.integrations import merge_shards

        merge_shards(out, expected_rows=rows)  # every row explained exactly once
    result = next(json.loads(line[7:]) for line in done.stdout.splitlines() if line.startswith("RESULT "))
    return result["seconds"], wall


def direct_rate(
    rows: int, threads: int, repeat: int, batch_size: int, kernel_only: bool = False, device: str = "cpu"
) -> float:
    """Rows/s of ``explainer.attribute`` (or, with ``kernel_only``, of ``shapley_values`` on the detached spectrum)
    over the rows in batches of ``batch_size``, in this process, on ``device``."""
    from torchxplain import FourierSpectrum
    from torchxplain.fourier import shapley_values

    explainer, x = make_problem(rows, device=device)
    spectrum = FourierSpectrum(explainer.spectrum.frequencies, explainer.spectrum.amplitudes.detach())
    if kernel_only:

        def explain(batch):
            return shapley_values(spectrum, batch, explainer.background, max_memory=explainer.max_memory)
    else:
        explain = explainer.attribute
    torch.set_num_threads(threads)
    best = float("inf")
    with threadpool_limits(threads):
        explain(x[:64])
        synchronize(device)
        for _ in range(repeat):
            start = time.perf_counter()
            for i in range(0, rows, batch_size):
                explain(x[i : i + batch_size]).detach()
            synchronize(device)
            best = min(best, time.perf_counter() - start)
    return rows / best


def best_launch(devices: int, rows: int, batch_size: int, repeat: int, device: str = "cpu") -> tuple[float, float]:
    runs = [launch(devices, rows, batch_size, device) for _ in range(repeat)]
    return min(r[0] for r in runs), min(r[1] for r in runs)


def matmul_gflops(threads: int, device: str = "cpu") -> float:
    """This machine's torch.matmul rate on the kernel's GEMM shapes (rows × n) @ (n × k), float32, on ``device``."""
    n, k = PROBLEM["n"], PROBLEM["k"]
    rows = 4 * PROBLEM["background"] * (64 if device == "cuda" else 1)  # a GPU needs a bigger batch to fill
    a, f, w = (torch.randn(*shape, device=device) for shape in ((rows, n), (n, k), (rows, k)))
    torch.set_num_threads(threads)
    with threadpool_limits(threads):
        a @ f, w @ f.T
        synchronize(device)
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            a @ f, w @ f.T
            synchronize(device)
            best = min(best, time.perf_counter() - start)
    return 4.0 * rows * n * k / best / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 rows instead of 16,000")
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=2, help="best of this many runs of each peer")
    parser.add_argument(
        "--device", default="cpu", choices=["cpu", "cuda"], help="cpu: 1 vs 2 DDP processes; cuda: one GPU"
    )
    parser.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    rows = args.rows or (2_000 if args.quick else 16_000)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.exit(2, "scale.py: --device cuda needs a CUDA device; torch sees none\n")
    if args.worker is not None:
        return worker(args.worker, rows, args.batch_size, args.out, args.device)
    if args.device == "cuda":
        return main_cuda(rows, args.batch_size, args.repeat)

    default_threads = torch.get_num_threads()
    n, k, b = PROBLEM["n"], PROBLEM["k"], PROBLEM["background"]
    print(
        f"FourierSHAP (Eq. 5) on {rows} rows: n={n}, k={k}, |D|={b}, float32, batch {args.batch_size}; "
        f"{flops_per_row() / 1e6:.0f} MFLOP per row; {os.cpu_count()} CPU cores, default {default_threads} threads; "
        f"load average before: {os.getloadavg()[0]:.1f}; best of {args.repeat}"
    )
    kernel = direct_rate(rows, 1, args.repeat, args.batch_size, kernel_only=True)
    one_thread = direct_rate(rows, 1, args.repeat, args.batch_size)
    all_threads = direct_rate(rows, default_threads, args.repeat, args.batch_size)
    single, single_wall = best_launch(1, rows, args.batch_size, args.repeat)
    ddp, ddp_wall = best_launch(2, rows, args.batch_size, args.repeat)
    torch.set_num_threads(default_threads)
    print(f"{'run':<34} {'rows/s':>9} {'vs lightning x1':>16} {'wall s (start-up incl.)':>24}")
    print(f"{'kernel only (shapley_values), 1 t':<34} {kernel:>9.0f} {kernel / (rows / single):>16.2f}")
    print(f"{'direct attribute, 1 thread':<34} {one_thread:>9.0f} {one_thread / (rows / single):>16.2f}")
    print(
        f"{f'direct attribute, {default_threads} threads':<34} {all_threads:>9.0f} "
        f"{all_threads / (rows / single):>16.2f}"
    )
    print(f"{'lightning x1 (1 proc, 1 thread)':<34} {rows / single:>9.0f} {1.0:>16.2f} {single_wall:>24.1f}")
    print(f"{'lightning ddp x2 (2 procs, 1 thr)':<34} {rows / ddp:>9.0f} {single / ddp:>16.2f} {ddp_wall:>24.1f}")
    print(
        f"DDP scaling efficiency on 2 processes: {single / ddp / 2:.0%} (load average after: {os.getloadavg()[0]:.1f})"
    )

    kernel_gflops = kernel * flops_per_row() / 1e9
    reference = matmul_gflops(1)
    efficiency = kernel_gflops / reference
    print(
        f"\nkernel: {kernel_gflops:.1f} GFLOP/s on 1 thread = {efficiency:.0%} of torch.matmul's "
        f"{reference:.1f} GFLOP/s on its GEMM shapes (measured here)"
    )
    print("PROJECTION (not measured) per GPU, rows/s = assumed GEMM rate x that fraction / (4 |D| k n);")
    print("  torch runs float32 GEMMs in FP32 unless torch.backends.cuda.matmul.allow_tf32 = True:")
    for label, tflops in (
        ("H200 FP32, CUDA cores, dense", GPU_FP32_TFLOPS),
        ("H200 TF32, tensor cores, dense", GPU_TF32_TFLOPS),
    ):
        rate = tflops * 1e12 * min(efficiency, 1.0) / flops_per_row()
        print(
            f"  {label:<32} {tflops:>6.0f} TFLOP/s peak -> {rate:>12,.0f} rows/s "
            f"(at 100% of peak: {tflops * 1e12 / flops_per_row():,.0f})"
        )


def main_cuda(rows: int, batch_size: int, repeat: int) -> None:
    """The peers on one GPU, and the kernel's measured GFLOP/s against the GPU's matmul and the projection."""
    n, k, b = PROBLEM["n"], PROBLEM["k"], PROBLEM["background"]
    print(
        f"FourierSHAP (Eq. 5) on {rows} rows: n={n}, k={k}, |D|={b}, float32, batch {batch_size}, on "
        f"{torch.cuda.get_device_name()}; TF32 matmul {'on' if torch.backends.cuda.matmul.allow_tf32 else 'off'}; "
        f"best of {repeat}"
    )
    kernel = direct_rate(rows, 1, repeat, batch_size, kernel_only=True, device="cuda")
    direct = direct_rate(rows, 1, repeat, batch_size, device="cuda")
    single, single_wall = best_launch(1, rows, batch_size, repeat, device="cuda")
    print(f"{'run':<34} {'rows/s':>11} {'vs lightning x1':>16} {'wall s (start-up incl.)':>24}")
    print(f"{'kernel only (shapley_values)':<34} {kernel:>11.0f} {kernel / (rows / single):>16.2f}")
    print(f"{'direct attribute':<34} {direct:>11.0f} {direct / (rows / single):>16.2f}")
    print(f"{'lightning x1 (1 GPU)':<34} {rows / single:>11.0f} {1.0:>16.2f} {single_wall:>24.1f}")
    kernel_gflops = kernel * flops_per_row() / 1e9
    reference = matmul_gflops(1, device="cuda")
    print(
        f"\nkernel: {kernel_gflops:,.0f} GFLOP/s = {kernel_gflops / reference:.1%} of this GPU's torch.matmul "
        f"{reference:,.0f} GFLOP/s on its GEMM shapes (both measured here); FP32 datasheet peak "
        f"{GPU_FP32_TFLOPS:.0f} TFLOP/s"
    )


if __name__ == "__main__":
    main()

"""benchmarks/gpu_check.py in its no-CUDA mode: it says so, runs the CPU quick modes and prints the table.

The test runs the three quickest benchmarks through the script (all of them take several minutes on two cores:
``python benchmarks/gpu_check.py`` is the full check); each step goes through the same code path."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.slow  # runs benchmarks/gpu_check.py's CPU quick modes in subprocesses

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a CUDA machine run the script itself")
def test_gpu_check_without_cuda_runs_the_cpu_quick_modes():
    env = {**os.environ, "TORCHXPLAIN_PROGRESS": "0", "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "benchmarks/gpu_check.py", "--timeout", "600", "--only", "fourier_values,trees,idx"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "no CUDA device here: running the CPU quick modes instead" in out
    for name in ("pytest -m gpu", "fourier_values --quick --device cpu", "trees --quick --device cpu", "idx --quick"):
        assert re.search(re.escape(name) + r".*\bok\b", out), out
    kernel = float(re.search(r"Eq. 5 kernel GFLOP/s\s+([0-9.]+)", out).group(1))
    matmul = float(re.search(r"torch.matmul GFLOP/s \(same shapes\)\s+([0-9.]+)", out).group(1))
    assert 0 < kernel and 0 < matmul
    assert float(re.search(r"IDX Child MD\+SD\+CF seconds \(1,080 inputs\)\s+([0-9.]+)", out).group(1)) > 0

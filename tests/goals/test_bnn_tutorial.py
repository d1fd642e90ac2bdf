"""The Bayesian last-layer tutorial runs end to end in its quick mode and finds Friedman's five inputs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TUTORIAL = Path(__file__).resolve().parents[2] / "tutorials" / "goals_bnn.py"


def test_goals_bnn_tutorial_runs_in_quick_mode(tmp_path):
    env = dict(
        os.environ,
        TORCHXPLAIN_QUICK="1",
        TORCHXPLAIN_OUT=str(tmp_path),
        TORCHXPLAIN_PROGRESS="0",
        MPLBACKEND="Agg",
        OMP_NUM_THREADS="1",
    )
    cmd = [sys.executable, str(TUTORIAL)]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "top five by mean |local score| are the five relevant inputs: True" in run.stdout, run.stdout
    assert (tmp_path / "goals_bnn_importance.png").stat().st_size > 0

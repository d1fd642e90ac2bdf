"""Every tutorial runs end to end in quick mode (TORCHXPLAIN_QUICK=1), each in a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ALL = sorted((Path(__file__).resolve().parents[1] / "tutorials").glob("*.py"))
# goals_bnn runs in tests/goals/test_bnn_tutorial.py, which also checks what it finds
TUTORIALS = [p for p in ALL if p.stem != "goals_bnn"]


def test_there_are_tutorials_for_every_family():
    names = {p.stem for p in ALL}
    assert {
        "fourier_landscapes",
        "trees_continuous",
        "goals_gp",
        "goals_bnn",
        "idx_classifiers",
        "lightning_training",
        "captum_interop",
    } <= names


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_runs_in_quick_mode(path, tmp_path):
    env = {**os.environ, "TORCHXPLAIN_QUICK": "1", "TORCHXPLAIN_PROGRESS": "0", "MPLBACKEND": "Agg"}
    result = subprocess.run(
        [sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]

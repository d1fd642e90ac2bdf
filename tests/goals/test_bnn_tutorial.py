"""The Bayesian last-layer tutorial, run in its quick mode in this process, is checked on what it computes:
Friedman's five relevant inputs ranked first, local scores equal to shifted forward passes of the network
under the head's posterior mean, intervals drawn on the saved figure, RATE a distribution."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.slow  # runs the BNN tutorial

TUTORIAL = Path(__file__).resolve().parents[2] / "tutorials" / "goals_bnn.py"


def test_goals_bnn_tutorial_finds_the_relevant_inputs(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHXPLAIN_QUICK", "1")
    monkeypatch.setenv("TORCHXPLAIN_OUT", str(tmp_path))
    monkeypatch.setenv("TORCHXPLAIN_PROGRESS", "0")
    ns = runpy.run_path(str(TUTORIAL), run_name="tutorial")
    relevant = {0, 1, 2, 3, 4}  # Friedman #1 uses only the first five of its ten inputs
    assert {int(j) for j in ns["imp_abs"].ranking[:5]} == relevant
    assert {int(j) for j in ns["imp_user"].ranking[:5]} == relevant
    # Local scores = (h(x) - h(x + e_j)) m for the posterior mean m of the head (the bias cancels).
    bnn, x = ns["bnn"], ns["X_test"][:5]
    m = bnn.head_posterior()[0]
    with torch.no_grad():
        h = bnn.features(x)
        direct = torch.stack([(h - bnn.features(x + torch.eye(10)[j])) @ m for j in range(10)], 1)
    torch.testing.assert_close(ns["local"], direct, atol=1e-5, rtol=1e-5)
    assert bool((ns["local_sd"] > 0).all())
    display = ns["display"]
    assert display.intervals_drawn_ and "95% interval" in display.ax_.get_xlabel()
    assert (tmp_path / "goals_bnn_importance.png").stat().st_size > 0
    rate = ns["rate"]
    assert bool((rate >= 0).all()) and abs(float(rate.sum()) - 1.0) < 1e-5

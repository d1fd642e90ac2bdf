"""The GOALS benchmark's helpers: ML-II fit, the explicit-B^(j) peer loop, the mice study skipping cleanly."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import gpytorch
import torch
from gp_refs import explicit_b_scores, make_gp

from torchxplain import Goals

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "goals.py"
_spec = importlib.util.spec_from_file_location("goals_benchmark", _PATH)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_fit_gp_is_a_stationary_point_of_gpytorchs_marginal_likelihood():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(120, 5, generator=g, dtype=torch.float64)
    y = torch.sin(2 * x[:, 0]) + 0.3 * torch.randn(120, generator=g, dtype=torch.float64)
    model = bench.fit_gp(x, y)
    model.train()
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(model.likelihood, model)
    loss = -mll(model(x), y)
    raw = [model.covar_module.raw_outputscale, model.likelihood.noise_covar.raw_noise]
    grads = torch.autograd.grad(loss, raw)
    assert max(float(gr.abs().max()) for gr in grads) < 1e-4


def test_peer_loop_is_the_explicit_b_algorithm():
    model = make_gp(n=20, j=4, ard=False)
    goals = Goals(model)
    theta = 1.0 / (2.0 * float(model.covar_module.base_kernel.lengthscale.detach()) ** 2)
    loop = bench.explicit_b_loop(goals.backend.gram, goals.backend.alpha, model.train_inputs[0], theta, 1.0, range(4))
    # The peer ignores the outputscale inside the exponent only; K and alpha carry it.
    torch.testing.assert_close(loop, torch.from_numpy(explicit_b_scores(model, 1.0)), atol=1e-10, rtol=0)


def test_mice_study_skips_cleanly_without_data(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(bench, "MICE", tmp_path / "absent")
    bench.mice_study(tmp_path / "out")
    assert "skipped" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()

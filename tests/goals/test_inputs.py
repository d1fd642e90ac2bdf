"""GOALS on inputs as users pass them (numpy, DataFrames with their column names) and clear early
errors that name the argument, the expected and received value, and the fix."""

from __future__ import annotations

import gpytorch
import numpy as np
import pandas as pd
import pytest
import torch
from gp_refs import gpytorch_shift_scores, make_gp
from test_bnn import make_data, make_net

from torchxplain import Goals
from torchxplain.data import simulate_goals_design
from torchxplain.goals import BNNBackend, LastLayerBNN, rate


def test_numpy_and_dataframe_inputs_equal_tensor_inputs():
    model = make_gp(n=15, j=4)
    g = Goals(model, feature_names=["a", "b", "c", "d"])
    xq = torch.randn(5, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    ref = gpytorch_shift_scores(model, xq, 1.0)
    frame = pd.DataFrame(xq.numpy(), columns=["a", "b", "c", "d"])
    for given in (xq.numpy(), xq.tolist(), frame):
        torch.testing.assert_close(g.attribute(given), ref, atol=1e-8, rtol=0)
    torch.testing.assert_close(g.local_variance(frame), g.local_variance(xq), atol=0, rtol=0)
    with pytest.raises(ValueError, match=r"differ from those seen at fit time.*missing \['d'\]"):
        g.attribute(frame.rename(columns={"d": "e"}))
    with pytest.raises(ValueError, match="another order"):
        g.attribute(frame[["b", "a", "c", "d"]])
    with pytest.raises(TypeError, match="column 'd'.*not numeric"):
        g.attribute(frame.assign(d=["u", "v", "w", "x", "y"]))


def test_dataframe_column_names_flow_into_global_importance_and_plots():
    x, y = make_data(n=60)
    frame = pd.DataFrame(x.numpy(), columns=["dose", "age", "bmi", "sex"])
    bnn = LastLayerBNN.from_sequential(make_net()).fit(frame, y, epochs=5, batch_size=30, show_progress=False)
    assert bnn.feature_names == ("dose", "age", "bmi", "sex")
    g = Goals(bnn, xi=0.5)
    imp = g.global_importance(reduction="abs_mean")
    assert set(imp.to_frame()["feature"]) == {"dose", "age", "bmi", "sex"}
    display = imp.plot()
    assert {t.get_text() for t in display.ax_.get_yticklabels()} == {"dose", "age", "bmi", "sex"}
    torch.testing.assert_close(g.attribute(frame), g.attribute(x), atol=0, rtol=0)
    with pytest.raises(ValueError, match="differ from those seen at fit time"):
        g.attribute(frame.rename(columns={"sex": "gender"}))
    with pytest.raises(ValueError, match="differ from those seen at fit time"):
        bnn.predict(frame.rename(columns={"sex": "gender"}))


@pytest.mark.parametrize("name", ["lengthscale", "outputscale", "noise", "constant"])
def test_nan_hyperparameters_name_the_hyperparameter(name):
    model = make_gp(n=10)
    raw = {
        "lengthscale": model.covar_module.base_kernel.raw_lengthscale,
        "outputscale": model.covar_module.raw_outputscale,
        "noise": model.likelihood.noise_covar.raw_noise,
        "constant": model.mean_module.constant,
    }[name]
    with torch.no_grad():
        raw.view(-1)[0] = float("nan")
    with pytest.raises(ValueError, match=f"hyperparameter .*{name}.* NaN.*refit"):
        Goals(model)


def test_bad_numbers_are_refused_early():
    model = make_gp(n=10)
    for jitter in (-1e-6, float("nan"), float("inf")):
        with pytest.raises(ValueError, match=r"jitter must be a finite number >= 0.*got"):
            Goals(model, jitter=jitter)
    with pytest.raises(TypeError, match=r"jitter must be a finite number >= 0, got bool"):
        Goals(model, jitter=True)
    with pytest.raises(TypeError, match="xi must be a nonzero number.*bool"):
        Goals(model, xi=True)
    with pytest.raises(ValueError, match="xi must be finite"):
        Goals(model, xi=float("inf"))
    with pytest.raises(ValueError, match="max_memory must be at least 1 MiB"):
        Goals(model, max_memory=10)
    g = Goals(model)
    with pytest.raises(ValueError, match="reduction must be one of"):
        g.global_importance(reduction="median")
    with pytest.raises(TypeError, match="covariance_features must be a sequence of feature indices"):
        g.global_importance(covariance_features=[0.5, 1.0])
    with pytest.raises(ValueError, match="must not repeat"):
        g.global_importance(covariance_features=[1, 1])
    with pytest.raises(ValueError, match="empty"):
        g.attribute(torch.zeros(0, 4, dtype=torch.float64))
    with pytest.raises(ValueError, match="top must be >= 1"):
        g.global_importance().plot(top=0)


def test_not_positive_definite_points_to_jitter_only_for_valid_hyperparameters():
    x = torch.randn(8, 2, dtype=torch.float64)
    model = make_gp(n=8, j=2)
    model.set_train_data(torch.cat([x[:4], x[:4]]), model.train_targets, strict=False)  # duplicated rows
    model.likelihood.noise_covar.register_constraint("raw_noise", gpytorch.constraints.GreaterThan(0.0))
    with torch.no_grad():
        model.likelihood.noise_covar.raw_noise.fill_(-1e4)  # noise ~ 0
    with pytest.raises(ValueError, match="not positive definite.*jitter=1e-6"):
        Goals(model)
    Goals(model, jitter=1e-6)  # the advice works


def test_bnn_fit_options_are_checked():
    x, y = make_data(n=40)
    bnn = LastLayerBNN.from_sequential(make_net())
    bad = [
        (dict(num_particles=0), ValueError, "num_particles must be >= 1"),
        (dict(lr=float("inf")), ValueError, "lr must be a finite number > 0"),
        (dict(lr=0.0), ValueError, "lr must be a finite number > 0"),
        (dict(epochs=-3), ValueError, "epochs must be >= 1"),
        (dict(batch_size=0), ValueError, "batch_size must be >= 1"),
        (dict(seed=1.7), TypeError, "seed must be an int"),
    ]
    for options, error, message in bad:
        with pytest.raises(error, match=message):
            bnn.fit(x, y, show_progress=False, **options)
    for kwargs, message in (
        (dict(prior_scale=float("inf")), "prior_scale must be a finite number > 0"),
        (dict(init_scale=-1.0), "init_scale must be a finite number > 0"),
        (dict(bias_prior_scale=0.0), "bias_prior_scale must be a finite number > 0"),
    ):
        with pytest.raises(ValueError, match=message):
            LastLayerBNN.from_sequential(make_net(), **kwargs)


def test_nan_network_outputs_are_reported_with_the_row():
    x, y = make_data(n=40)
    bnn = LastLayerBNN.from_sequential(make_net()).fit(x, y, epochs=3, batch_size=20, show_progress=False)
    backend = BNNBackend.from_model(bnn, xi=0.5)

    class Poisoned(torch.nn.Module):
        """The fitted extractor, but NaN for rows whose first input exceeds 1."""

        def forward(self, z):
            h = bnn.features(z)
            return torch.where(z[:, :1] > 1.0, torch.full_like(h, float("nan")), h)

    poisoned = BNNBackend(Poisoned(), backend.loc, backend.cov, x[x[:, 0] <= 1.0], xi=0.5)
    q = torch.zeros(3, 4, dtype=torch.float64)
    q[2, 0] = 5.0
    with pytest.raises(ValueError, match="NaN or infinite at input row 2"):
        poisoned.local_scores(q)


def test_simulation_and_rate_refuse_bad_sizes():
    for kwargs, message in (
        (dict(n=-5), "n must be"),
        (dict(n_features=0), "n_features must be"),
        (dict(n_causal=30, n_features=10), "n_causal"),
        (dict(v2=1.5), "v2"),
    ):
        with pytest.raises(ValueError, match=message):
            simulate_goals_design(**{"n": 50, "n_features": 10, "n_causal": 3, **kwargs})
    d = simulate_goals_design(n=40, n_features=6, n_causal=2, n_pcs=3, seed=0)
    f_mean, f_cov = d.y.double(), torch.eye(40, dtype=torch.float64)
    got, _ = rate(d.x.numpy(), f_mean.numpy(), f_cov.numpy())
    torch.testing.assert_close(got, rate(d.x, f_mean, f_cov)[0].to(got.dtype))
    with pytest.raises(ValueError, match="jitter must be a finite number >= 0"):
        rate(d.x, f_mean, f_cov, jitter=-1.0)
    with pytest.raises(ValueError, match="projection must be one of"):
        rate(d.x, f_mean, f_cov, projection="ols")
    assert np.isclose(float(got.sum()), 1.0)

"""GOALS on GPyTorch ExactGPs against independent float64 references (explicit B^(j), GPyTorch's predictive
mean at shifted inputs, brute-force joint conditioning, the linear-kernel identity)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gp_refs import explicit_b_scores, gpytorch_shift_scores, joint_conditioning, make_gp

from torchxplain import Goals

XIS = {"scalar": 1.0, "negative": -0.7, "per_feature": torch.tensor([1.0, -0.5, 0.7, 2.0])}
CONFIGS = [
    dict(ard=True, outputscale=1.7, const=0.3),
    dict(ard=False, outputscale=0.6, const=-1.2),
]


@pytest.mark.parametrize("xi", list(XIS.values()), ids=list(XIS))
@pytest.mark.parametrize("cfg", CONFIGS, ids=["ard", "iso"])
def test_training_scores_match_explicit_b(xi, cfg):
    model = make_gp(**cfg)
    got = Goals(model, xi=xi).attribute(model.train_inputs[0])
    ref = explicit_b_scores(model, xi.numpy() if isinstance(xi, torch.Tensor) else xi)
    np.testing.assert_allclose(got.numpy(), ref, atol=1e-8, rtol=0)


@pytest.mark.parametrize("xi", list(XIS.values()), ids=list(XIS))
@pytest.mark.parametrize("cfg", CONFIGS, ids=["ard", "iso"])
def test_query_scores_match_gpytorch_predictive_mean(xi, cfg):
    model = make_gp(**cfg)
    xq = torch.randn(7, 4, generator=torch.Generator().manual_seed(5), dtype=torch.float64) * 1.5
    got = Goals(model, xi=xi).attribute(xq)
    ref = gpytorch_shift_scores(model, xq, xi)
    torch.testing.assert_close(got, ref, atol=1e-8, rtol=0)


@pytest.mark.parametrize("xi", list(XIS.values()), ids=list(XIS))
def test_local_variances_match_joint_conditioning(xi):
    model = make_gp(n=15)
    xq = torch.randn(3, 4, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    g = Goals(model, xi=xi)
    xi_np = xi.numpy() if isinstance(xi, torch.Tensor) else xi
    mean, cov = joint_conditioning(model, xq.numpy(), xi_np)
    np.testing.assert_allclose(g.attribute(xq).numpy(), mean, atol=1e-8, rtol=0)
    var_ref = np.diag(cov).reshape(4, 3).T
    np.testing.assert_allclose(g.local_variance(xq).numpy(), var_ref, atol=1e-10, rtol=0)


@pytest.mark.parametrize("xi", list(XIS.values()), ids=list(XIS))
@pytest.mark.parametrize("cfg", CONFIGS, ids=["ard", "iso"])
def test_global_moments_match_joint_conditioning(xi, cfg):
    model = make_gp(n=15, **cfg)
    x = model.train_inputs[0]
    n, j = x.shape
    xi_np = xi.numpy() if isinstance(xi, torch.Tensor) else xi
    mean, cov = joint_conditioning(model, x.numpy(), xi_np)
    avg = np.kron(np.eye(j), np.ones((1, n)) / n)  # (J, J*N): feature-major means
    ref_mean, ref_cov = mean.mean(0), avg @ cov @ avg.T
    imp = Goals(model, xi=xi).global_importance(covariance_features=[0, 2, 3])
    np.testing.assert_allclose(imp.mean.numpy(), ref_mean, atol=1e-8, rtol=0)
    np.testing.assert_allclose(imp.variance.numpy(), np.diag(ref_cov), atol=1e-10, rtol=0)
    np.testing.assert_allclose(imp.covariance.numpy(), ref_cov[np.ix_([0, 2, 3], [0, 2, 3])], atol=1e-10, rtol=0)


def test_training_variances_and_local_variance_on_training_rows():
    model = make_gp(n=12)
    x = model.train_inputs[0]
    _, cov = joint_conditioning(model, x.numpy(), 1.0)
    var = Goals(model).local_variance(x)
    np.testing.assert_allclose(var.numpy(), np.diag(cov).reshape(4, 12).T, atol=1e-10, rtol=0)


def test_offset_features_stay_finite_and_exact():
    base = make_gp(n=20)
    moved = make_gp(n=20, offset=1e4)
    xq = torch.randn(5, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    got = Goals(moved).attribute(xq + 1e4)
    assert bool(torch.isfinite(got).all())
    torch.testing.assert_close(got, gpytorch_shift_scores(base, xq, 1.0), atol=1e-8, rtol=0)
    g = Goals(moved).global_importance()
    ref = Goals(base).global_importance()
    torch.testing.assert_close(g.mean, ref.mean, atol=1e-8, rtol=0)
    torch.testing.assert_close(g.variance, ref.variance, atol=1e-10, rtol=0)


def test_guard_tripping_column_falls_back_exactly_with_warning():
    model = make_gp(n=20)
    xi = torch.tensor([1.0, 100.0, 0.5, 1.0])
    xq = torch.randn(4, 4, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    g = Goals(model, xi=xi)
    with pytest.warns(RuntimeWarning, match=r"column\(s\) \[1\]"):
        got = g.attribute(xq)
    torch.testing.assert_close(got, gpytorch_shift_scores(model, xq, xi), atol=1e-8, rtol=0)
    x = model.train_inputs[0]
    _, cov = joint_conditioning(model, x.numpy(), xi.numpy())
    with pytest.warns(RuntimeWarning):
        imp = g.global_importance()
    avg = np.kron(np.eye(4), np.ones((1, 20)) / 20)
    np.testing.assert_allclose(imp.variance.numpy(), np.diag(avg @ cov @ avg.T), atol=1e-10, rtol=0)


def test_linear_kernel_identity_delta_is_minus_xi_beta():
    model = make_gp(n=30, j=5, kernel="linear", outputscale=1.0, const=0.0)
    x, y = model.train_inputs[0], model.train_targets
    v = 1.0 / 5
    sigma2 = float(model.likelihood.noise.detach())
    # Primal Bayesian linear regression beta ~ N(0, v I): posterior mean and covariance, independently.
    prec = x.T @ x / sigma2 + torch.eye(5, dtype=torch.float64) / v
    beta_cov = torch.linalg.inv(prec)
    beta = beta_cov @ x.T @ y / sigma2
    xi = torch.tensor([1.0, -2.0, 0.5, 1.0, 3.0], dtype=torch.float64)
    g = Goals(model, xi=xi)
    xq = torch.randn(6, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    torch.testing.assert_close(g.attribute(xq), (-xi * beta).expand(6, 5), atol=1e-8, rtol=0)
    torch.testing.assert_close(g.local_variance(xq), (xi**2 * beta_cov.diagonal()).expand(6, 5), atol=1e-10, rtol=0)
    imp = g.global_importance(covariance_features=[0, 3])
    torch.testing.assert_close(imp.mean, -xi * beta, atol=1e-8, rtol=0)
    torch.testing.assert_close(imp.variance, xi**2 * beta_cov.diagonal(), atol=1e-10, rtol=0)
    sel = torch.tensor([0, 3])
    torch.testing.assert_close(
        imp.covariance, torch.outer(xi[sel], xi[sel]) * beta_cov[sel][:, sel], atol=1e-10, rtol=0
    )


def test_generic_kernel_path_matches_gpytorch_and_conditioning():
    model = make_gp(n=12, j=3, kernel="matern")
    xq = torch.randn(4, 3, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    xi = torch.tensor([1.0, -0.5, 0.8])
    g = Goals(model, xi=xi)
    torch.testing.assert_close(g.attribute(xq), gpytorch_shift_scores(model, xq, xi), atol=1e-8, rtol=0)
    # Brute-force conditioning with GPyTorch's own Matern kernel on the stacked points.
    x = model.train_inputs[0]
    n = x.shape[0]
    z = torch.cat([x] + [x + xi[f] * torch.eye(3, dtype=torch.float64)[f] for f in range(3)])
    with torch.no_grad():
        kzz = model.covar_module(z, z).to_dense()
        kzx = model.covar_module(z, x).to_dense()
        a = model.covar_module(x, x).to_dense() + float(model.likelihood.noise) * torch.eye(n, dtype=torch.float64)
    cov = kzz - kzx @ torch.linalg.solve(a, kzx.T)
    t = torch.zeros(3, 4 * n, dtype=torch.float64)
    for f in range(3):
        t[f, :n] = 1.0 / n
        t[f, (f + 1) * n : (f + 2) * n] = -1.0 / n
    ref_cov = t @ cov @ t.T
    imp = g.global_importance(covariance_features=[0, 2])
    torch.testing.assert_close(imp.variance, ref_cov.diagonal(), atol=1e-10, rtol=0)
    torch.testing.assert_close(imp.covariance, ref_cov[[0, 2]][:, [0, 2]], atol=1e-10, rtol=0)
    sel = torch.arange(n)
    local = torch.stack(
        [
            (cov[sel, sel] + cov[(f + 1) * n + sel, (f + 1) * n + sel] - 2 * cov[sel, (f + 1) * n + sel])
            for f in range(3)
        ],
        1,
    )
    torch.testing.assert_close(g.local_variance(x), local, atol=1e-10, rtol=0)


def test_float32_matches_float64():
    m64 = make_gp(n=40, j=6)
    m32 = make_gp(n=40, j=6, dtype=torch.float32)
    xq = torch.randn(9, 6, generator=torch.Generator().manual_seed(8))
    a64 = Goals(m64).attribute(xq.double())
    a32 = Goals(m32).attribute(xq)
    assert a32.dtype == torch.float32
    torch.testing.assert_close(a32.double(), a64, atol=2e-5, rtol=0)


@pytest.mark.slow
def test_n1200_fitted_model_uses_exact_solve():
    import gpytorch

    model = make_gp(n=1200, j=3, noise=0.01, seed=11)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(model.likelihood, model)
    with gpytorch.settings.max_cholesky_size(10**9):
        for _ in range(3):
            opt.zero_grad()
            (-mll(model(*model.train_inputs), model.train_targets)).backward()
            opt.step()
    xq = torch.randn(20, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    got = Goals(model).attribute(xq)
    assert model.training  # the user's mode is left alone
    torch.testing.assert_close(got, gpytorch_shift_scores(model, xq, 1.0), atol=1e-8, rtol=0)
    train_got = Goals(model).global_importance().mean
    np.testing.assert_allclose(train_got.numpy(), explicit_b_scores(model, 1.0).mean(0), atol=1e-8, rtol=0)


def _gpytorch_delta_variance(model, xq, xi):
    """Local variances from GPyTorch's own joint predictive covariance of [f(x_q), f(x_q + xi_j e_j)]."""
    import gpytorch

    q, j = xq.shape
    xi = torch.as_tensor(xi, dtype=torch.float64).expand(j)
    model.eval()
    out = torch.empty(q, j, dtype=torch.float64)
    with torch.no_grad(), gpytorch.settings.max_cholesky_size(10**9), gpytorch.settings.fast_pred_var(False):
        for f in range(j):
            cov = model(torch.cat([xq, xq + xi[f] * torch.eye(j, dtype=torch.float64)[f]])).covariance_matrix
            idx = torch.arange(q)
            out[:, f] = cov[idx, idx] + cov[q + idx, q + idx] - 2 * cov[idx, q + idx]
    model.train()
    return out


def _variant(name):
    import gpytorch

    model = make_gp(n=18, j=3)
    x, y = model.train_inputs[0], model.train_targets
    if name == "linear_mean":
        model.mean_module = gpytorch.means.LinearMean(3).double()
        model.mean_module.weights.data = torch.tensor([[0.5], [-1.0], [0.25]], dtype=torch.float64)
        model.mean_module.bias.data.fill_(0.2)
    elif name == "zero_mean":
        model.mean_module = gpytorch.means.ZeroMean()
    elif name == "fixed_noise":
        noise = torch.linspace(0.02, 0.2, 18, dtype=torch.float64)
        lik = gpytorch.likelihoods.FixedNoiseGaussianLikelihood(noise=noise).double()
        new = type(model)(x, y, lik, model.covar_module, model.mean_module)
        model = new
    elif name == "unscaled_rbf":
        model.covar_module = gpytorch.kernels.RBFKernel(ard_num_dims=3).double()
        model.covar_module.lengthscale = torch.tensor([0.7, 1.1, 2.0], dtype=torch.float64)
    elif name == "active_dims":
        k = gpytorch.kernels.RBFKernel(active_dims=torch.tensor([0, 2])).double()
        k.lengthscale = 0.9
        model.covar_module = gpytorch.kernels.ScaleKernel(k).double()
    return model


@pytest.mark.parametrize("name", ["linear_mean", "zero_mean", "fixed_noise", "unscaled_rbf", "active_dims"])
def test_model_variants_match_gpytorch_posterior(name):
    model = _variant(name)
    xi = torch.tensor([0.9, -0.6, 1.4], dtype=torch.float64)
    xq = torch.randn(4, 3, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    g = Goals(model, xi=xi)
    torch.testing.assert_close(g.attribute(xq), gpytorch_shift_scores(model, xq, xi), atol=1e-8, rtol=0)
    torch.testing.assert_close(g.local_variance(xq), _gpytorch_delta_variance(model, xq, xi), atol=1e-10, rtol=0)
    if name == "active_dims":
        assert torch.allclose(g.attribute(xq)[:, 1], torch.zeros(4, dtype=torch.float64), atol=1e-12)


def _gpytorch_group_scores(model, xq, xi, groups):
    """f(x) - f(x + sum_{l in g} xi_l e_l) from GPyTorch's predictive mean, expanded to features."""
    import gpytorch

    j = xq.shape[1]
    xi = torch.as_tensor(xi, dtype=torch.float64).expand(j)
    model.eval()
    out = torch.empty(xq.shape[0], j, dtype=torch.float64)
    with torch.no_grad(), gpytorch.settings.max_cholesky_size(10**9):
        f0 = model(xq).mean
        for g in groups.unique():
            members = groups == g
            out[:, members] = (f0 - model(xq + xi * members).mean)[:, None]
    model.train()
    return out


@pytest.mark.parametrize("kind", ["rbf", "linear", "matern", "linear_mean"])
def test_feature_mask_shifts_groups_jointly(kind):
    model = _variant("linear_mean") if kind == "linear_mean" else make_gp(n=18, j=4, kernel=kind)
    j = model.train_inputs[0].shape[1]
    xi = torch.tensor([0.9, -0.6, 1.4, 0.5][:j], dtype=torch.float64)
    groups = torch.tensor([2, 0, 2, 5][:j])
    xq = torch.randn(5, j, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    got = Goals(model, xi=xi).attribute(xq, feature_mask=groups[None])
    torch.testing.assert_close(got, _gpytorch_group_scores(model, xq, xi, groups), atol=1e-8, rtol=0)


def test_singleton_feature_mask_equals_per_feature_scores_and_guard_applies():
    model = make_gp(n=18)
    xq = torch.randn(5, 4, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    g = Goals(model, xi=torch.tensor([1.0, 100.0, 0.5, 1.0]))
    with pytest.warns(RuntimeWarning):
        per_feature = g.attribute(xq)
    with pytest.warns(RuntimeWarning, match=r"group\(s\) \[1\]"):
        grouped = g.attribute(xq, feature_mask=torch.arange(4))
    torch.testing.assert_close(grouped, per_feature, atol=1e-10, rtol=0)

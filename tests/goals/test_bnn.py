"""GOALS on a Bayesian last layer: closed forms against Monte Carlo over the guide, the exact conjugate GP
equivalence, the first-layer shortcut, module-local Pyro parameters and bad input."""

from __future__ import annotations

import copy

import gpytorch
import pyro
import pyro.distributions as dist
import pytest
import torch
from pyro.infer import Predictive
from pyro.infer.autoguide import AutoDiagonalNormal, AutoMultivariateNormal, AutoNormal
from pyro.nn import PyroModule, PyroSample
from torch import nn

from torchxplain.goals import BNNBackend, GPBackend, LastLayerBNN, PyroHead
from torchxplain.testing import tiny_memory_budget


def make_data(n=120, j=4, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, j, generator=g, dtype=dtype)
    y = x[:, 0] + torch.sin(2 * x[:, 1]) + 0.5 * x[:, 2] * x[:, -1] + 0.1 * torch.randn(n, generator=g, dtype=dtype)
    return x, y


def make_net(j=4, hidden=10, width=6, seed=1, dtype=torch.float64):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(j, hidden), nn.Tanh(), nn.Linear(hidden, width), nn.Tanh(), nn.Linear(width, 1)).to(
        dtype
    )


def shifted_features(features, x, xi):
    """(J, Q, L): h(x + xi_j e_j), one explicit shifted copy of the inputs per feature."""
    out = []
    for j in range(x.shape[1]):
        xs = x.clone()
        xs[:, j] += xi[j] if torch.is_tensor(xi) and xi.ndim else xi
        out.append(features(xs))
    return torch.stack(out)


@pytest.fixture(scope="module", params=["normal", "multivariate_normal"])
def fitted(request):
    x, y = make_data()
    bnn = LastLayerBNN.from_sequential(make_net(), guide=request.param, init_scale=0.3)
    bnn.fit(x, y, epochs=60, lr=0.02, batch_size=40, seed=3, show_progress=False)
    return bnn, x, y


# ---------------------------------------------------------------- closed form vs Monte Carlo over the guide


@pytest.mark.slow
def test_global_moments_match_monte_carlo_over_the_guide(fitted):
    bnn, x, _ = fitted
    xi = 0.7
    g = BNNBackend.from_model(bnn, xi)
    imp = g.global_importance(covariance_features=[0, 1, 2, 3])
    draws = 40000
    pyro.set_rng_seed(11)
    w = Predictive(bnn, guide=bnn.guide, num_samples=draws, parallel=True, return_sites=["head.weight"])(x)
    w = w["head.weight"].reshape(draws, -1)  # (S, L)
    with torch.no_grad():
        dh = bnn.features(x)[None] - shifted_features(bnn.features, x, xi)  # (J, N, L)
        glob = (dh.mean(1) @ w.T).T  # (S, J) global scores of each draw
    mc_mean, mc_var = glob.mean(0), glob.var(0)
    se = (mc_var / draws).sqrt()
    assert bool(((mc_mean - imp.mean).abs() <= 3 * se).all()), (mc_mean - imp.mean) / se
    assert bool(((mc_var / imp.variance - 1).abs() <= 0.05).all()), mc_var / imp.variance
    mc_cov = torch.cov(glob.T)
    off = ~torch.eye(4, dtype=torch.bool)
    scale = (imp.variance[:, None] * imp.variance[None]).sqrt()
    assert bool(((mc_cov - imp.covariance)[off].abs() <= 0.05 * scale[off]).all())


def test_local_variances_match_monte_carlo_over_the_guide(fitted):
    bnn, x, _ = fitted
    g = BNNBackend.from_model(bnn, xi=1.0)
    q = x[:5] + 0.3
    draws = 40000
    pyro.set_rng_seed(12)
    w = Predictive(bnn, guide=bnn.guide, num_samples=draws, parallel=True, return_sites=["head.weight"])(x)
    w = w["head.weight"].reshape(draws, -1)
    with torch.no_grad():
        dh = bnn.features(q)[None] - shifted_features(bnn.features, q, 1.0)  # (J, Q, L)
        local = torch.einsum("jql,sl->sqj", dh, w)
    mc_mean, mc_var = local.mean(0), local.var(0)
    assert bool(((mc_mean - g.local_scores(q)).abs() <= 3 * (mc_var / draws).sqrt()).all())
    assert bool(((mc_var / g.local_variance(q) - 1).abs() <= 0.05).all())


# ------------------------------------------------ exact conjugate posterior == GP with K = H V H^T


class FeatureKernel(gpytorch.kernels.Kernel):
    """k(x, x') = v h(x)^T h(x'): the GP that a Bayesian linear head with prior N(0, v I) induces."""

    def __init__(self, features, v):
        super().__init__()
        self.features, self.v = features, v

    def forward(self, x1, x2, diag=False, **params):
        h1, h2 = self.features(x1), self.features(x2)
        return self.v * (h1 * h2).sum(-1) if diag else self.v * h1 @ h2.transpose(-1, -2)


class _GP(gpytorch.models.ExactGP):
    def __init__(self, x, y, lik, kernel):
        super().__init__(x, y, lik)
        self.mean_module, self.covar_module = gpytorch.means.ZeroMean(), kernel

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


def test_exact_conjugate_head_equals_gp_with_feature_kernel():
    x, y = make_data(n=40, j=3, seed=5)
    features = make_net(j=3, width=5)[:-1].requires_grad_(False)
    v, s2 = 0.8, 0.05
    xi = torch.tensor([1.0, -0.5, 2.0], dtype=torch.float64)
    xq = torch.randn(6, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    h = features(x)
    hs = shifted_features(features, x, xi)  # (J, N, L)
    prec = h.T @ h / s2 + torch.eye(5, dtype=torch.float64) / v
    v_post = torch.linalg.inv(prec)
    m = v_post @ h.T @ y / s2
    v_prior = torch.full((5,), v, dtype=torch.float64)

    # GP side, explicit (Eq. 11-12 with K = H V H^T, B_j = H V H_j^T, D_jl = H_j V H_l^T)
    k = v * h @ h.T
    a_inv = torch.linalg.inv(k + s2 * torch.eye(40, dtype=torch.float64))
    alpha = a_inv @ y
    b = [v * h @ hs[j].T for j in range(3)]
    gp_local = torch.stack([(k - b[j].T) @ alpha for j in range(3)], 1)
    kq = v * features(xq) @ h.T
    gp_query = torch.stack([(kq - v * shifted_features(features, xq, xi)[j] @ h.T) @ alpha for j in range(3)], 1)

    def sigma(j, k2):
        d = v * hs[j] @ hs[k2].T
        return (
            k - k @ a_inv @ k + d - b[j].T @ a_inv @ b[k2] - (b[j].T - b[j].T @ a_inv @ k + b[k2] - k @ a_inv @ b[k2])
        )

    gp_var = torch.stack([torch.diagonal(sigma(j, j)) for j in range(3)], 1)
    ones = torch.ones(40, dtype=torch.float64)
    gp_gcov = torch.stack([torch.stack([ones @ sigma(j, i) @ ones for i in range(3)]) for j in range(3)]) / 40**2

    plug_in = BNNBackend(features, m, v_prior, x, xi)  # S8: the prior as V, the conjugate posterior mean
    torch.testing.assert_close(plug_in.local_scores(x), gp_local, atol=1e-10, rtol=0)
    torch.testing.assert_close(plug_in.local_scores(xq), gp_query, atol=1e-10, rtol=0)
    exact = BNNBackend(features, m, v_post, x, xi)  # the conjugate posterior covariance
    torch.testing.assert_close(exact.local_variance(x), gp_var, atol=1e-10, rtol=0)
    imp = exact.global_importance(covariance_features=[0, 1, 2])
    torch.testing.assert_close(imp.mean, gp_local.mean(0), atol=1e-10, rtol=0)
    torch.testing.assert_close(imp.covariance, gp_gcov, atol=1e-10, rtol=0)

    # the issue-6 GP backend on the same GP (generic kernel path) agrees as well
    lik = gpytorch.likelihoods.GaussianLikelihood().double()
    lik.noise = torch.tensor(s2, dtype=torch.float64)
    gp = GPBackend(_GP(x, y, lik, FeatureKernel(features, v)), xi=xi)
    torch.testing.assert_close(gp.local_scores(xq), plug_in.local_scores(xq), atol=1e-10, rtol=0)
    torch.testing.assert_close(gp.local_variance(xq), exact.local_variance(xq), atol=1e-10, rtol=0)
    gimp = gp.global_importance()
    torch.testing.assert_close(gimp.variance, imp.variance, atol=1e-10, rtol=0)


# ---------------------------------------------------------------- shortcut, chunking, direct evaluation


def test_shortcut_and_plain_forward_give_the_same_scores():
    x, _ = make_data(n=30, j=5)
    features = make_net(j=5, hidden=7, width=4)[:-1]
    g = torch.Generator().manual_seed(4)
    loc, cov = (
        torch.randn(4, generator=g, dtype=torch.float64),
        torch.rand(4, generator=g, dtype=torch.float64),
    )
    xi = torch.linspace(-1.0, 2.0, 5, dtype=torch.float64)
    fast = BNNBackend(features, loc, cov, x, xi)
    plain = BNNBackend(features, loc, cov, x, xi, shortcut=False)
    assert fast.fmap.uses_shortcut and not plain.fmap.uses_shortcut
    torch.testing.assert_close(fast.local_scores(x), plain.local_scores(x), atol=1e-12, rtol=0)
    torch.testing.assert_close(fast.local_variance(x), plain.local_variance(x), atol=1e-12, rtol=0)
    with tiny_memory_budget(256):  # many small chunks
        tiny = BNNBackend(features, loc, cov, x, xi)
        tiny_scores, tiny_variance = tiny.local_scores(x), tiny.local_variance(x)
    torch.testing.assert_close(fast.local_scores(x), tiny_scores, atol=1e-12, rtol=0)
    torch.testing.assert_close(fast.local_variance(x), tiny_variance, atol=1e-12, rtol=0)
    with torch.no_grad():
        direct = (features(x)[None] - shifted_features(features, x, xi)) @ loc  # (J, N)
    torch.testing.assert_close(fast.local_scores(x), direct.T, atol=1e-12, rtol=0)
    torch.testing.assert_close(fast.global_importance("mean_abs").score, direct.abs().mean(1), atol=1e-12, rtol=0)


def test_scores_are_differences_of_the_posterior_predictive_mean(fitted):
    bnn, x, _ = fitted
    g = BNNBackend.from_model(bnn, xi=0.5)
    q = x[:7]
    direct = torch.stack([bnn.predict(q) - bnn.predict(q + 0.5 * torch.eye(4, dtype=q.dtype)[j]) for j in range(4)], 1)
    torch.testing.assert_close(g.local_scores(q), direct, atol=1e-10, rtol=0)
    torch.testing.assert_close(g.posterior_mean(q), bnn.predict(q), atol=1e-12, rtol=0)


def test_predict_std_matches_guide_draws(fitted):
    bnn, x, _ = fitted
    pyro.set_rng_seed(5)
    f = Predictive(bnn, guide=bnn.guide, num_samples=20000, parallel=True, return_sites=["_RETURN"])(x[:6])["_RETURN"]
    mean, std = bnn.predict(x[:6], return_std=True)
    assert bool(((f.mean(0) - mean).abs() <= 3 * std / 20000**0.5).all())
    torch.testing.assert_close(f.std(0), std, rtol=0.03, atol=0)


# ------------------------------------------------ Pyro plumbing: fitting, seeding, param store


def test_fit_is_seeded_and_leaves_the_global_param_store_alone():
    x, y = make_data(n=50)
    pyro.clear_param_store()
    pyro.param("user_sentinel", torch.ones(2))
    fits = []
    for _ in range(2):
        bnn = LastLayerBNN.from_sequential(make_net())
        bnn.fit(x, y, epochs=5, batch_size=16, seed=7, show_progress=False)
        fits.append(bnn)
    assert list(pyro.get_param_store().keys()) == ["user_sentinel"]
    assert fits[0].losses == fits[1].losses
    torch.testing.assert_close(fits[0].head_posterior()[0], fits[1].head_posterior()[0], atol=0, rtol=0)
    # two models with the same site names do not share parameters
    assert fits[0].guide.locs.head.weight is not fits[1].guide.locs.head.weight
    pyro.clear_param_store()


@pytest.mark.slow
def test_fit_learns_a_regression_and_keeps_features_fixed_by_default():
    x, y = make_data(n=150)
    net = make_net()
    before = copy.deepcopy(net[0].weight)
    bnn = LastLayerBNN(net[:-1], 6, prior_scale=3.0).fit(x, y, epochs=40, lr=0.05, batch_size=None, show_progress=False)
    torch.testing.assert_close(net[0].weight, before, atol=0, rtol=0)
    assert bnn.losses[-1] < bnn.losses[0]
    joint = LastLayerBNN(make_net()[:-1], 6).fit(
        x, y, epochs=120, lr=0.03, batch_size=None, train_features=True, show_progress=False
    )
    resid = ((joint.predict(x) - y) ** 2).mean() / y.var()
    assert float(resid) < 0.2  # the jointly trained network explains most of the variance
    assert float(bnn.sigma.detach()) > 0


@pytest.mark.parametrize("likelihood,k", [("bernoulli", 1), ("categorical", 3)])
def test_classification_scores_are_on_the_logits(likelihood, k):
    x, y = make_data(n=90)
    labels = (y > 0).long() if k == 1 else torch.bucketize(y, torch.tensor([-0.5, 0.5], dtype=y.dtype))
    bnn = LastLayerBNN(make_net()[:-1], 6, likelihood=likelihood, n_classes=None if k == 1 else k)
    bnn.fit(x, labels.to(x.dtype) if k == 1 else labels, epochs=20, batch_size=30, show_progress=False)
    out = bnn.predict(x[:4])
    assert out.shape == ((4,) if k == 1 else (4, k))
    cls = k - 1
    g = BNNBackend.from_model(bnn, xi=1.0, output=None if k == 1 else cls)
    direct = torch.stack(
        [bnn.predict(x[:4]) - bnn.predict(x[:4] + torch.eye(4, dtype=x.dtype)[j]) for j in range(4)], -1
    )
    torch.testing.assert_close(g.local_scores(x[:4]), direct if k == 1 else direct[:, cls], atol=1e-10, rtol=0)
    if k > 1:
        with pytest.raises(ValueError, match="output"):
            BNNBackend.from_model(bnn)


# ---------------------------------------------------------------- a user's own Pyro model (from_pyro)


class UserBNN(PyroModule):
    def __init__(self, j=4, width=6, dtype=torch.float64):
        super().__init__()
        torch.manual_seed(0)
        self.body = nn.Sequential(nn.Linear(j, width), nn.Tanh()).to(dtype)
        self.out = PyroModule[nn.Linear](width, 1).to(dtype)
        self.out.weight = PyroSample(dist.Normal(torch.tensor(0.0, dtype=dtype), 1.0).expand([1, width]).to_event(2))
        self.out.bias = PyroSample(dist.Normal(torch.tensor(0.0, dtype=dtype), 1.0).expand([1]).to_event(1))

    def forward(self, x, y=None):
        f = self.out(self.body(x)).squeeze(-1)
        sigma = pyro.sample("sigma", dist.LogNormal(torch.tensor(-1.0, dtype=x.dtype), 0.5))
        with pyro.plate("data", x.shape[0]):
            pyro.sample("obs", dist.Normal(f, sigma), obs=y)
        return f


def fit_user(guide_cls, steps=30):
    x, y = make_data(n=60)
    with pyro.settings.context(module_local_params=True):
        model = UserBNN()
        guide = guide_cls(model)
        elbo = pyro.infer.Trace_ELBO()(model, guide)
        elbo(x, y)
        opt = torch.optim.Adam(elbo.parameters(), lr=0.03)
        for _ in range(steps):
            opt.zero_grad()
            elbo(x, y).backward()
            opt.step()
    return model, guide, x


@pytest.mark.parametrize("guide_cls", [AutoNormal, AutoDiagonalNormal, AutoMultivariateNormal])
def test_from_pyro_reads_the_head_posterior_of_a_user_model(guide_cls):
    model, guide, x = fit_user(guide_cls)
    g = BNNBackend.from_pyro(model, guide, "out", x, xi=1.0)
    with pyro.settings.context(module_local_params=True), torch.no_grad():
        z = 0.3413447460685429  # the +-1 sd quantiles of a normal give the guide's sd independently of us
        lo, med, hi = guide.quantiles([0.5 - z, 0.5, 0.5 + z])["out.weight"].reshape(3, -1)
        feats = model.body
        direct = feats(x)[None] - shifted_features(feats, x, 1.0)
    sd = (hi - lo) / 2
    torch.testing.assert_close(g.local_scores(x), (direct @ med).T, atol=1e-10, rtol=0)
    if guide_cls is not AutoMultivariateNormal:  # mean-field: the variance is sum dh^2 sd^2
        torch.testing.assert_close(g.local_variance(x), (direct**2 @ sd**2).T, atol=1e-8, rtol=1e-6)
    with_features = BNNBackend.from_pyro(model, guide, "out", x, xi=1.0, features=model.body)
    assert with_features.fmap.uses_shortcut
    torch.testing.assert_close(with_features.local_variance(x), g.local_variance(x), atol=1e-10, rtol=0)
    spec = BNNBackend.from_model(PyroHead(model, guide, "out", x), xi=1.0)
    torch.testing.assert_close(spec.global_importance().mean, (direct.mean(1) @ med))


# ---------------------------------------------------------------- bad input


def test_bad_input_is_rejected_early_with_clear_messages(fitted):
    bnn, x, y = fitted
    model, guide, xu = fit_user(AutoNormal, steps=1)
    with pytest.raises(ValueError, match="no latent site 'body.0.weight'"):
        BNNBackend.from_pyro(model, guide, "body.0", xu)  # a layer the guide has no site for
    with pytest.raises(TypeError, match="must be a linear layer"):
        BNNBackend.from_pyro(model, guide, "body.1", xu)  # the Tanh
    with pytest.raises(ValueError, match="no submodule 'nope'"):
        BNNBackend.from_pyro(model, guide, "nope", xu)
    with pytest.raises(ValueError, match="has not been fitted"):
        BNNBackend.from_pyro(UserBNN(), AutoNormal(UserBNN()), "out", xu)
    with pytest.raises(ValueError, match="has not been fitted"):
        BNNBackend.from_model(LastLayerBNN.from_sequential(make_net()))
    with pytest.raises(TypeError, match="nn.Linear head"):
        LastLayerBNN.from_sequential(nn.Sequential(nn.Linear(4, 3), nn.Tanh()))
    g = BNNBackend.from_model(bnn)
    with pytest.raises(ValueError, match="inputs has 5 features"):
        g.local_scores(torch.zeros(2, 5, dtype=torch.float64))
    with pytest.raises(TypeError, match="dtype"):
        g.local_scores(x[:2].float())
    with pytest.raises(ValueError, match="X has 3 features"):
        bnn.fit(x[:, :3], y, epochs=1)
    with pytest.raises(ValueError, match="xi must be nonzero"):
        BNNBackend.from_model(bnn, xi=0.0)
    with pytest.raises(ValueError, match="covariance_features"):
        g.global_importance(covariance_features=[4])
    with pytest.raises(ValueError, match="likelihood"):
        LastLayerBNN(make_net()[:-1], 6, likelihood="poisson")
    with pytest.raises(ValueError, match="0/1"):
        LastLayerBNN(make_net()[:-1], 6, likelihood="bernoulli").fit(x, y, epochs=1)


# ---------------------------------------------------------------- RATE for the Bayesian last layer


def test_bnn_rate_matches_the_latent_route_and_a_brute_force_kl():
    from torchxplain.goals import bnn_rate, rate

    x, _ = make_data(n=50, j=4)
    features = make_net(j=4, width=6)[:-1]
    g = torch.Generator().manual_seed(8)
    loc = torch.randn(6, generator=g, dtype=torch.float64)
    root = torch.randn(6, 6, generator=g, dtype=torch.float64)
    for cov in (torch.rand(6, generator=g, dtype=torch.float64) + 0.1, root @ root.T / 6):
        backend = BNNBackend(features, loc, cov, x)
        for projection in ("pinv", "cov"):
            ours, kld = bnn_rate(backend, projection=projection)
            ref, ref_kld = rate(x, *backend.latent_posterior(), projection=projection)  # the N x N route
            torch.testing.assert_close(kld, ref_kld, atol=1e-9, rtol=1e-7)
            torch.testing.assert_close(ours.sum(), torch.ones((), dtype=torch.float64))
        # KL[p(beta_-j) || p(beta_-j | beta_j = 0)] by explicit Gaussian conditioning, feature 1
        with torch.no_grad():
            ph = torch.linalg.pinv(x - x.mean(0)) @ features(x)
        mu = ph @ loc
        s = ph @ (torch.diag(cov) if cov.ndim == 1 else cov) @ ph.T
        keep = torch.tensor([0, 2, 3])
        cond_mu = mu[keep] - s[keep, 1] / s[1, 1] * mu[1]
        cond_s = s[keep][:, keep] - torch.outer(s[keep, 1], s[1, keep]) / s[1, 1]
        marg = torch.distributions.MultivariateNormal(mu[keep], s[keep][:, keep])
        cond = torch.distributions.MultivariateNormal(cond_mu, cond_s)
        brute = torch.distributions.kl_divergence(marg, cond)
        torch.testing.assert_close(bnn_rate(backend)[1][1], brute, atol=1e-9, rtol=1e-7)

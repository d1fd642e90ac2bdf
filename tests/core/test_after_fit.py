"""explain_after_fit picks the explainer by model type; each result is checked against an independent reference."""

from __future__ import annotations

import itertools
from math import factorial

import gpytorch
import numpy as np
import pytest
import torch
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestRegressor
from torch import nn

import torchxplain as tx
from tests.fourier import brute_force
from torchxplain import explain_after_fit
from torchxplain.idx import datasets


def brute_force_shap(f, xq: torch.Tensor, background: torch.Tensor) -> torch.Tensor:
    """Interventional Shapley values of a callable by enumerating all coalitions (small n)."""
    n = xq.shape[1]
    phi = torch.zeros(xq.shape, dtype=torch.float64)
    masks = torch.tensor(list(itertools.product([0, 1], repeat=n)), dtype=torch.bool)
    for q in range(xq.shape[0]):
        z = torch.where(masks[:, None, :], xq[q], background[None])  # (2^n, B, n)
        v = f(z.reshape(-1, n)).reshape(len(masks), -1).mean(1).double()
        value = {tuple(m.tolist()): v[i] for i, m in enumerate(masks)}
        for i in range(n):
            for m in masks[~masks[:, i]]:
                size = int(m.sum())
                with_i = m.clone()
                with_i[i] = True
                weight = factorial(size) * factorial(n - size - 1) / factorial(n)
                phi[q, i] += weight * (value[tuple(with_i.tolist())] - value[tuple(m.tolist())])
    return phi


def test_tree_ensemble_gets_exact_tree_shap():
    data = load_diabetes()
    forest = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(data.data, data.target)
    x = torch.tensor(data.data)
    result = explain_after_fit(forest, x, x[:7], n_background=30)
    assert result.method == "trees"
    assert result.attributions.shape == (7, 10)
    background = x[torch.randperm(x.shape[0], generator=torch.Generator().manual_seed(0))[:30]]
    gap = torch.tensor(forest.predict(data.data[:7]) - forest.predict(background.numpy()).mean())
    torch.testing.assert_close(result.attributions.sum(1), gap, atol=1e-8, rtol=0)


def test_torch_module_on_binary_data_gets_fourier_shap_matching_brute_force():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1), nn.Flatten(0)).double()
    x = torch.randint(0, 2, (50, 6)).double()
    result = explain_after_fit(model, x, x[:4], n_background=10, k=64, method="auto")
    assert result.method == "fourier"
    background = x[torch.randperm(50, generator=torch.Generator().manual_seed(0))[:10]]
    with torch.no_grad():
        expected = brute_force_shap(model, x[:4], background)
    torch.testing.assert_close(result.attributions, expected, atol=1e-8, rtol=0)


class _GP(gpytorch.models.ExactGP):
    def __init__(self, x, y):
        super().__init__(x, y, gpytorch.likelihoods.GaussianLikelihood())
        self.mean_module = gpytorch.means.ConstantMean()
        self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


def test_exact_gp_gets_goals_equal_to_posterior_mean_differences():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(40, 3, generator=gen, dtype=torch.float64)
    y = torch.sin(x[:, 0]) + 0.1 * torch.randn(40, generator=gen, dtype=torch.float64)
    gp = _GP(x, y).double()
    gp.eval()
    result = explain_after_fit(gp, x, x[:5], xi=0.5)
    assert result.method == "goals"
    with torch.no_grad():
        base = gp(x[:5]).mean
        shifted = torch.stack([gp(x[:5] + 0.5 * torch.eye(3, dtype=torch.float64)[j]).mean for j in range(3)], 1)
    torch.testing.assert_close(result.attributions, base[:, None] - shifted, atol=1e-8, rtol=0)


def test_bayesian_classifier_gets_idx():
    bc = datasets.play_outside()
    result = explain_after_fit(bc, None, {"w": "l", "t": "l", "p": "l"}, kit="md")
    assert result.method == "idx" and len(result.attributions) == 1
    assert result.attributions[0].relations  # the paper's Table 2 row 1 has md relations


def test_an_unknown_method_is_refused():
    model = nn.Linear(3, 1)
    with pytest.raises(ValueError, match="method"):
        explain_after_fit(model, None, None, method="magic")


def test_sklearn_classifier_on_binary_data_is_queried_through_predict_proba():
    from sklearn.linear_model import LogisticRegression

    gen = np.random.default_rng(3)
    x = gen.integers(0, 2, (200, 5)).astype(float)
    y = (x[:, 0] + x[:, 1] * x[:, 2] > 0.5).astype(int)
    model = LogisticRegression().fit(x, y)
    result = explain_after_fit(model, x, x[:3], n_background=12, k=32, method="auto")
    assert result.method == "fourier" and "predict_proba" in result.reason
    background = torch.tensor(x)[torch.randperm(200, generator=torch.Generator().manual_seed(0))[:12]]

    def proba(z):
        return torch.tensor(model.predict_proba(z.numpy())[:, 1])

    expected = brute_force_shap(proba, torch.tensor(x[:3]), background)
    # a logistic model is not a low-degree polynomial: the 32-term surrogate of 5 bits is exact (2^5 = 32)
    torch.testing.assert_close(result.attributions.double(), expected, atol=1e-6, rtol=0)


def test_dataframes_keep_their_column_names():
    pd = pytest.importorskip("pandas")
    data = load_diabetes()
    frame = pd.DataFrame(data.data, columns=data.feature_names)
    forest = RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0).fit(frame, data.target)
    result = explain_after_fit(forest, frame, frame.iloc[:4], n_background=20)
    assert result.explainer.feature_names == tuple(data.feature_names)
    gap = forest.predict(frame.iloc[:4]) - forest.predict(frame.iloc[result_rows(20, len(frame))]).mean()
    np.testing.assert_allclose(result.attributions.sum(1).numpy(), gap, atol=1e-8, rtol=0)


def result_rows(n_background: int, n_rows: int) -> np.ndarray:
    return torch.randperm(n_rows, generator=torch.Generator().manual_seed(0))[:n_background].numpy()


def test_refusals_list_the_supported_families_and_the_next_step():
    class Opaque:
        pass

    with pytest.raises(TypeError, match="supported are tree ensembles.*Next step"):
        explain_after_fit(Opaque(), np.zeros((4, 2)), np.zeros((2, 2)))
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1), nn.Flatten(0)).double()
    x = torch.randn(20, 3, dtype=torch.float64)
    with pytest.raises(ValueError, match="method must be one of"):
        explain_after_fit(mlp, x, x[:2], method="magic")


def test_an_mlp_on_continuous_inputs_is_enumerated_when_that_is_cheaper_than_a_fit():
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1), nn.Flatten(0)).double()
    x = torch.randn(20, 3, dtype=torch.float64)
    result = explain_after_fit(mlp, x, x[:2])
    assert result.method == "fourier" and "not 0/1" in result.reason
    assert "exact values by enumeration" in result.reason and result.explainer.fit_report.method == "enumerate"
    truth = brute_force.model_shapley(
        lambda z: mlp(torch.as_tensor(z)).detach().numpy(), x[:2].numpy(), x.numpy(), [0, 1, 2]
    )
    np.testing.assert_allclose(result.attributions.numpy(), truth, atol=1e-10, rtol=0)


def test_an_mlp_on_continuous_inputs_gets_the_continuous_fit_when_asked():
    torch.manual_seed(1)
    mlp = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1), nn.Flatten(0)).double()
    x = torch.randn(500, 6, dtype=torch.float64)
    # 256k model rows to enumerate: cheaper than a fit for this small MLP, so the router enumerates unless told
    result = explain_after_fit(mlp, x, x[:100], n_background=40, show_progress=False, method=tx.fourier.Fit())
    report = result.explainer.fit_report
    assert report.method == "continuous" and "threshold codes" in result.reason
    background = x[result_rows(40, 500)].numpy()
    truth = brute_force.model_shapley(
        lambda z: mlp(torch.as_tensor(z)).detach().numpy(), x[:100].numpy(), background, range(6)
    )
    exact = brute_force.shap_r2(truth, result.attributions.numpy())
    assert report.met_target and exact > 0.98, (exact, report.r2_shap)


def _one_hot_sites(sites: int, levels: int, rows: int, seed: int) -> np.ndarray:
    codes = np.random.default_rng(seed).integers(0, levels, (rows, sites))
    return np.eye(levels)[codes].reshape(rows, -1)


def _mlp(n: int) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(n, 16), nn.Tanh(), nn.Linear(16, 1), nn.Flatten(0)).double()


def test_one_hot_blocks_are_found_said_and_explained_per_site():
    x = _one_hot_sites(3, 5, 400, 0)
    net = _mlp(15)
    result = explain_after_fit(net, x, x[:4], n_background=20)
    # 4 rows x 20 background rows x 2^3 coalitions: enumeration is cheaper than tabulating 125 levels (+ its check)
    assert "found 3 one-hot blocks" in result.reason and result.explainer.fit_report.method == "enumerate"
    ids = result.explainer.groups.numpy()
    assert ids.tolist() == [0] * 5 + [1] * 5 + [2] * 5

    background = result.explainer.background.numpy()
    truth = brute_force.model_shapley(lambda z: net(torch.as_tensor(z)).detach().numpy(), x[:4], background, ids)
    np.testing.assert_allclose(result.attributions.numpy()[:, ::5], truth, atol=1e-10)


def test_known_rows_are_enumerated_when_that_is_cheaper_than_a_fit():
    x = _one_hot_sites(6, 12, 600, 1)  # 12^6 level combinations: too many to tabulate
    net = _mlp(72)
    result = explain_after_fit(net, x, x[:5], n_background=10)
    assert result.explainer.fit_report.method == "enumerate"
    assert "exact values by enumeration" in result.reason and "found 6 one-hot blocks" in result.reason

    background = result.explainer.background.numpy()
    ids = result.explainer.groups.numpy()
    truth = brute_force.model_shapley(lambda z: net(torch.as_tensor(z)).detach().numpy(), x[:5], background, ids)
    np.testing.assert_allclose(result.attributions.numpy()[:, ::12], truth, atol=1e-10)

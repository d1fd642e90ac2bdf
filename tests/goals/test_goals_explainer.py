"""The Goals explainer: Captum contract (shared mixin), the user's model left alone, and bad input."""

from __future__ import annotations

import gpytorch
import pytest
import torch
from gp_refs import ExactGPModel, make_gp

import torchxplain as tx
from torchxplain import Goals
from torchxplain.testing import ExplainerTestCase, tiny_memory_budget


class TestGoalsContract(ExplainerTestCase):
    atol = 1e-10

    def make_explainer(self, dtype):
        return Goals(make_gp(n=20, j=4, dtype=dtype), xi=0.8)

    def make_inputs(self, dtype):
        return torch.randn(5, 4, generator=torch.Generator().manual_seed(3), dtype=torch.float64).to(dtype)


def test_public_names():
    assert tx.Goals is Goals


def test_user_model_modes_dtypes_and_state_are_untouched():
    model = make_gp(n=15, dtype=torch.float32)
    model.train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    g = Goals(model)
    g.attribute(torch.randn(3, 4))
    g.global_importance()
    g.to(torch.float64)
    assert model.training and model.likelihood.training
    for k, v in model.state_dict().items():
        assert v.dtype == before[k].dtype
        torch.testing.assert_close(v, before[k])
    assert not any(k.startswith(("forward_func", "model.")) for k in g.state_dict())
    assert g.backend.alpha.dtype == torch.float64


def test_forward_func_is_the_exact_posterior_mean():
    model = make_gp(n=15)
    xq = torch.randn(4, 4, dtype=torch.float64)
    model.eval()
    with torch.no_grad(), gpytorch.settings.max_cholesky_size(10**9):
        ref = model(xq).mean
    torch.testing.assert_close(Goals(model).forward_func(xq), ref, atol=1e-10, rtol=0)


def test_not_a_gp_is_rejected():
    with pytest.raises(TypeError, match="ExactGP"):
        Goals(torch.nn.Linear(3, 1))


def test_model_without_training_data_is_rejected():
    lik = gpytorch.likelihoods.GaussianLikelihood()
    model = ExactGPModel(None, None, lik, gpytorch.kernels.RBFKernel())
    with pytest.raises(ValueError, match="no training data"):
        Goals(model)


def test_unfitted_hyperparameters_warn():
    x = torch.randn(10, 2)
    model = ExactGPModel(
        x,
        x[:, 0],
        gpytorch.likelihoods.GaussianLikelihood(),
        gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel()),
    )
    with pytest.warns(UserWarning, match="initial value"):
        Goals(model)


def test_unsupported_likelihood_is_rejected():
    model = make_gp(n=10)
    with pytest.raises(TypeError, match="likelihood must be a GaussianLikelihood"):
        Goals(model, likelihood=gpytorch.likelihoods.BernoulliLikelihood())


def test_nan_inputs_are_rejected():
    g = Goals(make_gp(n=10))
    x = torch.randn(3, 4, dtype=torch.float64)
    x[1, 2] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        g.attribute(x)
    with pytest.raises(ValueError, match="NaN"):
        g.local_variance(x)


def test_nan_training_data_is_rejected():
    model = make_gp(n=10)
    x = model.train_inputs[0].clone()
    x[0, 0] = float("nan")
    model.set_train_data(x, model.train_targets, strict=False)
    with pytest.raises(ValueError, match="NaN"):
        Goals(model)


def test_feature_count_mismatch_is_rejected():
    g = Goals(make_gp(n=10, j=4))
    with pytest.raises(ValueError, match="3 features"):
        g.attribute(torch.randn(2, 3, dtype=torch.float64))
    with pytest.raises(ValueError, match="2-D"):
        g.attribute(torch.randn(4, dtype=torch.float64))


@pytest.mark.parametrize("xi", [0.0, torch.tensor([1.0, 0.0, 1.0, 1.0])])
def test_zero_shift_is_rejected(xi):
    with pytest.raises(ValueError, match="nonzero"):
        Goals(make_gp(n=10), xi=xi)


def test_bad_xi_shape_is_rejected():
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        Goals(make_gp(n=10), xi=torch.ones(3))


def test_captum_arguments_that_do_not_apply_are_rejected():
    g = Goals(make_gp(n=10))
    x = torch.randn(2, 4, dtype=torch.float64)
    with pytest.raises(ValueError, match="baselines"):
        g.attribute(x, baselines=torch.zeros_like(x))
    with pytest.raises(ValueError, match="target"):
        g.attribute(x, target=1)
    with pytest.raises(TypeError, match="integer"):
        g.attribute(x, feature_mask=torch.zeros(1, 4))
    with pytest.raises(ValueError, match="broadcast"):
        g.attribute(x, feature_mask=torch.zeros(1, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="same feature_mask"):
        g.attribute(x, feature_mask=torch.tensor([[0, 0, 1, 1], [0, 1, 1, 1]]))
    with pytest.raises(ValueError, match="one"):
        g.attribute((x, x))


def test_bad_reduction_and_covariance_features():
    g = Goals(make_gp(n=10))
    with pytest.raises(ValueError, match="reduction"):
        g.global_importance(reduction="median")
    with pytest.raises(ValueError, match="covariance_features"):
        g.global_importance(covariance_features=[5])


def test_feature_names_flow_into_global_importance():
    g = Goals(make_gp(n=10), feature_names=["a", "b", "c", "d"])
    assert g.global_importance().to_frame()["feature"].tolist()[0] in {"a", "b", "c", "d"}
    with pytest.raises(ValueError, match="feature_names"):
        Goals(make_gp(n=10), feature_names=["a"])


def test_chunking_does_not_change_results():
    model = make_gp(n=30, j=4)
    xq = torch.randn(11, 4, dtype=torch.float64)
    full = Goals(model)
    with tiny_memory_budget(2048):
        tiny = Goals(model)
        tiny_scores, tiny_variance = tiny.attribute(xq), tiny.local_variance(xq)
    torch.testing.assert_close(tiny_scores, full.attribute(xq), atol=1e-12, rtol=0)
    torch.testing.assert_close(tiny_variance, full.local_variance(xq), atol=1e-12, rtol=0)

"""``tx.Goals`` on Bayesian last-layer networks: the Captum contract, dispatch and ``Goals.from_pyro``."""

from __future__ import annotations

import copy

import pytest
import torch
from pyro.infer.autoguide import AutoNormal
from test_bnn import fit_user, make_data, make_net, shifted_features

from torchxplain import Goals
from torchxplain.goals import BNNBackend, LastLayerBNN
from torchxplain.testing import ExplainerTestCase

_FITTED: dict[str, LastLayerBNN] = {}


def fitted_bnn(dtype: torch.dtype) -> LastLayerBNN:
    if "bnn" not in _FITTED:
        x, y = make_data(n=80)
        _FITTED["bnn"] = LastLayerBNN.from_sequential(make_net()).fit(
            x, y, epochs=30, batch_size=40, show_progress=False
        )
    return copy.deepcopy(_FITTED["bnn"]).to(dtype)


class TestGoalsOnLastLayerBNN(ExplainerTestCase):
    atol = 1e-12

    def make_explainer(self, dtype):
        return Goals(fitted_bnn(dtype), xi=0.5)

    def make_inputs(self, dtype):
        return torch.rand(6, 4, dtype=dtype, generator=torch.Generator().manual_seed(0))


def test_goals_dispatches_to_the_bnn_backend():
    bnn = fitted_bnn(torch.float64)
    g = Goals(bnn, xi=0.5, feature_names=["a", "b", "c", "d"])
    ref = BNNBackend.from_model(bnn, xi=0.5)
    x = make_data(n=5, seed=3)[0]
    torch.testing.assert_close(g.attribute(x), ref.local_scores(x), atol=0, rtol=0)
    torch.testing.assert_close(g.local_variance(x), ref.local_variance(x), atol=0, rtol=0)
    imp = g.global_importance(covariance_features=[0, 2])
    assert imp.names() == ["a", "b", "c", "d"] and imp.covariance.shape == (2, 2)
    with torch.no_grad():
        x_train = bnn.train_inputs
        direct = bnn.features(x_train)[None] - shifted_features(bnn.features, x_train, 0.5)
    torch.testing.assert_close(imp.mean, direct.mean(1) @ bnn.head_posterior()[0], atol=1e-12, rtol=0)
    with pytest.raises(ValueError, match="likelihood=None"):
        Goals(bnn, likelihood=object())
    with pytest.raises(ValueError, match="not been fitted"):
        Goals(LastLayerBNN.from_sequential(make_net()))


def test_goals_from_pyro_explains_a_user_model():
    model, guide, x = fit_user(AutoNormal)
    g = Goals.from_pyro(model, guide, "out", train_inputs=x, xi=1.0)
    with torch.no_grad():
        m = guide.median()["out.weight"].reshape(-1)
        direct = model.body(x)[None] - shifted_features(model.body, x, 1.0)
    torch.testing.assert_close(g.attribute(x[:5]), (direct[:, :5] @ m).T, atol=1e-10, rtol=0)
    torch.testing.assert_close(g.global_importance().mean, direct.mean(1) @ m, atol=1e-10, rtol=0)
    with pytest.raises(ValueError, match="no latent site 'nope.weight'|no submodule 'nope'"):
        Goals.from_pyro(model, guide, "nope", train_inputs=x)

"""``Goals`` save/load: identical attributions, variances and global importance after a round trip,
for GP (RBF, ARD-RBF, linear) and network backends; clear refusals where a backend cannot be rebuilt."""

from __future__ import annotations

import copy

import gpytorch
import pytest
import torch
from gp_refs import make_gp
from test_bnn import make_data, make_net

from torchxplain import Goals
from torchxplain._core.persistence import read_metadata
from torchxplain.goals import LastLayerBNN


def _same(a: Goals, b: Goals, xq: torch.Tensor) -> None:
    torch.testing.assert_close(b.attribute(xq), a.attribute(xq), atol=0, rtol=0)
    torch.testing.assert_close(b.local_variance(xq), a.local_variance(xq), atol=0, rtol=0)
    x = a.train_inputs
    torch.testing.assert_close(b.attribute(x), a.attribute(x), atol=0, rtol=0)
    ia, ib = a.global_importance(covariance_features=[0, 2]), b.global_importance(covariance_features=[0, 2])
    for name in ("mean", "score", "variance", "covariance"):
        torch.testing.assert_close(getattr(ib, name), getattr(ia, name), atol=0, rtol=0)
    assert ib.names() == ia.names()
    torch.testing.assert_close(b.forward_func(xq), a.forward_func(xq), atol=0, rtol=0)


@pytest.mark.parametrize("kind", ["ard", "iso", "linear", "float32"])
def test_gp_explainer_round_trip_needs_no_model(tmp_path, kind):
    options = {
        "ard": dict(),
        "iso": dict(ard=False, outputscale=0.6),
        "linear": dict(kernel="linear", const=0.0),
        "float32": dict(dtype=torch.float32),
    }[kind]
    model = make_gp(n=16, j=4, **options)
    goals = Goals(model, xi=torch.tensor([1.0, -0.5, 0.7, 2.0]), feature_names=["a", "b", "c", "d"], max_memory="8MB")
    path = goals.save(tmp_path / "goals.pt")
    assert read_metadata(path)["config"]["backend"] == "gp"
    loaded = Goals.load(path)
    assert loaded.model is None and loaded.feature_names == ["a", "b", "c", "d"]
    assert loaded._defaults == goals._defaults
    xq = torch.randn(5, 4, generator=torch.Generator().manual_seed(0), dtype=model.train_inputs[0].dtype)
    _same(goals, loaded, xq)


def test_network_explainer_round_trip_takes_the_network_again(tmp_path):
    x, y = make_data(n=60)
    bnn = LastLayerBNN.from_sequential(make_net()).fit(x, y, epochs=5, batch_size=30, show_progress=False)
    goals = Goals(bnn, xi=0.5, feature_names=["a", "b", "c", "d"])
    path = goals.save(tmp_path / "bnn.pt")
    xq = make_data(n=5, seed=4)[0]
    for network in (bnn, copy.deepcopy(bnn.features)):  # the fitted model or its feature extractor alone
        loaded = Goals.load(path, forward_func=network)
        _same(goals, loaded, xq)
    assert not any("features" in key for key in goals.state_dict())  # the network is not saved
    with pytest.raises(TypeError, match=r"needs the network's feature extractor.*forward_func=bnn"):
        Goals.load(path)
    with pytest.raises(ValueError, match="features\\(x\\) has 3 columns but loc has 6"):
        Goals.load(path, forward_func=torch.nn.Sequential(torch.nn.Linear(4, 3)).double())


def test_unsaveable_backends_are_refused_with_the_reason(tmp_path):
    matern = make_gp(n=10, j=3, kernel="matern")
    with pytest.raises(TypeError, match="not \\(Scale\\)RBF or \\(Scale\\)Linear cannot be saved"):
        Goals(matern).save(tmp_path / "m.pt")
    linear_mean = make_gp(n=10, j=3)
    linear_mean.mean_module = gpytorch.means.LinearMean(3).double()
    with pytest.raises(TypeError, match="LinearMean mean cannot be saved"):
        Goals(linear_mean).save(tmp_path / "l.pt")

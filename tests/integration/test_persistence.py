"""Explainer persistence: exact round trips, no pickled objects, explicit registry."""

from __future__ import annotations

import json

import pytest
import torch

from torchxplain import FourierShap, FourierSpectrum
from torchxplain._core.persistence import load_explainer, read_metadata, save_explainer


def _spectrum(n: int = 7, k: int = 12, seed: int = 0) -> FourierSpectrum:
    gen = torch.Generator().manual_seed(seed)
    freq = torch.rand(k, n, generator=gen) < 0.3
    freq[0] = False
    return FourierSpectrum(freq, torch.randn(k, generator=gen, dtype=torch.float64)).coalesce()


def _walk_plain(obj: object) -> None:
    """Everything in the file is a str/int/tensor or a dict of them: nothing a pickle could hide."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            assert isinstance(key, str)
            _walk_plain(value)
    else:
        assert isinstance(obj, (str, int, torch.Tensor)), type(obj)


@pytest.mark.parametrize("relaxed", [False, True])
def test_round_trip_from_spectrum_exact(tmp_path, relaxed):
    spec = _spectrum()
    gen = torch.Generator().manual_seed(1)
    background = (torch.rand(9, 7, generator=gen) < 0.5).double()
    x = torch.rand(11, 7, generator=gen, dtype=torch.float64)
    x = x if relaxed else x.round()
    groups = None if relaxed else torch.tensor([0, 0, 1, 2, 2, 3, 4])  # relaxed supports singletons only
    explainer = FourierShap.from_spectrum(spec, background, groups=groups, relaxed=relaxed, max_memory="1MB")
    path = explainer.save(tmp_path / "fs.pt")

    raw = torch.load(path, weights_only=True)
    _walk_plain(raw)
    meta = read_metadata(path)
    assert meta["class"] == "FourierShap" and meta["config"]["relaxed"] is relaxed
    assert ("groups" in raw["state"]) is (not relaxed)

    loaded = FourierShap.load(path)
    assert loaded.owns_forward_func and loaded.forward_func is loaded.surrogate
    assert loaded.relaxed is relaxed and loaded.max_memory == "1MB"
    if groups is not None:
        assert torch.equal(loaded.groups, explainer.groups)
    assert torch.equal(loaded.attribute(x), explainer.attribute(x))
    assert torch.equal(loaded.interactions(x.round()), explainer.interactions(x.round()))
    for key, value in explainer.state_dict().items():
        assert torch.equal(loaded.state_dict()[key], value), key


def test_round_trip_black_box_surrogate_or_model(tmp_path):
    weights = torch.tensor([1.0, -2.0, 0.5, 0.0, 3.0])

    def model(x):
        return x @ weights + 2.0 * x[:, 0] * x[:, 4] - x[:, 1] * x[:, 2] * x[:, 3]

    gen = torch.Generator().manual_seed(2)
    background = (torch.rand(6, 5, generator=gen) < 0.5).float()
    x = (torch.rand(8, 5, generator=gen) < 0.5).float()
    explainer = FourierShap(model, background, k=32, method="exact", target=None)
    path = save_explainer(explainer, tmp_path / "bb.pt")

    on_surrogate = load_explainer(path)
    assert on_surrogate.forward_func is on_surrogate.surrogate
    assert torch.equal(on_surrogate.attribute(x), explainer.attribute(x))
    with_model = FourierShap.load(path, forward_func=model)
    assert with_model.forward_func is model and not with_model.owns_forward_func
    assert torch.equal(with_model.attribute(x), explainer.attribute(x))
    # the surrogate still reproduces the black box it was fitted on (exact fit of a degree-3 function)
    torch.testing.assert_close(on_surrogate.surrogate(x), model(x), atol=1e-5, rtol=0)


def test_unknown_or_unsupported_classes_are_refused(tmp_path):
    from torchxplain._core import ExplainerBase

    class Custom(ExplainerBase):
        pass

    with pytest.raises(TypeError, match="cannot be saved"):
        save_explainer(Custom(), tmp_path / "c.pt")
    with pytest.raises(TypeError, match="does not support load"):
        Custom._from_config({}, {}, None)

    spec = _spectrum(n=4, k=4)
    explainer = FourierShap.from_spectrum(spec, torch.zeros(2, 4, dtype=torch.float64))
    path = explainer.save(tmp_path / "x.pt")
    data = torch.load(path, weights_only=True)
    data["metadata"] = json.dumps({"class": "os.system", "config": {}})
    torch.save(data, tmp_path / "evil.pt")
    with pytest.raises(ValueError, match="not loadable"):
        load_explainer(tmp_path / "evil.pt")
    torch.save({"weights": torch.zeros(1)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a saved torchxplain explainer"):
        load_explainer(tmp_path / "other.pt")


@pytest.mark.parametrize("kind", ["continuous", "binary"])
def test_tree_explainers_round_trip_with_their_encoding(tmp_path, kind):
    """A tree explainer saves its split encoding (thresholds, missing-value routing) and loads to identical values,
    even after a float32 cast (thresholds are kept exactly)."""
    sklearn_tree = pytest.importorskip("sklearn.tree")
    gen = torch.Generator().manual_seed(5)
    x = torch.rand(60, 3, generator=gen, dtype=torch.float64)
    if kind == "binary":
        x = (x > 0.5).double()
    y = (x[:, 0] > 0.5).double() + x[:, 1] * x[:, 2]
    tree = sklearn_tree.DecisionTreeRegressor(max_depth=3, random_state=0).fit(x.numpy(), y.numpy())
    explainer = FourierShap.from_trees(tree, x[:10], energy=0.99)
    assert explainer.encoder.kind == ("thresholds" if kind == "continuous" else "binary")
    path = explainer.save(tmp_path / "tree.pt")
    _walk_plain(torch.load(path, weights_only=True))
    loaded = FourierShap.load(path)
    assert loaded.encoder.config() == explainer.encoder.config()
    assert loaded.pruning == explainer.pruning and loaded.pruning is not None
    assert torch.equal(loaded.attribute(x[20:30]), explainer.attribute(x[20:30]))
    assert torch.equal(loaded.interactions(x[20:30]), explainer.interactions(x[20:30]))
    torch.testing.assert_close(loaded.predict(x[:5]), explainer.predict(x[:5]), rtol=0, atol=0)
    # an explainer cast to float32 still routes rows by the float64 thresholds of the model
    cast = FourierShap.load(path).to(torch.float32)
    torch.testing.assert_close(cast.attribute(x[20:30].float()), explainer.attribute(x[20:30]).float())


def test_broken_files_get_clear_errors(tmp_path):
    explainer = FourierShap.from_spectrum(_spectrum(n=4, k=4), torch.zeros(2, 4, dtype=torch.float64))
    path = explainer.save(tmp_path / "ok.pt")
    (tmp_path / "empty.pt").write_bytes(b"")
    (tmp_path / "cut.pt").write_bytes(open(path, "rb").read()[:200])
    with pytest.raises(FileNotFoundError, match="no saved explainer at"):
        load_explainer(tmp_path / "missing.pt")
    for broken in ("empty.pt", "cut.pt"):
        with pytest.raises(ValueError, match="not a readable torchxplain explainer file"):
            load_explainer(tmp_path / broken)
    data = torch.load(path, weights_only=True)
    torch.save({**data, "metadata": "{not json"}, tmp_path / "json.pt")
    with pytest.raises(ValueError, match="no valid JSON metadata"):
        load_explainer(tmp_path / "json.pt")
    state = dict(data["state"])
    del state["background_bits"]
    torch.save({**data, "state": state}, tmp_path / "keys.pt")
    with pytest.raises(ValueError, match="'background_bits' is missing from the state"):
        load_explainer(tmp_path / "keys.pt")
    torch.save({**data, "version": 1}, tmp_path / "old.pt")
    with pytest.raises(ValueError, match="format version 1; this torchxplain reads 2"):
        load_explainer(tmp_path / "old.pt")

"""Saving and loading classifiers (JSON, no pickle): identical tables, decisions and explanations."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from torchxplain.idx import BayesianClassifier, datasets, explain, explain_batch


def _same_explanations(a, b, inputs, kits=("md", "sd", "cf")):
    first, second = explain_batch(a, inputs, kits), explain_batch(b, inputs, kits)
    assert torch.equal(first.sigma, second.sigma) and torch.equal(first.log_prob, second.log_prob)
    for kit in kits:
        for name, mask in first.relations(kit).items():
            assert torch.equal(mask, second.relations(kit)[name]), (kit, name)


def test_play_outside_round_trips_exactly(tmp_path):
    bc = datasets.play_outside().with_sd_weights({"t": [0.2, 0.3, 0.5]})
    path = bc.save(tmp_path / "bc.json")
    loaded = BayesianClassifier.load(path)
    for name, buf in bc.state_dict().items():
        assert torch.equal(buf, loaded.state_dict()[name]), name
    _same_explanations(bc, loaded, datasets.all_inputs(bc))
    assert loaded.sd_weight[bc.index_of("t"), :3].tolist() == [0.2, 0.3, 0.5]
    text = json.loads((tmp_path / "bc.json").read_text())
    assert text["cpts"][0][:2] == ["r", "t"] and text["dtype"] == "float64"


def test_fitted_classifier_keeps_its_bins_and_dtype(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.normal(size=300)
    df = pd.DataFrame(
        {"x": x, "z": rng.choice(["a", "b", "c"], 300), "c": np.where(x + rng.normal(size=300) > 0, "p", "n")}
    )
    bc = BayesianClassifier.fit(df, "c", bins={"x": 4}).to(torch.float32)
    loaded = BayesianClassifier.from_dict(json.loads(json.dumps(bc.to_dict())))
    assert loaded.dtype == torch.float32
    assert np.array_equal(loaded.bin_edges["x"], bc.bin_edges["x"])
    new = df.drop(columns=["c"]).iloc[:40]
    assert torch.equal(bc.encode(new), loaded.encode(new))  # numbers are binned with the saved edges
    _same_explanations(bc, loaded, new)


def test_child_round_trips(tmp_path, child):
    loaded = BayesianClassifier.load(child.save(tmp_path / "child.json"))
    _same_explanations(child, loaded, datasets.all_inputs(child)[::5])
    assert [e.to_dict() for e in explain(child, datasets.all_inputs(child)[:3], "md", "Disease")] == [
        e.to_dict() for e in explain(loaded, datasets.all_inputs(child)[:3], "md", "Disease")
    ]


def test_bad_files_are_refused(tmp_path):
    (tmp_path / "empty.json").write_text("")
    with pytest.raises(ValueError, match="not a saved Bayesian classifier"):
        BayesianClassifier.load(tmp_path / "empty.json")
    data = datasets.play_outside().to_dict()
    with pytest.raises(ValueError, match="format"):
        BayesianClassifier.from_dict({**data, "format": "other"})
    with pytest.raises(ValueError, match="version"):
        BayesianClassifier.from_dict({**data, "version": 99})
    with pytest.raises(ValueError, match="saved field 'cpts' is missing"):
        BayesianClassifier.from_dict({k: v for k, v in data.items() if k != "cpts"})
    broken = json.loads(json.dumps(data))
    broken["cpts"][0][2][0] = [0.5, 0.6, 0.1]
    with pytest.raises(ValueError, match=r"cpts\[\('r', 't'\)\].*sums to 1.2"):
        BayesianClassifier.from_dict(broken)
    with pytest.raises(ValueError, match="dtype"):
        BayesianClassifier.from_dict({**data, "dtype": "int64"})

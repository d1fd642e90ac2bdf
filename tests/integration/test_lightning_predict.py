"""Lightning ``Trainer.predict`` as "explain this dataset": the module, the shard writer, DDP, the pure batch API."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

pl = pytest.importorskip("lightning.pytorch")
from captum.attr import IntegratedGradients  # noqa: E402

from tests.integration._lightning_setup import N_FEATURES, QUIET  # noqa: E402
from torchxplain import FourierShap, FourierSpectrum  # noqa: E402
from torchxplain.integrations import ExplainModule, ExplanationWriter, attribute_batch, merge_shards  # noqa: E402


def test_predict_under_default_inference_mode_with_gradient_explainer(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(N_FEATURES, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 1)).eval()
    forward = lambda x: model(x).squeeze(-1)  # noqa: E731
    x = torch.randn(50, N_FEATURES)
    ig = IntegratedGradients(forward)
    with torch.inference_mode(), pytest.raises(RuntimeError):
        ig.attribute(x.clone(), n_steps=8)  # the trap: IG needs grad, inference mode forbids it

    module = ExplainModule(ig, n_features=N_FEATURES, attribute_kwargs={"n_steps": 8})
    trainer = pl.Trainer(logger=False, callbacks=[ExplanationWriter(tmp_path / "out")], inference_mode=True, **QUIET)
    predictions = trainer.predict(module, DataLoader(TensorDataset(x), batch_size=16))
    got = torch.cat([p["attributions"] for p in predictions])
    expected = IntegratedGradients(forward).attribute(x, n_steps=8).detach()
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
    merged = merge_shards(tmp_path / "out", expected_rows=50)
    torch.testing.assert_close(merged["attributions"], expected, rtol=1e-5, atol=1e-6)
    importance = torch.load(tmp_path / "out" / "importance.pt", weights_only=True)
    assert importance["rows"] == 50
    torch.testing.assert_close(importance["mean_abs"], expected.abs().mean(0).double(), rtol=1e-5, atol=1e-7)
    with pytest.raises(FileExistsError):  # a second run into the same folder would mix shards
        pl.Trainer(logger=False, callbacks=[ExplanationWriter(tmp_path / "out")], **QUIET).predict(
            module, DataLoader(TensorDataset(x), batch_size=16)
        )


def test_attribute_batch_and_merge_shards_contracts(tmp_path):
    spec = FourierSpectrum(torch.eye(3, dtype=torch.bool), torch.tensor([1.0, -2.0, 0.5]))
    explainer = FourierShap.from_spectrum(spec, torch.zeros(1, 3))
    x = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    out = attribute_batch(explainer, {"inputs": x, "index": torch.tensor([7, 3])})
    # additive spectrum, zero baseline: phi_i = a_i ((1 - 2 x_i) - 1) = -2 a_i x_i
    torch.testing.assert_close(out["attributions"], -2 * x * torch.tensor([1.0, -2.0, 0.5]))
    assert out["index"].tolist() == [7, 3]
    assert torch.equal(attribute_batch(explainer, (x, torch.zeros(2)))["attributions"], out["attributions"])
    with pytest.raises(KeyError):
        attribute_batch(explainer, {"x": x})
    # numpy, lists and DataFrames are converted like tensors; non-numeric inputs are refused by name
    from_list = attribute_batch(explainer, [x.tolist()])["attributions"]  # Python floats: float64
    torch.testing.assert_close(from_list, out["attributions"].double())
    ray_like = attribute_batch(explainer, {"inputs": x.numpy(), "index": np.array([7, 3])})  # the Ray recipe's
    assert torch.equal(ray_like["attributions"], out["attributions"]) and ray_like["index"].tolist() == [7, 3]
    with pytest.raises(TypeError, match="batch inputs"):
        attribute_batch(explainer, [np.array([["a", "b", "c"]])])
    with pytest.raises(ValueError, match="index"):
        attribute_batch(explainer, {"inputs": x, "index": torch.tensor([1])})

    torch.save(
        {"index": torch.tensor([2, 0]), "attributions": torch.ones(2, 3)}, tmp_path / "shard-rank00000-part00000.pt"
    )
    torch.save(
        {"index": torch.tensor([1, 2]), "attributions": torch.zeros(2, 3)}, tmp_path / "shard-rank00001-part00000.pt"
    )
    with pytest.raises(ValueError, match="more than once"):
        merge_shards(tmp_path)
    torch.save(
        {"index": torch.tensor([1, 4]), "attributions": torch.zeros(2, 3)}, tmp_path / "shard-rank00001-part00000.pt"
    )
    with pytest.raises(ValueError, match=r"missing \[3\]"):
        merge_shards(tmp_path, expected_rows=5)
    assert merge_shards(tmp_path)["index"].tolist() == [0, 1, 2, 4]


@pytest.mark.distributed
def test_ddp_predict_two_processes_equals_single_process(tmp_path):
    gen = torch.Generator().manual_seed(3)
    n = 10
    freq = torch.rand(40, n, generator=gen) < 0.25
    spec = FourierSpectrum(freq, torch.randn(40, generator=gen, dtype=torch.float64)).coalesce()
    background = (torch.rand(16, n, generator=gen) < 0.5).double()
    rows = (torch.rand(1001, n, generator=gen) < 0.5).double()
    # one kernel for every batch: "auto" may switch kernels as batches stream in (same values to rounding), and
    # this test compares the two runs bit for bit
    explainer = FourierShap.from_spectrum(spec, background, kernel="gemm")
    explainer.save(tmp_path / "explainer.pt")
    torch.save(rows, tmp_path / "rows.pt")

    script = Path(__file__).with_name("ddp_explain.py")
    env = dict(os.environ, TORCHXPLAIN_PROGRESS="0", PYTHONWARNINGS="ignore")
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parents[2]), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [
            sys.executable,
            str(script),
            str(tmp_path / "explainer.pt"),
            str(tmp_path / "rows.pt"),
            str(tmp_path / "ddp"),
            "2",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]

    shards = sorted((tmp_path / "ddp").glob("shard-*.pt"))
    assert [p.name for p in shards] == ["shard-rank00000-part00000.pt", "shard-rank00001-part00000.pt"]
    sizes = [torch.load(p, weights_only=True)["index"].numel() for p in shards]
    assert sorted(sizes) == [500, 501]
    ddp = merge_shards(tmp_path / "ddp", expected_rows=1001)  # raises on any duplicate or lost row

    from tests.integration.ddp_explain import run

    run(str(tmp_path / "explainer.pt"), str(tmp_path / "rows.pt"), str(tmp_path / "single"), 1)
    single = merge_shards(tmp_path / "single", expected_rows=1001)
    assert torch.equal(ddp["attributions"], single["attributions"])
    torch.testing.assert_close(ddp["attributions"], explainer.attribute(rows), rtol=1e-12, atol=1e-12)

    importance = torch.load(tmp_path / "ddp" / "importance.pt", weights_only=True)
    assert importance["rows"] == 1001  # summed across both ranks
    torch.testing.assert_close(importance["mean_abs"], single["attributions"].abs().mean(0), rtol=1e-12, atol=0)

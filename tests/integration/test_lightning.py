"""Lightning integration: the explanation callback (fit, artifacts, resume) and Trainer.predict explanations."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

pl = pytest.importorskip("lightning.pytorch")
from captum.attr import IntegratedGradients  # noqa: E402
from lightning.pytorch.callbacks import Callback, ModelCheckpoint  # noqa: E402
from lightning.pytorch.loggers import CSVLogger, Logger  # noqa: E402

from tests.integration._brute import interventional_shap  # noqa: E402
from torchxplain import FourierShap, FourierSpectrum  # noqa: E402
from torchxplain.integrations.batch import explain_batch, merge_shards  # noqa: E402
from torchxplain.integrations.lightning import (  # noqa: E402
    ExplainModule,
    ExplanationCallback,
    ExplanationWriter,
)

N_FEATURES = 6
QUIET = dict(accelerator="cpu", devices=1, enable_progress_bar=False, enable_model_summary=False)


class Regressor(pl.LightningModule):
    def __init__(self, n: int = N_FEATURES) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n, 16), nn.Tanh(), nn.Dropout(0.2), nn.Linear(16, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.mse_loss(self(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self(x), y))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=0.05)


def _data(binary: bool = False, rows: int = 96):
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(rows, N_FEATURES, generator=gen)
    x = (x < 0.5).float() if binary else x
    y = 3 * x[:, 0] - 2 * x[:, 1] + x[:, 2] * x[:, 3] + 0.05 * torch.randn(rows, generator=gen)
    return x, y


def _loaders(x, y):
    ds = TensorDataset(x, y)
    return DataLoader(ds, batch_size=16, shuffle=False), DataLoader(ds, batch_size=32)


def _is_png(path: Path) -> bool:
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_callback_fit_writes_artifacts_and_scalars_and_resumes(tmp_path):
    pl.seed_everything(0)
    x, y = _data()
    probe = x[:8]
    names = [f"f{i}" for i in range(N_FEATURES)]

    def make_callback():
        return ExplanationCallback(
            lambda m: IntegratedGradients(m), probe, feature_names=names, attribute_kwargs={"n_steps": 16}
        )

    callback = make_callback()
    checkpoint = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_last=True)
    model = Regressor()
    trainer = pl.Trainer(
        max_epochs=3,
        logger=CSVLogger(tmp_path / "logs"),
        callbacks=[callback, checkpoint],
        limit_train_batches=3,
        limit_val_batches=1,
        **QUIET,
    )
    train, val = _loaders(x, y)
    trainer.fit(model, train, val)

    assert [h["epoch"] for h in callback.history] == [0, 1, 2]  # the sanity check was skipped
    folder = Path(trainer.log_dir) / "explanations" / "xai"
    for epoch in range(3):
        record = torch.load(folder / f"epoch{epoch:03d}.pt", weights_only=True)
        assert record["attributions"].shape == probe.shape and record["epoch"] == epoch
        torch.testing.assert_close(record["importance"], callback.history[epoch]["importance"])
        for tag in ("beeswarm", "drift"):
            assert _is_png(folder / f"epoch{epoch:03d}_{tag}.png")
    # the last artifact equals IG on the final model in eval mode, computed here independently of the callback
    model.eval()
    expected = IntegratedGradients(model).attribute(probe, n_steps=16).detach()
    torch.testing.assert_close(record["attributions"], expected, rtol=1e-5, atol=1e-6)

    with open(Path(trainer.log_dir) / "metrics.csv") as handle:
        rows = list(csv.DictReader(handle))
    for j, name in enumerate(names):
        logged = [float(r[f"xai/mean_abs/{name}"]) for r in rows if r.get(f"xai/mean_abs/{name}")]
        assert logged == pytest.approx([h["importance"][j].item() for h in callback.history], rel=1e-6)
    drift = [float(r["xai/drift"]) for r in rows if r.get("xai/drift")]
    imp = [h["importance"] for h in callback.history]
    assert drift == pytest.approx(
        [((imp[e] - imp[e - 1]).abs().sum() / imp[e - 1].abs().sum()).item() for e in (1, 2)], rel=1e-5
    )

    resumed = make_callback()
    trainer2 = pl.Trainer(
        max_epochs=4,
        logger=CSVLogger(tmp_path / "logs"),
        callbacks=[resumed],
        limit_train_batches=3,
        limit_val_batches=1,
        **QUIET,
    )
    trainer2.fit(Regressor(), train, val, ckpt_path=tmp_path / "ckpt" / "last.ckpt")
    assert [h["epoch"] for h in resumed.history] == [0, 1, 2, 3]
    for before, after in zip(callback.history, resumed.history):
        assert torch.equal(before["importance"], after["importance"]) and before["step"] == after["step"]
    assert list(resumed.to_dataframe().index) == [0, 1, 2, 3]


class _FigureSink:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def add_figure(self, tag, figure, global_step=None, close=True):
        self.calls.append((tag, global_step))


class _TensorBoardLike(Logger):
    """Duck-types TensorBoardLogger: ``experiment.add_figure``."""

    def __init__(self) -> None:
        super().__init__()
        self.sink = _FigureSink()

    @property
    def name(self):
        return "tb_like"

    @property
    def version(self):
        return 0

    @property
    def experiment(self):
        return self.sink

    def log_metrics(self, metrics, step=None):
        pass

    def log_hyperparams(self, params, *args, **kwargs):
        pass


class _ModeRecorder(Callback):
    def __init__(self) -> None:
        self.modes: list[bool] = []

    def on_train_epoch_end(self, trainer, pl_module):
        self.modes.append(pl_module.training)


def test_callback_on_train_epoch_end_eval_mode_fourier_shap_and_logger_figures(tmp_path):
    pl.seed_everything(1)
    x, y = _data(binary=True)
    probe, background = x[:5], x[40:44]
    seen_modes: list[bool] = []

    def factory(module):
        seen_modes.append(module.training)
        return FourierShap(module, background, k=64, method="exact")  # 2^6 queries: exact spectrum

    callback = ExplanationCallback(factory, probe, every_n_epochs=2, on="train")
    recorder = _ModeRecorder()
    logger = _TensorBoardLike()
    trainer = pl.Trainer(
        max_epochs=4,
        logger=[logger],
        callbacks=[callback, recorder],
        default_root_dir=tmp_path,
        limit_train_batches=2,
        limit_val_batches=1,
        **QUIET,
    )
    model = Regressor()
    trainer.fit(model, *_loaders(x, y))

    assert [h["epoch"] for h in callback.history] == [1, 3]
    assert seen_modes == [False, False]  # explained in eval mode (dropout off) ...
    assert recorder.modes == [True] * 4  # ... and the train mode was restored afterwards
    expected_calls = [(f"xai/{tag}", step) for tag in ("beeswarm", "drift") for step in (4, 8)]
    assert sorted(logger.sink.calls) == sorted(expected_calls)
    folder = tmp_path / "explanations" / "xai"  # the logger has no log_dir: files go under default_root_dir
    assert not list(folder.glob("*.png"))  # figures went to the logger, not to files
    record = torch.load(folder / "epoch003.pt", weights_only=True)
    model.eval()
    expected = interventional_shap(model, probe, background)  # brute force over all 64 coalitions
    torch.testing.assert_close(record["attributions"], expected, rtol=1e-4, atol=1e-5)


def test_import_torchxplain_does_not_import_lightning():
    code = "import sys, torchxplain, torchxplain.integrations as i; i.explain_batch; print('lightning' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr[-2000:]


def test_callback_rejects_bad_arguments():
    with pytest.raises(ValueError, match="on must be"):
        ExplanationCallback(lambda m: None, torch.zeros(2, 3), on="test")
    with pytest.raises(ValueError, match="probe"):
        ExplanationCallback(lambda m: None, torch.zeros(3))
    with pytest.raises(ValueError, match="every_n_epochs"):
        ExplanationCallback(lambda m: None, torch.zeros(2, 3), every_n_epochs=0)
    with pytest.raises(TypeError, match="explainer_factory"):
        ExplanationCallback("ig", torch.zeros(2, 3))


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


def test_explain_batch_and_merge_shards_contracts(tmp_path):
    spec = FourierSpectrum(torch.eye(3, dtype=torch.bool), torch.tensor([1.0, -2.0, 0.5]))
    explainer = FourierShap.from_spectrum(spec, torch.zeros(1, 3))
    x = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    out = explain_batch(explainer, {"inputs": x, "index": torch.tensor([7, 3])})
    # additive spectrum, zero baseline: phi_i = a_i ((1 - 2 x_i) - 1) = -2 a_i x_i
    torch.testing.assert_close(out["attributions"], -2 * x * torch.tensor([1.0, -2.0, 0.5]))
    assert out["index"].tolist() == [7, 3]
    assert torch.equal(explain_batch(explainer, (x, torch.zeros(2)))["attributions"], out["attributions"])
    with pytest.raises(KeyError):
        explain_batch(explainer, {"x": x})
    with pytest.raises(TypeError):
        explain_batch(explainer, [x.tolist()])
    with pytest.raises(ValueError, match="index"):
        explain_batch(explainer, {"inputs": x, "index": torch.tensor([1])})

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
    explainer = FourierShap.from_spectrum(spec, background)
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

"""Lightning integration: the explanation callback (fit, artifacts, resume, arguments), both Lightning packages."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

pl = pytest.importorskip("lightning.pytorch")
from captum.attr import IntegratedGradients  # noqa: E402
from lightning.pytorch.callbacks import Callback, ModelCheckpoint  # noqa: E402
from lightning.pytorch.loggers import CSVLogger, Logger  # noqa: E402

from tests.integration._brute import interventional_shap  # noqa: E402
from tests.integration._lightning_setup import N_FEATURES, QUIET, data, is_png, loaders, regressor_class  # noqa: E402
from torchxplain import FourierShap, viz  # noqa: E402
from torchxplain.integrations import ExplanationCallback, plot_drift  # noqa: E402

Regressor = regressor_class(pl)
ROOT = Path(__file__).parents[2]


def _ig_callback(probe, names, **kwargs):
    return ExplanationCallback(
        lambda m: IntegratedGradients(m), probe, feature_names=names, attribute_kwargs={"n_steps": 16}, **kwargs
    )


def test_callback_fit_writes_artifacts_and_scalars_and_resumes(tmp_path):
    pl.seed_everything(0)
    x, y = data()
    probe = x[:8]
    names = [f"f{i}" for i in range(N_FEATURES)]
    callback = _ig_callback(probe, names)
    checkpoint = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_last=True, monitor="xai/mean_abs/f0", mode="max")
    model = Regressor()
    trainer = pl.Trainer(
        max_epochs=3,
        logger=CSVLogger(tmp_path / "logs"),
        callbacks=[callback, checkpoint],
        limit_train_batches=3,
        limit_val_batches=1,
        **QUIET,
    )
    train, val = loaders(x, y)
    trainer.fit(model, train, val)

    assert [h["epoch"] for h in callback.history] == [0, 1, 2]  # the sanity check was skipped
    assert [h["step"] for h in callback.history] == [2, 5, 8]  # 3 steps per epoch: each epoch's last step
    # log_dict put the scalars into callback_metrics, where ModelCheckpoint's monitor found them
    assert float(trainer.callback_metrics["xai/mean_abs/f0"]) == pytest.approx(
        float(callback.history[-1]["importance"][0])
    )
    assert checkpoint.best_model_score is not None
    folder = Path(trainer.log_dir) / "explanations" / "xai"
    for epoch in range(3):
        record = torch.load(folder / f"epoch{epoch:03d}.pt", weights_only=True)
        assert record["attributions"].shape == probe.shape and record["epoch"] == epoch
        assert record["step"] == callback.history[epoch]["step"]
        torch.testing.assert_close(record["importance"], callback.history[epoch]["importance"])
        for tag in ("beeswarm", "drift"):
            assert is_png((folder / f"epoch{epoch:03d}_{tag}.png").read_bytes())
    # the last artifact equals IG on the final model in eval mode, computed here independently of the callback
    model.eval()
    expected = IntegratedGradients(model).attribute(probe, n_steps=16).detach()
    torch.testing.assert_close(record["attributions"], expected, rtol=1e-5, atol=1e-6)

    with open(Path(trainer.log_dir) / "metrics.csv") as handle:
        rows = list(csv.DictReader(handle))
    val_steps = [int(r["step"]) for r in rows if r.get("val_loss")]
    for j, name in enumerate(names):
        logged = [(int(r["step"]), float(r[f"xai/mean_abs/{name}"])) for r in rows if r.get(f"xai/mean_abs/{name}")]
        assert [s for s, _ in logged] == [h["step"] for h in callback.history] == val_steps  # one step per epoch
        epochs = [int(r["epoch"]) for r in rows if r.get(f"xai/mean_abs/{name}")]  # the epoch column is filled
        assert epochs == [h["epoch"] for h in callback.history]
        assert [v for _, v in logged] == pytest.approx([h["importance"][j].item() for h in callback.history], rel=1e-6)
    drift = [float(r["xai/drift"]) for r in rows if r.get("xai/drift")]
    imp = [h["importance"] for h in callback.history]
    assert drift == pytest.approx(
        [((imp[e] - imp[e - 1]).abs().sum() / imp[e - 1].abs().sum()).item() for e in (1, 2)], rel=1e-5
    )

    resumed = _ig_callback(probe, names)
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
    # the resumed run wrote into its own log version; the first run's records are untouched
    assert Path(trainer2.log_dir) != Path(trainer.log_dir)
    assert sorted(p.name for p in (Path(trainer2.log_dir) / "explanations" / "xai").glob("*.pt")) == ["epoch003.pt"]
    assert len(list(folder.glob("*.pt"))) == 3


class _FigureSink:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def add_figure(self, tag, figure, global_step=None, close=True):
        self.calls.append((tag, global_step))


class _TensorBoardLike(Logger):
    """Duck-types TensorBoardLogger (``experiment.add_figure``) and records the scalars' steps."""

    def __init__(self) -> None:
        super().__init__()
        self.sink = _FigureSink()
        self.scalars: list[tuple[str, int]] = []

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
        self.scalars += [(key, step) for key in metrics if key.startswith("xai/")]

    def log_hyperparams(self, params, *args, **kwargs):
        pass


class _ModeRecorder(Callback):
    def __init__(self) -> None:
        self.modes: list[bool] = []

    def on_train_epoch_end(self, trainer, pl_module):
        self.modes.append(pl_module.training)


def test_callback_on_train_epoch_end_eval_mode_fourier_shap_and_logger_figures(tmp_path):
    pl.seed_everything(1)
    x, y = data(binary=True)
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
    trainer.fit(model, *loaders(x, y))

    assert [h["epoch"] for h in callback.history] == [1, 3]
    assert seen_modes == [False, False]  # explained in eval mode (dropout off) ...
    assert recorder.modes == [True] * 4  # ... and the train mode was restored afterwards
    steps = [3, 7]  # 2 steps per epoch: the last step of epochs 1 and 3, where Lightning logs epoch-end metrics
    assert [h["step"] for h in callback.history] == steps
    expected_calls = [(f"xai/figures/{tag}", step) for tag in ("beeswarm", "drift") for step in steps]
    assert sorted(logger.sink.calls) == sorted(expected_calls)
    scalar_keys = [f"xai/mean_abs/x{j}" for j in range(N_FEATURES)]
    assert sorted(logger.scalars) == sorted(
        [(k, s) for s in steps for k in scalar_keys] + [("xai/drift", steps[1])]
    )  # scalars at the figures' steps, and no key shared by a scalar and a figure
    # the logger has no run folder: records go to a fresh version under default_root_dir, figures not to files
    folder = tmp_path / "explanations" / "xai" / "version_0"
    assert not list(folder.glob("*.png"))
    record = torch.load(folder / "epoch003.pt", weights_only=True)
    model.eval()
    expected = interventional_shap(model, probe, background)  # brute force over all 64 coalitions
    torch.testing.assert_close(record["attributions"], expected, rtol=1e-4, atol=1e-5)


def test_callback_without_logger_keeps_every_run(tmp_path):
    x, y = data(rows=32)
    histories = []
    for _ in range(2):
        callback = _ig_callback(x[:4], None, figures=False)
        trainer = pl.Trainer(max_epochs=1, logger=False, callbacks=[callback], default_root_dir=tmp_path, **QUIET)
        trainer.fit(Regressor(), *loaders(x, y))
        histories.append(callback.history[0]["importance"])
    for version, importance in enumerate(histories):
        record = torch.load(tmp_path / "explanations" / "xai" / f"version_{version}" / "epoch000.pt", weights_only=True)
        torch.testing.assert_close(record["importance"], importance)
    assert not torch.equal(histories[0], histories[1])  # two different runs, both kept


def test_drift_figure_is_a_display_of_the_history():
    importance = torch.tensor([[0.1, 0.5, 0.2], [0.3, 0.4, 0.0]])
    display = plot_drift([0, 1], importance, ["a", "b", "c"], max_features=2)
    assert isinstance(display, viz.DriftDisplay) and display.ax_.figure is display.figure_
    lines = {line.get_label(): line.get_ydata().tolist() for line in display.ax_.lines}
    assert sorted(lines) == ["a", "b"]  # the two largest at the last epoch
    assert lines["b"] == pytest.approx([0.5, 0.4]) and lines["a"] == pytest.approx([0.1, 0.3])


def test_callback_takes_numpy_and_dataframe_probes():
    pd = pytest.importorskip("pandas")
    x = np.random.default_rng(0).random((4, 3))
    frame = pd.DataFrame(x, columns=["age", "bmi (kg/m2)", "sex"])
    callback = ExplanationCallback(lambda m: None, frame)
    assert callback.feature_names == ["age", "bmi (kg/m2)", "sex"]
    assert callback.scalar_keys == ["xai/mean_abs/age", "xai/mean_abs/bmi _kg_m2_", "xai/mean_abs/sex"]
    assert torch.equal(callback.probe, torch.from_numpy(x))
    assert torch.equal(ExplanationCallback(lambda m: None, x).probe, torch.from_numpy(x))
    ints = ExplanationCallback(lambda m: None, [[0, 1], [1, 0]]).probe
    assert ints.dtype == torch.get_default_dtype() and ints.tolist() == [[0.0, 1.0], [1.0, 0.0]]


def test_callback_rejects_bad_arguments():
    pd = pytest.importorskip("pandas")
    probe = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="on must be"):
        ExplanationCallback(lambda m: None, probe, on="test")
    with pytest.raises(ValueError, match="probe"):
        ExplanationCallback(lambda m: None, torch.zeros(3))
    with pytest.raises(ValueError, match="probe must be a non-empty"):
        ExplanationCallback(lambda m: None, torch.zeros(0, 3))
    with pytest.raises(ValueError, match=r"probe rows \[1, 3\] hold NaN"):
        ExplanationCallback(lambda m: None, torch.tensor([[0.0], [float("nan")], [1.0], [float("inf")]]))
    with pytest.raises(TypeError, match="probe column 'c'"):
        ExplanationCallback(lambda m: None, pd.DataFrame({"a": [1.0], "c": ["x"]}))
    with pytest.raises(ValueError, match="every_n_epochs"):
        ExplanationCallback(lambda m: None, probe, every_n_epochs=0)
    with pytest.raises(TypeError, match="every_n_epochs must be an int, got bool"):
        ExplanationCallback(lambda m: None, probe, every_n_epochs=True)
    with pytest.raises(ValueError, match="max_plot_features"):
        ExplanationCallback(lambda m: None, probe, max_plot_features=0)
    with pytest.raises(TypeError, match="explainer_factory"):
        ExplanationCallback("ig", probe)
    with pytest.raises(ValueError, match="2 feature_names for a probe with 3"):
        ExplanationCallback(lambda m: None, probe, feature_names=["a", "b"])
    with pytest.raises(TypeError, match="feature_names must be a sequence of strings"):
        ExplanationCallback(lambda m: None, probe, feature_names="abc")
    with pytest.raises(ValueError, match="same logging key 'xai/mean_abs/a_b'"):
        ExplanationCallback(lambda m: None, probe, feature_names=["a/b", "a b", "a(b"])
    with pytest.raises(ValueError, match="differ from those seen"):
        ExplanationCallback(lambda m: None, pd.DataFrame(probe.numpy(), columns=list("abc")), feature_names=list("abd"))
    with pytest.raises(ValueError, match="prefix"):
        ExplanationCallback(lambda m: None, probe, prefix="/xai")
    with pytest.raises(TypeError, match="attribute_kwargs"):
        ExplanationCallback(lambda m: None, probe, attribute_kwargs=[("target", 0)])
    with pytest.raises(TypeError, match="figures"):
        ExplanationCallback(lambda m: None, probe, figures="yes")


def test_callback_reports_nan_attributions_with_their_rows(tmp_path):
    x, y = data(rows=32)
    probe = x[:6].clone()
    probe[[1, 4], 0] = 50.0  # the model below is NaN there

    class Fragile(Regressor):
        def forward(self, z):
            return super().forward(z) + torch.sqrt(2.0 - z[:, 0])  # finite on the data (x in [0, 1])

    callback = _ig_callback(probe, None, figures=False)
    trainer = pl.Trainer(max_epochs=1, logger=False, callbacks=[callback], default_root_dir=tmp_path, **QUIET)
    with pytest.raises(ValueError, match=r"epoch 0: .*NaN or infinite attributions for probe rows \[1, 4\]"):
        trainer.fit(Fragile(), *loaders(x, y))


def test_pytorch_lightning_trainer_accepts_the_callback_the_writer_and_the_module(tmp_path):
    legacy = pytest.importorskip("pytorch_lightning")
    from torchxplain.integrations import ExplanationWriter, explain_module_class, merge_shards

    x, y = data(rows=32)
    callback = _ig_callback(x[:4], None)
    assert isinstance(callback, legacy.Callback) and isinstance(callback, pl.Callback)
    model = regressor_class(legacy)()
    trainer = legacy.Trainer(
        max_epochs=2, logger=legacy.loggers.CSVLogger(tmp_path), callbacks=[callback], limit_train_batches=2, **QUIET
    )
    trainer.fit(model, *loaders(x, y))
    assert [h["step"] for h in callback.history] == [1, 3]
    with open(Path(trainer.log_dir) / "metrics.csv") as handle:
        rows = [r for r in csv.DictReader(handle) if r.get("xai/mean_abs/x0")]
    assert [int(r["step"]) for r in rows] == [1, 3]
    assert is_png((Path(trainer.log_dir) / "explanations" / "xai" / "epoch001_drift.png").read_bytes())

    module = explain_module_class("pytorch_lightning")(IntegratedGradients(model.eval()), n_features=N_FEATURES)
    assert isinstance(module, legacy.LightningModule) and isinstance(module, pl.LightningModule)  # either Trainer
    assert explain_module_class("lightning.pytorch") is explain_module_class()
    legacy.Trainer(logger=False, callbacks=[ExplanationWriter(tmp_path / "shards")], **QUIET).predict(
        module, torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x), batch_size=8), return_predictions=False
    )
    merged = merge_shards(tmp_path / "shards", expected_rows=32)  # the writer got the rows' indices from the loop
    torch.testing.assert_close(merged["attributions"], IntegratedGradients(model).attribute(x).detach())
    with pytest.raises(ValueError, match="package must be one of"):
        explain_module_class("lightning")


@pytest.mark.slow
def test_import_torchxplain_imports_no_lightning_and_a_pytorch_lightning_only_install_runs_the_callback(tmp_path):
    """One subprocess (each costs seconds of imports): ``import torchxplain`` loads neither Lightning package; then,
    with ``lightning`` made unimportable, the integration falls back to ``pytorch_lightning`` and a fit runs."""
    pytest.importorskip("pytorch_lightning")
    script = textwrap.dedent(
        f"""
        import sys
        import torchxplain, torchxplain.integrations as integrations
        integrations.attribute_batch
        print("LOADED", sorted(m for m in ("lightning", "pytorch_lightning") if m in sys.modules))
        sys.modules["lightning"] = None  # from here on, as if only pytorch-lightning were installed
        import pytorch_lightning as legacy, torch
        from captum.attr import IntegratedGradients
        from torchxplain.integrations import ExplanationCallback, ExplainModule
        from torchxplain.integrations._lightning import _compat
        from tests.integration._lightning_setup import QUIET, data, loaders, regressor_class

        assert list(_compat.PACKAGES) == ["pytorch_lightning"] and issubclass(ExplainModule, legacy.LightningModule)
        x, y = data(rows=32)
        callback = ExplanationCallback(lambda m: IntegratedGradients(m), x[:4], figures=False)
        trainer = legacy.Trainer(max_epochs=2, logger=False, callbacks=[callback], default_root_dir={str(tmp_path)!r},
                                 limit_train_batches=2, **QUIET)
        trainer.fit(regressor_class(legacy)(), *loaders(x, y))
        print("EPOCHS", [h["epoch"] for h in callback.history], "lightning" in sys.modules and sys.modules["lightning"])
        """
    )
    env = dict(os.environ, TORCHXPLAIN_PROGRESS="0", PYTHONWARNINGS="ignore", MPLBACKEND="Agg")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "LOADED []" in done.stdout
    assert "EPOCHS [0, 1] None" in done.stdout
    assert (tmp_path / "explanations" / "xai" / "version_0" / "epoch001.pt").exists()

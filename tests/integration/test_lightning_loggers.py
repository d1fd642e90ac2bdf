"""The explanation callback against the real loggers: TensorBoard, MLflow (local file store), W&B (offline), CSV.

Each test fits 3 epochs, then reads back what landed through the logger's own storage (TensorBoard's event files,
MLflow's client, the W&B offline run's files, ``metrics.csv``): every scalar key with its steps and values, every
figure, every ``.pt`` record; then a second run into the same place must keep both runs' records.
"""

from __future__ import annotations

import csv
import json
import struct
from pathlib import Path
from typing import Any

import pytest
import torch
from captum.attr import IntegratedGradients

pl = pytest.importorskip("lightning.pytorch")
from lightning.pytorch.loggers import CSVLogger, MLFlowLogger, TensorBoardLogger, WandbLogger  # noqa: E402

from tests.integration._lightning_setup import QUIET, data, is_png, loaders, regressor_class  # noqa: E402
from torchxplain.integrations import ExplanationCallback  # noqa: E402

N = 4
NAMES = ["f0", "f1", "f2", "f3"]
Regressor = regressor_class(pl)
Read = dict[str, Any]  # {"scalars": {key: [(step, value)]}, "figures": {key: [(step|epoch, png)]}, "records": {...}}


def _fit(logger, seed: int, epochs: int, root: Path) -> ExplanationCallback:
    pl.seed_everything(seed)
    x, y = data(rows=48, n=N)
    callback = ExplanationCallback(
        lambda m: IntegratedGradients(m), x[:5], feature_names=NAMES, attribute_kwargs={"n_steps": 8}
    )
    trainer = pl.Trainer(
        max_epochs=epochs,
        logger=logger,
        callbacks=[callback],
        default_root_dir=root,
        limit_train_batches=2,
        limit_val_batches=1,
        enable_checkpointing=False,
        log_every_n_steps=1,
        **QUIET,
    )
    trainer.fit(Regressor(N), *loaders(x, y))
    return callback


def _records(folder: Path) -> dict[int, dict]:
    return {int(p.stem[5:8]): torch.load(p, weights_only=True) for p in sorted(folder.glob("epoch*.pt"))}


def _png_files(folder: Path) -> dict[str, list[tuple[int, bytes]]]:
    figures: dict[str, list[tuple[int, bytes]]] = {}
    for path in sorted(folder.glob("epoch*_*.png")):
        epoch, tag = path.stem[5:8], path.stem[9:]
        figures.setdefault(f"xai/figures/{tag}", []).append((int(epoch), path.read_bytes()))
    return figures


def _check_run(read: Read, callback: ExplanationCallback, figure_axis: str) -> None:
    """Every scalar and figure of every explained epoch landed, at the explanation's step, with distinct keys."""
    history = callback.history
    steps = [h["step"] for h in history]
    assert len(history) == 3 and steps == sorted(set(steps))
    scalars, figures = read["scalars"], read["figures"]
    for j, name in enumerate(NAMES):
        logged = scalars[f"xai/mean_abs/{name}"]
        assert [s for s, _ in logged] == steps
        assert [v for _, v in logged] == pytest.approx([float(h["importance"][j]) for h in history], rel=1e-6)
    imp = [h["importance"] for h in history]
    drift = [float((imp[e] - imp[e - 1]).abs().sum() / imp[e - 1].abs().sum()) for e in (1, 2)]
    assert [s for s, _ in scalars["xai/drift"]] == steps[1:]
    assert [v for _, v in scalars["xai/drift"]] == pytest.approx(drift, rel=1e-5)
    assert [s for s, _ in scalars["val_loss"]] == steps  # Lightning's own epoch-end metric shares the step
    assert set(figures) == {"xai/figures/beeswarm", "xai/figures/drift"}
    assert not set(figures) & set(scalars)  # no key is both a scalar and a figure
    axis = steps if figure_axis == "step" else [h["epoch"] for h in history]
    for key, entries in figures.items():
        assert [at for at, _ in entries] == axis, key
        assert all(is_png(png) for _, png in entries), key
    records = read["records"]
    assert sorted(records) == [0, 1, 2]
    for epoch, record in records.items():
        assert record["epoch"] == epoch and record["step"] == steps[epoch]
        torch.testing.assert_close(record["importance"], history[epoch]["importance"])
        assert record["attributions"].shape == (5, N) and record["feature_names"] == NAMES


def _check_second_run(first: Read, second: Read, runs: tuple[ExplanationCallback, ExplanationCallback]) -> None:
    assert sorted(first["records"]) == [0, 1, 2] and sorted(second["records"]) == [0]
    for read, callback in zip((first, second), runs):
        for epoch, record in read["records"].items():
            torch.testing.assert_close(record["importance"], callback.history[epoch]["importance"])
    assert not torch.equal(runs[0].history[0]["importance"], runs[1].history[0]["importance"])


# ---------------------------------------------------------------------------------------------- TensorBoard
def _read_tensorboard(log_dir: str) -> Read:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(log_dir, size_guidance={"scalars": 0, "images": 0})
    events.Reload()
    return {
        "scalars": {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]},
        "figures": {
            tag: [(e.step, e.encoded_image_string) for e in events.Images(tag)] for tag in events.Tags()["images"]
        },
        "records": _records(Path(log_dir) / "explanations" / "xai"),
    }


def test_tensorboard_logger_receives_every_scalar_figure_and_record(tmp_path):
    pytest.importorskip("tensorboard")
    first = TensorBoardLogger(tmp_path, name="tb")
    runs = (_fit(first, 0, 3, tmp_path), None)
    read = _read_tensorboard(first.log_dir)
    _check_run(read, runs[0], figure_axis="step")
    second = TensorBoardLogger(tmp_path, name="tb")
    runs = (runs[0], _fit(second, 1, 1, tmp_path))
    assert Path(second.log_dir).name == "version_1"
    _check_second_run(_read_tensorboard(first.log_dir), _read_tensorboard(second.log_dir), runs)


# ---------------------------------------------------------------------------------------------- CSV
def _read_csv(log_dir: str) -> Read:
    with open(Path(log_dir) / "metrics.csv") as handle:
        rows = list(csv.DictReader(handle))
    keys = [k for k in rows[0] if k not in ("epoch", "step")]
    scalars = {k: [(int(r["step"]), float(r[k])) for r in rows if r.get(k)] for k in keys}
    folder = Path(log_dir) / "explanations" / "xai"
    return {"scalars": scalars, "figures": _png_files(folder), "records": _records(folder)}


def test_csv_logger_receives_every_scalar_figure_and_record(tmp_path):
    first = CSVLogger(tmp_path, name="csv")
    callback = _fit(first, 0, 3, tmp_path)
    _check_run(_read_csv(first.log_dir), callback, figure_axis="epoch")
    second = CSVLogger(tmp_path, name="csv")
    runs = (callback, _fit(second, 1, 1, tmp_path))
    _check_second_run(_read_csv(first.log_dir), _read_csv(second.log_dir), runs)


# ---------------------------------------------------------------------------------------------- MLflow
def _read_mlflow(uri: str, run_id: str, scratch: Path) -> Read:
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    keys = client.get_run(run_id).data.metrics
    scalars = {k: [(m.step, m.value) for m in client.get_metric_history(run_id, k)] for k in keys}
    local = Path(client.download_artifacts(run_id, "explanations/xai", str(scratch / run_id)))
    assert {a.path.rpartition("/")[2] for a in client.list_artifacts(run_id, "explanations/xai")} == {
        p.name for p in local.iterdir()
    }
    return {"scalars": scalars, "figures": _png_files(local), "records": _records(local)}


def test_mlflow_logger_receives_every_scalar_figure_and_artifact(tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # the local file store (sqlite's migrations take ~20 s)
    monkeypatch.chdir(tmp_path / "..")  # nothing may land in the working directory
    before = set(Path.cwd().iterdir())
    uri = (tmp_path / "mlruns").as_uri()
    first = MLFlowLogger(experiment_name="xai", tracking_uri=uri)
    callback = _fit(first, 0, 3, tmp_path / "root")
    _check_run(_read_mlflow(uri, first.run_id, tmp_path / "dl"), callback, figure_axis="epoch")
    second = MLFlowLogger(experiment_name="xai", tracking_uri=uri)
    runs = (callback, _fit(second, 1, 1, tmp_path / "root"))
    assert second.run_id != first.run_id
    reads = [_read_mlflow(uri, lg.run_id, tmp_path / "dl2") for lg in (first, second)]
    _check_second_run(*reads, runs)
    assert set(Path.cwd().iterdir()) == before
    assert not (tmp_path / "root" / "explanations").exists()  # MLflow took the files: no fallback folder


# ---------------------------------------------------------------------------------------------- W&B
def _wandb_records(path: Path):
    """The protobuf records of an offline run's ``.wandb`` file (LevelDB log format: 32 KiB blocks of chunks)."""
    from wandb.proto import wandb_internal_pb2

    payload, block, position, parts = path.read_bytes(), 32768, 7, []
    assert payload[:4] == b":W&B"
    while position + 7 <= len(payload):
        left = block - position % block
        if left < 7:  # a block's tail too short for a chunk header is padding
            position += left
            continue
        _, length, kind = struct.unpack("<IHB", payload[position : position + 7])
        if kind == 0 and length == 0:
            position += left
            continue
        parts.append(payload[position + 7 : position + 7 + length])
        position += 7 + length
        if kind in (1, 4):  # FULL or LAST chunk: one record is complete
            record = wandb_internal_pb2.Record()
            record.ParseFromString(b"".join(parts))
            parts = []
            yield record


def _read_wandb(run_dir: Path) -> Read:
    scalars: dict[str, list] = {}
    figures: dict[str, list] = {}
    for record in _wandb_records(next(run_dir.glob("*.wandb"))):
        if record.WhichOneof("record_type") != "history":
            continue
        row = {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item}
        step = row["trainer/global_step"]
        images = [
            key[: -len("/_type")]
            for key, value in row.items()
            if key.endswith("/_type") and value == "images/separated"
        ]
        for image in images:
            (png,) = row[f"{image}/filenames"]
            figures.setdefault(image, []).append((step, (run_dir / "files" / png).read_bytes()))
        for key, value in row.items():
            internal = key.startswith(("_", "trainer/")) or any(key.startswith(f"{image}/") for image in images)
            if not internal and isinstance(value, (int, float)):
                scalars.setdefault(key, []).append((step, value))
    return {"scalars": scalars, "figures": figures, "records": _records(run_dir / "files" / "explanations" / "xai")}


@pytest.mark.slow
def test_wandb_offline_run_receives_every_scalar_figure_and_file(tmp_path, monkeypatch):
    wandb = pytest.importorskip("wandb")
    for key, value in {"WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path), "WANDB_SILENT": "true"}.items():
        monkeypatch.setenv(key, value)
    runs, dirs = [], []
    for seed, epochs in ((0, 3), (1, 1)):
        logger = WandbLogger(project="xai", save_dir=str(tmp_path), offline=True)
        runs.append(_fit(logger, seed, epochs, tmp_path / "root"))
        dirs.append(Path(logger.experiment.dir).parent)
        logger.experiment.finish()
    wandb.teardown()  # the service flushes the offline runs' transaction logs when it shuts down
    assert dirs[0] != dirs[1]
    first = _read_wandb(dirs[0])
    _check_run(first, runs[0], figure_axis="step")
    _check_second_run(first, _read_wandb(dirs[1]), (runs[0], runs[1]))
    assert not (tmp_path / "root" / "explanations").exists()  # the runs took the files: no fallback folder

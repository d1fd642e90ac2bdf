"""Where :class:`ExplanationCallback`'s scalars, figures and files go: each logger of the Trainer, into its own run.

Loggers are recognised by what they offer (duck typing, so the loggers of ``lightning.pytorch``,
``pytorch_lightning`` and look-alikes are treated the same). Every logger gets the scalars (``log_metrics``);
figures and files (the ``.pt`` records) go to:

* TensorBoard (``experiment.add_figure``): ``add_figure``; files in ``{log_dir}/explanations/{prefix}/``.
* W&B (``log_image``): ``log_image``; files in the run's files, ``{run.dir}/explanations/{prefix}/`` (synced
  with the run).
* MLflow (``run_id`` and ``experiment.log_artifact``): ``log_figure`` and ``log_artifact`` into the run's
  artifacts under ``explanations/{prefix}/``.
* CSV or any other logger with a ``log_dir``: PNG files and records in ``{log_dir}/explanations/{prefix}/``.
* any other logger: scalars only.

Every destination is unique to its run (a logger version, a W&B run, an MLflow run). When no logger takes
files (``logger=False``, or only custom loggers), files and PNGs go to
``{default_root_dir}/explanations/{prefix}/version_{n}/`` with the first free ``n``, so runs never overwrite
each other. Scalars and figures are logged at one step. Everything here runs on rank zero only.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

FigureSender = Callable[[str, Figure, int, str], None]  # (key, figure, step, file name)


@dataclass(frozen=True)
class _Destination:
    """What one logger takes: a figure sender, a local folder for files, an uploader of local files."""

    figure: FigureSender | None
    folder: str | None
    upload: Callable[[str], None] | None


def _destination(logger: Any, subdir: str) -> _Destination:
    experiment: Any = getattr(logger, "experiment", None)
    log_dir = getattr(logger, "log_dir", None)
    folder = os.path.join(log_dir, subdir) if isinstance(log_dir, (str, os.PathLike)) else None
    if callable(getattr(experiment, "add_figure", None)):  # TensorBoard's SummaryWriter

        def tensorboard(key: str, fig: Figure, step: int, _: str) -> None:
            experiment.add_figure(key, fig, global_step=step, close=False)

        return _Destination(tensorboard, folder, None)
    if callable(getattr(logger, "log_image", None)):  # WandbLogger: the run's files directory is synced

        def wandb(key: str, fig: Figure, step: int, _: str) -> None:
            logger.log_image(key=key, images=[fig], step=step)

        run_dir = getattr(experiment, "dir", None)
        return _Destination(wandb, os.path.join(run_dir, subdir) if isinstance(run_dir, str) else folder, None)
    run_id = getattr(logger, "run_id", None)
    if run_id is not None and callable(getattr(experiment, "log_artifact", None)):  # MLFlowLogger's MlflowClient

        def mlflow_figure(key: str, fig: Figure, step: int, file_name: str) -> None:
            experiment.log_figure(run_id, fig, f"{subdir}/{file_name}")

        def mlflow_file(path: str) -> None:
            experiment.log_artifact(run_id, path, subdir)

        return _Destination(
            mlflow_figure if callable(getattr(experiment, "log_figure", None)) else None, None, mlflow_file
        )
    if folder is not None:  # CSVLogger and other loggers with a log directory

        def png(key: str, fig: Figure, step: int, file_name: str) -> None:
            _save_png(fig, os.path.join(folder, file_name))

        return _Destination(png, folder, None)
    return _Destination(None, None, None)


def _save_png(fig: Figure, path: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")


def _fresh_version(root: str) -> str:
    n = 0
    while os.path.exists(os.path.join(root, f"version_{n}")):
        n += 1
    return os.path.join(root, f"version_{n}")


class RunOutputs:
    """The destinations of one ``Trainer.fit`` for one callback, resolved once (on rank zero).

    Args:
        loggers: ``trainer.loggers``.
        default_root_dir: ``trainer.default_root_dir`` (the fallback when no logger takes files).
        prefix: the callback's key prefix; files go to ``explanations/{prefix}/`` of each run.
    """

    def __init__(self, loggers: list[Any], default_root_dir: str, prefix: str) -> None:
        subdir = f"explanations/{prefix}"
        self.loggers = list(loggers)
        self.subdir = subdir
        self._destinations = [_destination(logger, subdir) for logger in self.loggers]
        if not any(d.folder or d.upload for d in self._destinations):

            def png(key: str, fig: Figure, step: int, file_name: str) -> None:
                _save_png(fig, os.path.join(fallback, file_name))

            fallback = _fresh_version(os.path.join(default_root_dir, "explanations", prefix))
            takes_figures = any(d.figure is not None for d in self._destinations)
            self._destinations.append(_Destination(None if takes_figures else png, fallback, None))

    @property
    def folders(self) -> list[str]:
        """The local folders that receive files (log directories, W&B run files, the fallback)."""
        return [d.folder for d in self._destinations if d.folder is not None]

    def log_scalars(self, scalars: Mapping[str, float], step: int) -> None:
        """``logger.log_metrics(scalars, step)`` on every logger."""
        for logger in self.loggers:
            logger.log_metrics(dict(scalars), step=step)

    def log_figure(self, key: str, fig: Figure, step: int, file_name: str) -> None:
        """Send ``fig`` to every destination that takes figures (or save it as ``file_name``), then close it."""
        try:
            for destination in self._destinations:
                if destination.figure is not None:
                    destination.figure(key, fig, step, file_name)
        finally:
            plt.close(fig)

    def save_record(self, record: Mapping[str, Any], file_name: str) -> None:
        """``torch.save(record)`` as ``file_name`` into every folder, and upload it to every MLflow-like run."""
        for folder in self.folders:
            os.makedirs(folder, exist_ok=True)
            torch.save(dict(record), os.path.join(folder, file_name))
        uploads = [d.upload for d in self._destinations if d.upload is not None]
        if uploads:
            with tempfile.TemporaryDirectory() as scratch:
                path = os.path.join(scratch, file_name)
                torch.save(dict(record), path)
                for upload in uploads:
                    upload(path)


__all__ = ["RunOutputs"]

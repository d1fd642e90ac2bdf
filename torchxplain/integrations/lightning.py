"""Lightning integration: explanations during training, and a whole dataset explained across processes.

* :class:`ExplanationCallback` explains a fixed probe batch every ``n`` epochs of a ``Trainer.fit``, logs
  per-feature scalars with ``log_dict``, figures through the active loggers and keeps its history in the
  checkpoint.
* :class:`ExplainModule` + :class:`ExplanationWriter` turn ``Trainer.predict`` into "explain this dataset":
  with ``strategy="ddp"`` every process explains its own rows (Lightning's predict sampler splits them
  without padding or duplicates), the writer stores one shard per rank with the rows' dataset indices, and
  the dataset-level importance (mean ``|attribution|`` per feature) is all-reduced with a torchmetrics
  metric. :func:`~torchxplain.integrations.batch.merge_shards` puts the shards back in dataset order.

Example (a script: ``strategy="ddp"`` re-launches it, so keep the ``__main__`` guard)::

    import lightning.pytorch as pl
    from torch.utils.data import DataLoader
    import torchxplain as tx
    from torchxplain.integrations.lightning import ExplainModule, ExplanationWriter, merge_shards

    if __name__ == "__main__":
        module = ExplainModule(tx.FourierShap.from_spectrum(spectrum, background))
        writer = ExplanationWriter("explanations/")
        pl.Trainer(accelerator="gpu", devices=8, strategy="ddp", callbacks=[writer], logger=False).predict(
            module, DataLoader(dataset, batch_size=4096), return_predictions=False)
        merged = merge_shards("explanations/")            # {"index": (N,), "attributions": (N, n)}
        # module.global_importance / explanations/importance.pt: (n,) mean |attribution| over all ranks

Ray Data recipe (elastic or streaming clusters; Ray is not a dependency). Batches arrive as dicts of numpy
arrays, so convert at the edge and call the same pure :func:`explain_batch` on each actor::

    import numpy as np, ray, torch
    import torchxplain as tx
    from torchxplain.integrations.batch import explain_batch

    class Explain:                                   # one instance per actor: the explainer is loaded once
        def __init__(self):
            self.explainer = tx.FourierShap.load("explainer.pt").to("cuda")
        def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            x = torch.as_tensor(batch["x"], device="cuda")
            out = explain_batch(self.explainer, {"inputs": x, "index": torch.as_tensor(batch["id"])})
            return {"id": batch["id"], "attributions": out["attributions"].cpu().numpy()}

    ray.data.read_parquet("s3://bucket/rows/").map_batches(
        Explain, batch_size=4096, num_gpus=1, concurrency=8).write_parquet("s3://bucket/explanations/")

Dataset-level importances are then a ``groupby``/``aggregate`` or a driver-side sum over the written rows.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Sequence
from typing import Any

import lightning.pytorch as pl
import matplotlib.pyplot as plt
import torch
from lightning.pytorch.callbacks import BasePredictionWriter, Callback
from lightning.pytorch.trainer.states import TrainerFn
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from torch import Tensor, nn
from torchmetrics import Metric

from torchxplain import viz
from torchxplain.integrations.batch import SHARD_PATTERN, explain_batch, merge_shards

__all__ = [
    "ExplainModule",
    "ExplanationCallback",
    "ExplanationWriter",
    "MeanAbsAttribution",
    "explain_batch",
    "merge_shards",
    "plot_drift",
]


# ------------------------------------------------------------------------------------------------ plots
def plot_drift(
    epochs: Sequence[int] | Tensor,
    importance: Tensor,
    feature_names: Sequence[str] | None = None,
    max_features: int = 10,
    ax: Axes | None = None,
) -> viz.DriftDisplay:
    """How each feature's mean ``|attribution|`` moved across epochs (the top features at the last epoch).

    Args:
        epochs: ``T`` epoch numbers.
        importance: ``(T, n)`` mean ``|attribution|`` per epoch and feature.
        feature_names: ``n`` names (default ``x0..``).
        max_features: number of lines drawn.

    Returns:
        The :class:`~torchxplain.viz.DriftDisplay` (``figure_``, ``ax_``).
    """
    return viz.DriftDisplay(epochs, importance, feature_names).plot(ax=ax, max_features=max_features)


# ------------------------------------------------------------------------------------------------ callback
class ExplanationCallback(Callback):
    """Explain a fixed probe batch during ``Trainer.fit`` and log how the explanations evolve.

    Runs at the end of every ``every_n_epochs``-th epoch, either after validation (``on="validation"``, the
    sanity check is skipped; the model is already in eval mode) or at the train-epoch end (``on="train"``: the
    model is switched to eval for the explanation and its mode restored). Gradients are turned back on and
    inference mode escaped, so gradient explainers work. Every rank computes the (small) probe explanation so
    that ``log_dict`` is called consistently; files and figures are written on rank zero only.

    Per run it logs ``{prefix}/mean_abs/{feature}`` scalars (mean ``|attribution|`` over the probe) and
    ``{prefix}/drift`` (relative L1 change of that vector since the previous run); writes
    ``{log_dir}/explanations/{prefix}/epoch{e:03d}.pt`` (probe, attributions, importance); and sends a beeswarm and a
    drift plot to each logger that takes figures (TensorBoard ``add_figure``, W&B ``log_image``, MLflow
    ``log_figure``), or else saves them as PNGs next to the ``.pt`` files. The history (epoch, step,
    importance) is in :meth:`state_dict`, so it survives checkpoint/resume.

    Args:
        explainer_factory: builds an explainer for the current module, e.g.
            ``lambda m: IntegratedGradients(m)`` or ``lambda m: FourierShap(m, background, k=64)``.
        probe: ``(P, n)`` inputs explained every time (moved to the module's device).
        every_n_epochs: explain after epochs ``every_n_epochs - 1, 2 * every_n_epochs - 1, ...``.
        on: ``"validation"`` or ``"train"``.
        feature_names: ``n`` names used in scalar keys and plots (default ``x0..``).
        attribute_kwargs: passed to ``explainer.attribute`` (e.g. ``target``).
        prefix: scalar/figure key prefix.
        figures: log figures (set False to log scalars and tensors only).
        max_plot_features: features shown in the plots.
    """

    def __init__(
        self,
        explainer_factory: Callable[[pl.LightningModule], Any],
        probe: Tensor,
        every_n_epochs: int = 1,
        on: str = "validation",
        feature_names: Sequence[str] | None = None,
        attribute_kwargs: dict[str, Any] | None = None,
        prefix: str = "xai",
        figures: bool = True,
        max_plot_features: int = 20,
    ) -> None:
        if not callable(explainer_factory):
            raise TypeError(f"explainer_factory must be callable (module -> explainer), got {explainer_factory!r}")
        if not isinstance(probe, Tensor) or probe.ndim != 2 or probe.shape[0] == 0:
            shape = tuple(probe.shape) if isinstance(probe, Tensor) else type(probe).__name__
            raise ValueError(f"probe must be a non-empty (P, n) tensor, got {shape}")
        if not isinstance(every_n_epochs, int) or every_n_epochs < 1:
            raise ValueError(f"every_n_epochs must be a positive int, got {every_n_epochs!r}")
        if on not in ("validation", "train"):
            raise ValueError(f"on must be 'validation' or 'train', got {on!r}")
        n = probe.shape[1]
        names = list(feature_names) if feature_names is not None else [f"x{i}" for i in range(n)]
        if len(names) != n:
            raise ValueError(f"got {len(names)} feature_names for a probe with {n} features")
        self.explainer_factory = explainer_factory
        self.probe = probe.detach().clone()
        self.every_n_epochs = every_n_epochs
        self.on = on
        self.feature_names = names
        self.attribute_kwargs = dict(attribute_kwargs or {})
        self.prefix = prefix
        self.figures = figures
        self.max_plot_features = max_plot_features
        self._epochs: list[int] = []
        self._steps: list[int] = []
        self._importance: list[Tensor] = []

    @property
    def state_key(self) -> str:
        return self._generate_state_key(on=self.on, prefix=self.prefix)

    # ---- history
    @property
    def history(self) -> list[dict[str, Any]]:
        """One ``{"epoch", "step", "importance": (n,) tensor}`` per explained epoch, in order."""
        return [
            {"epoch": e, "step": s, "importance": imp} for e, s, imp in zip(self._epochs, self._steps, self._importance)
        ]

    def to_dataframe(self) -> Any:
        """The history as a pandas ``DataFrame`` (rows: epochs; columns: features)."""
        import pandas as pd

        data = torch.stack(self._importance).double().numpy() if self._importance else None
        return pd.DataFrame(data, index=pd.Index(self._epochs, name="epoch"), columns=self.feature_names)

    def state_dict(self) -> dict[str, Any]:
        n = len(self.feature_names)
        return {
            "epochs": torch.tensor(self._epochs, dtype=torch.long),
            "steps": torch.tensor(self._steps, dtype=torch.long),
            "importance": torch.stack(self._importance) if self._importance else torch.zeros(0, n),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        importance = state_dict["importance"]
        if importance.ndim != 2 or importance.shape[1] != len(self.feature_names):
            raise ValueError(
                f"checkpointed history has {tuple(importance.shape)} importances; this callback's "
                f"probe has {len(self.feature_names)} features"
            )
        self._epochs = [int(e) for e in state_dict["epochs"]]
        self._steps = [int(s) for s in state_dict["steps"]]
        self._importance = list(importance.unbind(0))

    # ---- hooks
    def on_validation_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self.on == "validation" and not trainer.sanity_checking and trainer.state.fn == TrainerFn.FITTING:
            self._maybe_explain(trainer, pl_module)

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self.on == "train":
            self._maybe_explain(trainer, pl_module)

    def _maybe_explain(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        epoch = trainer.current_epoch
        if (epoch + 1) % self.every_n_epochs:
            return
        log_dir = trainer.log_dir  # on every rank: it broadcasts, and a rank-zero-only call would hang
        attributions = self._explain(pl_module)
        importance = attributions.abs().reshape(attributions.shape[0], -1).mean(0).float().cpu()
        keep = [i for i, e in enumerate(self._epochs) if e < epoch]  # a resumed epoch replaces its old entry
        self._epochs = [self._epochs[i] for i in keep] + [epoch]
        self._steps = [self._steps[i] for i in keep] + [trainer.global_step]
        self._importance = [self._importance[i] for i in keep] + [importance]

        scalars = {f"{self.prefix}/mean_abs/{name}": importance[j] for j, name in enumerate(self.feature_names)}
        if len(self._importance) > 1:
            previous = self._importance[-2]
            scalars[f"{self.prefix}/drift"] = (importance - previous).abs().sum() / previous.abs().sum().clamp_min(
                torch.finfo(previous.dtype).tiny
            )
        pl_module.log_dict(scalars, on_step=False, on_epoch=True)
        if trainer.is_global_zero:
            self._write(trainer, log_dir, epoch, attributions.cpu(), importance)

    def _explain(self, pl_module: pl.LightningModule) -> Tensor:
        was_training = pl_module.training
        pl_module.eval()
        try:
            with torch.inference_mode(False), torch.enable_grad():
                probe = self.probe.to(pl_module.device).clone()
                explainer = self.explainer_factory(pl_module)
                attributions = explainer.attribute(probe, **self.attribute_kwargs)
        finally:
            pl_module.train(was_training)
        if not isinstance(attributions, Tensor) or attributions.shape != probe.shape:
            raise ValueError(
                "the explainer must return one tensor shaped like the probe "
                f"{tuple(probe.shape)}, got {getattr(attributions, 'shape', type(attributions))}"
            )
        return attributions.detach()

    def _write(
        self, trainer: pl.Trainer, log_dir: str | None, epoch: int, attributions: Tensor, importance: Tensor
    ) -> None:
        folder = os.path.join(log_dir or trainer.default_root_dir, "explanations", self.prefix)
        os.makedirs(folder, exist_ok=True)
        torch.save(
            {
                "epoch": epoch,
                "step": trainer.global_step,
                "probe": self.probe.cpu(),
                "attributions": attributions,
                "importance": importance,
                "feature_names": self.feature_names,
            },
            os.path.join(folder, f"epoch{epoch:03d}.pt"),
        )
        if not self.figures:
            return
        beeswarm = viz.BeeswarmDisplay(attributions, self.probe, self.feature_names).plot(
            max_features=self.max_plot_features, title=f"Attributions on the probe, epoch {epoch}"
        )
        drift = plot_drift(self._epochs, torch.stack(self._importance), self.feature_names, self.max_plot_features)
        self._log_figure(trainer, folder, "beeswarm", beeswarm.figure_, epoch)
        self._log_figure(trainer, folder, "drift", drift.figure_, epoch)

    def _log_figure(self, trainer: pl.Trainer, folder: str, tag: str, fig: Figure, epoch: int) -> None:
        key, step, handled = f"{self.prefix}/{tag}", trainer.global_step, False
        for logger in trainer.loggers:
            experiment = getattr(logger, "experiment", None)
            if hasattr(experiment, "add_figure"):  # TensorBoard's SummaryWriter
                experiment.add_figure(key, fig, global_step=step, close=False)
            elif hasattr(logger, "log_image"):  # WandbLogger
                logger.log_image(key=key, images=[fig], step=step)
            elif hasattr(experiment, "log_figure") and hasattr(logger, "run_id"):  # MLFlowLogger's MlflowClient
                experiment.log_figure(logger.run_id, fig, f"{key}_epoch{epoch:03d}.png")
            else:
                continue
            handled = True
        if handled:
            plt.close(fig)
        else:
            viz.save(fig, os.path.join(folder, f"epoch{epoch:03d}_{tag}.png"))


# ------------------------------------------------------------------------------------------------ predict
class MeanAbsAttribution(Metric):
    """Dataset-level importance: mean ``|attribution|`` per feature, summed across ranks then divided.

    Args:
        n_features: number of features per row (attributions are flattened to ``(B, n_features)``).
    """

    is_differentiable = False
    higher_is_better = None
    full_state_update = False

    def __init__(self, n_features: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(n_features, int) or n_features < 1:
            raise ValueError(f"n_features must be a positive int, got {n_features!r}")
        self.n_features = n_features
        self.total_rows = 0
        self.add_state("total", torch.zeros(n_features, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")

    def update(self, attributions: Tensor) -> None:
        """Add ``(B, ...)`` attributions whose rows flatten to ``n_features`` values."""
        flat = attributions.detach().reshape(attributions.shape[0], -1)
        if flat.shape[1] != self.n_features:
            raise ValueError(f"attributions have {flat.shape[1]} features per row, expected {self.n_features}")
        self.total += flat.abs().sum(0).to(self.total.dtype)
        self.count += flat.shape[0]

    def compute(self) -> Tensor:
        """``(n_features,)`` float64 mean ``|attribution|`` over every row seen on every rank.

        Also sets ``total_rows`` (rows seen on all ranks).
        """
        self.total_rows = int(self.count)  # the states are all-reduced while compute runs
        return self.total / self.count


class ExplainModule(pl.LightningModule):
    """A ``LightningModule`` whose ``predict_step`` explains a batch (see :func:`explain_batch`).

    The explainer (an ``nn.Module`` explainer is registered, so Lightning moves it to the device) and, when
    it is an ``nn.Module``, its ``forward_func`` are moved with the module. ``predict_step`` escapes
    ``torch.inference_mode`` locally, so the default ``Trainer(inference_mode=True)`` works for gradient
    explainers (on NCCL as well as gloo).

    Args:
        explainer: a torchxplain explainer or any Captum ``Attribution``.
        n_features: features per row for the dataset-level importance (default: ``explainer.n_features`` when
            it exists; ``None`` there: no importance metric).
        attribute_kwargs: passed to ``explainer.attribute``.

    Attributes:
        importance: the :class:`MeanAbsAttribution` metric (or ``None``).
        global_importance: ``(n,)`` its all-reduced value after ``Trainer.predict``.
    """

    def __init__(
        self, explainer: Any, n_features: int | None = None, attribute_kwargs: dict[str, Any] | None = None
    ) -> None:
        super().__init__()
        if not callable(getattr(explainer, "attribute", None)):
            raise TypeError(f"explainer must have an attribute() method, got {type(explainer).__name__}")
        self.explainer = explainer
        model = getattr(explainer, "forward_func", None)
        if isinstance(model, nn.Module) and not (
            isinstance(explainer, nn.Module) and any(m is model for m in explainer.modules())
        ):
            self.model = model  # registered here (not in the explainer) only so that the strategy moves it
        n_features = n_features if n_features is not None else getattr(explainer, "n_features", None)
        self.importance = MeanAbsAttribution(n_features) if n_features is not None else None
        self.attribute_kwargs = dict(attribute_kwargs or {})
        self.global_importance: Tensor | None = None

    def predict_step(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> dict[str, Tensor]:
        out = explain_batch(self.explainer, batch, **self.attribute_kwargs)
        if self.importance is not None:
            with torch.inference_mode(False):
                self.importance.update(out["attributions"])
        return out

    def on_predict_epoch_start(self) -> None:
        if self.importance is not None:
            with torch.inference_mode(False):  # states made in inference mode could not be updated later
                self.importance.reset()

    def on_predict_epoch_end(self) -> None:
        if self.importance is not None:
            self.global_importance = self.importance.compute()  # all-reduces: every rank calls it


class ExplanationWriter(BasePredictionWriter):
    """Write the explanations of ``Trainer.predict(ExplainModule(...))``: one shard per rank, with row indices.

    Files in ``output_dir``: ``shard-rank{r:05d}-part{p:05d}.pt`` holding ``{"index": (m,) int64 dataset row
    ids, "attributions": (m, ...)}`` (one part per rank unless ``rows_per_file`` splits it), and
    ``importance.pt`` (rank zero) with the all-reduced ``{"mean_abs": (n,), "rows": N}`` when the module has
    an importance metric. Merge with :func:`merge_shards`. Everything loads with ``weights_only=True``.

    Args:
        output_dir: an empty or new directory (existing shards are refused, so runs never mix).
        rows_per_file: flush a part every this many rows per rank (bounded memory); ``None``: one part.
    """

    def __init__(self, output_dir: str | os.PathLike[str], rows_per_file: int | None = None) -> None:
        super().__init__(write_interval="batch")
        if rows_per_file is not None and (not isinstance(rows_per_file, int) or rows_per_file < 1):
            raise ValueError(f"rows_per_file must be a positive int or None, got {rows_per_file!r}")
        self.output_dir = os.fspath(output_dir)
        self.rows_per_file = rows_per_file
        self._index: list[Tensor] = []
        self._attributions: list[Tensor] = []
        self._part = 0

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        os.makedirs(self.output_dir, exist_ok=True)
        # Lightning puts a barrier after the setup hooks, so no rank has written yet
        if glob.glob(os.path.join(self.output_dir, SHARD_PATTERN)):
            raise FileExistsError(f"{self.output_dir!r} already holds explanation shards; use an empty directory")
        self._index, self._attributions, self._part = [], [], 0

    def write_on_batch_end(
        self,
        trainer: pl.Trainer,
        pl_module: pl.LightningModule,
        prediction: Any,
        batch_indices: Sequence[int] | None,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int,
    ) -> None:
        if not isinstance(prediction, dict) or "attributions" not in prediction:
            raise TypeError("ExplanationWriter expects predict_step to return explain_batch's dict")
        if batch_indices is not None:
            index = torch.as_tensor(list(batch_indices), dtype=torch.long)
        elif "index" in prediction:
            index = prediction["index"].long().cpu()
        else:
            raise ValueError("no row indices: the dataloader's sampler reported none and the batch has no 'index'")
        if index.shape[0] != prediction["attributions"].shape[0]:
            raise ValueError(f"{index.shape[0]} indices for {prediction['attributions'].shape[0]} rows")
        self._index.append(index)
        self._attributions.append(prediction["attributions"].cpu())
        if self.rows_per_file is not None and sum(len(i) for i in self._index) >= self.rows_per_file:
            self._flush(trainer.global_rank)

    def on_predict_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._flush(trainer.global_rank)
        metric = getattr(pl_module, "importance", None)
        if isinstance(metric, MeanAbsAttribution):
            mean_abs = metric.compute()  # collective: every rank calls it
            if trainer.is_global_zero:
                torch.save(
                    {"mean_abs": mean_abs.cpu(), "rows": metric.total_rows},
                    os.path.join(self.output_dir, "importance.pt"),
                )

    def _flush(self, rank: int) -> None:
        if not self._index:
            return
        shard = {"index": torch.cat(self._index), "attributions": torch.cat(self._attributions)}
        path = os.path.join(self.output_dir, f"shard-rank{rank:05d}-part{self._part:05d}.pt")
        torch.save(shard, path)
        self._index, self._attributions = [], []
        self._part += 1

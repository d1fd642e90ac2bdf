"""``Trainer.predict`` as "explain this dataset": a module whose ``predict_step`` explains, a writer of shards.

With ``strategy="ddp"`` every process explains its own rows (Lightning's predict sampler splits them without
padding or duplicates), :class:`ExplanationWriter` stores one shard per rank with the rows' dataset indices,
and the dataset-level importance (mean ``|attribution|`` per feature) is all-reduced by
:class:`~torchxplain.integrations._lightning._metrics.MeanAbsAttribution`.
:func:`~torchxplain.integrations._batch.merge_shards` puts the shards back in dataset order.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from torchxplain._core import check_int
from torchxplain.integrations._batch import SHARD_PATTERN, attribute_batch
from torchxplain.integrations._lightning._compat import DEFAULT, PACKAGES, BasePredictionWriter, PackageName
from torchxplain.integrations._lightning._compat import package as lightning_package
from torchxplain.integrations._lightning._metrics import MeanAbsAttribution


def check_attribute_kwargs(attribute_kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """``attribute_kwargs`` as a fresh dict (``None``: empty); a ``TypeError`` for anything but a str-keyed mapping."""
    if attribute_kwargs is None:
        return {}
    if not isinstance(attribute_kwargs, Mapping) or not all(isinstance(k, str) for k in attribute_kwargs):
        raise TypeError(
            "attribute_kwargs must be a dict of keyword arguments for explainer.attribute (e.g. {'target': 0}), "
            f"got {type(attribute_kwargs).__name__}"
        )
    return dict(attribute_kwargs)


class _ExplainModuleLogic:
    """``predict_step`` explains a batch with :func:`~torchxplain.integrations.attribute_batch`.

    The explainer (an ``nn.Module`` explainer is registered, so Lightning moves it to the device) and, when it is
    an ``nn.Module``, its ``forward_func`` are moved with the module. ``predict_step`` escapes
    ``torch.inference_mode`` locally, so the default ``Trainer(inference_mode=True)`` works for gradient
    explainers (on NCCL as well as gloo).

    Args:
        explainer: a torchxplain explainer or any Captum ``Attribution``.
        n_features: values per row for the dataset-level importance (default ``explainer.n_features`` when it
            exists; ``None`` there: no importance metric).
        attribute_kwargs: passed to ``explainer.attribute`` (e.g. ``{"target": 0}``).

    Attributes:
        importance: the :class:`MeanAbsAttribution` metric (or ``None``).
        global_importance: ``(n,)`` float64, its all-reduced value after ``Trainer.predict``.

    Example:
        >>> import torch
        >>> import torchxplain as tx
        >>> from torchxplain.integrations import ExplainModule
        >>> spec = tx.FourierSpectrum(torch.tensor([[0, 0, 0], [1, 0, 0]], dtype=torch.bool), torch.tensor([1.0, 2.0]))
        >>> module = ExplainModule(tx.FourierShap.from_spectrum(spec, torch.zeros(1, 3)))  # for Trainer.predict
        >>> module.predict_step({"inputs": torch.ones(2, 3), "index": torch.tensor([7, 3])}, 0)
        {'attributions': tensor([[-4.,  0.,  0.],
                [-4.,  0.,  0.]]), 'index': tensor([7, 3])}
    """

    importance: MeanAbsAttribution | None
    global_importance: Tensor | None

    def __init__(
        self, explainer: Any, n_features: int | None = None, attribute_kwargs: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__()
        if not callable(getattr(explainer, "attribute", None)):
            raise TypeError(f"explainer must have an attribute() method, got {type(explainer).__name__}")
        self.attribute_kwargs = check_attribute_kwargs(attribute_kwargs)
        n_features = n_features if n_features is not None else getattr(explainer, "n_features", None)
        self.explainer = explainer
        model = getattr(explainer, "forward_func", None)
        if isinstance(model, nn.Module) and not (
            isinstance(explainer, nn.Module) and any(m is model for m in explainer.modules())
        ):
            self.model = model  # registered here (not in the explainer) only so that the strategy moves it
        self.importance = MeanAbsAttribution(n_features) if n_features is not None else None
        self.global_importance = None

    def predict_step(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> dict[str, Tensor]:
        """``{"attributions": (B, ...)}`` (plus ``"index"`` for mapping batches that carry one)."""
        out = attribute_batch(self.explainer, batch, **self.attribute_kwargs)
        if self.importance is not None:
            with torch.inference_mode(False):
                self.importance.update(out["attributions"])
        return out

    def on_predict_epoch_start(self) -> None:
        """Reset the importance metric (outside inference mode, so later updates may write to it)."""
        if self.importance is not None:
            with torch.inference_mode(False):  # states made in inference mode could not be updated later
                self.importance.reset()

    def on_predict_epoch_end(self) -> None:
        """Set ``global_importance`` from the all-reduced metric (a collective: every rank calls it)."""
        if self.importance is not None:
            self.global_importance = self.importance.compute()  # all-reduces: every rank calls it

    @property
    def trainer(self) -> Any:
        """The Trainer this module is attached to (Lightning's property)."""
        return _lightning_base(type(self)).trainer.fget(self)

    @trainer.setter
    def trainer(self, trainer: Any) -> None:
        """Attach ``trainer``. With both Lightning packages installed the module derives from both
        ``LightningModule`` s (either Trainer accepts it) and takes, here, the class whose hooks are the Trainer's
        own package's (each Trainer compares the hooks with its own ``LightningModule``)."""
        own = _class_for(trainer)
        if own is not None and type(self) is not own:
            self.__class__ = own  # the same bases in another order: the same instance layout
        _lightning_base(type(self)).trainer.fset(self, trainer)


_BASES = {name: lightning_package(name).LightningModule for name in PACKAGES}


def _lightning_base(cls: type) -> Any:
    """The first ``LightningModule`` in ``cls``'s method order (whose hooks and ``trainer`` property it uses)."""
    return next(k for k in cls.__mro__ if k in _BASES.values())


class ExplainModule(_ExplainModuleLogic, *_BASES.values()):  # type: ignore[misc]
    __doc__ = (
        "A ``LightningModule`` of every installed Lightning package (``"
        + DEFAULT
        + "``'s hooks first; the Trainer of either package accepts it) whose "
        + (_ExplainModuleLogic.__doc__ or "")
    )


if len(PACKAGES) == 2:  # the same bases, pytorch_lightning's hooks first (taken when that Trainer attaches)

    class PytorchLightningExplainModule(_ExplainModuleLogic, *reversed(_BASES.values())):  # type: ignore[misc]
        __doc__ = "The same module with ``pytorch_lightning``'s hooks first; " + (_ExplainModuleLogic.__doc__ or "")

    _BY_PACKAGE: dict[str, type] = {DEFAULT: ExplainModule, "pytorch_lightning": PytorchLightningExplainModule}
else:
    _BY_PACKAGE = {DEFAULT: ExplainModule}


def _class_for(trainer: Any) -> type | None:
    """The module class whose hooks are ``trainer``'s package's (``None``: not a Lightning Trainer)."""
    for name, cls in _BY_PACKAGE.items():
        if isinstance(trainer, lightning_package(name).Trainer):
            return cls
    return None


def explain_module_class(package: PackageName | None = None) -> type[Any]:
    """:class:`ExplainModule` with one Lightning package's hooks first.

    ``ExplainModule`` derives from the ``LightningModule`` of every installed package, so the Trainer of either
    package accepts it and, when it attaches, the module takes that package's hooks; this function names the class
    explicitly (for pickling or ``isinstance`` checks).

    Args:
        package: ``"lightning.pytorch"`` or ``"pytorch_lightning"`` (``None``: the default package).

    Returns:
        A ``LightningModule`` subclass taking :class:`ExplainModule`'s arguments, e.g.
        ``explain_module_class("pytorch_lightning")(explainer)``.

    Raises:
        ValueError: an unknown package name. ImportError: that package is not installed.
    """
    lightning_package(package)  # checks the name and that the package is installed
    return _BY_PACKAGE[package or DEFAULT]


class ExplanationWriter(BasePredictionWriter):
    """Write the explanations of ``Trainer.predict(ExplainModule(...))``: one shard per rank, with row indices.

    Files in ``output_dir``: ``shard-rank{r:05d}-part{p:05d}.pt`` holding ``{"index": (m,) int64 dataset row ids,
    "attributions": (m, ...)}`` (one part per rank unless ``rows_per_file`` splits it), and ``importance.pt``
    (rank zero) with the all-reduced ``{"mean_abs": (n,) float64, "rows": N}`` when the module has an importance
    metric. Merge with :func:`~torchxplain.integrations._batch.merge_shards`. Everything loads with
    ``weights_only=True``. Accepted by the Trainers of both ``lightning.pytorch`` and ``pytorch_lightning``.

    Args:
        output_dir: an empty or new directory (existing shards are refused, so runs never mix).
        rows_per_file: flush a part every this many rows per rank (bounded memory); ``None``: one part.
    """

    def __init__(self, output_dir: str | os.PathLike[str], rows_per_file: int | None = None) -> None:
        super().__init__(write_interval="batch")
        if not isinstance(output_dir, (str, os.PathLike)):
            raise TypeError(f"output_dir must be a path (str or os.PathLike), got {type(output_dir).__name__}")
        if rows_per_file is not None:
            check_int(rows_per_file, "rows_per_file", 1, hint="or None for one part per rank")
        self.output_dir = os.fspath(output_dir)
        self.rows_per_file = rows_per_file
        self._index: list[Tensor] = []
        self._attributions: list[Tensor] = []
        self._part = 0

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        """Create ``output_dir``; a ``FileExistsError`` if it already holds shards."""
        os.makedirs(self.output_dir, exist_ok=True)
        # Lightning puts a barrier after the setup hooks, so no rank has written yet
        if glob.glob(os.path.join(self.output_dir, SHARD_PATTERN)):
            raise FileExistsError(f"{self.output_dir!r} already holds explanation shards; use an empty directory")
        self._index, self._attributions, self._part = [], [], 0

    def write_on_batch_end(
        self,
        trainer: Any,
        pl_module: Any,
        prediction: Any,
        batch_indices: Sequence[int] | None,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int,
    ) -> None:
        """Buffer one batch's ``(B,)`` row indices and ``(B, ...)`` attributions; flush per ``rows_per_file``."""
        if not isinstance(prediction, dict) or "attributions" not in prediction:
            raise TypeError("ExplanationWriter expects predict_step to return attribute_batch's dict")
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

    def on_predict_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        """Write this rank's last part, then (rank zero) ``importance.pt`` from the all-reduced metric."""
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
        torch.save(shard, os.path.join(self.output_dir, f"shard-rank{rank:05d}-part{self._part:05d}.pt"))
        self._index, self._attributions = [], []
        self._part += 1


__all__ = ["ExplainModule", "ExplanationWriter", "explain_module_class"]

"""``ExplanationCallback``: explain a fixed probe batch during ``Trainer.fit`` and log how explanations evolve."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import torch
from matplotlib.axes import Axes
from torch import Tensor

from torchxplain import viz
from torchxplain._core import check_flag, check_int
from torchxplain._core.saved_fields import SavedFieldError, SavedFields
from torchxplain.integrations._lightning._compat import Callback
from torchxplain.integrations._lightning._outputs import RunOutputs
from torchxplain.integrations._lightning._predict import check_attribute_kwargs
from torchxplain.integrations._lightning._probe import check_prefix, check_probe, nonfinite_rows, scalar_keys

When = Literal["validation", "train"]


def plot_drift(
    epochs: Sequence[int] | Tensor,
    importance: Tensor,
    feature_names: Sequence[str] | None = None,
    max_features: int = 10,
    ax: Axes | None = None,
) -> viz.DriftDisplay:
    """The callback's drift figure: one line per feature (the top ``max_features`` at the last epoch).

    Args:
        epochs: ``T`` epoch numbers.
        importance: ``(T, n)`` mean ``|attribution|`` per epoch and feature (e.g. ``torch.stack`` of the
            callback's history importances).
        feature_names: ``n`` names (default ``x0..``).
        max_features: number of lines drawn.
        ax: draw into these axes (default: a new figure).

    Returns:
        The drawn :class:`~torchxplain.viz.DriftDisplay` (``figure_``, ``ax_``).
    """
    return viz.DriftDisplay(epochs, importance, feature_names).plot(ax=ax, max_features=max_features)


class ExplanationCallback(Callback):
    """Explain a fixed probe batch during ``Trainer.fit`` and log how the explanations evolve.

    Accepted by the Trainers of both ``lightning.pytorch`` and ``pytorch_lightning``. Runs at the end of every
    ``every_n_epochs``-th epoch, either after validation (``on="validation"``; the sanity check is skipped; the
    model is already in eval mode) or at the train-epoch end (``on="train"``: the model is switched to eval for
    the explanation and its mode restored). Gradients are turned back on and inference mode escaped, so
    gradient explainers work. Every rank computes the (small) probe explanation so that ``log_dict`` is called
    consistently; loggers, figures and files are written on rank zero only.

    Per explained epoch, all at one step (Lightning's step for epoch-end metrics: the index of the epoch's last
    optimizer step, where ``val_loss`` lands too):

    * scalars ``{prefix}/mean_abs/{feature}`` (mean ``|attribution|`` over the probe) and, from the second
      explained epoch on, ``{prefix}/drift`` (relative L1 change of that vector since the previous one), sent to
      every logger and to ``trainer.callback_metrics`` (so ``ModelCheckpoint(monitor=...)`` can use them);
    * figures ``{prefix}/figures/beeswarm`` and ``{prefix}/figures/drift`` (unless ``figures=False``);
    * a record ``epoch{e:03d}.pt`` (epoch, step, probe, attributions, importance, feature names).

    Each logger receives them in its own run:
    TensorBoard and CSV in ``{log_dir}/explanations/{prefix}/``, W&B in the run's files, MLflow as run artifacts;
    without such a logger, in ``{default_root_dir}/explanations/{prefix}/version_{n}/``. The history (epoch,
    step, importance) is in :meth:`state_dict`, so it survives checkpoint/resume.

    Args:
        explainer_factory: builds an explainer for the current module, e.g. ``lambda m: IntegratedGradients(m)``
            or ``lambda m: FourierShap(m, background, k=64)``; its ``attribute(probe)`` must return one tensor
            shaped like the probe.
        probe: ``(P, n)`` inputs explained every time (tensor, numpy array, list or DataFrame; moved to the
            module's device). At fit start an array, list or DataFrame probe is converted to the module's floating
            dtype (a tensor probe must already have it) and the module is run on its first row, so a probe of the
            wrong width or dtype is refused then, not at the end of an epoch. NaN/inf rows are refused.
        every_n_epochs: explain after epochs ``every_n_epochs - 1, 2 * every_n_epochs - 1, ...``.
        on: ``"validation"`` or ``"train"``.
        feature_names: ``n`` distinct names used in keys and plots (default: the DataFrame's columns, else
            ``x0..``). Characters outside letters, digits, ``_ . -`` and space become ``_`` in keys.
        attribute_kwargs: passed to ``explainer.attribute`` (e.g. ``{"target": 0}``).
        prefix: key prefix, e.g. ``"xai"`` or ``"xai/ig"`` (two callbacks need two prefixes).
        figures: log figures (``False``: scalars and records only).
        max_plot_features: features shown in the plots.

    Raises:
        ValueError: from :meth:`on_validation_epoch_end` / :meth:`on_train_epoch_end` when the explainer returns
            NaN or infinite attributions (the probe rows are named).

    Example:
        >>> import torch
        >>> from captum.attr import IntegratedGradients
        >>> from torchxplain.integrations import ExplanationCallback
        >>> probe = torch.rand(8, 3)  # a fixed batch, explained at the end of every 2nd validation epoch
        >>> callback = ExplanationCallback(lambda module: IntegratedGradients(module), probe, every_n_epochs=2)
        >>> callback.scalar_keys  # what each logger receives (pass it to Trainer(callbacks=[callback]))
        ['xai/mean_abs/x0', 'xai/mean_abs/x1', 'xai/mean_abs/x2']
    """

    def __init__(
        self,
        explainer_factory: Callable[[Any], Any],
        probe: Any,
        every_n_epochs: int = 1,
        on: When = "validation",
        feature_names: Sequence[str] | None = None,
        attribute_kwargs: Mapping[str, Any] | None = None,
        prefix: str = "xai",
        figures: bool = True,
        max_plot_features: int = 20,
    ) -> None:
        if not callable(explainer_factory):
            raise TypeError(f"explainer_factory must be callable (module -> explainer), got {explainer_factory!r}")
        if on not in ("validation", "train"):
            raise ValueError(f"on must be 'validation' or 'train', got {on!r}")
        check_flag(figures, "figures")
        self.probe, self.feature_names = check_probe(probe, feature_names)
        self._probe_is_tensor = isinstance(probe, Tensor) and probe.is_floating_point()
        self.every_n_epochs = check_int(every_n_epochs, "every_n_epochs", 1)
        self.max_plot_features = check_int(max_plot_features, "max_plot_features", 1)
        self.prefix = check_prefix(prefix)
        self.scalar_keys = scalar_keys(self.prefix, self.feature_names)
        self.explainer_factory = explainer_factory
        self.on: When = on
        self.attribute_kwargs = check_attribute_kwargs(attribute_kwargs)
        self.figures = figures
        self._epochs: list[int] = []
        self._steps: list[int] = []
        self._importance: list[Tensor] = []
        self._outputs: RunOutputs | None = None

    @property
    def state_key(self) -> str:
        """The key of this callback's state in a checkpoint, one per ``(on, prefix)`` (two callbacks coexist)."""
        return self._generate_state_key(on=self.on, prefix=self.prefix)

    @property
    def drift_key(self) -> str:
        """The drift scalar's key, ``{prefix}/drift``."""
        return f"{self.prefix}/drift"

    def figure_key(self, tag: Literal["beeswarm", "drift"]) -> str:
        """A figure's key, ``{prefix}/figures/{tag}``."""
        return f"{self.prefix}/figures/{tag}"

    # ---- history
    @property
    def history(self) -> list[dict[str, Any]]:
        """One ``{"epoch", "step", "importance": (n,) float32 tensor}`` per explained epoch, in order."""
        return [
            {"epoch": e, "step": s, "importance": imp} for e, s, imp in zip(self._epochs, self._steps, self._importance)
        ]

    def to_dataframe(self) -> Any:
        """The history as a pandas ``DataFrame`` (rows: epochs; columns: features)."""
        import pandas as pd

        data = torch.stack(self._importance).double().numpy() if self._importance else None
        return pd.DataFrame(data, index=pd.Index(self._epochs, name="epoch"), columns=self.feature_names)

    def state_dict(self) -> dict[str, Any]:
        """``{"epochs": (T,) int64, "steps": (T,) int64, "importance": (T, n) float32}``: the history."""
        n = len(self.feature_names)
        return {
            "epochs": torch.tensor(self._epochs, dtype=torch.long),
            "steps": torch.tensor(self._steps, dtype=torch.long),
            "importance": torch.stack(self._importance) if self._importance else torch.zeros(0, n),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the history from :meth:`state_dict`'s output.

        Raises:
            ValueError: a missing entry, entries of other lengths or kinds, non-finite importances, or
                importances of another feature count than this callback's probe.
        """
        n = len(self.feature_names)
        try:
            fields = SavedFields({}, state_dict, fix="resume with the callback (probe, feature names) that wrote it")
            epochs = fields.tensor("epochs", ("T",), kind="int", minimum=0)
            steps = fields.tensor("steps", ("T",), kind="int", minimum=0)
            importance = fields.tensor("importance", ("T", n))
        except SavedFieldError as err:
            raise ValueError(
                f"the checkpointed ExplanationCallback history (this probe: {n} features): {err}"
            ) from None
        self._epochs = [int(e) for e in epochs]
        self._steps = [int(s) for s in steps]
        self._importance = list(importance.float().unbind(0))

    # ---- hooks
    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        """Forget the previous fit's destinations; fit the probe to the module (dtype) and check the module takes it."""
        self._outputs = None  # each fit is its own run: its destinations are resolved at the first explanation
        self.probe = self._fitted_probe(pl_module)

    def _fitted_probe(self, pl_module: Any) -> Tensor:
        """The probe in the module's floating dtype (an array, list or frame probe is converted; a tensor of another
        floating dtype is refused), checked by one forward pass of its first row, so that a probe of the wrong
        width or dtype fails here and not at the end of the first epoch."""
        held = next((t for t in (*pl_module.parameters(), *pl_module.buffers()) if t.is_floating_point()), None)
        dtype = None if held is None else held.dtype
        probe = self.probe
        if dtype is not None and probe.dtype != dtype:
            if self._probe_is_tensor:
                raise ValueError(
                    f"the probe is a {probe.dtype} tensor but the module computes in {dtype}; pass probe.to({dtype}) "
                    "(arrays and DataFrames are converted to the module's dtype)"
                )
            probe = probe.to(dtype)
        was_training = pl_module.training
        pl_module.eval()
        try:
            with torch.no_grad():
                pl_module(probe[:1].to(probe.device if held is None else held.device))
        except (RuntimeError, ValueError, TypeError, IndexError) as err:
            raise ValueError(
                f"the module cannot take the probe of shape {tuple(probe.shape)} and dtype {probe.dtype} (the "
                f"explainer explains the module on it): {type(err).__name__}: {str(err)[:160]}; pass a probe of the "
                "module's input width"
            ) from None
        finally:
            pl_module.train(was_training)
        return probe

    def on_validation_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        """Explain (``on="validation"``), except during the sanity check and outside ``fit``."""
        if self.on == "validation" and not trainer.sanity_checking and trainer.state.fn == "fit":
            self._maybe_explain(trainer, pl_module)

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        """Explain (``on="train"``) in eval mode, restoring the module's mode afterwards."""
        if self.on == "train":
            self._maybe_explain(trainer, pl_module)

    def _maybe_explain(self, trainer: Any, pl_module: Any) -> None:
        epoch = trainer.current_epoch
        if (epoch + 1) % self.every_n_epochs:
            return
        step = max(int(trainer.global_step) - 1, 0)  # where Lightning logs this epoch's epoch-end metrics
        attributions = self._explain(pl_module, epoch)
        importance = attributions.abs().reshape(attributions.shape[0], -1).mean(0).float().cpu()
        keep = [i for i, e in enumerate(self._epochs) if e < epoch]  # a resumed epoch replaces its old entry
        self._epochs = [self._epochs[i] for i in keep] + [epoch]
        self._steps = [self._steps[i] for i in keep] + [step]
        self._importance = [self._importance[i] for i in keep] + [importance]

        scalars = {key: float(importance[j]) for j, key in enumerate(self.scalar_keys)}
        if len(self._importance) > 1:
            previous = self._importance[-2]
            change = (importance - previous).abs().sum() / previous.abs().sum().clamp_min(torch.finfo().tiny)
            scalars[self.drift_key] = float(change)
        # callback_metrics on every rank (no logger: the loggers get the scalars below, at the figures' step)
        pl_module.log_dict(scalars, on_step=False, on_epoch=True, logger=False)
        if trainer.is_global_zero:
            if self._outputs is None:
                self._outputs = RunOutputs(trainer.loggers, trainer.default_root_dir, self.prefix)
            self._outputs.log_scalars({**scalars, "epoch": epoch}, step)  # as Lightning logs its own metrics
            self._write(self._outputs, epoch, step, attributions.cpu(), importance)

    def _explain(self, pl_module: Any, epoch: int) -> Tensor:
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
        bad = nonfinite_rows(attributions.detach())
        if bad:
            raise ValueError(
                f"epoch {epoch}: the explainer returned NaN or infinite attributions for probe rows {bad[:10]}"
                f"{' ...' if len(bad) > 10 else ''}; check the model's outputs on them (a diverged loss gives NaN "
                "weights) and the explainer's settings"
            )
        return attributions.detach()

    def _write(self, outputs: RunOutputs, epoch: int, step: int, attributions: Tensor, importance: Tensor) -> None:
        record = {
            "epoch": epoch,
            "step": step,
            "probe": self.probe.cpu(),
            "attributions": attributions,
            "importance": importance,
            "feature_names": self.feature_names,
        }
        outputs.save_record(record, f"epoch{epoch:03d}.pt")
        if not self.figures:
            return
        beeswarm = viz.BeeswarmDisplay(attributions, self.probe, self.feature_names).plot(
            max_features=self.max_plot_features, title=f"Attributions on the probe, epoch {epoch}"
        )
        outputs.log_figure(self.figure_key("beeswarm"), beeswarm.figure_, step, f"epoch{epoch:03d}_beeswarm.png")
        drift = plot_drift(self._epochs, torch.stack(self._importance), self.feature_names, self.max_plot_features)
        outputs.log_figure(self.figure_key("drift"), drift.figure_, step, f"epoch{epoch:03d}_drift.png")


__all__ = ["ExplanationCallback", "plot_drift"]

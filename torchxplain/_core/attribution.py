"""Captum-compatible explainer base: an ``nn.Module`` that is also a Captum ``Attribution``."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import torch
from captum.attr import PerturbationAttribution
from captum.log import log_usage
from torch import Tensor, nn

from torchxplain._core.inputs import to_tensor
from torchxplain._core.persistence import load_explainer, register, save_explainer

TensorOrTuple = Tensor | tuple[Tensor, ...]


class ExplainerBase(nn.Module, PerturbationAttribution):
    """Base class of every torchxplain explainer.

    It is an ``nn.Module`` (its own tensors are buffers/parameters, so ``.to()`` moves them and
    ``state_dict`` holds them) and a Captum ``PerturbationAttribution`` (so ``NoiseTunnel``,
    ``captum.metrics.infidelity`` and ``sensitivity_max`` accept it). The user's model is stored
    in ``self.__dict__`` so that it is never registered as a submodule: the explainer's
    ``state_dict``, ``.to()`` and ``.train()`` leave the user's model alone.

    Subclasses implement :meth:`_attribute` on a tuple of tensors and return a tuple of tensors
    with the same shapes; :meth:`attribute` handles the tensor/tuple structure and turns gradients
    back on (Captum's wrappers and Lightning call under ``no_grad``/``inference_mode``).
    """

    #: True when ``forward_func`` is the explainer's own module (e.g. a fitted surrogate), not the user's.
    owns_forward_func: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls._config is not ExplainerBase._config:  # it (or a mixin) implements persistence
            register(cls)

    def __init__(self, forward_func: Callable[..., Tensor] | None = None) -> None:
        nn.Module.__init__(self)
        self.__dict__["forward_func"] = forward_func

    @log_usage()
    def attribute(
        self,
        inputs: TensorOrTuple,
        baselines: Any = None,
        target: Any = None,
        additional_forward_args: Any = None,
        feature_mask: TensorOrTuple | None = None,
        show_progress: bool | None = None,
        **kwargs: Any,
    ) -> TensorOrTuple:
        """Attribute the model output at ``inputs`` to the input features.

        Args:
            inputs: a tensor ``(N, n)`` or a tuple of such tensors (dim 0 = batch); numpy arrays, nested lists and
                pandas DataFrames are converted (see :mod:`torchxplain._core.inputs`).
            baselines: method-specific reference (see the subclass); ``None`` uses the method's default.
            target: output index for multi-output models (Captum's meaning).
            additional_forward_args: extra arguments for the forward function (Captum's meaning).
            feature_mask: integer group ids broadcastable to each input (Captum's meaning).
            show_progress: show a tqdm progress bar for long computations.

        Returns:
            Attributions with the same structure and shapes as ``inputs``, on their device and dtype.
        """
        is_tuple = isinstance(inputs, tuple)
        converted = tuple(self._convert(x) for x in (inputs if is_tuple else (inputs,)))
        if feature_mask is not None and not isinstance(feature_mask, tuple):
            feature_mask = (feature_mask,)
        with torch.inference_mode(False), torch.enable_grad():
            inputs_t = tuple(x.clone() if x.is_inference() else x for x in converted)
            out = self._attribute(
                inputs_t,
                baselines=baselines,
                target=target,
                additional_forward_args=additional_forward_args,
                feature_mask=feature_mask,
                show_progress=show_progress,
                **kwargs,
            )
        return out if is_tuple else out[0]

    def _convert(self, x: Any) -> Tensor:
        """One input at the public boundary as a tensor on the explainer's device (arrays and frames converted)."""
        return to_tensor(x, "inputs", device=self._device()).tensor

    def _device(self) -> torch.device:
        """The device of the explainer's own tensors (CPU when it has none)."""
        tensor = next(itertools.chain(self.parameters(), self.buffers()), None)
        return torch.device("cpu") if tensor is None else tensor.device

    def _attribute(
        self,
        inputs: tuple[Tensor, ...],
        *,
        baselines: Any,
        target: Any,
        additional_forward_args: Any,
        feature_mask: tuple[Tensor, ...] | None,
        show_progress: bool | None,
        **kwargs: Any,
    ) -> tuple[Tensor, ...]:
        raise NotImplementedError

    def _config(self) -> dict[str, Any]:
        """JSON-able constructor metadata for :meth:`save`; subclasses that support persistence override it."""
        raise TypeError(f"{type(self).__name__} does not support save(): it defines no _config()")

    @classmethod
    def _from_config(
        cls, config: dict[str, Any], state: dict[str, Tensor], forward_func: Callable[..., Tensor] | None
    ) -> ExplainerBase:
        """Rebuild an explainer from ``_config()`` and its tensor ``state_dict`` (inverse of :meth:`_config`)."""
        raise TypeError(f"{cls.__name__} does not support load(): it defines no _from_config()")

    def save(self, path: str) -> str:
        """Write the explainer (``state_dict`` + JSON metadata, no pickle) to ``path``; the model is not saved."""
        return save_explainer(self, path)

    @classmethod
    def load(
        cls,
        path: str,
        forward_func: Callable[..., Tensor] | None = None,
        map_location: str | torch.device | None = None,
    ) -> ExplainerBase:
        """Load an explainer saved with :meth:`save` (``forward_func``: the model to attach, if any)."""
        explainer = load_explainer(path, forward_func=forward_func, map_location=map_location)
        if not isinstance(explainer, cls):
            raise TypeError(f"{path!r} holds a {type(explainer).__name__}, not a {cls.__name__}")
        return explainer

    def forward(self, *args: Any, **kwargs: Any) -> TensorOrTuple:
        """Alias of :meth:`attribute`, so that an explainer can be called like a module."""
        return self.attribute(*args, **kwargs)

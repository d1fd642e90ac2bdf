"""A user's own Pyro model with a Bayesian linear head, as GOALS takes it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyro import poutine
from torch import Tensor, nn

from torchxplain.goals.bnn._modes import native_params


class HeadInput:
    """``h(x)`` of a user's Pyro model: the input of its head, captured by a forward pre-hook while the
    model runs with every latent site fixed at ``latents`` (e.g. the guide's median).

    Args:
        model: the ``PyroModule``, called as ``model(x)``.
        head: its linear head module.
        latents: site name -> fixed value.
    """

    def __init__(self, model: Callable[..., Any], head: nn.Module, latents: dict[str, Tensor]) -> None:
        self.model, self.head, self.latents = model, head, latents

    def __call__(self, x: Tensor) -> Tensor:
        """``(B, L)`` head inputs for ``x`` ``(B, J)``."""
        captured: list[Tensor] = []
        handle = self.head.register_forward_pre_hook(lambda _module, args: captured.append(args[0]))
        try:
            with native_params(self.model), poutine.block():
                poutine.condition(self.model, data=self.latents)(x)
        finally:
            handle.remove()
        if len(captured) != 1:
            raise ValueError(f"the head must run exactly once per model call, it ran {len(captured)} times")
        return captured[0]


@dataclass(frozen=True)
class PyroHead:
    """A user's fitted Pyro model with a Bayesian linear head, as ``Goals`` takes it.

    See :meth:`~torchxplain.goals.BNNBackend.from_pyro` for the requirements.

    Attributes:
        model: the ``PyroModule``, called as ``model(x)``.
        guide: its fitted autoguide.
        head: module path of the linear head, also the prefix of its sites (``f"{head}.weight"``).
        train_inputs: ``(N, J)`` training inputs.
        features: optional ``nn.Module`` computing the head's input (enables the first-layer shortcut).
    """

    model: Any
    guide: Any
    head: str
    train_inputs: Tensor
    features: nn.Module | None = None

"""Saving and loading ``Goals``: the posterior tensors in the ``state_dict``, the rest as JSON-able config.

A saved GP explainer is self-contained: training inputs, shifts, ``alpha``, the Cholesky factor, the kernel
matrix and the kernel's hyperparameters (RBF/ARD-RBF or linear, optionally scaled; GPs with other kernels or
non-constant mean modules cannot be saved, since rebuilding those GPyTorch modules needs their classes). A
saved network explainer holds the training inputs, shifts and the head's posterior mean, covariance and bias;
the deterministic feature extractor is the user's network, which is never saved: pass it again to
``Goals.load(path, forward_func=network)`` (a ``LastLayerBNN`` or the extractor ``h`` itself).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import Tensor

from torchxplain.goals.bnn.backend import BNNBackend
from torchxplain.goals.bnn.model import LastLayerBNN
from torchxplain.goals.families import LinearOps
from torchxplain.goals.gp import GPBackend
from torchxplain.goals.kernels import KernelOps
from torchxplain.goals.rbf import RBFOps


def config_of(
    backend: GPBackend | BNNBackend, defaults: dict[str, Any], feature_names: list[str] | None
) -> dict[str, Any]:
    """JSON-able metadata of a ``Goals`` explainer with this backend, default settings (``max_memory``,
    ``show_progress``) and feature names; its tensors go in the ``state_dict``.

    Raises:
        TypeError: the backend holds modules that cannot be rebuilt from tensors (generic kernels,
            non-constant GP mean modules).
    """
    config: dict[str, Any] = {**defaults, "feature_names": feature_names}
    if isinstance(backend, BNNBackend):
        return {**config, "backend": "bnn", "shortcut": backend.shortcut}
    if backend.mean_module is not None:
        raise TypeError(
            f"a Goals explainer of a GP with a {type(backend.mean_module).__name__} mean cannot be saved (only zero "
            "and constant means can be rebuilt from tensors); keep the model and rebuild Goals(model) instead"
        )
    if isinstance(backend.kernel, RBFOps):
        kind = "rbf"
    elif isinstance(backend.kernel, LinearOps):
        kind = "linear"
    else:
        raise TypeError(
            "a Goals explainer of a GP whose kernel is not (Scale)RBF or (Scale)Linear cannot be saved (its "
            "GPyTorch kernel module cannot be rebuilt from tensors); keep the model and rebuild Goals(model)"
        )
    return {**config, "backend": "gp", "kernel": kind}


def _sub(state: dict[str, Tensor], prefix: str) -> dict[str, Tensor]:
    return {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}


def backend_from(
    config: dict[str, Any], state: dict[str, Tensor], forward_func: Callable[..., Tensor] | None
) -> GPBackend | BNNBackend:
    """Rebuild the backend of a saved ``Goals`` (its buffers are then loaded from ``state``)."""
    backend_state = _sub(state, "backend.")
    if config.get("backend") == "gp":
        kernel_state = _sub(backend_state, "kernel.")
        kernel: KernelOps
        if config.get("kernel") == "rbf":
            kernel = RBFOps(kernel_state["theta"], kernel_state["outputscale"])
        elif config.get("kernel") == "linear":
            kernel = LinearOps(kernel_state["variance"])
        else:
            raise ValueError(f"saved GOALS kernel {config.get('kernel')!r} is not one of 'rbf', 'linear'")
        return GPBackend.from_state(kernel, backend_state)
    if config.get("backend") != "bnn":
        raise ValueError(f"saved GOALS backend {config.get('backend')!r} is not one of 'gp', 'bnn'")
    features = forward_func.features if isinstance(forward_func, LastLayerBNN) else forward_func
    if features is None or not callable(features):
        raise TypeError(
            "a saved GOALS explainer of a network needs the network's feature extractor, which is not saved: "
            "pass Goals.load(path, forward_func=bnn) with the fitted LastLayerBNN (or the extractor h itself)"
        )
    return BNNBackend(
        features,
        backend_state["loc"],
        backend_state["cov"],
        backend_state["x"],
        backend_state["xi"],
        bias=backend_state["bias"],
        shortcut=config.get("shortcut"),
        feature_names=config.get("feature_names"),
    )

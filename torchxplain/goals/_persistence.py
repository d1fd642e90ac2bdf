"""Saving and loading ``Goals``: the posterior tensors in the ``state_dict``, the rest as JSON-able config.

A saved GP explainer is self-contained: training inputs, shifts, ``alpha``, the Cholesky factor, the kernel
matrix and the kernel's hyperparameters (RBF/ARD-RBF or linear, optionally scaled; GPs with other kernels or
non-constant mean modules cannot be saved, since rebuilding those GPyTorch modules needs their classes). A
saved network explainer holds the training inputs, shifts and the head's posterior mean, covariance and bias;
the deterministic feature extractor is the user's network, which is never saved: pass it again to
``Goals.load(path, forward_func=network)`` (a ``LastLayerBNN`` or the extractor ``h`` itself).

Loading checks every field with :class:`~torchxplain._core.saved_fields.SavedFields`: finite tensors of the
saved shapes (``x`` ``(N, J)``, ``xi`` ``(J,)`` nonzero, ``gram`` and ``chol`` ``(N, N)``, ...), positive kernel
hyperparameters, feature names of length ``J``, the kernel matrix recomputed from ``x``, and the Cholesky factor
checked against it; a damaged or edited file is refused at load with one error naming the field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, rows_per_chunk
from torchxplain._core.saved_fields import SavedFields
from torchxplain.goals._families import LinearOps
from torchxplain.goals._gp import GPBackend
from torchxplain.goals._kernels import KernelOps
from torchxplain.goals._rbf import RBFOps
from torchxplain.goals.bnn._backend import BNNBackend
from torchxplain.goals.bnn._model import LastLayerBNN


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


def _gp_kernel(fields: SavedFields, kind: str) -> KernelOps:
    """The saved kernel's hyperparameters: positive (a negative or zero lengthscale or scale is refused)."""
    if kind == "rbf":
        theta = fields.tensor("theta", ("J",), dtype=torch.float64, positive=True)
        return RBFOps(theta, fields.tensor("outputscale", (), dtype=torch.float64, positive=True))
    return LinearOps(fields.tensor("variance", (), dtype=torch.float64, positive=True))


def _check_factor(fields: SavedFields, kernel: KernelOps, x: Tensor, gram: Tensor, chol: Tensor) -> None:
    """``gram`` must be the kernel matrix of ``x`` and ``chol`` a Cholesky factor of ``gram + diag(d)`` with
    ``d >= 0`` (noise plus jitter), as the constructor computed them.

    The factor is checked by Freivalds' test (two Gaussian probe vectors, seeded): ``O(N^2)`` instead of the
    ``O(N^3)`` product, and a wrong factor passes only with probability zero. Row blocks keep every
    intermediate within ``tx.settings.max_memory``.
    """
    n = x.shape[0]
    x64 = x.double()
    scale = float(gram.diagonal().abs().max())
    probes = torch.randn(n, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64).to(chol.device)
    extra = chol.square().sum(1) - gram.diagonal()  # noise + jitter on the diagonal
    fields.require(
        bool((chol.diagonal() > 0).all()), "backend.chol", "has a diagonal entry <= 0 (not a Cholesky factor)"
    )
    fields.require(bool((extra >= -1e-8 * scale).all()), "backend.chol", "gives a negative noise variance")
    back, back_abs = chol.T @ probes, chol.abs().T @ probes.abs()
    for a, b in chunk_bounds(n, rows_per_chunk(8 * 4 * n, n)):
        fields.require(
            torch.allclose(gram[a:b], kernel.cross(x64[a:b], x64), rtol=1e-8, atol=1e-10 * scale),
            "backend.gram",
            "is not the kernel matrix of the saved training inputs and hyperparameters",
        )
        rows = chol[a:b]
        fields.require(bool((rows.triu(a + 1) == 0).all()), "backend.chol", "is not lower triangular")
        residual = rows @ back - gram[a:b] @ probes - extra[a:b, None] * probes[a:b]
        bound = rows.abs() @ back_abs + gram[a:b].abs() @ probes.abs()
        fields.require(
            bool((residual.abs() <= 1e-8 * bound).all()),
            "backend.chol",
            "is not a Cholesky factor of the saved kernel matrix plus a noise diagonal",
        )


def _gp_backend(fields: SavedFields) -> GPBackend:
    kind = fields.choice("kernel", ("rbf", "linear"))
    state = fields.sub("backend.")
    x = state.tensor("x", ("N", "J"))
    xi = state.tensor("xi", ("J",), dtype=torch.float64, nonzero=True)
    kernel = _gp_kernel(state.sub("kernel."), kind)
    tensors = {
        "x": x,
        "xi": xi,
        "mean_constant": state.tensor("mean_constant", (), dtype=torch.float64),
        "gram": state.tensor("gram", ("N", "N"), dtype=torch.float64),
        "chol": state.tensor("chol", ("N", "N"), dtype=torch.float64),
        "alpha": state.tensor("alpha", ("N",), dtype=torch.float64),
    }
    _check_factor(fields, kernel, x, tensors["gram"], tensors["chol"])
    return GPBackend.from_state(kernel, tensors)


def _bnn_backend(fields: SavedFields, forward_func: Callable[..., Tensor] | None) -> BNNBackend:
    state = fields.sub("backend.")
    x = state.tensor("x", ("N", "J"))
    loc = state.tensor("loc", ("L",), dtype=x.dtype)
    cov = state.tensor("cov", dtype=x.dtype)
    width = fields.dim("L")
    fields.require(
        cov.shape in ((width,), (width, width)), "backend.cov", f"must have shape ({width},) or ({width}, {width})"
    )
    if cov.ndim == 1:
        fields.require(bool((cov >= 0).all()), "backend.cov", "holds a negative variance")
    else:
        fields.require(torch.allclose(cov, cov.T), "backend.cov", "is not symmetric")
        eig = torch.linalg.eigvalsh(cov.double())
        fields.require(bool(eig.min() >= -1e-8 * eig.abs().max()), "backend.cov", "is not positive semi-definite")
    bias = state.tensor("bias", (), dtype=x.dtype)
    xi = state.tensor("xi", ("J",), dtype=x.dtype, nonzero=True)
    shortcut = fields.flag("shortcut", optional=True)
    features = forward_func.features if isinstance(forward_func, LastLayerBNN) else forward_func
    if features is None or not callable(features):
        raise TypeError(
            "a saved GOALS explainer of a network needs the network's feature extractor, which is not saved: "
            "pass Goals.load(path, forward_func=bnn) with the fitted LastLayerBNN (or the extractor h itself)"
        )
    names = fields.names("feature_names", "J", optional=True)
    return BNNBackend(features, loc, cov, x, xi, bias=bias, shortcut=shortcut, feature_names=names)


def backend_from(fields: SavedFields, forward_func: Callable[..., Tensor] | None) -> GPBackend | BNNBackend:
    """Rebuild the backend of a saved ``Goals`` from its fields, each checked as strictly as the constructor's
    inputs (a damaged file raises :class:`~torchxplain._core.saved_fields.SavedFieldError` naming the field)."""
    if fields.choice("backend", ("gp", "bnn")) == "gp":
        return _gp_backend(fields)
    return _bnn_backend(fields, forward_func)

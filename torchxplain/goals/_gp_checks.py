"""Validation of what GOALS reads from a user's GPyTorch model, with messages that name the problem and the fix."""

from __future__ import annotations

import warnings
from typing import Any

import gpytorch
import numpy as np
import torch
from torch import Tensor

from torchxplain._core import check_number

SUPPORTED_LIKELIHOODS = (
    gpytorch.likelihoods.GaussianLikelihood,
    gpytorch.likelihoods.FixedNoiseGaussianLikelihood,
)


def check_xi(xi: float | Tensor, n_features: int) -> Tensor:
    """The shifts as a float64 ``(J,)`` tensor.

    Args:
        xi: a finite nonzero scalar (bool refused) or a ``(J,)`` tensor/sequence of them.
        n_features: ``J``.

    Raises:
        TypeError: not a number or tensor.
        ValueError: wrong shape, non-finite or zero shifts.
    """
    if isinstance(xi, bool):
        raise TypeError(f"xi must be a nonzero number or a ({n_features},) tensor, got the bool {xi!r}")
    if xi.is_complex() if isinstance(xi, Tensor) else isinstance(xi, complex) or np.iscomplexobj(xi):
        raise TypeError(
            f"xi must be real (a shift in the units of the inputs), got the complex {str(xi)[:40]}; pass its real "
            "part if that is what you mean"
        )
    try:
        t = xi.detach().double() if isinstance(xi, Tensor) else torch.as_tensor(xi, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(
            f"xi must be a nonzero number or a ({n_features},) tensor, got {type(xi).__name__} {str(xi)[:40]!r}"
        ) from None
    if t.ndim == 0:
        t = t.expand(n_features).clone()
    if t.shape != (n_features,):
        raise ValueError(f"xi must be a scalar or have shape ({n_features},), got shape {tuple(t.shape)}")
    if not bool(torch.isfinite(t).all()):
        bad = (~torch.isfinite(t)).nonzero().reshape(-1).tolist()[:5]
        raise ValueError(f"xi must be finite, got NaN or infinite shifts at feature(s) {bad}")
    if bool((t == 0).any()):
        raise ValueError(
            f"xi must be nonzero (a zero shift explains nothing); zero at feature(s) "
            f"{(t == 0).nonzero().reshape(-1).tolist()[:10]}"
        )
    return t


def check_jitter(jitter: object) -> float:
    """``jitter`` as a float: a finite number ``>= 0`` (bool refused)."""
    return check_number(jitter, "jitter", at_least=0, hint="e.g. 1e-6")


def _looks_unfitted(model: gpytorch.models.ExactGP) -> bool:
    raw = [p for name, p in model.named_parameters() if name.rsplit(".", 1)[-1].startswith("raw_")]
    return bool(raw) and all(bool((p == 0).all()) for p in raw)


def _check_hyperparameters(model: gpytorch.models.ExactGP, likelihood: gpytorch.likelihoods.Likelihood) -> None:
    """Every parameter of the model and likelihood must be finite and no buffer NaN (constraint bounds may be
    infinite); NaN hyperparameters come from diverged fits."""
    modules = [("model", model)] + ([("likelihood", likelihood)] if likelihood is not model.likelihood else [])
    for prefix, module in modules:
        for name, t in [*module.named_parameters(), *module.named_buffers()]:
            is_param = isinstance(t, torch.nn.Parameter)
            if t.is_floating_point() and not bool((torch.isfinite(t) if is_param else ~torch.isnan(t)).all()):
                raise ValueError(
                    f"the GP's hyperparameter {prefix}.{name} is NaN or infinite "
                    f"({t.detach().reshape(-1)[:3].tolist()}); the fit probably diverged: refit the model "
                    "(smaller learning rate) or set it with model.initialize(...)"
                )


def check_gp(
    model: gpytorch.models.ExactGP, likelihood: gpytorch.likelihoods.Likelihood | None, jitter: object
) -> tuple[Tensor, Tensor, Tensor]:
    """Check a fitted exact GP and return its training inputs ``(N, J)``, targets ``(N,)`` and float64 noise.

    Raises:
        TypeError: not an ``ExactGP``, non-floating inputs, unsupported likelihood.
        ValueError: no or malformed training data, NaN data or hyperparameters, bad noise shape or jitter.
    """
    if not isinstance(model, gpytorch.models.ExactGP):
        raise TypeError(f"model must be a fitted gpytorch.models.ExactGP, got {type(model).__name__}")
    check_jitter(jitter)
    if model.train_inputs is None or model.train_targets is None:
        raise ValueError(
            "model has no training data (train_inputs/train_targets are None); "
            "GOALS explains a GP conditioned on data: call model.set_train_data(...) and fit it"
        )
    if len(model.train_inputs) != 1:
        raise ValueError(f"model must have one training input tensor, got {len(model.train_inputs)}")
    x, y = model.train_inputs[0].detach(), model.train_targets.detach()
    if x.ndim != 2 or y.ndim != 1 or y.shape[0] != x.shape[0]:
        raise ValueError(
            f"model's training data must be X (N, J) and y (N,) (no batch or multitask GPs), "
            f"got X {tuple(x.shape)} and y {tuple(y.shape)}"
        )
    if not x.is_floating_point():
        raise TypeError(f"model's training inputs must be floating point, got {x.dtype}")
    for name, t in (("training inputs", x), ("training targets", y)):
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"model's {name} contain NaN or infinite values; drop or impute those rows and refit")
    likelihood = model.likelihood if likelihood is None else likelihood
    if not isinstance(likelihood, SUPPORTED_LIKELIHOODS):
        raise TypeError(
            f"likelihood must be a GaussianLikelihood or FixedNoiseGaussianLikelihood "
            f"(GOALS needs the conjugate Gaussian posterior), got {type(likelihood).__name__}"
        )
    _check_hyperparameters(model, likelihood)
    if _looks_unfitted(model):
        warnings.warn(
            "GOALS: every hyperparameter of the GP is at GPyTorch's initial value; was the model fitted?",
            UserWarning,
            stacklevel=4,
        )
    noise = likelihood.noise.detach().double().reshape(-1).to(x.device)
    if noise.numel() not in (1, x.shape[0]):
        raise ValueError(f"likelihood noise has {noise.numel()} values, expected 1 or N={x.shape[0]}")
    return x, y, noise


def _top_level(model: torch.nn.Module, kind: type[torch.nn.Module]) -> list[tuple[str, torch.nn.Module]]:
    """``(name, module)`` of the ``kind`` modules of ``model`` that are not inside another one (a ``ScaleKernel``'s
    base kernel is part of it), nor inside the likelihood."""
    found: list[tuple[str, torch.nn.Module]] = []
    for name, module in model.named_modules():
        inside = any(name.startswith(f"{outer}.") for outer, _ in found) or name.split(".")[0] == "likelihood"
        if name and isinstance(module, kind) and not inside:
            found.append((name, module))
    return found


def _one(model: torch.nn.Module, kind: type[torch.nn.Module], conventional: str, label: str) -> tuple[str, Any]:
    held = getattr(model, conventional, None)
    if isinstance(held, kind):
        return conventional, held
    found = _top_level(model, kind)
    if len(found) != 1:
        where = f"found {len(found)}: {[n for n, _ in found][:5]}" if found else "found none"
        raise ValueError(
            f"GOALS reads the GP's prior from its modules and needs exactly one {label} module ({where}); name the "
            f"one forward() uses model.{conventional} (a zero mean is gpytorch.means.ZeroMean())"
        )
    return found[0]


def gp_modules(model: gpytorch.models.ExactGP, x: Tensor) -> tuple[gpytorch.means.Mean, gpytorch.kernels.Kernel]:
    """The prior mean and kernel modules of a GP, whatever their attribute names.

    ``model.mean_module`` / ``model.covar_module`` when they are a ``gpytorch.means.Mean`` / ``Kernel``, else
    the one ``Mean`` and the one ``Kernel`` among the model's modules (nested kernels such as a ``ScaleKernel``'s
    base kernel count as part of their parent). The prior ``forward(x)`` on a few training rows ``x`` must then
    equal ``MultivariateNormal(mean(x), kernel(x))``, so a forward that combines modules differently is refused
    instead of explained wrongly.

    Raises:
        ValueError: no or several candidate modules, or a forward() whose prior they do not reproduce.
    """
    mean_name, mean = _one(model, gpytorch.means.Mean, "mean_module", "gpytorch.means.Mean")
    kernel_name, kernel = _one(model, gpytorch.kernels.Kernel, "covar_module", "gpytorch.kernels.Kernel")
    rows = x[: min(4, x.shape[0])]
    with torch.no_grad():
        try:
            prior = model.forward(rows)
            loc, cov = prior.mean, prior.covariance_matrix
        except Exception as err:  # noqa: BLE001 - any failure of the user's forward is reported with its cause
            raise ValueError(
                f"GOALS checks the GP's prior against model.{mean_name} and model.{kernel_name}, but "
                f"model.forward(x) failed on 4 training rows: {type(err).__name__}: {str(err)[:120]}"
            ) from None
        same = loc.shape == rows.shape[:1] and torch.allclose(loc, mean(rows), rtol=1e-5, atol=1e-6)
        dense = kernel(rows).to_dense()
        same = same and cov.shape == dense.shape and torch.allclose(cov, dense, rtol=1e-5, atol=1e-6)
    if not same:
        raise ValueError(
            f"the GP's prior forward(x) is not MultivariateNormal(model.{mean_name}(x), model.{kernel_name}(x)); "
            "GOALS needs forward() to return the prior of one mean module and one kernel module"
        )
    return mean, kernel

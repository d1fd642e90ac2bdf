"""``explain_after_fit``: one call after ``model.fit`` that picks a sensible explainer for the model type."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from torchxplain._core import as_tensor, check_finite, check_matrix
from torchxplain.fourier import FourierShap
from torchxplain.fourier.adapters import supports
from torchxplain.goals import Goals, LastLayerBNN
from torchxplain.idx import BayesianClassifier
from torchxplain.idx import explain as idx_explain

METHODS = ("auto", "trees", "fourier", "goals", "idx")


@dataclass(frozen=True)
class AfterFitResult:
    """What :func:`explain_after_fit` chose and computed.

    Attributes:
        method: ``"trees"``, ``"fourier"``, ``"goals"`` or ``"idx"``.
        reason: why that method was chosen.
        explainer: the fitted explainer (``None`` for IDX, which has no explainer object).
        attributions: ``(Q, n)`` local attributions of ``X_test`` (FourierSHAP values or GOALS local scores);
            for IDX, the list of :class:`~torchxplain.idx.Explanation` objects.
    """

    method: str
    reason: str
    explainer: Any
    attributions: Any


def explain_after_fit(
    model: Any,
    X_train: Any,
    X_test: Any,
    method: str = "auto",
    target: int | None = None,
    n_background: int = 100,
    seed: int = 0,
    **options: Any,
) -> AfterFitResult:
    """Explain ``X_test`` with the method that fits ``model``'s type.

    * tree ensembles (scikit-learn, XGBoost, LightGBM) → exact tree spectrum (``FourierShap.from_trees``);
    * a ``gpytorch.models.ExactGP`` or a :class:`~torchxplain.goals.LastLayerBNN` → :class:`~torchxplain.Goals`;
    * a :class:`~torchxplain.idx.BayesianClassifier` → :func:`torchxplain.idx.explain`;
    * a torch module or callable on binary (one-hot) data → :class:`~torchxplain.FourierShap` fitted by queries.

    Args:
        model: the fitted model.
        X_train: ``(N, n)`` training inputs; a seeded sample of ``n_background`` rows is the background (not used
            by GOALS, which reads the model's own training inputs, nor by IDX).
        X_test: ``(Q, n)`` rows to explain (for IDX: any input form :func:`torchxplain.idx.explain` takes).
        method: ``"auto"`` or one of ``"trees"``, ``"fourier"``, ``"goals"``, ``"idx"``.
        target: output column for multi-output models.
        n_background: background size for the SHAP methods.
        seed: seed of the background sample and of the spectrum fit.
        **options: passed to the chosen explainer (e.g. ``k`` for FourierSHAP, ``xi`` for GOALS, ``kit`` for IDX).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    chosen, reason = _choose(model, X_train) if method == "auto" else (method, "requested")
    if chosen == "idx":
        return AfterFitResult(chosen, reason, None, idx_explain(model, X_test, **options))
    x_test = check_finite(check_matrix(as_tensor(X_test, "X_test"), "X_test"), "X_test")
    if chosen == "goals":
        explainer = Goals(model, **options)
        x_test = x_test.to(explainer.train_inputs.dtype)
        return AfterFitResult(chosen, reason, explainer, explainer.attribute(x_test).detach())
    x_train = check_finite(check_matrix(as_tensor(X_train, "X_train"), "X_train", x_test.shape[1]), "X_train")
    gen = torch.Generator().manual_seed(seed)
    background = x_train[torch.randperm(x_train.shape[0], generator=gen)[:n_background]]
    if chosen == "trees":
        explainer = FourierShap.from_trees(model, background, target=target, **options)
    else:
        background = background.to(torch.get_default_dtype()) if not background.is_floating_point() else background
        explainer = FourierShap(model, background, target=target, seed=seed, **options)
    inputs = x_test.to(explainer.background.dtype) if x_test.dtype != explainer.background.dtype else x_test
    return AfterFitResult(chosen, reason, explainer, explainer.attribute(inputs).detach())


def _choose(model: Any, x_train: Any) -> tuple[str, str]:
    if isinstance(model, BayesianClassifier):
        return "idx", "a Bayesian network classifier: influence-driven explanations"
    if isinstance(model, LastLayerBNN) or _is_exact_gp(model):
        return "goals", f"a Bayesian regression model ({type(model).__name__}): GOALS with posterior uncertainty"
    if supports(model):
        return "trees", f"a tree ensemble ({type(model).__name__}): its exact Fourier spectrum"
    if isinstance(model, nn.Module) or callable(model):
        x = as_tensor(x_train, "X_train")
        if not bool(((x == 0) | (x == 1)).all()):
            raise ValueError(
                "FourierSHAP explains models on binary (e.g. one-hot) inputs, but X_train is not 0/1; encode it "
                "one-hot (and pass feature_mask to attribute per variable) or pass a tree, GP or BNN model"
            )
        return "fourier", f"a {type(model).__name__} on binary inputs: a sparse Fourier surrogate fitted by queries"
    raise TypeError(f"cannot explain a model of type {type(model).__name__}: it is not callable")


def _is_exact_gp(model: Any) -> bool:
    try:
        import gpytorch
    except ImportError:  # pragma: no cover - gpytorch is a dependency
        return False
    return isinstance(model, gpytorch.models.ExactGP)


__all__ = ["AfterFitResult", "explain_after_fit"]

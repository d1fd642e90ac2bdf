"""``explain_after_fit``: one call after ``model.fit`` that picks a sensible explainer for the model type."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gpytorch
import torch
from torch import Tensor, nn

from torchxplain._core import check_finite, check_int, check_matrix
from torchxplain._core.inputs import check_feature_names, is_dataframe, to_tensor
from torchxplain._core.seeding import make_generator
from torchxplain.fourier.explainer import FourierShap
from torchxplain.fourier.sources import Source
from torchxplain.fourier.trees import supports
from torchxplain.goals._explainers import Goals
from torchxplain.goals.bnn._model import LastLayerBNN
from torchxplain.idx._classifier import BayesianClassifier
from torchxplain.idx._explain import explain as idx_explain

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

    Example:
        >>> import torchxplain as tx
        >>> from torchxplain import idx
        >>> result = tx.explain_after_fit(idx.datasets.play_outside(), None, {"w": "l", "t": "l", "p": "l"})
        >>> result.method, result.explainer, result.reason
        ('idx', None, 'a Bayesian network classifier: influence-driven explanations')
        >>> result.attributions[0].assignment["o"]  # one idx.Explanation per input
        '-'
    """

    method: str
    reason: str
    explainer: Any
    attributions: Any


def explain_after_fit(
    model: Any,
    X_train: Any,
    X_test: Any,
    method: Any = "auto",
    target: int | None = None,
    n_background: int = 100,
    seed: int = 0,
    **options: Any,
) -> AfterFitResult:
    """Explain ``X_test`` with the method that fits ``model``'s type.

    * tree ensembles (scikit-learn, XGBoost, LightGBM) → exact tree spectrum (``FourierShap.from_trees``);
    * a ``gpytorch.models.ExactGP`` or a :class:`~torchxplain.goals.LastLayerBNN` → :class:`~torchxplain.Goals`;
    * a :class:`~torchxplain.idx.BayesianClassifier` → :func:`torchxplain.idx.explain`;
    * a torch module, a callable or a fitted scikit-learn-style estimator on binary (one-hot), continuous or mixed
      data → :class:`~torchxplain.FourierShap` by queries, one player per column or per one-hot block found in
      ``X_train`` (``groups="auto"``, unless ``groups=`` is given; the reason says what was found). The router
      knows the rows to explain and takes the cheapest route in predicted seconds: exact enumeration of
      ``X_test``'s coalitions through the model, an exact tabulation when the players' level grid is small, or a
      fit on hybrids of ``X_train`` with the background; the reason lists every candidate's predicted seconds.

    Args:
        model: the fitted model.
        X_train: ``(N, n)`` training inputs; a seeded sample of ``n_background`` rows is the background (not used
            by GOALS, which reads the model's own training inputs, nor by IDX).
        X_test: ``(Q, n)`` rows to explain (for IDX: any input form :func:`torchxplain.idx.explain` takes). When
            both are DataFrames their columns must agree (same names, same order); GOALS takes them as its
            ``feature_names``.
        method: ``"auto"`` or one of ``"trees"``, ``"fourier"``, ``"goals"``, ``"idx"``; or a black-box source
            object (:class:`~torchxplain.fourier.Enumerate`, :class:`~torchxplain.fourier.Fit`, ...) to explain the
            model by queries through that route.
        target: output column for multi-output models.
        n_background: background size for the SHAP methods.
        seed: seed of the background sample and of the spectrum fit.
        **options: passed to the chosen explainer (e.g. ``k`` for FourierSHAP, ``xi`` for GOALS, ``kit`` for IDX).

    Example:
        >>> import numpy as np
        >>> import torchxplain as tx
        >>> from sklearn.tree import DecisionTreeRegressor
        >>> X = np.array([[0.0, 1.0], [1.0, 3.0], [2.0, 0.0], [3.0, 2.0]])
        >>> tree = DecisionTreeRegressor(max_depth=2, random_state=0).fit(X, [1.0, 2.0, 4.0, 8.0])
        >>> result = tx.explain_after_fit(tree, X, X[:1])
        >>> result.method, result.attributions  # exact interventional TreeSHAP values against X
        ('trees', tensor([[-2.2500,  0.0000]], dtype=torch.float64))
    """
    source = method if isinstance(method, Source) else None
    if source is None and method not in METHODS:
        raise ValueError(
            f"method must be one of {list(METHODS)} or a source object (tx.fourier.Fit(), tx.fourier.Enumerate(), "
            f"...), got {str(method)[:40]!r}"
        )
    check_int(n_background, "n_background", 1, hint="the number of background rows")
    if method == "idx" or (method == "auto" and isinstance(model, BayesianClassifier)):
        reason = "requested" if method == "idx" else "a Bayesian network classifier: influence-driven explanations"
        return AfterFitResult("idx", reason, None, idx_explain(model, X_test, **options))
    converted_test, converted_train = to_tensor(X_test, "X_test", ndim=2), to_tensor(X_train, "X_train", ndim=2)
    test, train = converted_test.tensor, converted_train.tensor
    check_finite(check_matrix(train, "X_train"), "X_train")
    check_finite(check_matrix(test, "X_test", train.shape[1]), "X_test")  # the model was fitted on X_train's width
    check_feature_names(converted_train.feature_names, converted_test.feature_names, "X_test")
    if source is not None:
        chosen, reason, forward = "fourier", "requested", _black_box(model, type(model).__name__)
    elif method == "auto":
        chosen, reason, forward = _choose(model)
    else:
        chosen, reason, forward = method, "requested", model
    if chosen == "goals":
        names = converted_train.feature_names or converted_test.feature_names
        explainer: Any = Goals(model, **({"feature_names": names} if names else {}) | options)
        return AfterFitResult(chosen, reason, explainer, explainer.attribute(test.to(explainer.train_inputs.dtype)))
    rows = torch.randperm(train.shape[0], generator=make_generator(seed))[:n_background]
    background = X_train.iloc[rows.numpy()] if is_dataframe(X_train) else train[rows]  # keeps column names
    if chosen == "trees":
        explainer = FourierShap.from_trees(model, background, target=target, **options)
    else:
        options.setdefault("groups", "auto")
        explainer = FourierShap._for_rows(
            forward,
            _floating(background),
            _floating(X_test),
            data=_floating(X_train),
            target=target,
            seed=seed,
            method="auto" if source is None else source,
            **options,
        )
        players = explainer.fit_report.players if explainer.fit_report is not None else None
        reason = "; ".join(r for r in (reason, players, explainer.route.reason if explainer.route else None) if r)
    return AfterFitResult(chosen, reason, explainer, explainer.attribute(_floating(X_test)).detach())


def _floating(x: Any) -> Any:
    """Integer/bool 0/1 tables as float tensors (a model is queried with floats); frames and floats as they are."""
    if is_dataframe(x):
        return x
    t = to_tensor(x, "X").tensor
    return t if t.is_floating_point() else t.to(torch.get_default_dtype())


def _choose(model: Any) -> tuple[str, str, Any]:
    """``(method, reason, forward function)`` for ``model``; a clear refusal when nothing fits."""
    name = type(model).__name__
    if isinstance(model, LastLayerBNN) or _is_exact_gp(model):
        return "goals", f"a Bayesian regression model ({name}): GOALS with posterior uncertainty", model
    if supports(model):
        return "trees", f"a tree ensemble ({name}): its exact Fourier spectrum", model
    forward = _black_box(model, name)
    how = "its predict_proba/predict" if forward is not model else "it"
    return "fourier", f"a {name}: FourierSHAP by querying {how}", forward


SUPPORTED = (
    "supported are tree ensembles (scikit-learn trees/forests/boosting, XGBoost, LightGBM, CatBoost), GPyTorch "
    "ExactGP and LastLayerBNN models (GOALS), torchxplain.idx.BayesianClassifier (IDX), and torch modules, "
    "callables or fitted scikit-learn estimators with predict/predict_proba on binary or continuous inputs "
    "(FourierSHAP)"
)


def _black_box(model: Any, name: str) -> Any:
    """``model`` as a callable on ``(B, n)`` float tensors; a clear refusal when it is none."""
    forward = model if isinstance(model, nn.Module) or callable(model) else _sklearn_forward(model)
    if forward is None:
        raise TypeError(
            f"cannot explain a model of type {type(model).__module__}.{name}: {SUPPORTED}. Next step: pass a "
            "callable on (B, n) float tensors, e.g. lambda x: torch.as_tensor(model.predict(x.numpy()))"
        )
    return forward


def _sklearn_forward(model: Any) -> Any:
    """A torch callable around a fitted scikit-learn-style estimator (binary classifiers: P(class 1)), or None."""
    if hasattr(model, "predict_proba") and len(getattr(model, "classes_", ())) == 2:

        def proba(x: Tensor) -> Tensor:
            return torch.as_tensor(model.predict_proba(x.detach().cpu().numpy())[:, 1], dtype=x.dtype)

        return proba
    if hasattr(model, "predict") and not hasattr(model, "predict_proba"):

        def predict(x: Tensor) -> Tensor:
            return torch.as_tensor(model.predict(x.detach().cpu().numpy()), dtype=x.dtype)

        return predict
    return None


def _is_exact_gp(model: Any) -> bool:
    return isinstance(model, gpytorch.models.ExactGP)


__all__ = ["AfterFitResult", "explain_after_fit"]

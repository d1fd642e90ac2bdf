"""Adapters that read tree ensembles from scikit-learn, XGBoost, LightGBM and CatBoost into one flat form.

Each library's adapter lives in its own module and imports that library lazily, so XGBoost, LightGBM and
CatBoost stay optional (``pip install torchxplain[trees]``). Which output each parsed ensemble explains, and
the default for classifiers, is stated in :mod:`~torchxplain.fourier.trees.adapters._targets`.
"""

from __future__ import annotations

from typing import Any

from torchxplain.fourier.trees.adapters import _catboost, _lightgbm, _sklearn, _sklearn_hist, _xgboost
from torchxplain.fourier.trees.adapters._base import ObliviousBlock, TreeEnsemble

_ADAPTERS = (_sklearn, _sklearn_hist, _xgboost, _lightgbm, _catboost)
#: The tree models ``tree_spectrum`` and ``FourierShap.from_trees`` read, one library per ``;``-separated part.
SUPPORTED_MODELS = "; ".join(adapter.SUPPORTED for adapter in _ADAPTERS)


def supports(model: Any) -> bool:
    """Whether ``model`` is a tree model one of the adapters reads."""
    return any(adapter.matches(model) for adapter in _ADAPTERS)


def unsupported_message(model: Any) -> str:
    """Why ``model`` cannot be read as a tree ensemble, the supported families, and the next step."""
    return (
        f"model of type {type(model).__module__}.{type(model).__qualname__} is not a supported tree model; "
        f"supported: {SUPPORTED_MODELS}. For any other model on binary (0/1 or one-hot) inputs, fit a sparse "
        "Fourier surrogate by queries instead: tx.FourierShap(forward_func, background), e.g. with "
        "forward_func=lambda x: torch.as_tensor(model.predict_proba(x.numpy())[:, 1])"
    )


def parse_model_outputs(model: Any, target: int | None = None, frame: Any = None) -> list[TreeEnsemble]:
    """Read a fitted tree model into one :class:`TreeEnsemble` per explained output.

    ``target=None`` gives the default outputs: the single output of a regressor (every output of a
    multi-output one), the positive class of a binary classifier on the model's own scale (probability for
    scikit-learn trees and forests, log-odds for boosting), and every class of a multiclass classifier.
    ``target=c`` gives ``[class/output c]``. Each ensemble's :attr:`~TreeEnsemble.output` says which output and
    scale it is, and :attr:`~TreeEnsemble.target` its index. ``frame``: rows like the ones to be explained (a
    DataFrame), which a CatBoost model with categorical features needs: its categorical splits are read by probing
    the model with each category of the frame's ``category`` columns.

    Raises:
        TypeError: the model type is not supported (the message names it, lists the supported families and
            the black-box alternative), or ``target`` is not an int.
        ValueError: the model is not fitted, ``target`` is out of range, or the model uses a feature this
            package cannot represent (categorical or text splits, linear leaves; the message names the fix).
    """
    for adapter in _ADAPTERS:
        if adapter.matches(model):
            return adapter.parse(model, target, frame)
    raise TypeError(unsupported_message(model))


def parse_model(model: Any, target: int | None = None) -> TreeEnsemble:
    """Read a fitted tree model into the one :class:`TreeEnsemble` of output ``target``.

    ``target=None`` works for regressors and binary classifiers: the positive class on the model's own scale
    (probability for scikit-learn trees and forests, log-odds for boosting); ``target=c`` reads class (or
    output) ``c``. The ensemble's :attr:`~TreeEnsemble.output` says which output and scale it is.

    Raises:
        TypeError: the model type is not supported (the message names it, lists the supported families and
            the black-box alternative), or ``target`` is not an int.
        ValueError: a multiclass (or multi-output) model without ``target``, the model is not fitted,
            ``target`` is out of range, or the model uses a feature this package cannot represent.

    Example:
        >>> from sklearn.datasets import load_breast_cancer
        >>> from sklearn.tree import DecisionTreeClassifier
        >>> import torchxplain as tx
        >>> X, y = load_breast_cancer(return_X_y=True)
        >>> tree = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, y)
        >>> tx.fourier.parse_model(tree).output
        'predict_proba[:, 1] (probability of class 1)'
    """
    outputs = parse_model_outputs(model, target)
    if len(outputs) > 1:
        raise ValueError(
            f"{type(model).__name__} has {len(outputs)} outputs ({outputs[0].output}, ...); pass "
            f"target=<index in 0..{len(outputs) - 1}> to read one of them"
        )
    return outputs[0]


__all__ = [
    "SUPPORTED_MODELS",
    "ObliviousBlock",
    "TreeEnsemble",
    "parse_model",
    "parse_model_outputs",
    "supports",
    "unsupported_message",
]

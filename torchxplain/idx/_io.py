"""Classifier specifications from pgmpy networks, scikit-learn ``CategoricalNB`` models and data frames.

Each function returns a validated :class:`~torchxplain.idx._spec.ClassifierSpec`;
:class:`~torchxplain.idx._classifier.BayesianClassifier` builds classifiers from them (``from_pgmpy``,
``from_sklearn``, ``fit``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from torchxplain._core import check_number, progress
from torchxplain._core.inputs import is_dataframe
from torchxplain.idx._encoding import BinMethod, bin_names, discretize
from torchxplain.idx._spec import ClassifierSpec


class ChainApproximationWarning(UserWarning):
    """A general Bayesian network was turned into a chain of naive Bayes classifiers (the IDX paper's semantics)."""


def _warn_if_not_naive(network: Any, structure: Mapping[str, Sequence[str]]) -> None:
    parents = {v: list(network.predecessors(v)) for v in network.nodes()}
    roots_with_leaves = len(structure) == 1 and all(len(parents[x]) == 1 for kids in structure.values() for x in kids)
    if roots_with_leaves and not any(parents[c] for c in structure):
        return
    several = sorted(v for v, p in parents.items() if len(p) > 1)
    chained = sorted(c for c, kids in structure.items() if any(x in structure for x in kids))
    warnings.warn(
        f"from_pgmpy: this network ({len(parents)} nodes, {sum(map(len, parents.values()))} edges) is not a naive "
        f"Bayes classifier, so it becomes a chain of naive Bayes classifiers (the IDX paper's semantics): each of "
        f"its {len(structure)} non-leaf nodes is decided from its children's values ({len(chained)} of them from "
        f"children that are themselves decided, not inferred), with P(child | node) taken from the network and the "
        f"child's other parents marginalised out ({len(several)} nodes have several parents"
        f"{': ' + ', '.join(several[:5]) + ('...' if len(several) > 5 else '') if several else ''}). Posteriors and "
        "decisions can differ from the network's own inference (pgmpy's VariableElimination). Silence with "
        "warnings.simplefilter('ignore', torchxplain.idx.ChainApproximationWarning).",
        ChainApproximationWarning,
        stacklevel=4,
    )


def spec_from_pgmpy(network: Any, observations: Sequence[str] | None = None) -> ClassifierSpec:
    """A chain classifier (BCC) derived from a discrete pgmpy Bayesian network.

    Every non-leaf node becomes a classification, a naive Bayes model over its children in the network, with
    ``P(c)`` the network marginal and ``P(x | c)`` the network conditional (the other parents of ``x``
    marginalised out), both by exact variable elimination. SD weights are the network marginals. Unless the
    network already is a naive Bayes classifier this changes its semantics, and a
    :class:`ChainApproximationWarning` says so.

    Args:
        network: a ``pgmpy`` ``DiscreteBayesianNetwork`` (or older ``BayesianNetwork``) with CPDs.
        observations: the observations; must be the leaves (the default), since every other node needs children
            to be classified from.
    """
    from pgmpy.inference import VariableElimination

    if not hasattr(network, "get_cpds") or not hasattr(network, "successors"):
        raise TypeError(f"network must be a pgmpy Bayesian network with CPDs, got {type(network).__name__}")
    nodes = list(network.nodes())
    if not nodes:
        raise ValueError("network has no nodes; build a pgmpy network with edges and CPDs first")
    without = [v for v in nodes if network.get_cpds(v) is None]
    if without:
        raise ValueError(
            f"network has no CPD for the nodes {without[:10]}{' ...' if len(without) > 10 else ''}; add one per node "
            "with network.add_cpds(TabularCPD(...)) (or fit it, e.g. network.fit(data)) before converting it"
        )
    leaves = [v for v in nodes if network.out_degree(v) == 0]
    if observations is not None:
        unknown = [o for o in observations if o not in nodes]
        if unknown:
            raise ValueError(f"observations names unknown nodes {unknown}; the network's nodes are {nodes[:20]}")
        if set(observations) != set(leaves):
            raise ValueError(
                f"observations must be the network's leaves {sorted(leaves)} (every other node is a classification "
                f"over its children), got {sorted(observations)}; pass observations=None"
            )
    order = [v for v in network.states if v in nodes] if hasattr(network, "states") else []
    order += [v for v in nodes if v not in order]
    values = {v: [str(s) for s in network.states[v]] for v in order}
    structure = {c: list(network.successors(c)) for c in order if network.out_degree(c) > 0}
    _warn_if_not_naive(network, structure)
    infer = VariableElimination(network)
    priors = {}
    for v in order:
        marginal = np.asarray(infer.query([v], show_progress=False).values, dtype=np.float64)
        priors[v] = marginal / marginal.sum()
    cpts = {}
    edges = [(c, x) for c, kids in structure.items() for x in kids]
    for c, x in progress(edges, desc="P(x | c) by variable elimination"):
        joint = infer.query([c, x], joint=True, show_progress=False)
        table = np.asarray(joint.values, dtype=np.float64)
        if list(joint.variables) != [c, x]:
            table = table.T
        pc = table.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            cpts[(c, x)] = np.where(pc > 0, table / np.where(pc > 0, pc, 1.0), 1.0 / table.shape[1])
    return ClassifierSpec.build(values, structure, priors, cpts)


def spec_from_sklearn(
    model: Any,
    feature_names: Any,
    class_name: str = "class",
    value_names: Any = None,
    class_names: Sequence[str] | None = None,
    sd_weights: Mapping[str, Any] | None = None,
) -> ClassifierSpec:
    """A naive BC from a fitted ``sklearn.naive_bayes.CategoricalNB``.

    Feature ``i`` takes codes ``0..n_categories_[i]-1``; ``value_names`` names them (a mapping, or the fitted
    ``OrdinalEncoder`` whose ``categories_`` made the codes), else the categorical columns of a DataFrame passed
    as ``feature_names``, else they are ``"0", "1", ...``; ``class_names`` names the classes (default ``str`` of
    ``model.classes_``). SD weights default to the training-data frequency of each category (``category_count_``
    summed over classes).
    """
    for attr in ("feature_log_prob_", "class_log_prior_", "category_count_"):
        if not hasattr(model, attr):
            raise TypeError(
                f"model must be a fitted sklearn CategoricalNB (missing {attr}), got {type(model).__name__}; "
                "fit it first"
            )
    if isinstance(feature_names, str):
        raise TypeError(f"feature_names must be a list of names, got the string {feature_names!r}")
    named = _category_names(feature_names)
    feature_names = [str(f) for f in feature_names]
    if len(feature_names) != len(model.feature_log_prob_):
        raise ValueError(
            f"feature_names has {len(feature_names)} names, the model has {len(model.feature_log_prob_)} features"
        )
    if class_name in feature_names:
        raise ValueError(f"class_name {class_name!r} is also a feature name; pick another class_name")
    if hasattr(value_names, "categories_"):  # the OrdinalEncoder that made the codes
        if len(value_names.categories_) != len(feature_names):
            raise ValueError(
                f"value_names is an encoder of {len(value_names.categories_)} columns, the model has "
                f"{len(feature_names)} features"
            )
        value_names = {f: list(c) for f, c in zip(feature_names, value_names.categories_)}
    value_names = {**named, **dict(value_names or {})}
    values: dict[str, list[str]] = {}
    cpts, weights = {}, {}
    for f, logp, counts in zip(feature_names, model.feature_log_prob_, model.category_count_):
        k = logp.shape[1]
        names = [str(v) for v in value_names.get(f, range(k))]
        if len(names) != k:
            raise ValueError(f"value_names[{f!r}] has {len(names)} names, the model has {k} categories")
        values[f] = names
        cpts[(class_name, f)] = np.exp(np.asarray(logp, dtype=np.float64))
        total = np.asarray(counts, dtype=np.float64).sum(axis=0)
        weights[f] = total / total.sum() if total.sum() > 0 else np.full(k, 1.0 / k)
    classes = [str(c) for c in (class_names if class_names is not None else model.classes_)]
    if len(classes) != len(model.class_log_prior_):
        raise ValueError(f"class_names has {len(classes)} names, the model has {len(model.class_log_prior_)} classes")
    values[class_name] = classes
    prior = np.exp(np.asarray(model.class_log_prior_, dtype=np.float64))
    weights[class_name] = prior
    if sd_weights is not None:
        weights.update(sd_weights)
    return ClassifierSpec.build(values, {class_name: feature_names}, {class_name: prior}, cpts, sd_weights=weights)


def _category_names(columns: Any) -> dict[str, list[str]]:
    """Column -> its categories, for the categorical columns of a DataFrame (nothing for a list of names)."""
    dtypes = getattr(columns, "dtypes", None)
    if dtypes is None:
        return {}
    return {str(c): [str(v) for v in columns[c].cat.categories] for c in columns.columns if dtypes[c] == "category"}


def _check_columns(frame: Any, used: Sequence[str], values: Mapping[str, Any], edges: Mapping[str, Any]) -> None:
    """Refuse what would silently become categories: missing values, and floating columns that are neither binned
    (``bins=``) nor declared categorical (``values=``), whose every distinct number would be a category."""
    import pandas as pd

    for v in used:
        col = frame[v]
        if bool(col.isna().any()):
            r = int(np.flatnonzero(col.isna().to_numpy())[0])
            raise ValueError(
                f"column {v!r} holds a missing value (NaN/None) at row {r} (index {frame.index[r]!r}); drop or "
                "impute those rows (a missing value is not a category)"
            )
        if pd.api.types.is_float_dtype(col) and v not in edges and v not in values:
            raise ValueError(
                f"column {v!r} is floating point with {col.nunique()} distinct values, each of which would become a "
                f"category; pass bins={{{v!r}: 5}} to discretise it, or values={{{v!r}: [...]}} (or cast it to "
                "strings) to declare its values categories"
            )


def spec_from_frame(
    frame: Any,
    structure: str | Mapping[str, Sequence[str]],
    alpha: float = 1.0,
    class_prior: Mapping[str, Sequence[float]] | None = None,
    values: Mapping[str, Sequence[str]] | None = None,
    bins: int | Mapping[str, int] | None = None,
    method: BinMethod = "same_size",
) -> tuple[ClassifierSpec, dict[str, np.ndarray]]:
    """Fit a naive or chain BC from a DataFrame of categorical (or binned numeric) columns.

    Each classification's naive Bayes model is fitted like ``CategoricalNB(alpha)``:
    ``P(x_v | c) = (n(x_v, c) + alpha) / (n(c) + alpha |V(x)|)`` with unsmoothed empirical class priors (or
    ``class_prior[c]``); observation priors (the SD weights) are the empirical frequencies.

    Args:
        frame: training rows; one column per variable. String, categorical, bool and integer columns are
            categorical (one value per distinct entry); floating columns must be binned (``bins=``) or declared
            categorical (``values=``); missing values are refused.
        structure: the class column for an NBC over all other columns, or classification -> children.
        alpha: additive (Laplace/Lidstone) smoothing, > 0.
        values: optional value order per column (default: sorted distinct values; bins in bin order).
        bins, method: discretise numeric columns first (see :func:`~torchxplain.idx._encoding.discretize`).

    Returns:
        ``(spec, bin_edges)``: the specification and the edges of every binned column.
    """
    import pandas as pd

    if not is_dataframe(frame):
        raise TypeError(f"frame must be a pandas DataFrame with one column per variable, got {type(frame).__name__}")
    check_number(alpha, "alpha", greater_than=0, hint="additive smoothing, e.g. alpha=1.0")
    edges: dict[str, np.ndarray] = {}
    original = frame
    if bins is not None:
        frame, edges = discretize(frame, bins, method)
    if isinstance(structure, str):
        if structure not in frame.columns:
            raise ValueError(f"class column {structure!r} is not in the frame's columns {list(frame.columns)}")
        structure = {structure: [c for c in frame.columns if c != structure]}
    if not isinstance(structure, Mapping):
        raise TypeError(f"structure must be a class column name or a mapping, got {type(structure).__name__}")
    named = list(dict.fromkeys([v for c, kids in structure.items() for v in (c, *kids)]))
    missing = [v for v in named if v not in frame.columns]
    if missing:
        raise ValueError(f"structure names columns {missing} that the frame lacks; it has {list(frame.columns)}")
    used = [c for c in frame.columns if c in set(named)]
    values = dict(values or {})
    _check_columns(original, used, values, edges)
    data = frame[used].astype(str)
    names, codes = {}, {}
    for v in used:
        seen = sorted(data[v].unique())
        default = bin_names(edges[v]) if v in edges else seen
        order = [str(x) for x in values.get(v, default)]
        unknown = sorted(set(seen) - set(order))
        if unknown:
            raise ValueError(f"column {v!r} holds values {unknown} missing from values[{v!r}] = {order}; add them")
        names[v] = order
        codes[v] = torch.from_numpy(pd.Index(order, dtype=object).get_indexer(data[v].to_numpy()).astype(np.int64))
    priors: dict[str, Any] = {v: torch.bincount(codes[v], minlength=len(names[v])).double() / len(data) for v in used}
    priors.update(class_prior or {})
    cpts = {}
    for c, kids in structure.items():
        kc = len(names[c])
        for x in kids:
            kx = len(names[x])
            joint = torch.bincount(codes[c] * kx + codes[x], minlength=kc * kx).double().reshape(kc, kx)
            cpts[(c, x)] = (joint + alpha) / (joint.sum(dim=1, keepdim=True) + alpha * kx)
    return ClassifierSpec.build(names, structure, priors, cpts), edges

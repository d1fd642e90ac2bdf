"""Building classifiers from pgmpy networks, scikit-learn ``CategoricalNB`` models and data frames."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from torchxplain.idx.classifier import BayesianClassifier


def from_pgmpy(
    network: Any,
    observations: Sequence[str] | None = None,
    dtype: torch.dtype = torch.float64,
    show_progress: bool | None = False,
) -> BayesianClassifier:
    """A chain classifier (BCC) derived from a discrete pgmpy Bayesian network.

    Every non-leaf node becomes a classification, a naive Bayes model over its children in the network,
    with ``P(c)`` the network marginal and ``P(x | c)`` the network conditional (the other parents of
    ``x`` marginalised out), both by exact variable elimination. SD weights are the network marginals.

    Args:
        network: a ``pgmpy`` ``DiscreteBayesianNetwork`` (or older ``BayesianNetwork``) with CPDs.
        observations: the observations; must be the leaves (the default), since every other node needs
            children to be classified from.
    """
    from pgmpy.inference import VariableElimination

    from torchxplain._core import progress

    if not hasattr(network, "get_cpds") or not hasattr(network, "successors"):
        raise TypeError(f"network must be a pgmpy Bayesian network, got {type(network).__name__}")
    nodes = list(network.nodes())
    leaves = [v for v in nodes if network.out_degree(v) == 0]
    if observations is not None:
        unknown = [o for o in observations if o not in nodes]
        if unknown:
            raise ValueError(f"observations names unknown nodes {unknown}")
        if set(observations) != set(leaves):
            raise ValueError(
                f"observations must be the network's leaves {sorted(leaves)} (every other node is a "
                f"classification over its children), got {sorted(observations)}"
            )
    order = list(network.states) if hasattr(network, "states") else nodes
    order = [v for v in order if v in nodes] + [v for v in nodes if v not in order]
    values = {v: [str(s) for s in network.states[v]] for v in order}
    structure = {c: list(network.successors(c)) for c in order if network.out_degree(c) > 0}
    infer = VariableElimination(network)
    marginals = {}
    for v in order:
        factor = infer.query([v], show_progress=False)
        marginals[v] = np.asarray(factor.values, dtype=np.float64)
    cpts = {}
    edges = [(c, x) for c, kids in structure.items() for x in kids]
    for c, x in progress(edges, show_progress, desc="P(x | c) by variable elimination"):
        joint = infer.query([c, x], joint=True, show_progress=False)
        table = np.asarray(joint.values, dtype=np.float64)
        if list(joint.variables) != [c, x]:
            table = table.T
        pc = table.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            cond = np.where(pc > 0, table / np.where(pc > 0, pc, 1.0), 1.0 / table.shape[1])
        cpts[(c, x)] = cond
    priors = {v: marginals[v] / marginals[v].sum() for v in order}
    return BayesianClassifier(values, structure, priors, cpts, dtype=dtype)


def from_sklearn(
    model: Any,
    feature_names: Sequence[str],
    class_name: str = "class",
    value_names: Mapping[str, Sequence[str]] | None = None,
    class_names: Sequence[str] | None = None,
    sd_weights: Mapping[str, Any] | None = None,
    dtype: torch.dtype = torch.float64,
) -> BayesianClassifier:
    """A naive BC from a fitted ``sklearn.naive_bayes.CategoricalNB``.

    Feature ``i`` takes codes ``0..n_categories_[i]-1``; ``value_names`` names them (default ``"0", "1", ...``)
    and ``class_names`` names the classes (default ``str`` of ``model.classes_``). SD weights default to
    the training-data frequency of each category (``category_count_`` summed over classes).
    """
    for attr in ("feature_log_prob_", "class_log_prior_", "category_count_"):
        if not hasattr(model, attr):
            raise TypeError(f"model must be a fitted sklearn CategoricalNB (missing {attr})")
    feature_names = [str(f) for f in feature_names]
    if len(feature_names) != len(model.feature_log_prob_):
        raise ValueError(
            f"feature_names has {len(feature_names)} names, the model has {len(model.feature_log_prob_)} features"
        )
    if class_name in feature_names:
        raise ValueError(f"class_name {class_name!r} is also a feature name")
    value_names = dict(value_names or {})
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
        raise ValueError(f"class_names has {len(classes)} names, the model has {len(model.class_log_prior_)}")
    values[class_name] = classes
    prior = np.exp(np.asarray(model.class_log_prior_, dtype=np.float64))
    weights[class_name] = prior
    if sd_weights is not None:
        weights.update(sd_weights)
    return BayesianClassifier(
        values, {class_name: feature_names}, {class_name: prior}, cpts, sd_weights=weights, dtype=dtype
    )


def discretize(frame: Any, bins: int | Mapping[str, int] = 5, method: str = "same_size") -> tuple[Any, dict]:
    """Bin the numeric columns of a DataFrame: ``method`` ``"same_size"`` (quantiles) or ``"same_length"``.

    Returns ``(binned_frame, edges)``; ``edges[column]`` is the array of bin edges (apply to new data with
    :func:`apply_bins`). Non-numeric columns are returned unchanged (as strings).
    """
    import pandas as pd

    if method not in ("same_size", "same_length"):
        raise ValueError(f"method must be 'same_size' or 'same_length', got {method!r}")
    out, edges = frame.copy(), {}
    for col in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[col]):
            out[col] = frame[col].astype(str)
            continue
        n = bins.get(col) if isinstance(bins, Mapping) else bins
        if n is None:
            out[col] = frame[col].astype(str)
            continue
        if method == "same_size":
            _, e = pd.qcut(frame[col], q=int(n), retbins=True, duplicates="drop")
        else:
            _, e = pd.cut(frame[col], bins=int(n), retbins=True)
        edges[col] = np.asarray(e, dtype=np.float64)
    return apply_bins(out, edges), edges


def apply_bins(frame: Any, edges: Mapping[str, np.ndarray]) -> Any:
    """Replace numeric columns by bin names ``"b0", "b1", ...`` using ``edges`` from :func:`discretize`
    (values outside the training range fall into the first or last bin)."""
    out = frame.copy()
    for col, e in edges.items():
        idx = np.clip(np.searchsorted(e[1:-1], np.asarray(frame[col], dtype=np.float64), side="right"), 0, len(e) - 2)
        out[col] = [f"b{i}" for i in idx]
    return out


def fit(
    frame: Any,
    structure: str | Mapping[str, Sequence[str]],
    alpha: float = 1.0,
    class_prior: Mapping[str, Sequence[float]] | None = None,
    values: Mapping[str, Sequence[str]] | None = None,
    bins: int | Mapping[str, int] | None = None,
    method: str = "same_size",
    dtype: torch.dtype = torch.float64,
) -> BayesianClassifier:
    """Fit a naive or chain BC from a DataFrame of categorical (or binned numeric) columns.

    Each classification's naive Bayes model is fitted like ``CategoricalNB(alpha)``:
    ``P(x_v | c) = (n(x_v, c) + alpha) / (n(c) + alpha |V(x)|)`` with unsmoothed empirical class priors
    (or ``class_prior[c]``); observation priors (the SD weights) are the empirical frequencies.

    Args:
        frame: training rows; one column per variable.
        structure: the class column for an NBC over all other columns, or classification -> children.
        alpha: additive (Laplace/Lidstone) smoothing, > 0.
        values: optional value order per column (default: sorted distinct values).
        bins, method: discretise numeric columns first (see :func:`discretize`); the edges are kept on the
            returned classifier as ``bin_edges``.
    """
    if alpha <= 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    edges: dict = {}
    if bins is not None:
        frame, edges = discretize(frame, bins, method)
    if isinstance(structure, str):
        if structure not in frame.columns:
            raise ValueError(f"class column {structure!r} is not in the frame's columns {list(frame.columns)}")
        structure = {structure: [c for c in frame.columns if c != structure]}
    named = list(dict.fromkeys([v for c, kids in structure.items() for v in (c, *kids)]))
    missing = [v for v in named if v not in frame.columns]
    if missing:
        raise ValueError(f"structure names columns {missing} that the frame lacks")
    used = [c for c in frame.columns if c in set(named)]
    values = dict(values or {})
    data = frame[used].astype(str)
    names = {}
    for v in used:
        seen = sorted(data[v].unique())
        order = [str(x) for x in values.get(v, seen)]
        unknown = sorted(set(seen) - set(order))
        if unknown:
            raise ValueError(f"column {v!r} holds values {unknown} missing from values[{v!r}] = {order}")
        names[v] = order
    codes = {v: torch.tensor([names[v].index(x) for x in data[v]], dtype=torch.long) for v in used}
    n = len(data)
    priors: dict[str, Any] = {}
    for v in used:
        counts = torch.bincount(codes[v], minlength=len(names[v])).double()
        priors[v] = counts / n
    if class_prior:
        for c, p in class_prior.items():
            priors[c] = p
    cpts = {}
    for c, kids in structure.items():
        kc = len(names[c])
        for x in kids:
            kx = len(names[x])
            joint = torch.bincount(codes[c] * kx + codes[x], minlength=kc * kx).double().reshape(kc, kx)
            cpts[(c, x)] = (joint + alpha) / (joint.sum(dim=1, keepdim=True) + alpha * kx)
    bc = BayesianClassifier(names, structure, priors, cpts, dtype=dtype)
    bc.bin_edges = edges
    return bc

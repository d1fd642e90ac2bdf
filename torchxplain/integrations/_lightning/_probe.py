"""Checks of :class:`ExplanationCallback`'s arguments: the probe, its feature names and the logging keys."""

from __future__ import annotations

import re
from collections.abc import Sequence

import torch
from torch import Tensor

from torchxplain._core.inputs import check_feature_names, to_tensor

_KEY_UNSAFE = re.compile(r"[^A-Za-z0-9_. -]")  # MLflow's metric-name alphabet, without "/" (our separator)
_PREFIX = re.compile(r"[A-Za-z0-9_. -]+(/[A-Za-z0-9_. -]+)*")


def nonfinite_rows(values: Tensor) -> list[int]:
    """Indices of the rows of ``(P, ...)`` ``values`` that hold a NaN or an infinity."""
    flat = values.reshape(values.shape[0], -1)
    return (~torch.isfinite(flat)).any(1).nonzero().flatten().tolist()


def check_probe(probe: object, feature_names: Sequence[str] | None) -> tuple[Tensor, list[str]]:
    """The probe as a ``(P, n)`` tensor (integer/bool probes become the default float dtype) and its names.

    Args:
        probe: a tensor, numpy array, nested list or pandas DataFrame of ``P >= 1`` rows and ``n`` features.
        feature_names: ``n`` distinct names (default: the DataFrame's columns, else ``x0..``).

    Raises:
        TypeError: not array-like, non-numeric values, or names that are not strings.
        ValueError: not 2-D, empty, NaN/infinite entries (the rows are named), or names of the wrong count,
            repeated, or different from the DataFrame's columns.
    """
    converted = to_tensor(probe, "probe", ndim=2)
    x = converted.tensor.detach()
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"probe must be a non-empty (P, n) table, got shape {tuple(x.shape)}")
    if not x.is_floating_point():
        x = x.to(torch.get_default_dtype())
    bad = nonfinite_rows(x)
    if bad:
        raise ValueError(
            f"probe rows {bad[:10]}{' ...' if len(bad) > 10 else ''} hold NaN or infinite values; "
            "drop or impute them before building the callback"
        )
    n = x.shape[1]
    if feature_names is None:
        names = list(converted.feature_names) if converted.feature_names is not None else [f"x{i}" for i in range(n)]
    else:
        if isinstance(feature_names, str) or not all(isinstance(name, str) for name in feature_names):
            raise TypeError(f"feature_names must be a sequence of strings, got {str(feature_names)[:60]!r}")
        names = list(feature_names)
        check_feature_names(converted.feature_names, tuple(names), "feature_names")
    if len(names) != n:
        raise ValueError(f"got {len(names)} feature_names for a probe with {n} features; pass one name per column")
    return x.clone(), names


def check_prefix(prefix: object) -> str:
    """A key prefix such as ``"xai"`` or ``"xai/ig"``: letters, digits, ``_ . -`` and space, ``/``-separated."""
    if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
        raise ValueError(
            f"prefix must be a non-empty key such as 'xai' or 'xai/ig' (letters, digits, '_', '.', '-', ' ', "
            f"'/' between parts), got {str(prefix)[:60]!r}"
        )
    return prefix


def scalar_keys(prefix: str, feature_names: Sequence[str]) -> list[str]:
    """``{prefix}/mean_abs/{name}`` per feature, with characters loggers refuse (MLflow) replaced by ``_``.

    Raises:
        ValueError: two names give the same key.
    """
    keys = [f"{prefix}/mean_abs/{_KEY_UNSAFE.sub('_', name)}" for name in feature_names]
    first: dict[str, int] = {}
    for i, key in enumerate(keys):
        if key in first:
            j = first[key]
            raise ValueError(
                f"feature_names[{j}] = {feature_names[j]!r} and feature_names[{i}] = {feature_names[i]!r} give the "
                f"same logging key {key!r}; pass distinct names"
            )
        first[key] = i
    return keys


__all__ = ["check_prefix", "check_probe", "nonfinite_rows", "scalar_keys"]

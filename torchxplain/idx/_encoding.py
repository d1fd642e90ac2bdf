"""Encoding user inputs as integer codes ``(B, |O|)``: dicts, lists of dicts, DataFrames, arrays and tensors.

An input gives every observation a value and nothing else: a dict key naming a classification (which the
classifier decides) or no variable is refused. A DataFrame may also hold classification columns (e.g. the labels of
a training frame): they are not inputs and are not read; a column naming no variable, or a missing value in an
observation column, is refused.

One vectorised encoder serves every form: each observation's values are looked up column by column in a hash
index of its value names (:meth:`pandas.Index.get_indexer`), so a DataFrame or a list of a million records costs
a few hash lookups per cell, and integer codes only a range check. Numeric DataFrame columns that were binned at
fit time (:func:`discretize`) are binned with the stored edges first.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor

from torchxplain._core import check_int, settings
from torchxplain._core.inputs import is_dataframe, to_tensor

BinMethod = Literal["same_size", "same_length"]
_FORMS = (
    "a dict {observation: value name} (one input), a list of such dicts, a pandas DataFrame with one column per "
    "observation, or integer codes (B, |O|)"
)


def _bin_index(edges: np.ndarray, column: Any) -> np.ndarray:
    """Bin of every value (0..len(edges)-2); values outside the training range go to the first or last bin."""
    values = np.asarray(column, dtype=np.float64)
    return np.clip(np.searchsorted(edges[1:-1], values, side="right"), 0, len(edges) - 2)


def bin_names(edges: np.ndarray) -> list[str]:
    """The value names ``"b0", "b1", ...`` of the bins defined by ``edges``, in order."""
    return [f"b{i}" for i in range(len(edges) - 1)]


def apply_bins(frame: Any, edges: Mapping[str, np.ndarray]) -> Any:
    """Replace the numeric columns named in ``edges`` by bin names ``"b0", "b1", ...`` (see :func:`discretize`)."""
    out = frame.copy()
    for col, e in edges.items():
        out[col] = np.asarray(bin_names(e), dtype=object)[_bin_index(e, frame[col])]
    return out


def discretize(frame: Any, bins: int | Mapping[str, int] = 5, method: BinMethod = "same_size") -> tuple[Any, dict]:
    """Bin the numeric columns of a DataFrame: ``method`` ``"same_size"`` (quantiles) or ``"same_length"``.

    Returns ``(binned_frame, edges)``; ``edges[column]`` is the float64 array of bin edges (apply to new data with
    :func:`apply_bins`). Non-numeric columns, and numeric ones that a ``bins`` mapping omits, become strings.
    """
    import pandas as pd

    if method not in ("same_size", "same_length"):
        raise ValueError(f"method must be 'same_size' or 'same_length', got {method!r}")
    out, edges = frame.copy(), {}
    for col in frame.columns:
        n = bins.get(col) if isinstance(bins, Mapping) else bins
        if not pd.api.types.is_numeric_dtype(frame[col]) or n is None:
            out[col] = frame[col].astype(str)
            continue
        check_int(n, f"bins for column {str(col)[:40]!r}", 1, hint="e.g. 5")
        if method == "same_size":
            _, e = pd.qcut(frame[col], q=n, retbins=True, duplicates="drop")
        else:
            _, e = pd.cut(frame[col], bins=n, retbins=True)
        edges[col] = np.asarray(e, dtype=np.float64)
    return apply_bins(out, edges), edges


def check_bin_edges(bin_edges: Mapping[str, Any] | None, value_names: Mapping[str, Sequence[str]]) -> dict:
    """``bin_edges`` as float64 arrays: per observation, at least two finite, strictly increasing edges whose bins
    ``"b0", "b1", ...`` are all values of that observation.

    Raises:
        TypeError: not a mapping, or edges that are not numbers.
        ValueError: an unknown column, too few, non-finite or unsorted edges, or bins that are no value names.
    """
    if bin_edges is None:
        return {}
    if not isinstance(bin_edges, Mapping):
        raise TypeError(f"bin_edges must be a mapping column -> bin edges, got {type(bin_edges).__name__}")
    out = {}
    for col, given in bin_edges.items():
        col = str(col)
        if col not in value_names:
            raise ValueError(f"bin_edges names {col[:40]!r}, which is not an observation {tuple(value_names)[:10]}")
        try:
            edges = np.asarray(given, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"bin_edges[{col!r}] must be a list of numbers, got {str(given)[:40]!r}") from None
        if edges.ndim != 1 or edges.size < 2 or not np.isfinite(edges).all() or not (np.diff(edges) > 0).all():
            raise ValueError(
                f"bin_edges[{col!r}] must hold at least two finite, strictly increasing edges, got "
                f"{str(edges.tolist())[:60]}"
            )
        missing = [b for b in bin_names(edges) if b not in value_names[col]]
        if missing:
            raise ValueError(f"bin_edges[{col!r}] defines bins {missing[:5]} that are no values of {col!r}")
        out[col] = edges
    return out


class InputEncoder:
    """Turns user inputs into validated integer codes ``(B, |O|)``, one column per observation in order.

    Args:
        variables: every variable name (keys of an input dict may name any of them; others are refused).
        observations: the observation names, in column order.
        value_names: observation -> its value names (a value's code is its position).
        bin_edges: numeric column -> bin edges from :func:`discretize` (applied to numeric DataFrame columns).
    """

    def __init__(
        self,
        variables: Sequence[str],
        observations: Sequence[str],
        value_names: Mapping[str, Sequence[str]],
        bin_edges: Mapping[str, Any] | None = None,
    ) -> None:

        self.variables = frozenset(variables)
        self.observations = tuple(observations)
        self.value_names = {o: tuple(value_names[o]) for o in self.observations}
        self.bin_edges = check_bin_edges(bin_edges, self.value_names)
        self._code = {o: {name: i for i, name in enumerate(self.value_names[o])} for o in self.observations}
        self._cards = torch.tensor([len(self.value_names[o]) for o in self.observations])

    def encode(self, inputs: Any, device: torch.device | str | None = None) -> Tensor:
        """Codes ``(B, |O|)`` (long, on ``device``) from any accepted input form (see the module docstring).

        Raises:
            TypeError: an unsupported form (a string, a tuple of names, floats as codes, ...).
            ValueError: unknown or missing variables, unknown value names, wrong shapes or out-of-range codes,
                each named with its row and column.
        """
        if isinstance(inputs, Mapping):
            return self._records([inputs], device)
        if is_dataframe(inputs):
            return self._frame(inputs, device)
        if isinstance(inputs, (str, bytes)):
            raise TypeError(
                f"inputs must be {_FORMS}; got the string {inputs[:40]!r}. Pass e.g. "
                f"{dict(zip(self.observations, (n[0] for n in self.value_names.values())))}"
            )
        if isinstance(inputs, (list, tuple)) and inputs and isinstance(inputs[0], Mapping):
            return self._records(inputs, device)
        if isinstance(inputs, (list, tuple)) and not inputs:
            return torch.empty((0, len(self.observations)), dtype=torch.long, device=device)
        return self._codes(inputs, device)

    def _unknown_value(self, where: str, o: str, value: Any) -> ValueError:
        return ValueError(
            f"{where} = {value!r} is not a value of {o!r}; values are {self.value_names[o]}; "
            "pass one of them (value names are matched as strings)"
        )

    def _lookup(self, o: str, values: Any) -> np.ndarray:
        """Codes of one observation's values (-1 where unknown), matching the names as given, then as strings."""
        code = self._code[o]
        try:
            out = np.fromiter((code.get(v, -1) for v in values), dtype=np.int64, count=len(values))
        except TypeError:  # an unhashable value: matched as a string below
            out = np.full(len(values), -1, dtype=np.int64)
        for i in np.flatnonzero(out < 0).tolist():
            out[i] = code.get(str(values[i]), -1)
        return out

    def _records(self, rows: Sequence[Any], device: torch.device | str | None) -> Tensor:
        for r, row in enumerate(rows):
            if not isinstance(row, Mapping):
                raise TypeError(
                    f"inputs[{r}] is a {type(row).__name__}, but inputs[0] is a dict; inputs must be {_FORMS}"
                )
        extra = set().union(*rows) - set(self.observations)
        if extra:
            r = next(i for i, row in enumerate(rows) if extra & row.keys())
            decided = sorted(map(str, extra & rows[r].keys() & self.variables))
            if decided:
                raise ValueError(
                    f"inputs[{r}] gives values for the classifications {decided}, which the classifier decides from "
                    f"the observations; an input holds the observations {self.observations} only: drop those keys"
                )
            raise ValueError(
                f"inputs[{r}] names unknown variables {sorted(map(str, extra & rows[r].keys()))}; observations "
                f"are {self.observations}"
            )
        getter = operator.itemgetter(*self.observations)
        try:
            table = list(map(getter, rows))
        except KeyError:
            r, o = next((i, o) for i, row in enumerate(rows) for o in self.observations if o not in row)
            raise ValueError(
                f"inputs[{r}] lacks a value for observation {o!r}; give every observation a value"
            ) from None
        columns = list(zip(*table)) if len(self.observations) > 1 else [table]
        codes = np.empty((len(rows), len(self.observations)), dtype=np.int64)
        for j, o in enumerate(self.observations):
            codes[:, j] = self._lookup(o, columns[j])
            if (codes[:, j] < 0).any():
                r = int(np.flatnonzero(codes[:, j] < 0)[0])
                raise self._unknown_value(f"inputs[{r}][{o!r}]", o, rows[r][o])
        return torch.from_numpy(codes).to(device)

    def _frame(self, frame: Any, device: torch.device | str | None) -> Tensor:
        import pandas as pd

        missing = [o for o in self.observations if o not in frame.columns]
        if missing:
            raise ValueError(
                f"inputs DataFrame lacks observation columns {missing}; it has {list(frame.columns)[:20]}; add them"
            )
        unknown = [str(c) for c in frame.columns if c not in self.variables]
        if unknown:
            raise ValueError(
                f"inputs DataFrame has columns {unknown[:10]} that name no variable of the classifier (its "
                f"observations are {self.observations}); drop them or rename them to the observations they hold"
            )
        observed = frame[list(self.observations)]
        if bool(observed.isna().to_numpy().any()):
            r, j = (int(i[0]) for i in np.nonzero(observed.isna().to_numpy()))
            raise ValueError(
                f"inputs DataFrame holds a missing value (NaN/None) in column {self.observations[j]!r}, row {r} "
                f"(index {frame.index[r]!r}); every observation needs a value: drop or impute those rows"
            )
        codes = np.empty((len(frame), len(self.observations)), dtype=np.int64)
        for j, o in enumerate(self.observations):
            col = frame[o]
            if o in self.bin_edges and pd.api.types.is_numeric_dtype(col):
                edges = self.bin_edges[o]
                codes[:, j] = self._lookup(o, bin_names(edges))[_bin_index(edges, col)]
            else:  # factorise in C, then look up the few distinct values (missing values get -1)
                found, distinct = pd.factorize(col)
                codes[:, j] = np.append(self._lookup(o, list(distinct)), -1)[found]
            if (codes[:, j] < 0).any():
                r = int(np.flatnonzero(codes[:, j] < 0)[0])
                raise self._unknown_value(f"inputs row {r} (index {frame.index[r]!r}), column {o!r},", o, col.iloc[r])
        return torch.from_numpy(codes).to(device)

    def _codes(self, inputs: Any, device: torch.device | str | None) -> Tensor:
        try:
            codes = to_tensor(inputs, "inputs", device=device).tensor
        except (TypeError, ValueError) as err:
            raise TypeError(f"inputs must be {_FORMS}; got {type(inputs).__name__} ({err})") from None
        if codes.is_floating_point() or codes.is_complex() or codes.dtype == torch.bool:
            raise TypeError(
                f"integer-coded inputs must have an integer dtype, got {codes.dtype}; cast them with .long() "
                "(or pass value names as dicts or a DataFrame)"
            )
        m = len(self.observations)
        if codes.ndim != 2 or codes.shape[1] != m:
            hint = "; pass codes[None] for a single input" if codes.ndim == 1 and codes.shape[0] == m else ""
            raise ValueError(
                f"integer-coded inputs must have shape (B, {m}) with columns {self.observations}, got "
                f"{tuple(codes.shape)}{hint}"
            )
        if device is not None and codes.device != torch.device(device):
            raise ValueError(
                f"inputs are on {codes.device}, the classifier on {torch.device(device)}; move one of them "
                "(codes.to(device) or classifier.to(device))"
            )
        codes = codes.to(dtype=torch.long)
        if settings.validation.checks_values() and codes.numel():
            card = self._cards.to(codes.device)
            bad = (codes < 0) | (codes >= card)
            if bool(bad.any()):
                r, col = (int(i) for i in bad.nonzero()[0])
                raise ValueError(
                    f"inputs[{r}, {col}] = {int(codes[r, col])} is out of range for observation "
                    f"{self.observations[col]!r}, expected 0..{int(card[col]) - 1}"
                )
        return codes

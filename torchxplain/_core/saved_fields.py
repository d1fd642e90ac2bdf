"""Typed, validated readers of saved fields: a loaded file is checked as strictly as a constructor's arguments.

A saved object is a JSON-able ``config`` and a dict of tensors ``state`` (:mod:`torchxplain._core.persistence`
writes explainers that way; IDX classifiers are JSON only). Reading a field through :class:`SavedFields` checks
its kind, range and shape and raises one :class:`SavedFieldError` naming the field, what it holds and what was
expected, so a damaged or edited file is refused at load, never at first use and never with a wrong number.

What the readers guarantee:

* config values: :meth:`~SavedFields.flag` (a real JSON bool: ``"no"`` and ``0`` are refused),
  :meth:`~SavedFields.integer` and :meth:`~SavedFields.number` (the bounds of
  :func:`~torchxplain._core.validation.check_int` / :func:`~torchxplain._core.validation.check_number`; NaN,
  infinities and bools refused), :meth:`~SavedFields.choice`, :meth:`~SavedFields.names` (a list of strings of
  a given length), :meth:`~SavedFields.memory` (a budget :func:`~torchxplain._core.settings.parse_memory`
  accepts), :meth:`~SavedFields.dtype` (a dtype name from an allow-list, never ``getattr(torch, name)``);
* nested JSON: :meth:`~SavedFields.section` reads a nested mapping (its fields are named ``priors['b']``),
  :meth:`~SavedFields.numbers` nested lists of finite numbers as a float64 tensor (bools and ragged lists
  refused), :meth:`~SavedFields.require` any cross-field condition;
* tensors (:meth:`~SavedFields.tensor`): the dtype kind (floating, integer, bool), finite values, value bounds,
  binary values, and the shape, whose named dimensions (``("N", "J")``) bind on first use so every later field
  is checked against them (:meth:`~SavedFields.dim`). A tensor whose elements outnumber its storage (a stride-0
  or expanded view: a few bytes on disk that materialise as gigabytes) is refused; every tensor returned is
  contiguous, so materialising it never costs more memory than the file held. Sizes read from the config (an
  ``n`` that later allocates ``2^n`` rows) take a ``maximum``.

Adopting it in a ``_from_config(config, state, forward_func)`` (the persistence protocol)::

    fields = SavedFields(config, state)
    names = fields.names("feature_names", length="J", optional=True)   # checked once "J" is bound
    x = fields.tensor("x", ("N", "J"), kind="float")                   # binds N and J
    xi = fields.tensor("xi", ("J",), kind="float", nonzero=True)
    relaxed = fields.flag("relaxed")
    fields.require(bool((x >= 0).all()), "x", "holds negative entries")  # a cross-field check

:func:`~torchxplain._core.persistence.load_explainer` prefixes the message with the file's path. Messages are
bounded: a field's value is shown truncated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, overload

import torch
from torch import Tensor

from torchxplain._core.settings import parse_memory
from torchxplain._core.validation import check_int, check_number

Kind = Literal["float", "int", "bool"]
Dim = int | str
FLOAT_DTYPES: dict[str, torch.dtype] = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
}
_MISSING = object()
_FIX = "the file is damaged or was edited: re-save it"


class SavedFieldError(ValueError):
    """A saved field is missing, of the wrong kind, out of range, or inconsistent with another field."""


def _short(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


class SavedFields:
    """Typed readers of one saved object's ``config`` (JSON values) and ``state`` (tensors).

    Args:
        config: the JSON-able metadata (a mapping).
        state: the tensors by name (``None``: a JSON-only object).
        prefix: prepended to every state key read (e.g. ``"backend."``); :meth:`sub` makes such views.
        dims: named dimensions already bound (shared with the views made by :meth:`sub`).
        where: the path of ``config`` inside the saved object, for messages (``"priors"`` names fields
            ``priors['b']``); :meth:`section` makes such readers of nested mappings.
        fix: what every message ends with (default: the file is damaged or was edited, re-save it).

    Raises:
        SavedFieldError: ``config`` is not a mapping or ``state`` not a mapping of tensors.
    """

    def __init__(
        self,
        config: Any,
        state: Mapping[str, Any] | None = None,
        prefix: str = "",
        dims: dict[str, int] | None = None,
        where: str = "",
        fix: str = _FIX,
    ) -> None:
        self.fix = fix
        if not isinstance(config, Mapping):
            name = f"saved field {where}" if where else "the saved config"
            raise SavedFieldError(f"{name} must be a mapping, got {_short(config)}; {fix}")
        if state is not None and (
            not isinstance(state, Mapping) or not all(isinstance(v, Tensor) for v in state.values())
        ):
            raise SavedFieldError(f"the saved state must map names to tensors; {fix}")
        self.config = config
        self.state: Mapping[str, Tensor] = state or {}
        self.prefix = prefix
        self.dims: dict[str, int] = {} if dims is None else dims
        self.where = where

    def sub(self, prefix: str) -> SavedFields:
        """A view reading state keys under ``prefix`` (config keys unchanged), sharing the bound dimensions."""
        return SavedFields(self.config, self.state, self.prefix + prefix, self.dims, self.where, self.fix)

    def name(self, key: str) -> str:
        """The field's name in messages: ``'key'``, or ``where['key']`` inside a section."""
        return f"{self.where}[{key!r}]" if self.where else repr(key)

    def section(self, key: str) -> SavedFields:
        """A reader of the nested mapping at config ``key`` (its fields are named ``key['...']``)."""
        return SavedFields(self.value(key), None, "", self.dims, self.name(key) if self.where else key, self.fix)

    def keys(self) -> list[str]:
        """The config's keys, which must be strings."""
        bad = [k for k in self.config if not isinstance(k, str)]
        if bad:
            raise SavedFieldError(
                f"saved field {self.where} has a key {_short(bad[0])} that is not a string; {self.fix}"
            )
        return list(self.config)

    def fail(self, key: str, problem: str) -> SavedFieldError:
        """The error for field ``key``: ``saved field 'key' <problem>; <the fix>``."""
        return SavedFieldError(f"saved field {self.name(key)} {problem}; {self.fix}")

    def require(self, condition: bool, key: str, problem: str) -> None:
        """Raise :meth:`fail` unless ``condition`` (a cross-field check, e.g. two tensors that must agree)."""
        if not condition:
            raise self.fail(key, problem)

    # ------------------------------------------------------------------ config values
    def value(self, key: str, optional: bool = False) -> Any:
        """The raw config value of ``key`` (``None`` when ``optional`` and absent or null)."""
        value = self.config.get(key, _MISSING)
        if value is _MISSING or value is None:
            if optional:
                return None
            raise self.fail(key, "is missing" if value is _MISSING else "is null")
        return value

    def flag(self, key: str, optional: bool = False) -> bool | None:
        """A JSON bool (``"no"``, ``"false"``, ``0`` and ``1`` are refused, not read as truth values)."""
        value = self.value(key, optional)
        if value is not None and not isinstance(value, bool):
            raise self.fail(key, f"must be true or false, got {_short(value)}")
        return value

    def integer(self, key: str, minimum: int | None = None, maximum: int | None = None) -> int:
        """An int in ``minimum..maximum`` (floats and bools refused)."""
        value = self.value(key)
        try:
            return check_int(value, f"saved field {self.name(key)}", minimum, maximum)
        except (TypeError, ValueError) as err:
            raise SavedFieldError(f"{err}; {self.fix}") from None

    def number(self, key: str, **bounds: Any) -> float:
        """A finite float within ``bounds`` (those of :func:`~torchxplain._core.validation.check_number`)."""
        value = self.value(key)
        try:
            return check_number(value, f"saved field {self.name(key)}", **bounds)
        except (TypeError, ValueError) as err:
            raise SavedFieldError(f"{err}; {self.fix}") from None

    def choice(self, key: str, options: Sequence[str]) -> str:
        """One of ``options`` (a string)."""
        value = self.value(key)
        if not isinstance(value, str) or value not in options:
            raise self.fail(key, f"must be one of {list(options)}, got {_short(value)}")
        return value

    @overload
    def names(self, key: str, length: Dim | None = ..., optional: Literal[False] = ...) -> list[str]: ...

    @overload
    def names(self, key: str, length: Dim | None = ..., *, optional: bool) -> list[str] | None: ...

    @overload
    def names(self, key: str, length: Dim | None, optional: bool) -> list[str] | None: ...

    def names(self, key: str, length: Dim | None = None, optional: bool = False) -> list[str] | None:
        """A list of strings (feature names, ...) of ``length`` entries (an int or a bound dimension's name)."""
        value = self.value(key, optional)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, f"must be a list of strings, got {_short(value)}")
        if length is not None:
            want = self.dim(length) if isinstance(length, str) else length
            if len(value) != want:
                raise self.fail(key, f"has {len(value)} names, expected {want} (one per feature)")
        return list(value)

    def numbers(self, key: str, shape: Sequence[Dim] | None = None) -> Tensor:
        """A float64 tensor from nested JSON lists of finite numbers (bools, strings and ragged lists refused)."""
        value = self.value(key)

        def ok(v: Any) -> bool:
            if isinstance(v, list):
                return all(ok(u) for u in v)
            return isinstance(v, (int, float)) and not isinstance(v, bool)

        if not ok(value):
            raise self.fail(key, f"must be numbers or (nested) lists of numbers, got {_short(value)}")
        try:
            t = torch.tensor(value, dtype=torch.float64)
        except (TypeError, ValueError):
            raise self.fail(key, "is a ragged nested list (rows of different lengths)") from None
        self._check_shape(self.name(key), t, shape)
        self._check_values(self.name(key), t, True, False, None, None, False, False)
        return t

    def memory(self, key: str) -> int | None:
        """A memory budget (bytes or a string such as ``"1GB"``, at least 1 MiB) or ``None``."""
        value = self.value(key, optional=True)
        if value is None:
            return None
        try:
            return parse_memory(value)
        except (TypeError, ValueError) as err:
            raise self.fail(key, f"is not a memory budget ({err})") from None

    def dtype(
        self, key: str, allowed: Mapping[str, torch.dtype] = FLOAT_DTYPES, default: str | None = None
    ) -> torch.dtype:
        """A dtype named in ``allowed`` (default: the floating dtypes); ``default`` when absent."""
        value = self.config.get(key, default)
        if not isinstance(value, str) or value not in allowed:
            raise self.fail(key, f"must name a dtype from {sorted(allowed)}, got {_short(value)}")
        return allowed[value]

    # ------------------------------------------------------------------ dimensions and tensors
    def has(self, key: str) -> bool:
        """Whether the state holds ``prefix + key`` (for tensors that only some saved objects have)."""
        return self.prefix + key in self.state

    def dim(self, name: str) -> int:
        """The size bound to dimension ``name`` by an earlier :meth:`tensor` or :meth:`numbers`."""
        if name not in self.dims:
            raise LookupError(f"dimension {name!r} is not bound yet; read a tensor that has it first")
        return self.dims[name]

    def tensor(
        self,
        key: str,
        shape: Sequence[Dim] | None = None,
        kind: Kind = "float",
        *,
        dtype: torch.dtype | None = None,
        finite: bool = True,
        binary: bool = False,
        minimum: float | None = None,
        maximum: float | None = None,
        positive: bool = False,
        nonzero: bool = False,
    ) -> Tensor:
        """The state tensor ``prefix + key``, checked and contiguous.

        Args:
            shape: the expected shape; an int is a fixed size, a string a named dimension (bound on first use).
            kind: ``"float"`` (any floating dtype), ``"int"`` (an integer dtype) or ``"bool"``.
            dtype: the exact dtype required, if any.
            finite: floats must be finite (no NaN or infinity).
            binary, minimum, maximum, positive, nonzero: value constraints (``positive``: every value > 0).
        """
        full = self.prefix + key
        t = self.state.get(full)
        if t is None:
            raise SavedFieldError(f"saved field {full!r} is missing from the state; {self.fix}")
        kinds = {
            "float": t.is_floating_point(),
            "int": not t.is_floating_point() and not t.is_complex() and t.dtype != torch.bool,
            "bool": t.dtype == torch.bool,
        }
        if not kinds[kind] or (dtype is not None and t.dtype != dtype):
            want = (
                f"a {dtype}"
                if dtype is not None
                else {"float": "a floating", "int": "an integer", "bool": "a bool"}[kind]
            )
            raise SavedFieldError(f"saved field {full!r} must be {want} tensor, got dtype {t.dtype}; {self.fix}")
        if t.numel() * t.element_size() > t.untyped_storage().nbytes():
            raise SavedFieldError(
                f"saved field {full!r} is an expanded (stride-0) view: shape {tuple(t.shape)} over a storage of "
                f"{t.untyped_storage().nbytes()} bytes; saved files hold dense tensors; {self.fix}"
            )
        self._check_shape(repr(full), t, shape)
        t = t.contiguous()
        self._check_values(repr(full), t, finite, binary, minimum, maximum, positive, nonzero)
        return t

    def _check_shape(self, name: str, t: Tensor, shape: Sequence[Dim] | None) -> None:
        """``name`` is the field's display name (a quoted key or a section path)."""
        if shape is None:
            return
        if t.ndim != len(shape):
            raise SavedFieldError(
                f"saved field {name} must have {len(shape)} dimensions {tuple(shape)}, got shape {tuple(t.shape)}; "
                f"{self.fix}"
            )
        for want_size, size in zip(shape, t.shape):
            if isinstance(want_size, str):
                held = self.dims.setdefault(want_size, int(size))
                if held != size:
                    raise SavedFieldError(
                        f"saved field {name} has {want_size} = {size}, but an earlier field has {want_size} = "
                        f"{held}; {self.fix}"
                    )
            elif size != want_size:
                raise SavedFieldError(
                    f"saved field {name} must have shape {tuple(shape)}, got {tuple(t.shape)}; {self.fix}"
                )

    def _check_values(
        self,
        key: str,
        t: Tensor,
        finite: bool,
        binary: bool,
        minimum: float | None,
        maximum: float | None,
        positive: bool,
        nonzero: bool,
    ) -> None:
        if t.numel() == 0:
            return
        checks: list[tuple[Tensor, str]] = []
        if finite and t.is_floating_point():
            checks.append((~torch.isfinite(t), "holds NaN or infinite values"))
        if binary:
            checks.append(((t != 0) & (t != 1), "must hold only 0 and 1"))
        if minimum is not None:
            checks.append((t < minimum, f"must hold values >= {minimum:g}"))
        if maximum is not None:
            checks.append((t > maximum, f"must hold values <= {maximum:g}"))
        if positive:
            checks.append((~(t > 0), "must hold values > 0"))
        if nonzero:
            checks.append((t == 0, "must hold nonzero values"))
        for bad, problem in checks:
            if bool(bad.any()):
                where = tuple(int(i) for i in bad.nonzero()[0])
                raise SavedFieldError(
                    f"saved field {key} {problem} (first offending entry at index {where}: {t[where].item()!r}); "
                    f"{self.fix}"
                )


__all__ = ["FLOAT_DTYPES", "SavedFieldError", "SavedFields"]

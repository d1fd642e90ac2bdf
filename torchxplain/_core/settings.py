"""Library-wide settings as context managers (in GPyTorch's style), read by the private kernels.

Each setting has a process default and can be changed for a block of code::

    import torchxplain as tx

    with tx.settings.max_memory("1GB"), tx.settings.show_progress(False):
        phi = explainer.attribute(x)

An explicit argument of a public function (``max_memory=...``, ``show_progress=...``) still overrides the
setting for that call.

Scope: the values live in :mod:`contextvars`. Each thread sees its own settings: a thread starts from the process
defaults, not from the ``with`` blocks of the thread that started it (enter the block inside the thread, or run
the thread's target with ``contextvars.copy_context().run``); asyncio tasks start from a copy of their creator's.
Blocks may exit in any order: the value in force is always the innermost block *still open* in this context, so
two generators (or coroutines sharing a context) whose blocks interleave leave the default behind once both have
exited, and one setting object may be entered by several threads at once.

Settings:
    :class:`max_memory`: byte budget of every chunked intermediate (default 512 MiB; at least 1 MiB).
    :class:`show_progress`: tqdm progress bars for work over about a second (default: on when standard error
        is a terminal or in a notebook; the environment variable ``TORCHXPLAIN_PROGRESS`` set to
        ``0``/``false``/``no``/``off`` turns them off, ``1``/``true``/``yes``/``on`` on everywhere).
    :class:`validation`: ``"full"`` (default) checks shapes, dtypes, devices *and* values (binary, finite,
        one-hot) at the public boundary; ``"shapes"`` skips the O(data) value scans, for inner loops whose
        inputs are known to be valid.
    :class:`dtype_policy`: ``"auto"`` (default) computes in float64 when an input is float64 and in float32
        otherwise (half, bfloat16, integer and bool inputs are promoted to float32, never computed in half
        precision); ``"float32"`` or ``"float64"`` force one dtype.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
import sys
from collections.abc import Iterator
from types import TracebackType
from typing import Any, ClassVar, Generic, Literal, TypeVar, get_args

import torch

V = TypeVar("V")

#: The values of :class:`validation`: ``"full"`` checks values too (0/1 entries, finiteness), ``"shapes"`` only
#: shapes and dtypes.
ValidationLevel = Literal["full", "shapes"]
#: The values of :class:`dtype_policy`: ``"auto"`` computes in float64 when an input is float64, else in float32
#: (half precision never); ``"float32"`` / ``"float64"`` compute in that dtype.
DtypePolicy = Literal["auto", "float32", "float64"]
MemoryLike = int | str

#: The smallest memory budget :class:`max_memory` accepts, in bytes (1 MiB).
MIN_MEMORY = 2**20
#: The default memory budget for chunked intermediates, in bytes (512 MiB).
DEFAULT_MAX_MEMORY = 512 * 2**20
_UNITS = {"": 1, "b": 1, "kb": 2**10, "kib": 2**10, "mb": 2**20, "mib": 2**20, "gb": 2**30, "gib": 2**30}
_OFF = {"0", "false", "no", "off"}
_ON = {"1", "true", "yes", "on"}


class _Setting(Generic[V]):
    """A context manager that sets one value for the duration of a ``with`` block (nestable, re-entrant).

    The context variable holds the stack of open blocks as ``(owner, value)`` pairs; a block that exits removes
    its own entry wherever it is, so blocks that exit out of order (interleaved generators) restore correctly.
    """

    _var: ClassVar[contextvars.ContextVar[tuple[tuple[object, Any], ...]]]
    by_name: ClassVar[dict[str, type[_Setting[Any]]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._var = contextvars.ContextVar(f"torchxplain.settings.{cls.__name__}", default=())
        _Setting.by_name[cls.__name__] = cls

    def __init__(self, value: Any) -> None:
        self.value_ = self._parse(value)

    @classmethod
    def _parse(cls, value: Any) -> V:
        raise NotImplementedError

    @classmethod
    def _default(cls) -> V:
        raise NotImplementedError

    @classmethod
    def value(cls) -> V:
        """The value in force here: the innermost open ``with`` block's, else the process default."""
        stack = cls._var.get()
        return stack[-1][1] if stack else cls._default()

    @classmethod
    def resolve(cls, explicit: Any = None) -> V:
        """``explicit`` (validated) when given, else :meth:`value`: how public functions read the setting."""
        return cls.value() if explicit is None else cls._parse(explicit)

    @classmethod
    def _push(cls, owner: object, value: Any) -> None:
        cls._var.set((*cls._var.get(), (owner, value)))

    @classmethod
    def _pop(cls, owner: object) -> None:
        """Remove ``owner``'s innermost entry from this context's stack (entries above it stay in force)."""
        stack = cls._var.get()
        for i in range(len(stack) - 1, -1, -1):
            if stack[i][0] is owner:
                cls._var.set(stack[:i] + stack[i + 1 :])
                return

    def __enter__(self) -> _Setting[V]:
        self._push(self, self.value_)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._pop(self)


def parse_memory(value: object = None) -> int:
    """A byte budget from an int (bytes) or a string such as ``"2GB"``/``"512MiB"`` (binary units: 1 GB = 2**30).

    ``None`` gives the budget in force (:class:`max_memory`).

    Raises:
        TypeError: not an int or a string (``True`` and floats are refused, not read as 1 byte).
        ValueError: an unreadable string, or a budget under 1 MiB (it would make every chunk one row).
    """
    return max_memory.value() if value is None else _bytes(value)


def _bytes(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TypeError(
            f"max_memory must be a number of bytes (int) or a string like '2GB', got {type(value).__name__} "
            f"{str(value)[:40]!r}"
        )
    if isinstance(value, int):
        size = value
    else:
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", value) if len(value) <= 40 else None
        if not match or match.group(2).lower() not in _UNITS:
            raise ValueError(f"max_memory must be bytes or a string like '2GB' or '512MiB', got {value[:40]!r}")
        size = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if size < MIN_MEMORY:
        raise ValueError(
            f"max_memory must be at least 1 MiB ({MIN_MEMORY} bytes), got {value!r}; pass e.g. max_memory='512MB'"
        )
    return size


class max_memory(_Setting[int]):  # noqa: N801 (GPyTorch-style lower-case setting names)
    """Byte budget of chunked intermediates: ``with tx.settings.max_memory("1GB"): ...``.

    Args:
        value: bytes (int) or a string such as ``"2GB"`` or ``"512MiB"``; at least 1 MiB.

    Example:
        >>> import torchxplain as tx
        >>> with tx.settings.max_memory("1GB"):
        ...     tx.settings.max_memory.value()
        1073741824
        >>> tx.settings.max_memory.value() == tx.settings.DEFAULT_MAX_MEMORY
        True
    """

    @classmethod
    def _parse(cls, value: Any) -> int:
        return _bytes(value)

    @classmethod
    def _default(cls) -> int:
        return DEFAULT_MAX_MEMORY


class show_progress(_Setting[bool]):  # noqa: N801
    """Progress bars for long work: ``with tx.settings.show_progress(False): ...``.

    A bar appears only once its work has run for about a second. The process default is on where a bar can be
    seen — standard error is a terminal, or the code runs in a Jupyter notebook — and off elsewhere (log files,
    pipes, CI). The environment variable ``TORCHXPLAIN_PROGRESS`` overrides it: ``0``, ``false``, ``no`` or
    ``off`` turn bars off, ``1``, ``true``, ``yes`` or ``on`` turn them on everywhere.

    Example:
        >>> import torchxplain as tx
        >>> with tx.settings.show_progress(False):
        ...     tx.settings.show_progress.value()
        False
    """

    @classmethod
    def _parse(cls, value: Any) -> bool:
        if not isinstance(value, bool):
            raise TypeError(f"show_progress must be True or False, got {type(value).__name__} {value!r}")
        return value

    @classmethod
    def _default(cls) -> bool:
        chosen = os.environ.get("TORCHXPLAIN_PROGRESS", "").strip().lower()
        if chosen in _OFF:
            return False
        return chosen in _ON or _bars_visible()


def _bars_visible() -> bool:
    """Whether a progress bar would be seen: standard error is a terminal, or this is a Jupyter kernel."""
    try:
        if sys.stderr is not None and sys.stderr.isatty():
            return True
    except ValueError:  # a closed stream
        return False
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)() if ipython is not None else None
    return type(shell).__name__ == "ZMQInteractiveShell"


def _literal(value: Any, name: str, options: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {list(options)}, got {str(value)[:40]!r}")
    return value


class validation(_Setting[ValidationLevel]):  # noqa: N801
    """How much the public boundary checks: ``"full"`` (default) or ``"shapes"`` (skip value scans)."""

    @classmethod
    def _parse(cls, value: Any) -> ValidationLevel:
        return _literal(value, "validation", get_args(ValidationLevel))  # type: ignore[return-value]

    @classmethod
    def _default(cls) -> ValidationLevel:
        return "full"

    @classmethod
    def checks_values(cls) -> bool:
        """Whether O(data) value checks (binary, finite, one-hot) run."""
        return cls.value() == "full"


class dtype_policy(_Setting[DtypePolicy]):  # noqa: N801
    """The floating dtype computations use: ``"auto"`` (default), ``"float32"`` or ``"float64"``."""

    @classmethod
    def _parse(cls, value: Any) -> DtypePolicy:
        return _literal(value, "dtype_policy", get_args(DtypePolicy))  # type: ignore[return-value]

    @classmethod
    def _default(cls) -> DtypePolicy:
        return "auto"

    @classmethod
    def compute_dtype(cls, *inputs: torch.Tensor | torch.dtype) -> torch.dtype:
        """The dtype to compute in for these inputs (tensors or dtypes) under the policy in force: the policy's
        dtype, or under ``"auto"`` float64 when an input is float64, else float32 (half, bfloat16, integer and bool
        data never make a computation run in low precision). The one dtype rule of every method."""
        policy = cls.value()
        if policy == "float64":
            return torch.float64
        if policy == "float32":
            return torch.float32
        dtypes = [t if isinstance(t, torch.dtype) else t.dtype for t in inputs]
        return torch.float64 if torch.float64 in dtypes else torch.float32


@contextlib.contextmanager
def using(max_memory: MemoryLike | None = None, show_progress: bool | None = None) -> Iterator[None]:
    """Apply the explicit arguments of a public call for its duration; ``None`` leaves a setting as it is.

    Public entry points wrap their body in it, so private kernels read one budget and one progress flag
    (``parse_memory()``, ``progress_enabled()``) instead of taking them as arguments::

        def shapley_values(spectrum, x, background, max_memory=None):
            with settings.using(max_memory=max_memory):
                return _kernel(spectrum, x, background)

    Example:
        >>> import torchxplain as tx
        >>> with tx.settings.using(max_memory="64MB", show_progress=False):
        ...     tx.settings.max_memory.value(), tx.settings.show_progress.value()
        (67108864, False)
    """
    with contextlib.ExitStack() as stack:
        for name, value in (("max_memory", max_memory), ("show_progress", show_progress)):
            if value is not None:
                stack.enter_context(_Setting.by_name[name](value))
        yield


@contextlib.contextmanager
def unchecked_max_memory(n_bytes: int) -> Iterator[None]:
    """Set a budget below the 1 MiB floor, so tests can drive every chunk boundary on small problems.

    Public as :func:`torchxplain.testing.tiny_memory_budget`; not meant for real work (every chunk gets tiny).
    """
    if isinstance(n_bytes, bool) or not isinstance(n_bytes, int) or n_bytes < 1:
        raise ValueError(f"n_bytes must be a positive int, got {n_bytes!r}")
    owner = object()
    max_memory._push(owner, n_bytes)
    try:
        yield
    finally:
        max_memory._pop(owner)


__all__ = [
    "DEFAULT_MAX_MEMORY",
    "MIN_MEMORY",
    "DtypePolicy",
    "ValidationLevel",
    "dtype_policy",
    "max_memory",
    "parse_memory",
    "show_progress",
    "using",
    "validation",
]

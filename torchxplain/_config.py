"""YAML job configurations: bounded, safe YAML into frozen dataclasses that reject unknown keys and bad values.

A config file is at most :data:`MAX_BYTES` long, nests at most :data:`MAX_DEPTH` levels, and may not use YAML
anchors or aliases (``&``/``*``, so no "billion laughs"). Values are type-checked, integers range-checked, and
every message shows at most a short, truncated form of the offending value.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any, Literal

import yaml

FAMILIES = ("fourier", "trees", "goals", "idx")
DEFAULT_ROOT = "torchxplain-report"
"""Output root of the command line when ``--out`` is not given (relative to the working directory; the
repository's ``.gitignore`` covers it)."""
MAX_BYTES = 64 * 1024
MAX_DEPTH = 8
MAX_PATH = 200  # characters in a config's out: folder
ENTACMAEA_ROWS = 2**13  # genotypes in the Entacmaea landscape
DIABETES_ROWS = 442  # rows in scikit-learn's diabetes data
QUICK_GOALS_FEATURES = 10  # the GOALS section's n_features in quick mode


class ConfigError(ValueError):
    """A configuration is missing, unreadable, too large, or holds an unknown key or an invalid value."""


def show(value: Any, limit: int = 40) -> str:
    """A short description of ``value`` for an error message (never longer than about ``limit`` characters)."""
    if isinstance(value, dict):
        return f"a mapping of {len(value)} keys"
    if isinstance(value, list | tuple):
        return f"a list of {len(value)} items"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _count(default: int, low: int, high: int) -> Any:
    """A dataclass field holding an integer in ``[low, high]`` (checked by :meth:`_Checked.__post_init__`)."""
    return field(default=default, metadata={"range": (low, high)})


class _Checked:
    """Range-checks every field declared with :func:`_count` when an instance is made (also by ``replace``)."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if "range" not in f.metadata:
                continue
            low, high = f.metadata["range"]
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ConfigError(f"{f.name} must be an integer from {low} to {high}, got {show(value)}")


@dataclass(frozen=True)
class FourierOptions(_Checked):
    """FourierSHAP section of the demo: an MLP on the Entacmaea landscape, explained by its exact spectrum.

    ``hidden`` units per layer, ``epochs`` of Adam, ``k`` kept Fourier coefficients (of 8,192: all of them keep
    the tabulated spectrum exact; fewer trade accuracy for speed and may miss ``target_r2``), and
    ``n_explain`` + ``n_background`` distinct genotypes (together at most 8,192).
    """

    target: Literal["brightness_red", "brightness_blue", "brightness_combined"] = "brightness_red"
    hidden: int = _count(300, 1, 4096)
    epochs: int = _count(150, 1, 10_000)
    k: int = _count(ENTACMAEA_ROWS, 1, ENTACMAEA_ROWS)
    n_explain: int = _count(40, 1, ENTACMAEA_ROWS - 1)
    n_background: int = _count(40, 1, ENTACMAEA_ROWS - 1)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n_explain + self.n_background > ENTACMAEA_ROWS:
            raise ConfigError(
                f"n_explain + n_background must be at most {ENTACMAEA_ROWS} (the landscape's genotypes), "
                f"got {self.n_explain} + {self.n_background}"
            )


@dataclass(frozen=True)
class TreesOptions(_Checked):
    """Trees section: a random forest on scikit-learn's diabetes data (442 rows), explained by its exact spectrum."""

    n_trees: int = _count(20, 1, 1000)
    max_depth: int = _count(6, 1, 32)
    n_explain: int = _count(100, 1, DIABETES_ROWS)
    n_background: int = _count(100, 1, DIABETES_ROWS)


@dataclass(frozen=True)
class GoalsOptions(_Checked):
    """GOALS section: an exact GP (``iterations`` of Adam) on the Eq. 17–18 design of ``n_samples`` rows and
    ``n_features`` genotypes, ``n_causal`` of them causal (at least one causal and one null feature)."""

    n_samples: int = _count(500, 10, 20_000)
    n_features: int = _count(25, 2, 1000)
    n_causal: int = _count(5, 1, 999)
    iterations: int = _count(100, 1, 10_000)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n_causal >= self.n_features:
            raise ConfigError(
                f"n_causal must be below n_features ({self.n_features}) so that some features are null, "
                f"got {self.n_causal}"
            )


@dataclass(frozen=True)
class ReportConfig(_Checked):
    """A report job: which method families to run, where to write, how big.

    ``out`` is the report folder *relative to the output root* (the command line's ``--out``, by default
    ``./torchxplain-report``); ``"."`` is the root itself. It may not be absolute or climb out with ``..``.
    ``show_progress`` left out (``None``) follows ``tx.settings.show_progress`` (by default ``TORCHXPLAIN_PROGRESS``).
    ``torchxplain demo`` uses the packaged ``torchxplain/configs/demo.yaml``; ``torchxplain run FILE`` any such file.
    """

    out: str = "."
    quick: bool = False
    seed: int = _count(0, 0, 2**32 - 1)
    show_progress: bool | None = None
    families: tuple[str, ...] = FAMILIES
    fourier: FourierOptions = field(default_factory=FourierOptions)
    trees: TreesOptions = field(default_factory=TreesOptions)
    goals: GoalsOptions = field(default_factory=GoalsOptions)

    def __post_init__(self) -> None:
        super().__post_init__()
        relative_folder(self.out, "out")
        unknown = [f for f in self.families if f not in FAMILIES]
        if unknown or not self.families or len(set(self.families)) != len(self.families):
            raise ConfigError(
                f"families must list distinct method families from {', '.join(FAMILIES)}, got {show(self.families)}"
                + (f" with unknown {show(unknown[0])}" if unknown else "")
            )
        if self.quick and self.goals.n_causal >= QUICK_GOALS_FEATURES and "goals" in self.families:
            raise ConfigError(
                f"goals: n_causal must be below {QUICK_GOALS_FEATURES} in quick mode (it uses "
                f"{QUICK_GOALS_FEATURES} features), got {self.goals.n_causal}"
            )


def relative_folder(value: str, name: str) -> PurePath:
    """``value`` as a relative path that stays inside its root (no absolute path, ``..`` or ``~``; short).

    Raises:
        ConfigError: naming ``name``, the value and the fix.
    """
    path = PurePath(value)
    if (
        not value
        or len(value) > MAX_PATH
        or path.is_absolute()
        or ".." in path.parts
        or value.startswith("~")
        or "\\" in value
    ):
        raise ConfigError(
            f"{name} must be a folder relative to the output root (e.g. 'fourier'; choose the root with --out), "
            f"got {show(value)}"
        )
    return path


class _BoundedLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses anchors and aliases and nesting deeper than :data:`MAX_DEPTH`."""

    depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise ConfigError(f"YAML anchors and aliases (& and *) are not allowed (line {event.start_mark.line + 1})")
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ConfigError(f"nesting deeper than {MAX_DEPTH} levels (line {event.start_mark.line + 1})")
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def load_config(path: str | Path, cls: type = ReportConfig) -> Any:
    """Read a YAML file (at most :data:`MAX_BYTES`, no anchors/aliases) into ``cls``.

    Raises:
        ConfigError: the file does not exist, is too large, is not valid UTF-8 or YAML, uses anchors or aliases,
            holds an unknown key (the message names it), a value of the wrong type or out of range.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    if path.stat().st_size > MAX_BYTES:
        raise ConfigError(f"{path} is {path.stat().st_size:,} bytes; a config may be at most {MAX_BYTES:,} bytes")
    try:
        data = yaml.load(path.read_bytes().decode("utf-8"), Loader=_BoundedLoader) or {}  # noqa: S506 - safe loader
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{path} is not valid YAML: {show(str(err).splitlines()[0], 120)}") from None
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None
    return from_mapping(cls, data, str(path))


def from_mapping(cls: type, data: Any, where: str) -> Any:
    """Build dataclass ``cls`` from a mapping, recursing into nested dataclasses; unknown keys are errors."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where} must be a mapping of keys to values, got {show(data)}")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(str(k) for k in data if k not in known)
    if unknown:
        raise ConfigError(f"unknown key {show(unknown[0])} in {where} (known keys: {', '.join(sorted(known))})")
    values = {name: _coerce(hints[name], raw, f"{where}: {name}") for name, raw in data.items()}
    try:
        return cls(**values)
    except ConfigError as err:
        raise ConfigError(f"{where}: {err}") from None


def _coerce(hint: Any, raw: Any, where: str) -> Any:
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return from_mapping(hint, raw, where)
    origin = typing.get_origin(hint)
    if origin is tuple:
        if not isinstance(raw, list | tuple):
            raise ConfigError(f"{where} must be a list, got {show(raw)}")
        return tuple(_coerce(typing.get_args(hint)[0], item, where) for item in raw)
    if origin is Literal:
        options = typing.get_args(hint)
        if raw not in options:
            raise ConfigError(f"{where} must be one of {', '.join(map(str, options))}, got {show(raw)}")
        return raw
    if origin in (typing.Union, types.UnionType):
        if raw is None and type(None) in typing.get_args(hint):
            return None
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    if hint is float and isinstance(raw, int) and not isinstance(raw, bool):
        return float(raw)
    if not isinstance(raw, hint) or (hint is int and isinstance(raw, bool)):
        raise ConfigError(f"{where} must be {hint.__name__}, got {show(raw)}")
    return raw


def packaged_config(name: str) -> Path:
    """Path of a default config shipped in ``torchxplain/configs/`` (e.g. ``"demo"``)."""
    from importlib import resources

    return Path(str(resources.files("torchxplain.configs") / f"{name}.yaml"))

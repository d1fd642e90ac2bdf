"""YAML job configurations loaded with ``yaml.safe_load`` into dataclasses that reject unknown keys."""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

FAMILIES = ("fourier", "trees", "goals", "idx")


class ConfigError(ValueError):
    """A configuration file is missing, unreadable, or holds an unknown key or a value of the wrong type."""


@dataclass(frozen=True)
class FourierOptions:
    """FourierSHAP section of the demo: an MLP on the Entacmaea landscape, explained by its exact spectrum."""

    target: str = "brightness_red"
    hidden: int = 300
    epochs: int = 150
    k: int = 512
    n_explain: int = 40
    n_background: int = 40


@dataclass(frozen=True)
class TreesOptions:
    """Trees section: a random forest on scikit-learn's diabetes data, explained by its exact spectrum."""

    n_trees: int = 20
    max_depth: int = 6
    n_explain: int = 100
    n_background: int = 100


@dataclass(frozen=True)
class GoalsOptions:
    """GOALS section: an exact GP on the Eq. 17–18 simulation design."""

    n_samples: int = 500
    n_features: int = 25
    n_causal: int = 5
    iterations: int = 100


@dataclass(frozen=True)
class ReportConfig:
    """A report job: which method families to run, where to write, how big.

    ``torchxplain demo`` uses the packaged ``torchxplain/configs/demo.yaml``; ``torchxplain run FILE`` any such file.
    """

    out: str = "torchxplain-report"
    quick: bool = False
    seed: int = 0
    show_progress: bool = True
    families: tuple[str, ...] = FAMILIES
    fourier: FourierOptions = field(default_factory=FourierOptions)
    trees: TreesOptions = field(default_factory=TreesOptions)
    goals: GoalsOptions = field(default_factory=GoalsOptions)


def load_config(path: str | Path, cls: type = ReportConfig) -> Any:
    """Read a YAML file into ``cls``.

    Raises:
        ConfigError: the file does not exist or is not valid YAML, or a key is unknown (the message names it),
            or a value has the wrong type.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"{path} is not valid YAML: {str(err).splitlines()[0]}") from None
    return from_mapping(cls, data, str(path))


def from_mapping(cls: type, data: Any, where: str) -> Any:
    """Build dataclass ``cls`` from a mapping, recursing into nested dataclasses; unknown keys are errors."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where} must be a mapping of keys to values, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"unknown key '{unknown[0]}' in {where} (known keys: {', '.join(sorted(known))})")
    values = {}
    for name, raw in data.items():
        values[name] = _coerce(hints[name], raw, f"{where}: {name}")
    return cls(**values)


def _coerce(hint: Any, raw: Any, where: str) -> Any:
    if dataclasses.is_dataclass(hint):
        return from_mapping(hint, raw, where)
    origin = typing.get_origin(hint)
    if origin is tuple:
        if not isinstance(raw, list | tuple):
            raise ConfigError(f"{where} must be a list, got {raw!r}")
        return tuple(_coerce(typing.get_args(hint)[0], item, where) for item in raw)
    if origin in (typing.Union, types.UnionType):
        if raw is None and type(None) in typing.get_args(hint):
            return None
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    if hint is float and isinstance(raw, int) and not isinstance(raw, bool):
        return float(raw)
    if not isinstance(raw, hint) or (hint is int and isinstance(raw, bool)):
        raise ConfigError(f"{where} must be {hint.__name__}, got {raw!r}")
    return raw


def packaged_config(name: str) -> Path:
    """Path of a default config shipped in ``torchxplain/configs/`` (e.g. ``"demo"``)."""
    from importlib import resources

    return Path(str(resources.files("torchxplain.configs") / f"{name}.yaml"))

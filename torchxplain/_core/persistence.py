"""Pickle-free explainer persistence: a plain tensor ``state_dict`` plus JSON metadata in one file.

The file is written with ``torch.save`` but holds only a ``dict`` of strings, ints and tensors::

    {"format": "torchxplain-explainer", "version": 1,
     "metadata": '<JSON: {"class": ..., "config": {...}, "torchxplain": ...}>',
     "state": {name: Tensor, ...}}

so it always loads with ``torch.load(path, weights_only=True)``: no Python object is ever unpickled. The metadata
also holds a ``checksum`` (:func:`fingerprint`: SHA-256 of the config and every tensor), checked at load after the
class's own field checks: a file whose fields were edited after saving is refused even when each field is valid
on its own (two thresholds swapped, a dtype or flag changed), so a loaded explainer gives the numbers it gave when
it was saved. Files written before the checksum (format 2 of earlier releases) load with the field checks alone.
Which classes can be loaded is an explicit registry (:func:`loadable_classes`), never a class path read from
the file: ``ExplainerBase.__init_subclass__`` registers every explainer class that overrides ``_config``
(so this module imports nothing above ``_core``). A class opts in by implementing ``_config() -> dict``
(JSON-able constructor metadata) and the classmethod ``_from_config(config, state, forward_func)``, which reads
every field through :class:`~torchxplain._core.saved_fields.SavedFields`, so that a damaged or edited file is
refused at load with one :class:`~torchxplain._core.saved_fields.SavedFieldError` (prefixed here with the path).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import Tensor

from torchxplain._core.devices import check_device
from torchxplain._core.saved_fields import SavedFieldError

FORMAT = "torchxplain-explainer"
VERSION = 2  # 2: explainer configs of the unified FourierShap (encoders, several outputs) and GOALS


_REGISTRY: dict[str, Any] = {}  # name -> explainer class (typed Any: ExplainerBase imports this module)


def register(cls: type) -> None:
    """Make ``cls`` loadable under its class name (called by ``ExplainerBase.__init_subclass__``).

    Raises:
        TypeError: another class already holds that name (two loadable classes must not share one).
    """
    held = _REGISTRY.setdefault(cls.__name__, cls)
    if held is not cls:
        raise TypeError(
            f"two loadable explainer classes are named {cls.__name__!r} ({held.__module__} and {cls.__module__}); "
            "rename one"
        )


def loadable_classes() -> dict[str, Any]:
    """The explainer classes :func:`load_explainer` may build, by name (those registered so far)."""
    return dict(_REGISTRY)


def _class_name(explainer: Any) -> str:
    registry = loadable_classes()
    for name, cls in registry.items():
        if type(explainer) is cls:
            return name
    raise TypeError(f"{type(explainer).__name__} cannot be saved: loadable classes are {sorted(registry)}")


def fingerprint(config: Any, state: Mapping[str, Tensor]) -> str:
    """SHA-256 (hex) of a saved object: its JSON ``config`` (keys sorted) and every ``state`` tensor's name, dtype,
    shape and bytes, in name order. The same for a config and its JSON round trip (tuples read back as lists)."""
    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode())
    for key in sorted(state):
        tensor = state[key].detach().cpu().contiguous()
        digest.update(f"\n{key}|{tensor.dtype}|{tuple(tensor.shape)}\n".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def save_explainer(explainer: Any, path: str | os.PathLike[str]) -> str:
    """Write ``explainer`` to ``path`` (its ``state_dict`` on CPU plus its JSON-able ``_config()``).

    The user's model is not saved (it is not part of the explainer's state); pass it to
    :func:`load_explainer` again if the explainer needs it.

    Returns:
        The path, as a string.

    Raises:
        IsADirectoryError: ``path`` is a folder. FileNotFoundError: its folder does not exist.
    """
    name = _class_name(explainer)
    config = explainer._config()
    try:
        config = json.loads(json.dumps(config, sort_keys=True))  # as load will read it (tuples become lists)
    except TypeError as err:
        raise TypeError(f"{name}._config() must return JSON-serialisable values: {err}") from None
    state = {}
    for key, value in explainer.state_dict().items():
        if not isinstance(value, Tensor):
            raise TypeError(f"state_dict entry {key!r} is a {type(value).__name__}, not a tensor")
        state[key] = value.detach().cpu().clone()
    checksum = fingerprint(config, state)
    metadata = json.dumps({"class": name, "config": config, "checksum": checksum}, sort_keys=True)
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(
            f"{path!r} is a directory; pass a file path such as {os.path.join(path, 'explainer.pt')!r}"
        )
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(
            f"the folder {folder!r} does not exist; create it first (os.makedirs) or save elsewhere"
        )
    torch.save({"format": FORMAT, "version": VERSION, "metadata": metadata, "state": state}, path)
    return path


def read_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The JSON metadata of a saved explainer (``{"class", "config"}``), loaded with ``weights_only=True``."""
    metadata: dict[str, Any] = _read(path)["metadata"]
    return metadata


def _read(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The file's dict, checked: a readable torch file of our format and version, with JSON metadata and tensors."""
    name = os.fspath(path)
    if not os.path.isfile(name):
        raise FileNotFoundError(f"no saved explainer at {name!r}")
    try:
        data = torch.load(name, map_location="cpu", weights_only=True)
    except (RuntimeError, EOFError, OSError, ValueError) as err:
        raise ValueError(
            f"{name!r} is not a readable torchxplain explainer file (empty, truncated or not written by save()): "
            f"{str(err)[:120]}"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{name!r} is not a saved torchxplain explainer")
    if data.get("version") != VERSION:
        raise ValueError(
            f"{name!r} has format version {str(data.get('version'))[:20]}; this torchxplain reads {VERSION}"
        )
    try:
        meta = json.loads(data["metadata"])
    except (KeyError, TypeError, json.JSONDecodeError):
        raise ValueError(f"{name!r} holds no valid JSON metadata; re-save the explainer with save()") from None
    state = data.get("state")
    if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict) or not isinstance(state, dict):
        raise ValueError(f"{name!r} lacks the metadata 'config' or the 'state' tensors; re-save the explainer")
    if not all(isinstance(v, Tensor) for v in state.values()):
        raise ValueError(f"{name!r} has state entries that are not tensors; re-save the explainer")
    return {"metadata": meta, "state": state}


def load_explainer(
    path: str | os.PathLike[str],
    forward_func: Callable[..., Tensor] | None = None,
    map_location: str | torch.device | None = None,
) -> Any:
    """Rebuild an explainer written by :func:`save_explainer`.

    Args:
        path: the file.
        forward_func: the user's model to attach (``None``: the class's default, e.g. FourierShap's
            own surrogate).
        map_location: device for the explainer's tensors (default: CPU); one this machine has.

    Returns:
        An explainer of the saved class whose ``state_dict`` equals the saved one.

    Raises:
        FileNotFoundError: no such file.
        ValueError: an empty, truncated or foreign file, invalid metadata, a class that is not loadable, or a state
            that lacks entries the class needs (each message names the file and the fix), or a ``map_location``
            this machine does not have (e.g. ``"cuda"`` without CUDA);
            :class:`~torchxplain._core.saved_fields.SavedFieldError` (a ``ValueError``) for a field that fails
            its check (NaN, out of range, of the wrong shape, inconsistent with another field).
    """
    data = _read(path)
    meta = data["metadata"]
    saved_class = meta.get("class")
    registry = loadable_classes()
    if not isinstance(saved_class, str):  # a list or a mapping is not a name (and cannot be looked up)
        raise ValueError(
            f"{os.fspath(path)!r} names its class with a {type(saved_class).__name__}, not a class name; the file "
            "is damaged or was edited: re-save it"
        )
    if saved_class not in registry:  # its module may not be imported yet: torchxplain loads names lazily
        package = importlib.import_module("torchxplain")
        for name in package.__all__:  # every public name, so every public explainer class registers
            getattr(package, name)
        registry = loadable_classes()
    if saved_class not in registry:
        raise ValueError(f"saved class {saved_class[:60]!r} is not loadable; loadable are {sorted(registry)}")
    device = None if map_location is None else check_device(map_location, "map_location")
    state = {k: v.to(device) if device is not None else v for k, v in data["state"].items()}
    try:
        explainer = registry[saved_class]._from_config(meta["config"], state, forward_func)
        explainer.load_state_dict(state, strict=True)
    except SavedFieldError as err:
        raise SavedFieldError(f"{os.fspath(path)!r}: {err}") from None
    except KeyError as err:
        raise ValueError(
            f"{os.fspath(path)!r} lacks the saved entry {err}; the file is incomplete or was edited: re-save it"
        ) from None
    except RuntimeError as err:
        raise ValueError(f"{os.fspath(path)!r} does not match its class's state: {str(err)[:200]}") from None
    _check_checksum(path, meta, data["state"])
    return explainer


def _check_checksum(path: str | os.PathLike[str], meta: dict[str, Any], state: Mapping[str, Tensor]) -> None:
    """Refuse a file whose fields differ from those it was saved with (after the class's field checks, which
    name a field that is invalid on its own); a file without a checksum (saved before it) passes."""
    saved = meta.get("checksum")
    if saved is None:
        return
    if not isinstance(saved, str) or saved != fingerprint(meta["config"], state):
        raise SavedFieldError(
            f"{os.fspath(path)!r}: the saved fields differ from those the file was saved with (its checksum does not "
            "match), so it would not give the numbers it gave when saved; the file is damaged or was edited: "
            "re-save it"
        )

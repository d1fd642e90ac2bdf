"""Saving and loading a Fourier explainer: JSON metadata plus its tensor ``state_dict`` (encoder included).

:class:`~torchxplain.FourierShap`'s ``_config``/``_from_config``; the file format is
:mod:`torchxplain._core.persistence`'s. A loaded file is checked as strictly as the constructors' arguments, through
:class:`~torchxplain._core.saved_fields.SavedFields`: every flag a JSON bool, every size bound by the tensors that
have it (a crafted ``n`` cannot allocate), dense tensors only (a stride-0 background cannot grow at first use),
finite amplitudes, binary frequencies, the background's width and values as the encoder takes them, its saved
encoding recomputed from the background rows, and every encoder field through one reader
(:func:`~torchxplain.fourier.encoding._encoders.encoder_from_fields`: splits sorted and distinct, flags those of the
saved route) — so a damaged or edited file is refused at load with one
:class:`~torchxplain._core.saved_fields.SavedFieldError`, never at first use and never with a wrong number. An edit
that leaves each field valid on its own is caught by the file's checksum (:mod:`torchxplain._core.persistence`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, get_args

import torch
from torch import Tensor

from torchxplain._core.inputs import player_ids
from torchxplain._core.saved_fields import SavedFields
from torchxplain.fourier.encoding import BinaryEncoder, InputEncoder, encoder_from_fields
from torchxplain.fourier.explainer._core import FourierExplainerCore
from torchxplain.fourier.fit import FitReport
from torchxplain.fourier.sources import Built, Outputs
from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.trees import PruningReport
from torchxplain.fourier.values import Kernel


def explainer_config(explainer: FourierExplainerCore) -> dict[str, Any]:
    """JSON-able metadata for ``save``; spectrum, background rows and bits, encoder tables and groups are tensors in
    the ``state_dict``."""
    report, pruning = explainer.fit_report, explainer.pruning
    return {
        "encoder": explainer.encoder.config(),
        "targets": list(explainer.outputs.targets),
        "output_names": list(explainer.outputs.names),
        "relaxed": explainer.relaxed,
        "max_memory": explainer.max_memory,
        "has_groups": explainer.groups is not None,
        "differentiable": explainer.differentiable,
        "kernel": explainer.kernel,
        "feature_names": None if explainer.feature_names is None else list(explainer.feature_names),
        "pruning": (
            None
            if pruning is None
            else [dataclasses.asdict(p) for p in pruning]
            if isinstance(pruning, tuple)
            else dataclasses.asdict(pruning)
        ),
        "fit_report": None if report is None else dataclasses.asdict(report),
    }


def explainer_from_config(
    cls: type[FourierExplainerCore],
    config: dict[str, Any],
    state: dict[str, Tensor],
    forward_func: Callable[..., Tensor] | None,
) -> FourierExplainerCore:
    """Rebuild from :func:`explainer_config` and the ``state_dict``, every field checked (module docstring);
    without ``forward_func`` the explainer's own model (its surrogate, or ``predict``) is its forward function.

    Raises:
        SavedFieldError: a field that is missing, of the wrong kind or shape, out of range, or inconsistent with
            another (the message names it).
    """
    fields = SavedFields(config, state)
    frequencies = fields.tensor("surrogate.frequencies", ("k", "n_binary"), "bool")
    shape = fields.tensor("surrogate.amplitudes", None, "float", finite=False).shape
    fields.require(len(shape) in (1, 2), "surrogate.amplitudes", f"must be (k,) or (k, C), got shape {tuple(shape)}")
    amplitudes = fields.tensor("surrogate.amplitudes", ("k",) if len(shape) == 1 else ("k", "C"), "float")
    outputs = _outputs(fields, 1 if amplitudes.ndim == 1 else amplitudes.shape[1])
    binary = fields.section("encoder").value("kind") == BinaryEncoder.kind
    background = fields.tensor("background", ("B", "n_inputs"), "float", finite=binary, binary=binary)
    fields.require(background.shape[0] >= 1, "background", "has no rows")
    bits = fields.tensor("background_bits", ("B", "n_binary"), "bool")
    saved_report = fields.value("fit_report", optional=True)
    continuous = isinstance(saved_report, dict) and saved_report.get("method") == "continuous"
    encoder = encoder_from_fields(fields, fitted=continuous)  # its flags must be those of the saved route
    if getattr(encoder, "finite", False):  # a continuous black box takes finite rows only: so does its file
        fields.require(bool(torch.isfinite(background).all()), "background", "holds NaN or infinite values")
    _check_encoding(fields, encoder, background, bits)
    has_groups = fields.flag("has_groups")
    names = fields.names("feature_names", length="n_inputs", optional=True)
    if amplitudes.ndim == 1:
        spectra = [FourierSpectrum.trusted(frequencies, amplitudes)]
    else:  # one spectrum per output, without the frequencies it lacks
        spectra = [FourierSpectrum.trusted(frequencies[a != 0], a[a != 0]) for a in amplitudes.T]
    groups = fields.tensor("groups", ("n_inputs",), "int", minimum=0) if has_groups else None
    built = Built(
        encoder=encoder,
        background=background,
        codes=bits,
        spectra=spectra,
        provider=None,
        outputs=outputs,
        groups=player_ids(groups, encoder.n_inputs, "groups", background.device),
        names=None if names is None else tuple(names),
        report=_report(fields, "fit_report", FitReport),
        pruning=_pruning(fields),
    )
    explainer = cls._assemble(
        built,
        relaxed=fields.flag("relaxed"),
        max_memory=fields.value("max_memory", optional=True) if fields.memory("max_memory") else None,
        differentiable=fields.flag("differentiable"),
        kernel=fields.choice("kernel", get_args(Kernel)),
    )
    if forward_func is not None:
        explainer.__dict__["forward_func"] = forward_func
        explainer.owns_forward_func = False
    return explainer


def _outputs(fields: SavedFields, count: int) -> Outputs:
    """The explained outputs: ``count`` targets (non-negative ints, or one ``None``) and as many names."""
    targets = fields.value("targets")
    valid = isinstance(targets, list) and len(targets) == count
    valid = valid and all(t is None or (isinstance(t, int) and not isinstance(t, bool) and t >= 0) for t in targets)
    fields.require(valid, "targets", f"must be a list of {count} output indices (or [null]), got {str(targets)[:40]}")
    return Outputs(tuple(targets), tuple(fields.names("output_names", length=count)))


def _check_encoding(fields: SavedFields, encoder: InputEncoder, background: Tensor, bits: Tensor) -> None:
    """The saved background bits are the encoding of the saved background rows (a tampered pair is refused)."""
    encoded = encoder.encode(background, torch.float32).bool()
    fields.require(
        bool(torch.equal(encoded, bits)), "background_bits", "is not the encoding of the saved background rows"
    )


def _pruning(fields: SavedFields) -> PruningReport | tuple[PruningReport, ...] | None:
    value = fields.value("pruning", optional=True)
    if isinstance(value, list):
        return tuple(_dataclass(fields, "pruning", PruningReport, item) for item in value)
    return None if value is None else _dataclass(fields, "pruning", PruningReport, value)


def _report(fields: SavedFields, key: str, cls: type) -> Any:
    value = fields.value(key, optional=True)
    return None if value is None else _dataclass(fields, key, cls, value)


def _dataclass(fields: SavedFields, key: str, cls: type, value: Any) -> Any:
    """A saved report: a mapping with the dataclass's fields (all required ones, no others)."""
    known = {f.name for f in dataclasses.fields(cls)}
    required = {
        f.name
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    ok = isinstance(value, dict) and required <= set(value) <= known
    fields.require(ok, key, f"must be a {cls.__name__} record with the fields {sorted(known)}")
    tuples = {f.name for f in dataclasses.fields(cls) if isinstance(f.default, tuple)}  # JSON made them lists
    return cls(**{k: tuple(v) if k in tuples and isinstance(v, list) else v for k, v in value.items()})

"""Saving and loading a Fourier explainer: JSON metadata plus its tensor ``state_dict`` (encoder included).

:class:`~torchxplain.FourierShap`'s ``_config``/``_from_config``; the file format is
:mod:`torchxplain._core.persistence`'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from torch import Tensor

from torchxplain.fourier.encoding._encoders import encoder_from_config
from torchxplain.fourier.explainer._core import FourierExplainerCore
from torchxplain.fourier.explainer._outputs import Outputs
from torchxplain.fourier.fit._api import FitReport
from torchxplain.fourier.spectrum._spectrum import FourierSpectrum
from torchxplain.fourier.trees._pruning import PruningReport


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
    """Rebuild from :func:`explainer_config` and the ``state_dict``; without ``forward_func`` the explainer's own
    model (its surrogate, or ``predict``) is its forward function."""
    frequencies, amplitudes = state["surrogate.frequencies"], state["surrogate.amplitudes"]
    if amplitudes.ndim == 1:
        spectra = [FourierSpectrum(frequencies, amplitudes)]
    else:  # one spectrum per output, without the frequencies it lacks
        spectra = [FourierSpectrum(frequencies[a != 0], a[a != 0]) for a in amplitudes.T]
    encoder = encoder_from_config(config["encoder"], state, "encoder.")
    names, pruning, report = config["feature_names"], config["pruning"], config["fit_report"]
    if report is not None:
        report = FitReport(**report)
    if isinstance(pruning, list):
        pruning = tuple(PruningReport(**p) for p in pruning)
    elif pruning is not None:
        pruning = PruningReport(**pruning)
    explainer = cls._assemble(
        spectra,
        encoder,
        state["background"],
        state["background_bits"],
        names=None if names is None else tuple(names),
        outputs=Outputs(tuple(config["targets"]), tuple(config["output_names"])),
        groups=state["groups"] if config["has_groups"] else None,
        relaxed=config["relaxed"],
        max_memory=config["max_memory"],
        differentiable=config["differentiable"],
        kernel=config["kernel"],
        pruning=pruning,
        fit_report=report,
    )
    if forward_func is not None:
        explainer.__dict__["forward_func"] = forward_func
        explainer.owns_forward_func = False
    return explainer

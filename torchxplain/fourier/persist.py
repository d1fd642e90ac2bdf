"""Saving and loading a Fourier explainer: JSON metadata plus its tensor ``state_dict`` (encoder included).

:class:`~torchxplain.fourier.FourierShap`'s ``_config``/``_from_config``; the file format is
:mod:`torchxplain._core.persistence`'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from torch import Tensor

from torchxplain.fourier.encoders import encoder_from_config
from torchxplain.fourier.explainer_core import FourierExplainerCore
from torchxplain.fourier.pruning import PruningReport
from torchxplain.fourier.recovery import FitReport
from torchxplain.fourier.spectrum import FourierSpectrum


def explainer_config(explainer: FourierExplainerCore) -> dict[str, Any]:
    """JSON-able metadata for ``save``; spectrum, background rows and bits, encoder tables and groups are tensors in
    the ``state_dict``."""
    report = explainer.fit_report
    return {
        "encoder": explainer.encoder.config(),
        "target": explainer.target,
        "relaxed": explainer.relaxed,
        "max_memory": explainer.max_memory,
        "has_groups": explainer.groups is not None,
        "differentiable": explainer.differentiable,
        "kernel": explainer.kernel,
        "feature_names": None if explainer.feature_names is None else list(explainer.feature_names),
        "pruning": None if explainer.pruning is None else dataclasses.asdict(explainer.pruning),
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
    spectrum = FourierSpectrum(state["surrogate.frequencies"], state["surrogate.amplitudes"])
    encoder = encoder_from_config(config["encoder"], state, "encoder.")
    names, pruning, report = config["feature_names"], config["pruning"], config["fit_report"]
    if report is not None:
        report = FitReport(**report)
    explainer = cls._assemble(
        spectrum,
        encoder,
        state["background"],
        state["background_bits"],
        names=None if names is None else tuple(names),
        target=config["target"],
        groups=state["groups"] if config["has_groups"] else None,
        relaxed=config["relaxed"],
        max_memory=config["max_memory"],
        differentiable=config["differentiable"],
        kernel=config["kernel"],
        pruning=None if pruning is None else PruningReport(**pruning),
        fit_report=report,
    )
    if forward_func is not None:
        explainer.__dict__["forward_func"] = forward_func
        explainer.owns_forward_func = False
    return explainer

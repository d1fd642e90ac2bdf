"""What a source gives the explainer: :class:`Built`, and the :class:`Provider` contract of values without a spectrum.

A source either hands over spectra (one per explained output; the explainer's closed forms take it from there) or
a :class:`Provider` that computes the values itself (enumeration through the model, a tree's leaves). The
explainer's value path asks the provider for a plan per (background, players, output), exactly as it asks a
:class:`~torchxplain.fourier.values._plan.ValuePlan` of a spectrum.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from torch import Tensor

from torchxplain._core.inputs import FeatureNames
from torchxplain.fourier.encoding import InputEncoder
from torchxplain.fourier.fit import FitReport
from torchxplain.fourier.sources._outputs import Outputs
from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.trees import PruningReport
from torchxplain.fourier.values import SupportFamilies


class Plan(Protocol):
    """Values of one output against one background for one set of players (rows are the encoder's codes).

    A plan whose values are estimated also has ``estimate(xq, kind) -> (values, stderr)`` (``kind``: ``"shapley"``
    or ``"banzhaf"``; both ``(Q, m)``), which the explainer prefers for first-order values. A plan that knows the
    output's mean over its background (e.g. from counts it took for the values) has ``mean_output() -> ()``, which
    the explainer takes as the base value instead of evaluating the background.
    """

    def shapley(self, xq: Tensor, relaxed: bool = False) -> Tensor:
        """``(Q, m)`` Shapley values."""
        ...

    def banzhaf(self, xq: Tensor) -> Tensor:
        """``(Q, m)`` Banzhaf values."""
        ...

    def interactions(self, xq: Tensor) -> Tensor:
        """``(Q, m, m)`` pairwise Shapley interaction index."""
        ...


class Provider(Protocol):
    """A source of values without a spectrum (e.g. enumeration through the model, a tree's leaves).

    Optional, where a provider serves them: ``reuses_plans`` (``True``: the explainer caches its plan of the
    background per players and output), ``reasons`` (a list: how each part of a call's values was computed and why,
    which the explainer clears as a call starts and joins into the explanation's ``route_reason``),
    ``paired(kind, x, b, groups, m, column) -> (Q, m)`` (values against per-row baselines), ``encode_frame(x, name)``
    (a DataFrame's columns recoded before validation) and ``output_spectrum(column)`` (a spectrum made on demand).

    Attributes:
        route: its name in reports and messages (``"enumerate"``, ``"leaves"``).
    """

    route: str

    def plan(self, background_codes: Tensor, groups: Tensor | None, m: int, column: int = 0) -> Plan:
        """The values of output ``column`` (of ``outputs``) against ``(D, n_codes)`` background codes for
        ``(n_codes,)`` player indices (``None``: singletons) of ``m`` players."""
        ...

    def evaluate(self, codes: Tensor) -> Tensor:
        """``(R,)`` (``(R, C)`` for several outputs) the explained function at ``(R, n_codes)`` encoded rows."""
        ...

    def refusal(self, what: str) -> str | None:
        """Why ``what`` (``"paired"``: per-row baselines, ``"interaction_values"``, ``"save"``, ``"relaxed"``,
        ``"spectrum"``) cannot be served, with the fix; ``None`` when it can."""
        ...


@dataclass(frozen=True)
class Built:
    """What a source hands to the explainer.

    Attributes:
        encoder: the input encoder; background: ``(D, p)`` validated rows; codes: ``(D, n_codes)`` their encoding.
        spectra: one spectrum per explained output (empty when a ``provider`` computes the values).
        provider: values without a spectrum, or ``None``.
        outputs: which outputs are explained; groups: the default players' ids per input column (validated), or
            ``None``; names: the background DataFrame's columns.
        report: a black box's :class:`~torchxplain.fourier.FitReport` (``None`` for trees and known spectra).
        pruning: what pruning a tree spectrum kept; families: each spectrum's support families, when known.
    """

    encoder: InputEncoder
    background: Tensor
    codes: Tensor
    spectra: list[FourierSpectrum]
    provider: Provider | None
    outputs: Outputs
    groups: Tensor | None
    names: FeatureNames | None
    report: FitReport | None = None
    pruning: PruningReport | tuple[PruningReport, ...] | None = None
    families: list[SupportFamilies | None] | None = None
    extra: dict[str, Any] | None = None

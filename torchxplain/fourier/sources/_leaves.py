"""A tree ensemble's values from its leaves (``FourierShap.from_trees(..., route="leaves")``): a value
:class:`~torchxplain.fourier.sources._built.Provider` without a Fourier spectrum.

The engines live in :mod:`torchxplain.fourier.trees` (``LeafPlan``: Shapley and Banzhaf values of every leaf's game
in closed form from fail patterns, for trees of any depth and native categorical splits, in memory that does not
grow as ``2^depth``). Here: the explainer's encoder on this route (:class:`RowsEncoder`, the identity on raw rows,
which are the provider's "codes"), the provider (:class:`LeafValues`: one leaf table per output, a DataFrame's
``category`` columns as the model's category ids, per-row baselines, pairwise interactions from the spectrum when
it fits the memory budget, refused with its size otherwise) and :func:`leaf_built`, what the tree source hands the
explainer on this route.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Literal

import torch
from torch import Tensor

from torchxplain._core import parse_memory
from torchxplain._core.inputs import FeatureNames, player_ids
from torchxplain.fourier.encoding import BinaryEncoder, InputEncoder, RawEncoder, ThresholdEncoder
from torchxplain.fourier.sources._built import Built
from torchxplain.fourier.sources._outputs import Outputs
from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.trees import (
    CategoryCodec,
    LeafPlan,
    LeafTable,
    TreeEncoding,
    TreeEnsemble,
    extract,
    leaf_outputs,
    leaf_table,
    paired_leaf_values,
    slots,
    spectrum_terms,
    splits_binary_inputs,
)
from torchxplain.fourier.values import PlayerMap, SupportFamilies, ValuePlan, player_map

REFUSALS = {
    "relaxed": "relaxed=True explains a spectrum's multilinear extension; route='leaves' holds no spectrum: pass "
    "route='spectrum'",
    "save": (
        "this explainer takes the leaf route (route='leaves'): it reads the model's leaf tables and holds no "
        "spectrum to save. Save the model itself and rebuild with FourierShap.from_trees(model, background), "
        "or build it with route='spectrum' when the spectrum fits memory"
    ),
}


class RowsEncoder(RawEncoder):
    """The identity on raw rows of a tree model, NaN a missing value routed as the library routes it: on the leaf
    route the value provider reads raw rows, so they are the explainer's codes.

    Args:
        n: number of input columns.
    """

    kind = "rows"

    def check(self, x: Tensor, name: str, relaxed: bool = False) -> None:
        if x.is_complex():
            raise TypeError(f"{name} must be real-valued, got dtype {x.dtype}")


class LeafValues:
    """A tree model's values from its leaves, one leaf table per explained output (a
    :class:`~torchxplain.fourier.sources._built.Provider`).

    Args:
        tables: per output, its leaf table; ensembles: the parsed outputs (the spectrum interactions fall back to).
        binary: the spectrum (of interactions) lives on the inputs themselves (every split separates 0 from 1 and
            the background is 0/1: ``encoding="auto"``'s rule), else on the splits' thresholds.
        codec: how DataFrames' ``category`` columns become category ids (``None``: no such column).
    """

    route = "leaves"
    reuses_plans = True  # a plan holds the background's patterns: the explainer caches it per players

    def __init__(
        self, tables: list[LeafTable], ensembles: list[TreeEnsemble], binary: bool, codec: CategoryCodec | None
    ) -> None:
        self.tables, self.ensembles, self.binary, self.codec = tables, ensembles, binary, codec
        self.categorical = any(bool(t.categorical.any()) for t in tables)
        self._spectra: dict[int, tuple[FourierSpectrum, InputEncoder, SupportFamilies]] = {}
        self._moved: dict[Hashable, LeafTable] = {}
        self.reasons: list[str] = []
        """How each part of the current call's values (one per output and chunk of rows, in order) was computed and
        why: the leaf values' form and its price against the other. The explainer clears it as a call starts."""

    def table(self, column: int, device: torch.device) -> LeafTable:
        """Output ``column``'s leaf table on ``device`` (moved once, then kept)."""
        table = self.tables[column]
        if table.left.device == device:
            return table
        key = (column, str(device))
        if key not in self._moved:
            self._moved[key] = table.to(device)
        return self._moved[key]

    def encode_frame(self, x: Any, name: str) -> Any:
        """``x`` with a DataFrame's ``category`` columns as the model's category ids (anything else unchanged)."""
        return x if self.codec is None or x is None else self.codec.encode(x, name)

    def evaluate(self, codes: Tensor) -> Tensor:
        """The explained outputs at raw rows ``(R, p)``: ``(R,)``, or ``(R, C)`` for several outputs (float64)."""
        out = [leaf_outputs(self.table(c, codes.device), codes) for c in range(len(self.tables))]
        return out[0] if len(out) == 1 else torch.stack(out, 1)

    def plan(self, background_codes: Tensor, groups: Tensor | None, m: int, column: int = 0) -> LeafValuePlan:
        """Output ``column``'s values against raw ``(D, p)`` background rows for players ``groups`` (``None``:
        one per column) of ``m`` players."""
        return LeafValuePlan(self, column, background_codes, groups, m)

    def paired(self, kind: str, x: Tensor, b: Tensor, groups: Tensor | None, m: int, column: int) -> Tensor:
        """``(Q, m)`` values of row ``x[i]`` against its own baseline row ``b[i]``.

        Raises:
            ValueError: a kind other than Shapley and Banzhaf values.
        """
        if kind not in ("shapley", "banzhaf"):
            raise ValueError(
                "per-row baselines on the leaf route give Shapley and Banzhaf values; for interactions pass the "
                "references as background= (a set every row is explained against)"
            )
        table = self.table(column, x.device)
        player = groups if groups is not None else torch.arange(table.n_features)
        slot = slots(table, player.to(table.left.device))
        named: Literal["shapley", "banzhaf"] = "shapley" if kind == "shapley" else "banzhaf"
        return paired_leaf_values(table, slot, x, b, named, m).to(x.dtype)

    def refusal(self, what: str) -> str | None:
        """Why ``what`` cannot be served on this route (relaxed inputs, saving), with the fix; ``None`` when it can
        (the spectrum, per-row baselines and interactions are served, or refused when they are asked for)."""
        return REFUSALS.get(what)

    def output_spectrum(self, column: int) -> FourierSpectrum:
        """The exact spectrum of output ``column`` (on :meth:`spectrum`'s encoder), extracted on first use."""
        return self.spectrum(column)[0]

    def spectrum(self, column: int) -> tuple[FourierSpectrum, InputEncoder, SupportFamilies]:
        """The exact spectrum of output ``column``, its encoder (the inputs themselves when binary, else the splits'
        thresholds) and its support families, extracted on first use.

        Raises:
            ValueError: categorical splits (no spectrum), or a spectrum larger than the memory budget (the message
                says how large and what would fit).
        """
        if column in self._spectra:
            return self._spectra[column]
        ensemble = self.ensembles[column]
        if self.categorical:
            raise ValueError(
                f"{ensemble.description} has categorical splits, which the Fourier spectrum does not represent: "
                "pairwise interactions need it. Shapley and Banzhaf values come from the leaves"
            )
        encoding = None if self.binary else TreeEncoding.from_ensembles(self.ensembles)
        width = ensemble.n_features if encoding is None else encoding.n_binary
        terms = spectrum_terms(self.tables[column])
        need = terms * (width + 40)
        budget = parse_memory()
        if need > budget:
            raise ValueError(
                f"pairwise interactions of {ensemble.description} need its Fourier spectrum: up to {terms:,} terms on "
                f"{width:,} binary features, about {need / 2**30:.2f} GiB, more than max_memory="
                f"{budget / 2**30:.2f} GiB. Raise the budget to at least that (tx.settings.max_memory), or explain a "
                "model with fewer or shallower trees; Shapley and Banzhaf values need no spectrum"
            )
        spectrum, families = extract(ensemble, encoding, device=self.tables[column].left.device)
        encoder = BinaryEncoder(width) if encoding is None else ThresholdEncoder(encoding)
        self._spectra[column] = (spectrum, encoder, families)
        return self._spectra[column]


class LeafValuePlan:
    """One output's values on the leaf route against one background for one set of players (a
    :class:`~torchxplain.fourier.sources._built.Plan`): Shapley and Banzhaf values from the leaves, interactions
    from the spectrum when it fits (:meth:`LeafValues.spectrum`).

    Args:
        source: the :class:`LeafValues`; column: the output.
        background: ``(B, p)`` raw background rows (their dtype is the values'); groups, m: the call's players.
    """

    def __init__(self, source: LeafValues, column: int, background: Tensor, groups: Tensor | None, m: int) -> None:
        self.source, self.column, self.background, self.m = source, column, background, m
        table = source.table(column, background.device)
        self.groups = groups
        description = source.ensembles[column].description
        self.leaves = LeafPlan(table, background, groups, m, background.dtype, description)
        self._spectral: tuple[ValuePlan, PlayerMap, InputEncoder] | None = None

    def shapley(self, xq: Tensor, relaxed: bool = False) -> Tensor:
        """``(Q, m)`` interventional Shapley values of raw rows ``xq`` ``(Q, p)``."""
        values = self.leaves.shapley(xq, relaxed=relaxed)
        self._report()
        return values

    def banzhaf(self, xq: Tensor) -> Tensor:
        """``(Q, m)`` interventional Banzhaf values."""
        values = self.leaves.banzhaf(xq)
        self._report()
        return values

    def _report(self) -> None:
        """The leaf values' form and why, added to the source's :attr:`LeafValues.reasons`."""
        form = "pair" if self.leaves.route == "pairs" else "dense"
        self.source.reasons.append(f"the {form} form of the leaf values: {self.leaves.reason}")

    def mean_output(self) -> Tensor:
        """``()`` the output's mean over the background (float64): from the leaves' counts of background rows where
        values were computed, else the trees descended."""
        return self.leaves.mean_output()

    def interactions(self, xq: Tensor) -> Tensor:
        """``(Q, m, m)`` pairwise Shapley interactions, from the spectrum (see :class:`LeafValues`)."""
        plan, players, encoder = self._spectrum_plan()
        return players.expand(plan.interactions(encoder.encode(xq, self.background.dtype)), 2)

    def interaction_values(self, xq: Tensor, index: Any, order: int) -> dict[int, Tensor]:
        """shapiq's indices up to ``order`` from the spectrum (see :class:`LeafValues`)."""
        plan, players, encoder = self._spectrum_plan()
        result = plan.interaction_values(encoder.encode(xq, self.background.dtype), index, min(order, players.m_active))
        out = {t: players.expand(v, t) for t, v in result.items()}
        for t in range(1, order + 1):
            out.setdefault(t, xq.new_zeros((xq.shape[0],) + (self.m,) * t))
        return out

    def _spectrum_plan(self) -> tuple[ValuePlan, PlayerMap, InputEncoder]:
        """The closed forms of the spectrum, its players (this plan's, over the spectrum's binary features) and
        its encoder."""
        if self._spectral is None:
            spectrum, encoder, families = self.source.spectrum(self.column)
            of_input = self.groups if self.groups is not None else torch.arange(self.m)
            players = player_map(encoder.owner, encoder.n_inputs, of_input.to(encoder.owner.device))
            dtype = self.background.dtype
            codes = encoder.encode(self.background, dtype)
            plan = ValuePlan(spectrum.to(dtype), codes, players.binary_groups, players.m_active, "auto", families)
            self._spectral = (plan, players, encoder)
        return self._spectral


def leaf_built(
    ensembles: list[TreeEnsemble],
    raw: Tensor,
    names: FeatureNames | None,
    outputs: Outputs,
    groups: Any,
    tables: list[LeafTable] | None = None,
    codec: CategoryCodec | None = None,
) -> Built:
    """What the tree source hands the explainer on the leaf route: raw ``(B, p)`` background rows as codes and
    :class:`LeafValues` (leaf tables built unless given) as the provider of values."""
    tables = tables if tables is not None else [leaf_table(e) for e in ensembles]
    categorical = any(bool(t.categorical.any()) for t in tables)
    binary_rows = bool(((raw == 0) | (raw == 1)).all())
    binary = not categorical and binary_rows and all(splits_binary_inputs(e) for e in ensembles)
    p = ensembles[0].n_features
    return Built(
        encoder=RowsEncoder(p),
        background=raw,
        codes=raw,
        spectra=[],
        provider=LeafValues(tables, ensembles, binary, codec),
        outputs=outputs,
        groups=player_ids(groups, p, "feature_groups", raw.device),
        names=names,
    )

"""A tree ensemble as an explainer's source on the leaf route: leaf tables instead of a Fourier spectrum.

``FourierShap.from_trees(..., route=...)`` picks the route (:func:`choose_route`): the spectrum (today's exact
expansion, the only one with pruning, relaxed inputs and saving) or the leaves
(:mod:`~torchxplain.fourier.trees._leaf_values`: Shapley and Banzhaf values for trees of any depth and native
categorical splits, in memory that does not grow as ``2^depth``). On the leaf route the explainer's encoder is the
identity on raw rows (:class:`RowsEncoder`), so its "codes" are the rows the value provider reads, and every value
goes through :meth:`LeafSource.plan`; pairwise interactions fall back to the spectrum when it fits the memory
budget, and are refused with what would fit otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch import Tensor

from torchxplain._core import parse_memory
from torchxplain._core.inputs import check_feature_names, rows
from torchxplain.fourier.encoding._encoders import BinaryEncoder, InputEncoder, ThresholdEncoder
from torchxplain.fourier.spectrum._spectrum import FourierSpectrum
from torchxplain.fourier.trees._categories import CategoryCodec, category_codec
from torchxplain.fourier.trees._encoding import TreeEncoding
from torchxplain.fourier.trees._extraction import extract
from torchxplain.fourier.trees._leaf_values import LeafPlan, outputs, paired_values
from torchxplain.fourier.trees._leaves import LeafTable, Slots, leaf_table, slots
from torchxplain.fourier.trees._splits import splits_binary_inputs
from torchxplain.fourier.trees.adapters._base import TreeEnsemble, fitted_names
from torchxplain.fourier.values._families import SupportFamilies
from torchxplain.fourier.values._plan import Kernel, ValuePlan
from torchxplain.fourier.values._players import PlayerMap, player_map

Route = Literal["auto", "spectrum", "leaves"]
ROUTES = ("auto", "spectrum", "leaves")
AUTO_MAX_TERMS = 1 << 11
"""``route="auto"`` keeps the spectrum up to this many Fourier terms (a small spectrum also gives interactions,
pruning and saving), and for oblivious trees up to :data:`AUTO_MAX_OBLIVIOUS` (one small table per tree serves
every row: measured 25× faster than the leaves at 10,000 rows on CatBoost's defaults); above, or with categorical
splits, the leaves (measured at least as fast as the spectrum on XGBoost, LightGBM, scikit-learn defaults)."""
AUTO_MAX_OBLIVIOUS = 1 << 16


class RowsEncoder(InputEncoder):
    """The identity on raw rows of a tree model (NaN is a missing value, routed as the library routes it): on the
    leaf route the value provider reads raw rows, so they are the explainer's codes.

    Args:
        n: number of input columns.
    """

    kind = "rows"
    binary_codes = False

    def __init__(self, n: int) -> None:
        super().__init__()
        self.register_buffer("owner", torch.arange(n), persistent=False)

    @property
    def n_inputs(self) -> int:
        return self.n_binary

    def check(self, x: Tensor, name: str, relaxed: bool = False) -> None:
        if x.is_complex():
            raise TypeError(f"{name} must be real-valued, got dtype {x.dtype}")

    def encode(self, x: Tensor, dtype: torch.dtype) -> Tensor:
        return x.to(dtype)

    def config(self) -> dict[str, Any]:
        return {"kind": self.kind, "n": self.n_binary}


def spectrum_terms(table: LeafTable) -> int:
    """A bound on the Fourier terms of ``table``'s trees: per tree, ``Σ_leaves 2^d`` (``d`` distinct features on a
    leaf's path) or ``2^s`` (``s`` distinct splits in the tree: an oblivious tree has ``d`` of them), the smaller."""
    device = table.left.device
    slot = slots(table, torch.arange(table.n_features, device=device))
    per_leaf = torch.zeros(table.n_trees, dtype=torch.float64, device=device)
    per_leaf.index_add_(0, table.tree[slot.leaves], torch.pow(2.0, slot.n_slots.double()))
    inner = table.left >= 0
    key = table.feature[inner] * (int(table.split.max()) + 2) + table.split[inner].long() + 1
    distinct = torch.unique(torch.stack([table.tree[inner], key], 1), dim=0)
    splits = torch.bincount(distinct[:, 0], minlength=table.n_trees).double()
    return int(torch.minimum(per_leaf, torch.pow(2.0, splits.clamp(max=60))).sum())


def check_route(route: object) -> Route:
    """``route`` if it is one of :data:`ROUTES`."""
    if not isinstance(route, str) or route not in ROUTES:
        raise ValueError(f"route must be one of {ROUTES}, got {str(route)[:40]!r}")
    return route  # type: ignore[return-value]


def choose_route(
    route: Route, ensembles: list[TreeEnsemble], tables: list[LeafTable], spectrum_only: list[str]
) -> Literal["spectrum", "leaves"]:
    """The route of ``from_trees``: ``route`` as asked, checked against what the model and the options need.

    Args:
        route: the argument.
        ensembles, tables: the parsed outputs and their leaf tables.
        spectrum_only: the options the caller set that only the spectrum serves (``"energy"``, ``"relaxed"``...).

    Raises:
        ValueError: ``route="leaves"`` with a spectrum-only option; ``route="spectrum"`` on categorical splits.
    """
    categorical = any(e.category_split is not None and bool((e.category_split >= 0).any()) for e in ensembles)
    if route == "leaves" and spectrum_only:
        raise ValueError(
            f"{', '.join(spectrum_only)} act on a Fourier spectrum; route='leaves' computes values from the leaves "
            "without one: drop them, or pass route='spectrum'"
        )
    if route == "spectrum" and categorical:
        raise ValueError(
            f"{ensembles[0].description} has categorical splits, which the Fourier spectrum does not represent; "
            "use route='leaves' (or 'auto'): exact Shapley and Banzhaf values from the leaves"
        )
    if route != "auto":
        return route
    if categorical:
        return "leaves"
    if spectrum_only:
        return "spectrum"
    terms = sum(spectrum_terms(t) for t in tables)
    oblivious = all(len(e.left) == 0 and e.oblivious for e in ensembles)
    return "spectrum" if terms <= (AUTO_MAX_OBLIVIOUS if oblivious else AUTO_MAX_TERMS) else "leaves"


@dataclass
class LeafSource:
    """A tree model on the leaf route: one leaf table per explained output.

    Attributes:
        tables: per output, the :class:`~torchxplain.fourier.trees._leaves.LeafTable`.
        ensembles: the parsed outputs (for the spectrum that interactions fall back to).
        encoder: the explainer's :class:`RowsEncoder`.
        categorical: whether the model splits by category.
        binary: whether the spectrum (of interactions) lives on the inputs themselves (every split separates 0
            from 1 and the background is 0/1: ``encoding="auto"``'s rule), else on the splits' thresholds.
        codec: how DataFrames' ``category`` columns become category ids (``None``: no such column).
    """

    tables: list[LeafTable]
    ensembles: list[TreeEnsemble]
    encoder: RowsEncoder
    categorical: bool
    binary: bool
    codec: CategoryCodec | None = None
    _spectra: dict[int, tuple[FourierSpectrum, InputEncoder, SupportFamilies]] = field(default_factory=dict)
    _moved: dict[tuple[int, str], LeafTable] = field(default_factory=dict)

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
        return x if self.codec is None else self.codec.encode(x, name)

    @classmethod
    def build(
        cls,
        ensembles: list[TreeEnsemble],
        background: Tensor,
        tables: list[LeafTable] | None = None,
        codec: CategoryCodec | None = None,
    ) -> LeafSource:
        """The source of parsed outputs (their leaf tables built unless given) against ``background`` rows."""
        tables = tables if tables is not None else [leaf_table(e) for e in ensembles]
        categorical = any(bool(t.categorical.any()) for t in tables)
        binary_rows = bool(((background == 0) | (background == 1)).all())
        binary = not categorical and binary_rows and all(splits_binary_inputs(e) for e in ensembles)
        return cls(tables, ensembles, RowsEncoder(ensembles[0].n_features), categorical, binary, codec)

    def predict(self, rows: Tensor) -> Tensor:
        """The explained outputs at raw rows ``(R, p)``: ``(R,)``, or ``(R, C)`` for several outputs (float64)."""
        out = [outputs(self.table(c, rows.device), rows) for c in range(len(self.tables))]
        return out[0] if len(out) == 1 else torch.stack(out, 1)

    def plan(
        self, column: int, background: Tensor, players: PlayerMap, dtype: torch.dtype, kernel: Kernel
    ) -> LeafProvider:
        """The value provider of output ``column`` against raw ``background`` rows for ``players``."""
        return LeafProvider(self, column, background, players, dtype, kernel)

    def paired(self, kind: str, x: Tensor, b: Tensor, players: PlayerMap, column: int) -> Tensor:
        """``(Q, m_active)`` values of row ``x[i]`` against its own baseline row ``b[i]``."""
        if kind not in ("shapley", "banzhaf"):
            raise ValueError(
                "per-row baselines on the leaf route give Shapley and Banzhaf values; for interactions pass the "
                "references as background= (a set every row is explained against)"
            )
        table = self.table(column, x.device)
        slot = self._slots(table, players)
        return paired_values(table, slot, x, b, kind, players.m_active).to(x.dtype)  # type: ignore[arg-type]

    @staticmethod
    def _slots(table: LeafTable, players: PlayerMap) -> Slots:
        groups = players.binary_groups if players.binary_groups is not None else torch.arange(table.n_features)
        return slots(table, groups.to(table.left.device))

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


class LeafProvider:
    """The value provider of one output on the leaf route (the interface of
    :class:`~torchxplain.fourier.values._plan.ValuePlan`): Shapley and Banzhaf values from the leaves, interactions
    from the spectrum when it fits (:meth:`LeafSource.spectrum`).

    Args:
        source: the :class:`LeafSource`; column: the output.
        background: ``(B, p)`` raw background rows; players: the call's players.
        dtype: the values' dtype; kernel: the spectrum's kernel (interactions).
    """

    def __init__(
        self,
        source: LeafSource,
        column: int,
        background: Tensor,
        players: PlayerMap,
        dtype: torch.dtype,
        kernel: Kernel,
    ) -> None:
        self.source, self.column, self.players, self.kernel = source, column, players, kernel
        self.background = background
        table = source.table(column, background.device)
        self.m = players.m_active
        self.leaves = LeafPlan(
            table, background, players.binary_groups, self.m, dtype, table_description(source, column)
        )
        self._spectral: ValuePlan | None = None
        self._spectral_players: PlayerMap | None = None

    def shapley(self, bits: Tensor, relaxed: bool = False) -> Tensor:
        """``(Q, m_active)`` interventional Shapley values of raw rows ``bits`` ``(Q, p)``."""
        return self.leaves.shapley(bits, relaxed=relaxed)

    def banzhaf(self, bits: Tensor) -> Tensor:
        """``(Q, m_active)`` interventional Banzhaf values."""
        return self.leaves.banzhaf(bits)

    def interactions(self, bits: Tensor) -> Tensor:
        """``(Q, m_active, m_active)`` pairwise Shapley interactions, from the spectrum (see :class:`LeafSource`)."""
        plan, mapped = self._spectrum_plan()
        codes = mapped[1].encode(bits, self.background.dtype)
        return self._to_players(plan.interactions(codes), 2)

    def interaction_values(self, bits: Tensor, index: Any, order: int) -> dict[int, Tensor]:
        """shapiq's indices up to ``order`` from the spectrum (see :class:`LeafSource`)."""
        plan, mapped = self._spectrum_plan()
        codes = mapped[1].encode(bits, self.background.dtype)
        result = plan.interaction_values(codes, index, min(order, mapped[0].m_active))
        out = {t: self._to_players(v, t) for t, v in result.items()}
        for t in range(1, order + 1):
            out.setdefault(t, bits.new_zeros((bits.shape[0],) + (self.m,) * t))
        return out

    def _spectrum_plan(self) -> tuple[ValuePlan, tuple[PlayerMap, InputEncoder]]:
        spectrum, encoder, families = self.source.spectrum(self.column)
        spec_players = player_map(encoder.owner, encoder.n_inputs, self.players.of_input)
        if self._spectral is None:
            dtype = self.background.dtype
            codes = encoder.encode(self.background, dtype)
            self._spectral = ValuePlan(
                spectrum.to(dtype), codes, spec_players.binary_groups, spec_players.m_active, self.kernel, families
            )
        self._spectral_players = spec_players
        return self._spectral, (spec_players, encoder)

    def _to_players(self, values: Tensor, order: int) -> Tensor:
        """Order-``order`` values over the spectrum's active players -> over this call's active players."""
        assert self._spectral_players is not None
        if order == 0:
            return values
        full = self._spectral_players.expand(values, order)
        index = self.players.active
        for axis in range(1, order + 1):
            full = full.index_select(axis, index)
        return full


def table_description(source: LeafSource, column: int) -> str:
    """The model's name and output, for messages."""
    return source.ensembles[column].description


@dataclass(frozen=True)
class LeafRoute:
    """What ``from_trees`` builds a leaf-route explainer from: the source, the validated background rows and names,
    and the outputs' targets and names."""

    source: LeafSource
    background: Tensor
    feature_names: tuple[str, ...] | None
    targets: tuple[int | None, ...]
    output_names: tuple[str, ...]


def leaf_route(ensembles: list[TreeEnsemble], background: Any, tables: list[LeafTable] | None = None) -> LeafRoute:
    """Validate ``background`` against the parsed outputs and build their :class:`LeafSource` (with its
    :class:`~torchxplain.fourier.trees._categories.CategoryCodec` when the background has ``category`` columns).

    Raises:
        ValueError: a background of the wrong width, or with other columns than the model was fitted with, or a
            ``category`` column the model splits by threshold.
    """
    codec = category_codec(ensembles, background, ensembles[0].unseen_category)
    converted = rows(background if codec is None else codec.encode(background, "background"), "background")
    raw, names = converted.tensor, converted.feature_names
    first = ensembles[0]
    if raw.shape[1] != first.n_features:
        raise ValueError(f"background has {raw.shape[1]} features, but {first.description} expects {first.n_features}")
    check_feature_names(first.feature_names, fitted_names(names, first.names), "background")
    source = LeafSource.build(ensembles, raw, tables, codec)
    targets = tuple(e.target for e in ensembles)
    return LeafRoute(source, raw, names, targets, tuple(e.output or e.description for e in ensembles))


def empty_spectra(n: int, outputs: int) -> tuple[list[FourierSpectrum], list[SupportFamilies | None]]:
    """The explainer's spectra on the leaf route: one empty spectrum on ``n`` inputs per output, with (for one
    output) its empty support families, so nothing searches them."""
    empty = torch.zeros(0, n, dtype=torch.bool), torch.zeros(0, dtype=torch.float64)
    none = torch.zeros(0, 0, dtype=torch.int64)
    families = SupportFamilies(none, none.new_zeros(0), none.new_zeros(0), none)
    return [FourierSpectrum.trusted(*empty) for _ in range(outputs)], [families] * outputs

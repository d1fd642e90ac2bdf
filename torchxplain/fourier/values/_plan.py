"""``ValuePlan``: the closed forms of one spectrum against one background, prepared once, reused per batch.

The explainer builds one plan per (spectrum, background, players) and caches it; the public value functions
build one per call (or per :func:`~torchxplain.fourier.precompute_background` term). A plan holds the
background-only work of both exact kernels, made lazily and once: the dense kernel's signed amplitudes, and
the small-support kernel's families, moments and — per kind of value — tables.

**Choosing the kernel.** With ``kernel="auto"`` every call asks the cost model
(:mod:`~torchxplain.fourier.values._cost`) for the predicted seconds of both kernels at the call's number of
queries. Once the tables of a kind exist, the small-support kernel is used. Before that, the plan follows the
ski-rental rule: it builds the tables as soon as the dense work spent so far plus this call's would exceed
the build plus this call's small-support explain — so a stream of small batches pays at most about twice the
better choice in hindsight, and one large call picks the cheaper kernel outright. ``"gemm"`` and
``"small_support"`` force a kernel. :meth:`ValuePlan.describe` reports the sizes, the choices and the
predictions.

A plan's methods assume valid inputs — binary ``(Q, n)`` queries in the plan's dtype and on its device —
because validation happens once, at the public boundary that called them. Memory is bounded by
``tx.settings.max_memory`` in force when a method runs.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor

from torchxplain._core import parse_memory
from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.values._background import BackgroundTerm
from torchxplain.fourier.values._cost import (
    MAX_SUPPORT,
    FamilyWork,
    Kernel,
    Workload,
    check_kernel,
    family_work,
    gemm_seconds,
    grid_seconds,
    index_seconds,
    report,
    small_support_seconds,
    workload,
)
from torchxplain.fourier.values._families import SupportFamilies, feature_lists, support_families
from torchxplain.fourier.values._gemm import FirstOrder, grouped_first_order, grouped_interactions, singleton_gemm
from torchxplain.fourier.values._grid import GRID_MAX_PLAYERS, GridKernel
from torchxplain.fourier.values._relaxed import relaxed_shapley
from torchxplain.fourier.values._support import SupportLayout, build_tables, explain
from torchxplain.fourier.values._weights import TableKind, TableSpec, index_spec, spec_of
from torchxplain.fourier.values.interactions._kernel import _interaction_values

__all__ = ["Kernel", "ValuePlan", "check_kernel"]


class ValuePlan:
    """Shapley, Banzhaf and pairwise interaction values of ``spectrum`` against a fixed background.

    Args:
        spectrum: ``k`` frequencies on ``n`` binary features (its dtype is the working dtype).
        background: ``(B, n)`` validated binary background.
        groups: ``(n,)`` validated player id per feature in ``0..m-1`` (``None``: one player per feature).
        m: number of players (``n`` when ``groups`` is ``None``).
        kernel: ``"auto"`` (cost model; tables only when they fit in half of ``tx.settings.max_memory``),
            ``"gemm"`` (dense two-GEMM form) or ``"small_support"`` (tables over the patterns of support
            families, kept whatever their size).
        families: the :class:`~torchxplain.fourier.values._families.SupportFamilies` of ``spectrum`` known
            already (rows aligned with its frequencies), so the plan skips their search: another plan's
            :attr:`families`, or the ones a tree extraction records (``tree_spectrum(model,
            return_families=True)``).
    """

    def __init__(
        self,
        spectrum: FourierSpectrum,
        background: Tensor,
        groups: Tensor | None,
        m: int,
        kernel: Kernel = "auto",
        families: SupportFamilies | None = None,
    ) -> None:
        self._init(BackgroundTerm(spectrum, background), groups, m, kernel, families)

    @classmethod
    def from_term(
        cls,
        term: BackgroundTerm,
        groups: Tensor | None,
        m: int,
        kernel: Kernel = "auto",
        families: SupportFamilies | None = None,
    ) -> ValuePlan:
        """A plan on an existing :class:`BackgroundTerm` (sharing its cached signed amplitudes)."""
        plan = cls.__new__(cls)
        plan._init(term, groups, m, kernel, families)
        return plan

    def _init(
        self, term: BackgroundTerm, groups: Tensor | None, m: int, kernel: Kernel, families: SupportFamilies | None
    ) -> None:
        check_kernel(kernel)
        self.term, self.spectrum, self.groups, self.m = term, term.spectrum, groups, m
        self.kernel: Kernel = kernel
        if families is not None and not isinstance(families, SupportFamilies):
            raise TypeError(f"families must be a SupportFamilies, got {type(families).__name__}")
        if families is not None and families.family.shape[0] != len(self.spectrum):
            raise ValueError(
                f"families cover {families.family.shape[0]} frequencies, the spectrum has {len(self.spectrum)}"
            )
        self._families: SupportFamilies | None = families
        self._lists: tuple[Tensor, Tensor] | None = None
        self._work: Workload | None = None
        self._layout: SupportLayout | None = None
        self._tables: dict[TableSpec, list[Tensor]] = {}
        self._spent: dict[str, float] = {}
        self._choices: dict[str, dict[str, object]] = {}
        self._grid: GridKernel | None = None

    # --- the values ----------------------------------------------------------------------------------
    def shapley(self, xq: Tensor, relaxed: bool = False) -> Tensor:
        """``(Q, m)`` Shapley values; ``relaxed`` queries may be real-valued (singleton players only; dense)."""
        if relaxed:
            return relaxed_shapley(xq, self.term)
        return self._first_order(xq, "shapley")

    def banzhaf(self, xq: Tensor) -> Tensor:
        """``(Q, m)`` Banzhaf values."""
        return self._first_order(xq, "banzhaf")

    def interactions(self, xq: Tensor) -> Tensor:
        """``(Q, m, m)`` pairwise Shapley interaction index (zero diagonal)."""
        if self.m == 0:  # no players (a constant model): nothing interacts
            return xq.new_zeros(xq.shape[0], 0, 0)
        choice = self._choose(xq, "interactions")
        if choice == "grid":
            return self.grid.values(xq, "interactions")
        if choice == "small_support":
            return explain(self.layout, self._tables_of("interactions"), xq, "interactions")
        return grouped_interactions(xq, self.term, self.groups, self.m)

    def interaction_values(self, xq: Tensor, index: str, max_order: int) -> dict[int, Tensor]:
        """Interaction index ``index`` of orders ``0..max_order`` (validated), as
        :func:`~torchxplain.fourier.interaction_values`: ``{0: (Q,), 1: (Q, m), 2: (Q, m, m), ...}``.

        Up to order 2 the cost model picks between one table per order (the small-support kernel) and the dense
        kernel; higher orders take the dense kernel.
        """
        specs = [index_spec(index, t, max_order) for t in range(max_order + 1)]
        key = f"{index} up to order {max_order}"
        if self.m == 0:  # no players: every frequency is the constant, v(∅) = v(N) is all there is
            constant = self.spectrum.amplitudes.sum().reshape(1).expand(xq.shape[0]).to(xq)
            return {0: constant * float(specs[0].weights[0]) * specs[0].scale}
        if max_order > 2:
            if self.kernel == "small_support":
                raise ValueError(
                    f"kernel='small_support' tabulates interaction orders up to 2, got max_order={max_order}; pass "
                    "kernel='auto' or 'gemm'"
                )
            self._record(key, "gemm", xq.shape[0], "order above 2")
        elif self._decide(xq, key, specs, lambda q, d: index_seconds(self.work, q, max_order, d)) == "small_support":
            constant = self.spectrum.amplitudes[~self._frequencies().any(1)].sum()  # v(∅) takes the constant whole
            out = {spec.order: explain(self.layout, self._tables_of(spec), xq, spec) for spec in specs}
            out[0] = out[0] + constant.to(out[0]) * float(specs[0].weights[0]) * specs[0].scale
            return out
        return _interaction_values(xq, self.term, self.groups, self.m, index, max_order)

    def _first_order(self, xq: Tensor, kind: FirstOrder) -> Tensor:
        if self.m == 0:  # no players (a constant model)
            return xq.new_zeros(xq.shape[0], 0)
        choice = self._choose(xq, kind)
        if choice == "grid":
            return self.grid.values(xq, kind)
        if choice == "small_support":
            return explain(self.layout, self._tables_of(kind), xq, kind)
        if self.groups is None:
            return singleton_gemm(xq, self.term, kind)
        return grouped_first_order(xq, self.term, self.groups, self.m, kind)

    def mean_output(self) -> Tensor | None:
        """``()`` the spectrum's mean over the background, ``Σ_f a_f m_U(f) / B`` (a constant term's moment is 1),
        from the Walsh moments ``m_U`` the small-support kernel's layout holds, or from the signed amplitudes the
        dense kernel keeps (:meth:`BackgroundTerm.mean_output`); ``None`` where neither was built: the caller then
        evaluates the spectrum at the background rows, which costs ``B · k · degree`` gathers (20 s for CatBoost's
        54,518 terms at B = 10,000) against ``k`` here."""
        layout = self._layout
        if layout is None:
            return self.term.mean_output()
        amplitudes = self.spectrum.amplitudes.to(device=layout.moments.device, dtype=layout.dtype)
        placed = amplitudes.index_select(0, layout.rows)
        moments = layout.moments.index_select(0, layout.moment_offset.index_select(0, layout.fam) + layout.local)
        return amplitudes.sum() - placed.sum() + (placed * moments).sum() / layout.n_background

    # --- the structures the small-support and grid kernels build once ---------------------------------
    @property
    def grid(self) -> GridKernel:
        """The level-grid kernel's tables (built on first use, grown by new query levels)."""
        if self._grid is None:
            self._grid = GridKernel(self.spectrum, self.term.background, self.groups, self.m)
        return self._grid

    @property
    def families(self) -> SupportFamilies:
        """The spectrum's support families (searched on first use)."""
        if self._families is None:
            self._families = support_families(self._frequencies(), self._feature_lists())
        return self._families

    @property
    def layout(self) -> SupportLayout:
        """Families with player slots and the background's Walsh moments (built on first use)."""
        if self._layout is None:
            self._layout = SupportLayout(self.spectrum, self.term.background, self.groups, self.m, self.families)
        return self._layout

    def _tables_of(self, kind: TableKind | TableSpec) -> list[Tensor]:
        spec = spec_of(kind)
        if spec not in self._tables:
            self._tables[spec] = build_tables(self.layout, self.spectrum.amplitudes, spec)
        return self._tables[spec]

    def _frequencies(self) -> Tensor:
        return self.spectrum.frequencies.to(self.term.background.device)

    def _feature_lists(self) -> tuple[Tensor, Tensor]:
        """Each frequency's features and degree, for the cost model and the family search: as the families
        recorded them (a tree extraction does), else computed once."""
        if self._lists is None:
            known = None if self._families is None else self._families.features
            if known is not None:
                known = known.to(self.term.background.device)
                self._lists = (known, (known < self.spectrum.n_features).sum(1))
            else:
                self._lists = feature_lists(self._frequencies())
        return self._lists

    @property
    def work(self) -> Workload:
        """The sizes the cost model reads (computed on first use)."""
        if self._work is None:
            feats = self._feature_lists()[0]
            self._work = workload(self._frequencies(), feats, self.groups, self.m, self.term.background.shape[0])
        return self._work

    # --- the choice ------------------------------------------------------------------------------------
    def _choose(self, xq: Tensor, kind: TableKind) -> str:
        """The kernel for one kind of first-order values or pairwise interactions: the level grid when forced,
        built or predicted cheapest (few players), else :meth:`_decide`'s choice."""
        spec = spec_of(kind)
        q, device = xq.shape[0], xq.device.type
        if self.kernel == "grid":
            if not GridKernel.fits(self.m):
                raise ValueError(f"kernel='grid' handles at most {GRID_MAX_PLAYERS} players, got {self.m}")
            need = self.grid.table_bytes(xq)
            if need > parse_memory():  # priced before the tables are built (or grown by new query levels)
                raise ValueError(
                    f"kernel='grid' tabulates {self.grid.grid_size(xq):,} level combinations of {self.m} players in "
                    f"{need / 2**30:.3g} GiB, above max_memory={parse_memory() / 2**30:.3g} GiB; pass kernel='auto' "
                    "(or 'gemm'), or raise max_memory"
                )
            return self._record(kind, "grid", q, "forced")
        # tables built: kept while the levels of new queries do not grow them past the budget (else another kernel)
        if self._grid is not None and self._grid.tables is not None and self._grid_fits(xq):
            return self._record(kind, "grid", q, "tables built")
        if self.kernel == "auto" and spec not in self._tables and GridKernel.fits(self.m) and self._grid_fits(xq):
            dense = gemm_seconds(self.work, q, kind, device)
            build, per_call = grid_seconds(
                self.grid.grid_size(xq),
                self.grid.restriction_count(),
                self.grid.table_entries(),
                self.work,
                q,
                kind,
                device,
            )
            small = sum(self._table_seconds(None, q, [spec], device))
            if build + per_call < min(self._spent.get(kind, 0.0) + dense, small):
                predicted = {"gemm": dense, "grid": build + per_call, "small_support_at_least": small}
                return self._record(kind, "grid", q, "cost model", predicted)
        return self._decide(xq, kind, [spec], lambda q, device: gemm_seconds(self.work, q, kind, device))

    def _grid_fits(self, xq: Tensor) -> bool:
        """Whether the grid kernel's tables (with ``xq``'s new levels) fit half the memory budget."""
        return self.grid.table_bytes(xq) <= parse_memory() // 2

    def _decide(self, xq: Tensor, key: str, specs: list[TableSpec], dense_seconds: Callable[[int, str], float]) -> str:
        """``"gemm"`` (the dense form) or ``"small_support"`` (the tables ``specs``) for values ``key`` of ``xq``."""
        q, device = xq.shape[0], xq.device.type
        if self.kernel == "gemm":
            return self._record(key, "gemm", q, "forced")
        if all(spec in self._tables for spec in specs):
            return self._record(key, "small_support", q, "tables built")
        work = self.work
        if work.max_degree > MAX_SUPPORT:
            if self.kernel == "small_support":
                raise ValueError(
                    f"kernel='small_support' tabulates supports of at most {MAX_SUPPORT} features, but the "
                    f"spectrum has a frequency of degree {work.max_degree}; pass kernel='gemm' or 'auto'"
                )
            return self._record(key, "gemm", q, f"degree {work.max_degree} > {MAX_SUPPORT}")
        dense = dense_seconds(q, device)
        spent = self._spent.get(key, 0.0)
        if self.kernel == "auto":
            build, per_call = self._table_seconds(None, q, specs, device)
            if spent + dense <= build + per_call:  # cheaper than even a lower bound of the build
                return self._spend(key, dense, q, {"gemm": dense, "small_support_at_least": build + per_call})
        fam = family_work(self.families)
        build, per_call = self._table_seconds(fam, q, specs, device)
        predicted = {"gemm": dense, "small_support": build + per_call, "small_support_build": build}
        elements = sum(fam.table_elements(spec) for spec in specs if spec not in self._tables)
        too_big = elements * xq.element_size() > parse_memory() // 2
        if self.kernel == "small_support":  # the tables are kept whatever their size when asked for by name
            return self._record(key, "small_support", q, "forced", predicted)
        if too_big or spent + dense <= build + per_call:
            return self._spend(key, dense, q, predicted, "tables over half the budget" if too_big else "")
        return self._record(key, "small_support", q, "cost model", predicted)

    def _table_seconds(
        self, fam: FamilyWork | None, q: int, specs: list[TableSpec], device: str
    ) -> tuple[float, float]:
        """Predicted ``(build, explain)`` seconds of the tables ``specs`` (the built ones cost no build)."""
        build = explain_seconds = 0.0
        for spec in specs:
            b, e = small_support_seconds(self.work, fam, q, spec, device)
            build += 0.0 if spec in self._tables else b
            explain_seconds += e
        return build, explain_seconds

    def _spend(self, key: str, seconds: float, q: int, predicted: dict[str, float], reason: str = "") -> str:
        self._spent[key] = self._spent.get(key, 0.0) + seconds
        return self._record(key, "gemm", q, reason or "cost model", predicted)

    def _record(self, key: str, kernel: str, q: int, reason: str, predicted: dict[str, float] | None = None) -> str:
        self._choices[key] = {"kernel": kernel, "queries": q, "reason": reason, "predicted_seconds": predicted}
        return kernel

    def describe(self) -> dict[str, object]:
        """The kernel option, the sizes, and per kind of value the last choice with its predicted seconds
        (JSON-able)."""
        out: dict[str, object] = {
            "kernel": self.kernel,
            "k": len(self.spectrum),
            "n": self.spectrum.n_features,
            "background": int(self.term.background.shape[0]),
            "players": self.m,
            "choices": dict(self._choices),
            "tables_built": sorted(spec.name for spec in self._tables),
        }
        if self._work is not None:
            fam = None if self._families is None else family_work(self._families)
            out["workload"] = report(self._work, fam)
        return out

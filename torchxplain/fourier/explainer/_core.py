"""The value path every Fourier explainer shares: validate once, encode, closed form, back to the inputs.

:class:`FourierExplainerCore` holds the validated state (spectrum as a surrogate module, encoder, background rows and
their encoding, default players) and computes Shapley and Banzhaf values and interaction indices through a
:class:`~torchxplain.fourier.values._plan.ValuePlan` cached per players (or a provider's plan) — or, for per-row
``baselines``, the paired kernel (:mod:`~torchxplain.fourier.values._paired`; rule in ``_references``).
:class:`~torchxplain.FourierShap` adds the constructors (black box, spectrum, trees) and persistence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, cast

import torch
from captum.log import log_usage
from torch import Tensor

from torchxplain._core import ExplainerBase, check_flag, check_int, chunk_bounds, settings
from torchxplain._core.inputs import (
    check_feature_names,
    data_dtype,
    flatten_inputs,
    player_ids,
    to_tensor,
    unflatten_values,
)
from torchxplain.fourier.encoding import BinaryEncoder, InputEncoder
from torchxplain.fourier.explainer._bridges import to_shapiq_values
from torchxplain.fourier.explainer._domain import warn_outside_domain
from torchxplain.fourier.explainer._forward_args import check_forward_args, model_output, same_snapshot, snapshot
from torchxplain.fourier.explainer._plan_cache import PlanCache
from torchxplain.fourier.explainer._player_values import PlayerValues
from torchxplain.fourier.explainer._player_values import player_names as player_names_of
from torchxplain.fourier.explainer._references import Reference, reference
from torchxplain.fourier.explainer._result import FourierExplanation, joined_reasons
from torchxplain.fourier.fit import model_placement
from torchxplain.fourier.sources import Built, Plan, Provider
from torchxplain.fourier.spectrum import FourierSpectrum, SparseFourierSurrogate
from torchxplain.fourier.values import (
    Index,
    Kernel,
    PlayerMap,
    ValuePlan,
    check_index,
    check_kernel,
    check_result_memory,
    paired_indices,
    player_map,
)


@dataclass(frozen=True)
class Computed:
    """One call's values and what produced them.

    Attributes:
        values: per selected output, ``(Q, m_active)`` values, ``(Q, m_active, m_active)`` interactions or an
            ``interaction_values`` dict.
        players, shapes: the call's players and the inputs' shapes.
        x, bits: ``(Q, n_features)`` the rows explained, and their encoding.
        reference: what they were explained against.
        columns, pick: the selected outputs and, for a per-row target, each row's pick among them.
        stderr: per selected output, ``(Q, m_active)`` standard errors of estimated first-order values, or
            ``None`` where they are exact.
    """

    values: list[Any]
    players: PlayerMap
    shapes: list[torch.Size]
    x: Tensor
    bits: Tensor
    reference: Reference
    columns: list[int]
    pick: Tensor | None
    stderr: list[Tensor | None]


def _concat(parts: list[Any]) -> Any:
    """Blocks of rows (tensors, or dicts of tensors by order) -> one."""
    if len(parts) == 1:
        return parts[0]
    if isinstance(parts[0], dict):
        return {order: torch.cat([p[order] for p in parts]) for order in parts[0]}
    return torch.cat(parts)


class FourierExplainerCore(ExplainerBase):
    """State and value path of a Fourier explainer (build one with :class:`~torchxplain.FourierShap`)."""

    background: Tensor
    background_bits: Tensor
    provider: Provider | None = None  # values without a spectrum (e.g. enumeration through the model)
    show_progress: bool | None = None  # the constructor's progress bars, for the model's queries at value time too
    groups: Tensor | None
    encoder: InputEncoder
    additional_forward_args: tuple[Any, ...] | None
    _plans: PlanCache

    @classmethod
    def _assemble(cls, built: Built, **options: Any) -> Any:
        """An explainer of what a source built (no model of the user's to hold): :meth:`_setup` on a new instance."""
        explainer = cls.__new__(cls)
        ExplainerBase.__init__(explainer, None)
        explainer._setup(built, **options)
        return explainer

    def _setup(
        self,
        built: Built,
        *,
        relaxed: bool,
        max_memory: int | str | None,
        differentiable: bool,
        kernel: Kernel,
    ) -> None:
        """Hold what a source built (validated: encoder, background rows and codes, default players, one spectrum
        per output or a provider of values); every constructor ends here."""
        provider, encoder, raw = built.provider, built.encoder, built.background
        spectra = built.spectra or [
            FourierSpectrum.trusted(
                torch.zeros(0, encoder.n_binary, dtype=torch.bool), torch.zeros(0, dtype=torch.float64)
            )
        ]
        if provider is None and (
            len(spectra) != len(built.outputs) or any(s.n_features != encoder.n_binary for s in spectra)
        ):
            raise ValueError(
                f"{len(spectra)} spectra on {sorted({s.n_features for s in spectra})} features for "
                f"{len(built.outputs)} outputs of inputs that encode to {encoder.n_binary} features"
            )
        if provider is not None and relaxed and (refusal := provider.refusal("relaxed")):
            raise ValueError(refusal)
        if max_memory is not None:
            settings.max_memory(max_memory)  # validate the budget now, not at the first call
        check_kernel(kernel)  # a kernel name is refused now, not at the first call
        dtype = data_dtype(raw, spectra[0].dtype)
        known = built.families[0] if built.families is not None and len(spectra) == 1 else None
        self.surrogate = SparseFourierSurrogate.from_outputs(
            [s.to(device=raw.device, dtype=dtype) for s in spectra], support=None if known is None else known.features
        )
        self.encoder = encoder.to(raw.device)
        self.register_buffer("background", raw.to(dtype))
        codes = torch.bool if encoder.binary_codes else dtype  # a RawEncoder's "codes" are the raw rows
        self.register_buffer("background_bits", built.codes.to(device=raw.device, dtype=codes))
        self.register_buffer("groups", built.groups)
        self.outputs = built.outputs
        self.relaxed = relaxed
        self.max_memory = max_memory
        self.differentiable = differentiable
        self.kernel: Kernel = kernel
        self.feature_names = built.names
        self.pruning = built.pruning
        self.fit_report = built.report
        self.__dict__["provider"] = provider  # plain attribute: a model it queries is never registered
        self.__dict__.setdefault("additional_forward_args", None)
        self.__dict__["_plans"] = PlanCache()
        self.__dict__["_last"] = None
        # the plans of a single output read its recorded families (several outputs share reordered frequencies)
        self.__dict__["_families"] = known
        if self.forward_func is None:
            owned = self.surrogate if isinstance(encoder, BinaryEncoder) and provider is None else self.predict
            self.__dict__["forward_func"] = owned
            self.owns_forward_func = True

    def _refuse(self, what: str) -> None:
        """Raise the provider's refusal of ``what`` (values without a spectrum cannot serve everything)."""
        refusal = None if self.provider is None else self.provider.refusal(what)
        if refusal:
            raise ValueError(refusal)

    # --- what it explains --------------------------------------------------------------------------------
    @property
    def spectrum(self) -> FourierSpectrum:
        """The explained spectrum, on the encoder's binary features (:meth:`output_spectrum` gives each output's)."""
        self._refuse("spectrum")
        if hasattr(self.provider, "output_spectrum") and len(self.outputs) == 1:  # made on demand: priced, or refused
            return self.output_spectrum(0)
        return self.surrogate.spectrum

    def output_spectrum(self, output: int) -> FourierSpectrum:
        """The spectrum of the ``output``-th explained output (see ``outputs``)."""
        on_demand = getattr(self.provider, "output_spectrum", None)  # a tree's leaves: extracted, priced, or refused
        return on_demand(output) if on_demand is not None else self.surrogate.output_spectrum(output)

    @property
    def target(self) -> int | None:
        """The explained output index of a single-output explainer (``None``: the model's only output)."""
        if len(self.outputs) != 1:
            raise AttributeError(f"this explainer explains {len(self.outputs)} outputs: see .outputs.targets")
        return self.outputs.targets[0]

    @property
    def n_features(self) -> int:
        """The number of input features (raw columns), e.g. a tree model's original features or the binary inputs."""
        return self.encoder.n_inputs

    @property
    def dtype(self) -> torch.dtype:
        """The dtype the closed forms compute in."""
        return self.surrogate.amplitudes.dtype

    def predict(self, inputs: Any) -> Tensor:
        """The explained function on raw inputs ``(B, n_features)`` -> ``(B,)``, or ``(B, C)`` for ``C`` outputs
        (the model itself for an exact spectrum). No autograd graph unless the explainer is ``differentiable``."""
        x, _ = self._inputs((self._convert(inputs),))
        warn_outside_domain(self, x)
        bits = self.encoder.encode(x, self.dtype)
        if self.provider is not None:
            return self._provided(bits)
        with torch.set_grad_enabled(self.differentiable and torch.is_grad_enabled()):  # no chunk keeps a graph
            return self.surrogate.evaluate_checked(bits)

    # --- values ------------------------------------------------------------------------------------------
    def has_convergence_delta(self) -> bool:
        """``attribute(..., return_convergence_delta=True)`` returns the efficiency gap (Captum's protocol)."""
        return True

    def explain(
        self,
        inputs: Any,
        baselines: Any = None,
        target: Any = None,
        feature_mask: Any = None,
        *,
        background: Any = None,
        internal_batch_size: int | None = None,
        player_names: Any = None,
        kind: str = "shapley",
    ) -> FourierExplanation:
        """The interventional values of ``inputs`` as one :class:`~torchxplain.fourier.FourierExplanation`: values
        per player, base values, players and names, and standard errors where the values are estimated. Its views
        (Captum's tensor, per-player values, ``to_shap``, ``to_shapiq``, ``to_frame``) compute nothing again, and
        the explainer's own ``attribute``, ``banzhaf``, ``player_values`` and ``to_shap`` are those views: called on
        the same rows and arguments one after another, they reuse this result.

        Args:
            inputs: ``(N, n)`` rows (or a Captum tuple of ``(N, ...)`` tensors); tensors, arrays, lists, DataFrames.
            baselines: Captum's: one reference per input row — a scalar, a ``(1, n)`` row shared by all inputs,
                or an ``(N, n)`` tensor whose row ``i`` is input ``i``'s reference (a tuple of those for tuple
                inputs). Any other number of rows is refused: pass a set of rows as ``background=``.
            target: an output index, or one per row (a list or ``(N,)`` tensor) for an explainer of several outputs.
            feature_mask: Captum's integer player ids, broadcastable to each input (overrides ``groups``).
            background: ``(B, n)`` rows every input is explained against (default: the explainer's background).
            internal_batch_size: at most this many input rows per pass of the closed forms (Captum's chunking).
            player_names: the ``m`` players' names, ordered by id (default: a one-column player's column name, a
                block's common column prefix such as ``site3`` for ``site3_A``, ``site3_C``; else ``"player <id>"``).
            kind: ``"shapley"`` or ``"banzhaf"``.
        """
        inputs_t, is_tuple = self._as_tuple(inputs)
        return self._explain(
            inputs_t, is_tuple, baselines, target, feature_mask, background, internal_batch_size, player_names, kind
        )

    def _explain(
        self,
        inputs_t: tuple[Tensor, ...],
        is_tuple: bool,
        baselines: Any,
        target: Any,
        feature_mask: Any,
        background: Any,
        internal_batch_size: Any,
        player_names: Any,
        kind: str,
    ) -> FourierExplanation:
        """:meth:`explain` on inputs already converted to tensors."""
        if kind not in ("shapley", "banzhaf"):
            raise ValueError(f"kind must be 'shapley' or 'banzhaf', got {kind!r:.40}")
        amplitudes = self.surrogate.amplitudes
        arguments = (inputs_t, baselines, target, feature_mask, background, internal_batch_size, player_names, kind)
        key = snapshot(arguments) + (amplitudes.data_ptr(), amplitudes._version)
        last = self.__dict__.get("_last")
        if last is not None and not self.differentiable and same_snapshot(last[0], key):
            cached = cast(FourierExplanation, last[1])  # the same call: only Captum's tuple-ness may differ
            return cached if cached._is_tuple == is_tuple else replace(cached, _is_tuple=is_tuple)
        getattr(self.provider, "reasons", []).clear()  # the provider lists this call's parts anew
        result = self._compute(kind, inputs_t, feature_mask, baselines, background, target, internal_batch_size)
        players = result.players
        several = len(result.columns) > 1 and result.pick is None
        stderr = None
        if any(se is not None for se in result.stderr):
            errors = [
                players.expand(se if se is not None else torch.zeros_like(v), 1)
                for se, v in zip(result.stderr, result.values)
            ]
            stderr = self.outputs.combine(errors, result.pick, target)
        explanation = FourierExplanation(
            values=self.outputs.combine([players.expand(v, 1) for v in result.values], result.pick, target),
            base_values=self._base(result, target),
            stderr=stderr,
            player_ids=players.ids,
            player_names=player_names_of(player_names, players.ids, players.of_input, self.feature_names),
            feature_names=None if self.feature_names is None else tuple(self.feature_names),
            data=result.x,
            kind=kind,
            route="spectrum" if self.provider is None else self.provider.route,
            output_names=tuple(self.outputs.names[c] for c in result.columns) if several else None,
            _of_input=players.of_input,
            _attribution=self._shaped_like_inputs(result, inputs_t, target),
            _is_tuple=is_tuple,
            _masked=feature_mask is not None,
            route_reason=self._route_reason(),
        )
        self.__dict__["_last"] = (key, explanation, result)
        return explanation

    @log_usage()
    def attribute(
        self,
        inputs: Any,
        baselines: Any = None,
        target: Any = None,
        additional_forward_args: Any = None,
        feature_mask: Any = None,
        show_progress: bool | None = None,
        *,
        background: Any = None,
        internal_batch_size: int | None = None,
        return_convergence_delta: bool = False,
    ) -> Any:
        """Interventional SHAP values, shaped like ``inputs`` (each feature gets its player's value): the Captum
        view of :meth:`explain`.

        Args:
            inputs, baselines, target, feature_mask, background, internal_batch_size: as :meth:`explain`.
            additional_forward_args: a black box's extra model arguments; the explainer was built with those given
                to the constructor, so only the same ones (or ``None``) are accepted here.
            show_progress: unused (kept for Captum's signature).
            return_convergence_delta: also return the efficiency gap ``Σ_players φ − (f(x) − E f(b))`` per row,
                ``(N,)`` (``(N, C)`` for several outputs), with ``f`` the user's model for a black box (so the gap
                shows the fit's error at those rows) and the explained spectrum otherwise (rounding-level).

        Returns:
            Attributions like ``inputs`` (a last axis ``C`` for several outputs and ``target=None``); with
            ``return_convergence_delta``, ``(attributions, delta)``.
        """
        check_flag(return_convergence_delta, "return_convergence_delta")
        is_tuple = isinstance(inputs, tuple)
        out = super().attribute(
            inputs if is_tuple else (inputs,),
            baselines,
            target,
            additional_forward_args,
            feature_mask,
            show_progress,
            background=background,
            internal_batch_size=internal_batch_size,
            return_convergence_delta=return_convergence_delta,
        )
        values = out[:-1] if return_convergence_delta else out
        values = values if is_tuple else values[0]
        return (values, out[-1]) if return_convergence_delta else values

    def _attribute(
        self,
        inputs: tuple[Tensor, ...],
        *,
        baselines: Any,
        target: Any,
        additional_forward_args: Any,
        feature_mask: tuple[Tensor, ...] | None,
        show_progress: bool | None,
        background: Any = None,
        internal_batch_size: Any = None,
        return_convergence_delta: bool = False,
        **kwargs: Any,
    ) -> tuple[Tensor, ...]:
        if kwargs:
            raise TypeError(f"FourierShap.attribute got unexpected arguments {sorted(kwargs)}")
        check_forward_args(additional_forward_args, self.additional_forward_args)
        explanation = self._explain(
            inputs, True, baselines, target, feature_mask, background, internal_batch_size, None, "shapley"
        )
        values = explanation._attribution
        if not return_convergence_delta:
            return values
        return (*values, self._convergence_delta(self.__dict__["_last"][2], target))

    def banzhaf(
        self,
        inputs: Any,
        feature_mask: Any = None,
        baselines: Any = None,
        target: Any = None,
        *,
        background: Any = None,
        internal_batch_size: int | None = None,
    ) -> Tensor | tuple[Tensor, ...]:
        """Interventional Banzhaf values, shaped like ``inputs`` (each feature gets its player's value); arguments
        as :meth:`attribute` (the Captum view of ``explain(..., kind="banzhaf")``)."""
        explanation = self.explain(
            inputs,
            baselines,
            target,
            feature_mask,
            background=background,
            internal_batch_size=internal_batch_size,
            kind="banzhaf",
        )
        return explanation.attribution()

    def interactions(
        self,
        inputs: Any,
        feature_mask: Any = None,
        baselines: Any = None,
        target: Any = None,
        *,
        background: Any = None,
        internal_batch_size: int | None = None,
    ) -> Tensor:
        """Pairwise Shapley interaction index between players; arguments as :meth:`attribute`.

        Returns:
            ``(Q, m, m)`` with ``m`` the number of players: the input features (``n_features``), or the distinct
            ids of ``feature_mask``/``groups`` in increasing order; zero on the diagonal and for players no
            frequency touches. A last axis of size ``C`` for several outputs (``target=None``).
        """
        inputs_t = self._as_tuple(inputs)[0]
        result = self._compute(
            "interactions", inputs_t, feature_mask, baselines, background, target, internal_batch_size
        )
        return self.outputs.combine([result.players.expand(v, order=2) for v in result.values], result.pick, target)

    def interaction_values(
        self,
        inputs: Any,
        index: Index = "k-SII",
        max_order: int | None = None,
        feature_mask: Any = None,
        baselines: Any = None,
        target: Any = None,
        *,
        background: Any = None,
        internal_batch_size: int | None = None,
    ) -> dict[int, Tensor]:
        """shapiq's interaction indices in closed form (see :func:`torchxplain.fourier.interaction_values`);
        ``baselines``/``background`` as :meth:`attribute`.

        Returns:
            ``{0: (Q,), 1: (Q, m), 2: (Q, m, m), ...}`` up to ``max_order`` over the ``m`` players (as in
            :meth:`interactions`); players no frequency touches get zeros; a last axis ``C`` for several outputs.
        """
        result = self._compute(
            "interaction_values",
            self._as_tuple(inputs)[0],
            feature_mask,
            baselines,
            background,
            target,
            internal_batch_size,
            index,
            max_order,
        )
        players, pick = result.players, result.pick
        return {
            order: self.outputs.combine([players.expand(v[order], order) for v in result.values], pick, target)
            for order in result.values[0]
        }

    def player_values(
        self,
        inputs: Any,
        feature_mask: Any = None,
        baselines: Any = None,
        target: Any = None,
        *,
        background: Any = None,
        player_names: Any = None,
        kind: str = "shapley",
        internal_batch_size: int | None = None,
    ) -> PlayerValues:
        """One value per player — a categorical variable's one-hot block, a site — with the players' names: the
        per-player view of :meth:`explain` (arguments as there).

        Returns:
            :class:`~torchxplain.fourier.PlayerValues`: ``values`` ``(Q, m)`` (``(Q, m, C)`` for several outputs),
            ``names``, ``ids`` and ``base_values``; Shapley values plus the base value give the explained output.
        """
        return self.explain(
            inputs,
            baselines,
            target,
            feature_mask,
            background=background,
            internal_batch_size=internal_batch_size,
            player_names=player_names,
            kind=kind,
        ).player_values()

    def expected_value(self, background: Any = None) -> Tensor:
        """The explained function's mean over the background rows (or the ``background`` given), SHAP's base
        value: a scalar, or ``(C,)`` for ``C`` outputs."""
        ref = reference(None, background, (self.background,), self.encoder, self.feature_names, self.dtype)
        if ref.bits is None:  # the explainer's own background: the cached plans may know its mean already
            with settings.using(max_memory=self.max_memory, show_progress=self.show_progress):
                means = self._plan_means(self._players(None, []), list(range(len(self.outputs))))
            if means is not None:
                return self.outputs.combine(means, None, None)
        return self._output_at(self.background_bits.to(self.dtype) if ref.bits is None else ref.bits).mean(0)

    def to_shap(
        self,
        inputs: Any,
        feature_mask: Any = None,
        baselines: Any = None,
        player_names: Any = None,
        target: Any = None,
        *,
        background: Any = None,
    ) -> Any:
        """A ``shap.Explanation`` of ``inputs`` ``(Q, n)`` for shap's waterfall, beeswarm and force plots: the shap
        view of :meth:`explain` (see :meth:`~torchxplain.fourier.FourierExplanation.to_shap`).

        Without ``feature_mask`` the columns are the input features (named by the background DataFrame's columns
        when there was one) and ``data`` holds the inputs. With it, one column per player, named as in
        :meth:`player_values` (``player_names`` names them; it needs a ``feature_mask``), and ``data`` holds one
        representative value per player and row, so grouped beeswarms are coloured: a one-feature player's value,
        a one-hot block's level (``j`` when its ``j``-th column is on, ``0`` when none is; NaN when several are);
        with column names, ``display_data`` names the levels (``A`` for ``site3_A``) for shap's waterfall.
        Values plus the base value equal the explained output at each row (efficiency); the base value is per
        row for per-row ``baselines`` or ``target``. Several outputs give shap's ``(Q, n, C)`` layout (``target=c``
        picks one). ``baselines``/``background`` as :meth:`attribute`. Needs ``shap``.
        """
        if player_names is not None and feature_mask is None:
            raise ValueError(
                "player_names name the players of a feature_mask; pass feature_mask= too (without one the columns "
                "are the input features, named by the background DataFrame's columns)"
            )
        explanation = self.explain(
            inputs, baselines, target, feature_mask, background=background, player_names=player_names
        )
        return explanation.to_shap()

    def to_shapiq(
        self,
        inputs: Any,
        index: Index = "k-SII",
        max_order: int | None = None,
        feature_mask: Any = None,
        baselines: Any = None,
        target: Any = None,
        *,
        background: Any = None,
    ) -> list[Any]:
        """One ``shapiq.InteractionValues`` per row of ``inputs``, for shapiq's network and upset plots.

        Arguments as :meth:`interaction_values`; an explainer of several outputs needs an int ``target``. Needs
        ``shapiq``.
        """
        columns, pick = self.outputs.select(target)
        if len(columns) != 1 or pick is not None:
            raise ValueError(f"to_shapiq explains one output; pass target= one of {list(self.outputs.targets)}")
        result = self._compute(
            "interaction_values",
            self._as_tuple(inputs)[0],
            feature_mask,
            baselines,
            background,
            target,
            None,
            index,
            max_order,
        )
        players = result.players
        values = {order: players.expand(v, order) for order, v in result.values[0].items()}
        return to_shapiq_values(values, index, self._base(result, target), max_order=max(values))

    # --- the value template ------------------------------------------------------------------------------
    def _compute(
        self,
        kind: str,
        inputs: tuple[Tensor, ...],
        feature_mask: Any,
        baselines: Any,
        background: Any,
        target: Any,
        internal_batch_size: Any = None,
        index: Index = "k-SII",
        max_order: int | None = None,
    ) -> Computed:
        """Every value's template: validate once, encode, closed form on the active players, per output and chunk."""
        batch = check_int(internal_batch_size, "internal_batch_size", minimum=1, optional=True)
        mask = feature_mask if feature_mask is None or isinstance(feature_mask, tuple) else (feature_mask,)
        with settings.using(max_memory=self.max_memory, show_progress=self.show_progress):
            x, shapes = self._inputs(inputs)
            columns, pick = self.outputs.select(target)
            if pick is not None and pick.shape[0] != x.shape[0]:
                raise ValueError(
                    f"target has {pick.shape[0]} entries for {x.shape[0]} input rows; pass one target per row, or "
                    "one int for every row"
                )
            players = self._players(mask, shapes)
            background, baselines = self._frame(background, "background"), self._frame(baselines, "baselines")
            ref = reference(baselines, background, inputs, self.encoder, self.feature_names, self.dtype)
            warn_outside_domain(self, x, ref.raw)  # rows the fit never saw: a FitQualityWarning with the effect
            if ref.paired:
                self._refuse("paired")
            bits = self.encoder.encode(x, self.dtype)
            relaxed = self.relaxed and not bool(((bits == 0) | (bits == 1)).all())
            if relaxed and (kind != "shapley" or players.binary_groups is not None or ref.paired):
                raise ValueError(
                    "relaxed=True extends the Shapley values of singleton players to real-valued inputs against a "
                    f"background set or one baseline row; {kind.replace('_', ' ')}, grouped players and per-row "
                    "baselines need binary inputs"
                )
            order = 1
            if kind == "interaction_values":
                self._refuse("interaction_values")
                order = check_index(index, max_order, players.m)
                check_result_memory(players.m, order, self.dtype)
            bounds = chunk_bounds(x.shape[0], batch) if batch and x.shape[0] else [(0, x.shape[0])]
            values, stderr = [], []
            for column in columns:
                parts = [
                    self._values(kind, bits[a:b], ref.rows(a, b), players, column, relaxed, index, order)
                    for a, b in bounds
                ]
                estimated = [part for part in parts if isinstance(part, tuple)]
                values.append(_concat([part[0] if isinstance(part, tuple) else part for part in parts]))
                stderr.append(_concat([part[1] for part in estimated]) if estimated else None)
            return Computed(values, players, shapes, x, bits, ref, columns, pick, stderr)

    def _values(
        self,
        kind: str,
        bits: Tensor,
        ref: Reference,
        players: PlayerMap,
        column: int,
        relaxed: bool,
        index: Index,
        order: int,
    ) -> Any:
        """One output's values of a block of rows: the cached plan of a background set, or the paired kernel."""
        # dummies add nothing: above the active players' count every index is 0 (expanded below)
        kernel_order = min(order, players.m_active)
        if ref.paired and (paired := getattr(self.provider, "paired", None)) is not None:  # the provider's own
            return paired(kind, bits, ref.bits, players.binary_groups, players.m_active, column)
        if ref.paired:
            assert ref.bits is not None
            name, top = {"shapley": ("SV", 1), "banzhaf": ("BV", 1), "interactions": ("SII", 2)}.get(
                kind, (index, kernel_order)
            )
            spectrum = self._column_spectrum(column)
            result = paired_indices(bits, ref.bits, spectrum, players.binary_groups, players.m_active, name, top)
            if kind != "interaction_values":
                return result[top]
        else:
            plan = self._plan(players, ref.bits, column)
            estimate = getattr(plan, "estimate", None)  # a provider whose values carry standard errors
            if estimate is not None and kind in ("shapley", "banzhaf"):
                return estimate(bits, kind)
            if kind == "shapley":
                return plan.shapley(bits, relaxed=relaxed)
            if kind == "banzhaf":
                return plan.banzhaf(bits)
            if kind == "interactions":
                return plan.interactions(bits)
            result = cast(ValuePlan, plan).interaction_values(bits, index, kernel_order)  # refused above if absent
        for t in range(kernel_order + 1, order + 1):
            result[t] = bits.new_zeros((bits.shape[0],) + (players.m_active,) * t)
        return result

    def _shaped_like_inputs(self, result: Computed, inputs: tuple[Tensor, ...], target: Any) -> tuple[Tensor, ...]:
        """First-order values shaped like the inputs (each feature its player's value; a last axis ``C``: outputs)."""
        per_input = [unflatten_values(result.players.to_inputs(v), inputs, result.shapes) for v in result.values]
        return tuple(self.outputs.combine([p[i] for p in per_input], result.pick, target) for i in range(len(inputs)))

    # --- what the values sum to --------------------------------------------------------------------------
    def _provided(self, bits: Tensor) -> Tensor:
        """The explained function at encoded rows, from the provider (e.g. the model itself)."""
        assert self.provider is not None
        return self.provider.evaluate(bits).to(self.dtype)

    @torch.no_grad()  # a large evaluation's chunks would each keep a graph for a backward never taken
    def _output_at(self, bits: Tensor, model: bool = False, raw: Tensor | None = None) -> Tensor:
        """The explained function at encoded rows, ``(R,)`` or ``(R, C)``: the spectrum; with ``model`` a black box's
        model (queried as its fit was: at ``raw`` rows for a non-binary encoder); ``method="enumerate"``: the model."""
        if self.provider is not None:
            return self._provided(bits)
        if model and self.fit_report is not None and not self.owns_forward_func:
            model_func = cast(Callable[..., Tensor], self.forward_func)
            device, dtype = model_placement(model_func, self.background.device, None, self.background)
            target = self.outputs.targets[0]
            at = bits if isinstance(self.encoder, BinaryEncoder) or raw is None else raw
            out = model_output(model_func, at, self.additional_forward_args, target, device, dtype, None)
            return out.to(self.dtype)
        return self.surrogate.evaluate_checked(bits)

    def _route_reason(self) -> str | None:
        """How and why the call's values took their form (the provider's ``reasons``, joined), for the explanation."""
        return joined_reasons(getattr(self.provider, "reasons", []))

    def _base(self, result: Computed, target: Any, model: bool = False) -> Tensor:
        """The reference's output, as the values' base: ``()``/``(C,)`` for a background set, per row ``(Q,)`` /
        ``(Q, C)`` for per-row baselines or targets."""
        ref = result.reference
        per = self._plan_means(result.players, result.columns, model) if ref.bits is None else None
        if per is None:  # the plans do not know the mean: the outputs evaluated
            raw = self.background if ref.bits is None else ref.raw
            out = self._output_at(self.background_bits.to(self.dtype) if ref.bits is None else ref.bits, model, raw)
            out = out if ref.paired else out.mean(0)
            per = [out if out.ndim == int(ref.paired) else out[..., c] for c in result.columns]
        if result.pick is not None or ref.paired:
            per = [p.expand(result.x.shape[0]) for p in per]
        return self.outputs.combine(per, result.pick, target)

    def _plan_means(self, players: PlayerMap, columns: list[int], model: bool = False) -> list[Tensor] | None:
        """The background's mean output of each of ``columns`` from their cached plans (a spectrum's Walsh moments,
        a tree provider's leaf counts), or ``None`` where a plan does not know it: a differentiable explainer (the
        mean must carry the graph), a provider that keeps no plans, or a black box's own ``model``."""
        own = self.provider is None and not self.differentiable and not (model and self.fit_report is not None)
        if not (own or getattr(self.provider, "reuses_plans", False)):
            return None
        means = [getattr(self._plan(players, None, c), "mean_output", lambda: None)() for c in columns]
        known = [m.detach().to(self.dtype) for m in means if m is not None]  # numbers: no graph is wanted here
        return known if len(known) == len(columns) else None

    def _convergence_delta(self, result: Computed, target: Any) -> Tensor:
        """``Σ_players φ − (f(x) − E f(b))`` per row (``f``: see :meth:`attribute`)."""
        total = self.outputs.combine([v.sum(1) for v in result.values], result.pick, target)
        out = self._output_at(result.bits, model=True, raw=result.x)
        at_x = self.outputs.combine([out if out.ndim == 1 else out[:, c] for c in result.columns], result.pick, target)
        return (total - (at_x - self._base(result, target, model=True))).detach()

    # --- the boundary: inputs, players, background -------------------------------------------------------
    def _as_tuple(self, inputs: Any) -> tuple[tuple[Tensor, ...], bool]:
        if isinstance(inputs, tuple):
            return tuple(self._convert(x) for x in inputs), True
        return (self._convert(inputs),), False

    def _inputs(self, inputs: tuple[Tensor, ...]) -> tuple[Tensor, list[torch.Size]]:
        x, shapes = flatten_inputs(inputs, self.n_features, self.background.device)
        self.encoder.check(x, "inputs", relaxed=self.relaxed)
        return x, shapes

    def _players(self, feature_mask: tuple[Tensor, ...] | None, shapes: list[torch.Size]) -> PlayerMap:
        if feature_mask is None:
            ids = self.groups
        else:
            ids = player_ids(feature_mask, self.n_features, "feature_mask", self.background.device, shapes)
        return player_map(self.encoder.owner, self.n_features, ids)

    def _column_spectrum(self, column: int) -> FourierSpectrum:
        """The spectrum of output ``column`` (with the amplitudes' graph when the explainer is differentiable)."""
        amplitudes: Tensor = self.surrogate.amplitudes
        if not self.differentiable:
            amplitudes = amplitudes.detach()
        if amplitudes.ndim == 1:
            return FourierSpectrum.trusted(self.surrogate.frequencies, amplitudes)
        keep = amplitudes[:, column] != 0
        return FourierSpectrum.trusted(self.surrogate.frequencies[keep], amplitudes[keep, column])

    def _plan(self, players: PlayerMap, baselines_bits: Tensor | None, column: int) -> ValuePlan | Plan:
        """The closed forms of output ``column`` against the background (cached) or explicit rows (per call); a
        provider's plan (e.g. enumeration through the model) instead when the explainer holds no spectrum."""
        bits = self.background_bits if baselines_bits is None else baselines_bits
        if self.provider is not None:
            provided = partial(self.provider.plan, bits, players.binary_groups, players.m_active, column)
            if baselines_bits is not None or not getattr(self.provider, "reuses_plans", False):
                return provided()
            return self._plans.get((bits.data_ptr(), self.dtype), (players.key, column), provided)
        spectrum = self._column_spectrum(column)
        families = self.__dict__.get("_families") if self.surrogate.amplitudes.ndim == 1 else None

        def build() -> ValuePlan:
            return ValuePlan(
                spectrum, bits.to(self.dtype), players.binary_groups, players.m_active, self.kernel, families
            )

        if self.differentiable or baselines_bits is not None:  # a graph or a one-off background: per call
            return build()
        raw = self.surrogate.amplitudes
        state = (raw.data_ptr(), raw._version, bits.data_ptr(), self.dtype)
        return self._plans.get(state, (players.key, self.kernel, column), build)

    def _frame(self, x: Any, name: str) -> Any:
        """``x`` as the provider recodes a DataFrame's columns (a tree's ``category`` columns as its category ids)."""
        encode = getattr(self.provider, "encode_frame", None)
        return x if x is None or encode is None else encode(x, name)

    def _convert(self, x: Any) -> Tensor:
        converted = to_tensor(self._frame(x, "inputs"), "inputs", device=self.background.device)
        check_feature_names(self.feature_names, converted.feature_names, "inputs")
        return converted.tensor

    def _apply(self, fn: Any, recurse: bool = True) -> Any:
        if "_plans" in self.__dict__:
            self._plans.clear()  # a moved or cast explainer rebuilds its plans
        return super()._apply(fn, recurse)

    def extra_repr(self) -> str:
        return (
            f"n_features={self.n_features}, encoder={self.encoder.kind}, k={len(self.surrogate.frequencies)}, "
            f"background={tuple(self.background.shape)}, kernel={self.kernel!r}"
        )

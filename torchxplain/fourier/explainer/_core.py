"""The value path every Fourier explainer shares: validate once, encode, closed form, back to the inputs.

:class:`FourierExplainerCore` holds the validated state (spectrum as a surrogate module, encoder, background rows and
their encoding, default players) and computes Shapley and Banzhaf values and pairwise interactions through a
:class:`~torchxplain.fourier.values._plan.ValuePlan` cached per players. :class:`~torchxplain.FourierShap`
adds the constructors (black box, spectrum, trees) and persistence.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from torchxplain._core import ExplainerBase, settings
from torchxplain._core.inputs import (
    FeatureNames,
    check_feature_names,
    data_dtype,
    flatten_inputs,
    player_ids,
    rows,
    to_tensor,
    unflatten_values,
)
from torchxplain.fourier.encoding._encoders import BinaryEncoder, InputEncoder
from torchxplain.fourier.explainer._bridges import to_shap_explanation, to_shapiq_values
from torchxplain.fourier.explainer._outputs import Outputs
from torchxplain.fourier.explainer._plan_cache import PlanCache
from torchxplain.fourier.spectrum._spectrum import FourierSpectrum
from torchxplain.fourier.spectrum._surrogate import SparseFourierSurrogate
from torchxplain.fourier.trees._pruning import PruningReport
from torchxplain.fourier.values._plan import Kernel, ValuePlan
from torchxplain.fourier.values._players import PlayerMap, player_map
from torchxplain.fourier.values.interactions._api import check_index
from torchxplain.fourier.values.interactions._kernel import _interaction_values
from torchxplain.fourier.values.interactions._weights import Index

SpectrumOrList = FourierSpectrum | list[FourierSpectrum]


class FourierExplainerCore(ExplainerBase):
    """State and value path of a Fourier explainer (build one with :class:`~torchxplain.FourierShap`)."""

    background: Tensor
    background_bits: Tensor
    groups: Tensor | None
    encoder: InputEncoder
    _plans: PlanCache

    @classmethod
    def _assemble(
        cls, spectra: SpectrumOrList, encoder: InputEncoder, raw: Tensor, bits: Tensor, **options: Any
    ) -> Any:
        """An explainer of given spectra and encoder (no fit): :meth:`_setup` on a new instance."""
        explainer = cls.__new__(cls)
        ExplainerBase.__init__(explainer, None)
        explainer._setup(spectra, encoder, raw, bits, **options)
        return explainer

    def _setup(
        self,
        spectra: SpectrumOrList,
        encoder: InputEncoder,
        raw: Tensor,
        bits: Tensor,
        *,
        names: FeatureNames | None,
        outputs: Outputs,
        groups: Any,
        groups_name: str = "groups",
        relaxed: bool,
        max_memory: int | str | None,
        differentiable: bool,
        kernel: Kernel,
        pruning: PruningReport | tuple[PruningReport, ...] | None = None,
        fit_report: Any = None,
    ) -> None:
        """Hold the validated state (``raw``: background rows, ``bits``: their encoding; one spectrum per output);
        all constructors end here."""
        spectra = [spectra] if isinstance(spectra, FourierSpectrum) else list(spectra)
        if len(spectra) != len(outputs) or any(s.n_features != encoder.n_binary for s in spectra):
            raise ValueError(
                f"{len(spectra)} spectra on {sorted({s.n_features for s in spectra})} features for {len(outputs)} "
                f"outputs of inputs that encode to {encoder.n_binary} features"
            )
        if max_memory is not None:
            settings.max_memory(max_memory)  # validate the budget now, not at the first call
        dtype = data_dtype(raw, spectra[0].dtype)
        self.surrogate = SparseFourierSurrogate.from_outputs([s.to(device=raw.device, dtype=dtype) for s in spectra])
        self.encoder = encoder.to(raw.device)
        self.register_buffer("background", raw.to(dtype))
        self.register_buffer("background_bits", bits.to(device=raw.device, dtype=torch.bool))
        self.register_buffer("groups", player_ids(groups, encoder.n_inputs, groups_name, raw.device))
        self.outputs = outputs
        self.relaxed = relaxed
        self.max_memory = max_memory
        self.differentiable = differentiable
        self.kernel: Kernel = kernel
        self.feature_names = names
        self.pruning = pruning
        self.fit_report = fit_report
        self.__dict__["_plans"] = PlanCache()
        if self.forward_func is None:
            owned = self.surrogate if isinstance(encoder, BinaryEncoder) else self.predict
            self.__dict__["forward_func"] = owned
            self.owns_forward_func = True

    # --- what it explains --------------------------------------------------------------------------------
    @property
    def spectrum(self) -> FourierSpectrum:
        """The explained spectrum (on the encoder's binary features); one per output: :meth:`output_spectrum`."""
        return self.surrogate.spectrum

    def output_spectrum(self, output: int) -> FourierSpectrum:
        """The spectrum of the ``output``-th explained output (see ``outputs``)."""
        return self.surrogate.output_spectrum(output)

    @property
    def target(self) -> int | None:
        """The explained output index of a single-output explainer (``None``: the model's only output)."""
        if len(self.outputs) != 1:
            raise AttributeError(f"this explainer explains {len(self.outputs)} outputs: see .outputs.targets")
        return self.outputs.targets[0]

    @property
    def n_features(self) -> int:
        """Number of input features (raw columns: original features of a tree model, or binary inputs)."""
        return self.encoder.n_inputs

    @property
    def dtype(self) -> torch.dtype:
        """The dtype the closed forms compute in."""
        return self.surrogate.amplitudes.dtype

    def predict(self, inputs: Any) -> Tensor:
        """The explained function on raw inputs ``(B, n_features)`` -> ``(B,)``, or ``(B, C)`` for ``C`` outputs
        (the model itself for an exact spectrum). No autograd graph unless the explainer is ``differentiable``."""
        x, _ = self._inputs((self._convert(inputs),))
        out = self.surrogate.evaluate_checked(self.encoder.encode(x, self.dtype))
        return out if self.differentiable else out.detach()

    # --- values ------------------------------------------------------------------------------------------
    def _attribute(
        self,
        inputs: tuple[Tensor, ...],
        *,
        baselines: Any,
        target: Any,
        additional_forward_args: Any,
        feature_mask: tuple[Tensor, ...] | None,
        show_progress: bool | None,
        **kwargs: Any,
    ) -> tuple[Tensor, ...]:
        if kwargs:
            raise TypeError(f"FourierShap.attribute got unexpected arguments {sorted(kwargs)}")
        if additional_forward_args is not None:
            raise ValueError("FourierShap explains its spectrum; additional_forward_args are not used")
        return self._first_order("shapley", inputs, feature_mask, baselines, target)

    def banzhaf(
        self, inputs: Any, feature_mask: Any = None, baselines: Any = None, target: Any = None
    ) -> Tensor | tuple[Tensor, ...]:
        """Interventional Banzhaf values, shaped like ``inputs`` (each feature gets its player's value)."""
        inputs_t, is_tuple = self._as_tuple(inputs)
        out = self._first_order("banzhaf", inputs_t, feature_mask, baselines, target)
        return out if is_tuple else out[0]

    def interactions(self, inputs: Any, feature_mask: Any = None, baselines: Any = None, target: Any = None) -> Tensor:
        """Pairwise Shapley interaction index between players.

        Returns:
            ``(Q, m, m)`` with ``m`` the number of players: the input features (``n_features``), or the distinct
            ids of ``feature_mask``/``groups`` in increasing order; zero on the diagonal and for players no
            frequency touches. A last axis of size ``C`` for several outputs (``target=None``).
        """
        inputs_t = self._as_tuple(inputs)[0]
        columns, pick = self.outputs.select(target)
        values, players, _ = self._player_values("interactions", inputs_t, feature_mask, baselines, columns)
        return self.outputs.combine([players.expand(v, order=2) for v in values], pick, target)

    def interaction_values(
        self,
        inputs: Any,
        index: Index = "k-SII",
        max_order: int | None = None,
        feature_mask: Any = None,
        baselines: Any = None,
        target: Any = None,
    ) -> dict[int, Tensor]:
        """shapiq's interaction indices in closed form (see :func:`torchxplain.fourier.interaction_values`).

        Returns:
            ``{0: (Q,), 1: (Q, m), 2: (Q, m, m), ...}`` up to ``max_order`` over the ``m`` players (as in
            :meth:`interactions`); players no frequency touches get zeros; a last axis ``C`` for several outputs.
        """
        columns, pick = self.outputs.select(target)
        values, players, _ = self._player_values(
            "interaction_values", self._as_tuple(inputs)[0], feature_mask, baselines, columns, index, max_order
        )
        return {
            order: self.outputs.combine([players.expand(v[order], order) for v in values], pick, target)
            for order in values[0]
        }

    def expected_value(self, baselines: Any = None) -> Tensor:
        """The explained function's mean over the background rows (or ``baselines``), SHAP's base value: a scalar,
        or ``(C,)`` for ``C`` outputs."""
        bits = self._background_bits(baselines)
        bits = self.background_bits.to(self.dtype) if bits is None else bits
        return self.surrogate.evaluate_checked(bits).detach().mean(0)

    def to_shap(
        self, inputs: Any, feature_mask: Any = None, baselines: Any = None, player_names: Any = None, target: Any = None
    ) -> Any:
        """A ``shap.Explanation`` of ``inputs`` ``(Q, n)`` for shap's waterfall, beeswarm and force plots.

        Without ``feature_mask`` the columns are the input features (named by the background DataFrame's columns
        when there was one); with it, one column per player (``player_names``, default ``"player <id>"``).
        Values plus the base value equal the explained output at each row (efficiency). Several outputs give shap's
        ``(Q, n, C)`` layout (``target=c`` picks one). Needs ``shap``.
        """
        x = self._convert(inputs)
        columns, pick = self.outputs.select(target)
        values, players, _ = self._player_values("shapley", (x,), feature_mask, baselines, columns)
        names: Any
        if feature_mask is None:
            per = [players.to_inputs(v) for v in values]
            names, data = self.feature_names, x
        else:
            per = [players.expand(v, 1) for v in values]
            names, data = player_names or [f"player {int(i)}" for i in players.ids], None
        base = self.expected_value(baselines)
        base = base if base.ndim == 0 else self.outputs.combine(list(base[columns, None]), None, target)[0]
        return to_shap_explanation(
            self.outputs.combine(per, pick, target).detach(),
            base,
            data,
            feature_names=names,
            output_names=None if len(columns) == 1 or pick is not None else [self.outputs.names[c] for c in columns],
        )

    def to_shapiq(
        self,
        inputs: Any,
        index: Index = "k-SII",
        max_order: int | None = None,
        feature_mask: Any = None,
        baselines: Any = None,
        target: Any = None,
    ) -> list[Any]:
        """One ``shapiq.InteractionValues`` per row of ``inputs``, for shapiq's network and upset plots.

        Arguments as :meth:`interaction_values`; an explainer of several outputs needs an int ``target``. Needs
        ``shapiq``.
        """
        columns, pick = self.outputs.select(target)
        if len(columns) != 1 or pick is not None:
            raise ValueError(f"to_shapiq explains one output; pass target= one of {list(self.outputs.targets)}")
        result = self.interaction_values(inputs, index, max_order, feature_mask, baselines, target)
        base = self.expected_value(baselines).reshape(-1)[columns[0]]
        return to_shapiq_values(result, index, base, max_order=max(result))

    def _first_order(
        self, kind: str, inputs: tuple[Tensor, ...], feature_mask: Any, baselines: Any, target: Any
    ) -> tuple[Tensor, ...]:
        """Shapley or Banzhaf values shaped like the inputs (each feature gets its player's value); a last axis
        ``C`` for several outputs."""
        columns, pick = self.outputs.select(target)
        values, players, shapes = self._player_values(kind, inputs, feature_mask, baselines, columns)
        per_input = [unflatten_values(players.to_inputs(v), inputs, shapes) for v in values]
        return tuple(self.outputs.combine([p[i] for p in per_input], pick, target) for i in range(len(inputs)))

    def _player_values(
        self,
        kind: str,
        inputs: tuple[Tensor, ...],
        feature_mask: Any,
        baselines: Any,
        columns: list[int],
        index: Index = "k-SII",
        max_order: int | None = None,
    ) -> tuple[list[Any], PlayerMap, list[torch.Size]]:
        """The template every value takes: validate once, encode, closed form on the active players, per output."""
        mask = feature_mask if feature_mask is None or isinstance(feature_mask, tuple) else (feature_mask,)
        with settings.using(max_memory=self.max_memory):
            x, shapes = self._inputs(inputs)
            players = self._players(mask, shapes)
            background = self._background_bits(baselines)
            bits = self.encoder.encode(x, self.dtype)
            relaxed = self.relaxed and not bool(((bits == 0) | (bits == 1)).all())
            if relaxed and (kind != "shapley" or players.binary_groups is not None):
                raise ValueError(
                    "relaxed=True extends the Shapley values of singleton players to real-valued inputs; "
                    f"{kind.replace('_', ' ')} and grouped players need binary inputs"
                )
            if kind == "interaction_values":
                order = check_index(index, max_order, players.m)
                # dummies add nothing: above the active players' count every index is 0 (expanded below)
                kernel_order = min(order, players.m_active)
            values: list[Any] = []
            for column in columns:
                plan = self._plan(players, background, column)
                if kind == "shapley":
                    values.append(plan.shapley(bits, relaxed=relaxed))
                elif kind == "banzhaf":
                    values.append(plan.banzhaf(bits))
                elif kind == "interactions":
                    values.append(plan.interactions(bits))
                else:
                    result = _interaction_values(bits, plan.term, plan.groups, plan.m, index, kernel_order)
                    for t in range(kernel_order + 1, order + 1):
                        result[t] = bits.new_zeros((bits.shape[0],) + (players.m_active,) * t)
                    values.append(result)
            return values, players, shapes

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

    def _background_bits(self, baselines: Any) -> Tensor | None:
        """Explicit ``baselines`` validated and encoded (``None``: the explainer's own, cached background)."""
        if baselines is None:
            return None
        converted = rows(baselines, "baselines", n_features=self.n_features, device=self.background.device)
        check_feature_names(self.feature_names, converted.feature_names, "baselines")
        self.encoder.check(converted.tensor, "baselines")
        return self.encoder.encode(converted.tensor, self.dtype)

    def _plan(self, players: PlayerMap, baselines_bits: Tensor | None, column: int) -> ValuePlan:
        """The closed forms of output ``column`` against the background (cached) or encoded baselines (per call)."""
        amplitudes: Tensor = self.surrogate.amplitudes
        if not self.differentiable:
            amplitudes = amplitudes.detach()
        if amplitudes.ndim == 1:
            spectrum = FourierSpectrum.trusted(self.surrogate.frequencies, amplitudes)
        else:
            keep = amplitudes[:, column] != 0
            spectrum = FourierSpectrum.trusted(self.surrogate.frequencies[keep], amplitudes[keep, column])
        bits = self.background_bits if baselines_bits is None else baselines_bits

        def build() -> ValuePlan:
            return ValuePlan(spectrum, bits.to(self.dtype), players.binary_groups, players.m_active, self.kernel)

        if self.differentiable or baselines_bits is not None:  # a graph or a one-off background: per call
            return build()
        raw = self.surrogate.amplitudes
        state = (raw.data_ptr(), raw._version, bits.data_ptr(), self.dtype)
        return self._plans.get(state, (players.key, self.kernel, column), build)

    def _convert(self, x: Any) -> Tensor:
        converted = to_tensor(x, "inputs", device=self.background.device)
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

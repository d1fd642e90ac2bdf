"""The value path every Fourier explainer shares: validate once, encode, closed form, back to the inputs.

:class:`FourierExplainerCore` holds the validated state (spectrum as a surrogate module, encoder, background rows and
their encoding, default players) and computes Shapley and Banzhaf values and pairwise interactions through a
:class:`~torchxplain.fourier.values.plan.ValuePlan` cached per players. :class:`~torchxplain.fourier.FourierShap`
adds the constructors (black box, spectrum, trees) and persistence.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from torchxplain._core import ExplainerBase, settings
from torchxplain._core.inputs import FeatureNames, check_feature_names, to_tensor
from torchxplain.fourier.boundary import (
    check_target,
    flatten_inputs,
    player_ids,
    state_dtype,
    unflatten_values,
    validated_background,
)
from torchxplain.fourier.bridges import to_shap_explanation, to_shapiq_values
from torchxplain.fourier.encoders import BinaryEncoder, InputEncoder
from torchxplain.fourier.interactions.api import check_index
from torchxplain.fourier.interactions.kernel import _interaction_values
from torchxplain.fourier.interactions.weights import Index
from torchxplain.fourier.plan_cache import PlanCache
from torchxplain.fourier.players import PlayerMap, player_map
from torchxplain.fourier.pruning import PruningReport
from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.surrogate import SparseFourierSurrogate
from torchxplain.fourier.values.plan import Kernel, ValuePlan


class FourierExplainerCore(ExplainerBase):
    """State and value path of a Fourier explainer (build one with :class:`~torchxplain.fourier.FourierShap`)."""

    background: Tensor
    background_bits: Tensor
    groups: Tensor | None
    encoder: InputEncoder
    _plans: PlanCache

    @classmethod
    def _assemble(
        cls, spectrum: FourierSpectrum, encoder: InputEncoder, raw: Tensor, bits: Tensor, **options: Any
    ) -> Any:
        """An explainer of a given spectrum and encoder (no fit): :meth:`_setup` on a new instance."""
        explainer = cls.__new__(cls)
        ExplainerBase.__init__(explainer, None)
        explainer._setup(spectrum, encoder, raw, bits, **options)
        return explainer

    def _setup(
        self,
        spectrum: FourierSpectrum,
        encoder: InputEncoder,
        raw: Tensor,
        bits: Tensor,
        *,
        names: FeatureNames | None,
        target: int | None,
        groups: Any,
        relaxed: bool,
        max_memory: int | str | None,
        differentiable: bool,
        kernel: Kernel,
        pruning: PruningReport | None = None,
        fit_report: Any = None,
    ) -> None:
        """Hold the validated state (``raw``: background rows, ``bits``: their encoding); all constructors end here."""
        if spectrum.n_features != encoder.n_binary:
            raise ValueError(
                f"the spectrum has {spectrum.n_features} features but the inputs encode to {encoder.n_binary}"
            )
        if max_memory is not None:
            settings.max_memory(max_memory)  # validate the budget now, not at the first call
        dtype = state_dtype(raw, spectrum.dtype)
        self.surrogate = SparseFourierSurrogate(spectrum.to(device=raw.device, dtype=dtype))
        self.encoder = encoder.to(raw.device)
        self.register_buffer("background", raw.to(dtype))
        self.register_buffer("background_bits", bits.to(device=raw.device, dtype=torch.bool))
        self.register_buffer("groups", player_ids(groups, encoder.n_inputs, "groups", raw.device))
        self.target = target
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
        """The explained spectrum (on the encoder's binary features)."""
        return self.surrogate.spectrum

    @property
    def n_features(self) -> int:
        """Number of input features (raw columns: original features of a tree model, or binary inputs)."""
        return self.encoder.n_inputs

    @property
    def dtype(self) -> torch.dtype:
        """The dtype the closed forms compute in."""
        return self.surrogate.amplitudes.dtype

    def predict(self, inputs: Any) -> Tensor:
        """The explained function on raw inputs ``(B, n_features)`` -> ``(B,)`` (the model for an exact spectrum).

        No autograd graph unless the explainer is ``differentiable``.
        """
        x, _ = self._inputs((self._convert(inputs),))
        out = self.surrogate(self.encoder.encode(x, self.dtype))
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
        check_target(target, self.target)
        return self._first_order("shapley", inputs, feature_mask, baselines)

    def banzhaf(self, inputs: Any, feature_mask: Any = None, baselines: Any = None) -> Tensor | tuple[Tensor, ...]:
        """Interventional Banzhaf values, shaped like ``inputs`` (each feature gets its player's value)."""
        inputs_t, is_tuple = self._as_tuple(inputs)
        mask = feature_mask if feature_mask is None or isinstance(feature_mask, tuple) else (feature_mask,)
        out = self._first_order("banzhaf", inputs_t, mask, baselines)
        return out if is_tuple else out[0]

    def interactions(self, inputs: Any, feature_mask: Any = None, baselines: Any = None) -> Tensor:
        """Pairwise Shapley interaction index between players.

        Returns:
            ``(Q, m, m)`` with ``m`` the number of players: the input features (``n_features``), or the distinct
            ids of ``feature_mask``/``groups`` in increasing order; zero on the diagonal and for players no
            frequency touches.
        """
        values, players, _ = self._player_values("interactions", self._as_tuple(inputs)[0], feature_mask, baselines)
        return players.expand(values, order=2)

    def interaction_values(
        self,
        inputs: Any,
        index: Index = "k-SII",
        max_order: int | None = None,
        feature_mask: Any = None,
        baselines: Any = None,
    ) -> dict[int, Tensor]:
        """shapiq's interaction indices in closed form (see :func:`torchxplain.fourier.interaction_values`).

        Returns:
            ``{0: (Q,), 1: (Q, m), 2: (Q, m, m), ...}`` up to ``max_order`` over the ``m`` players (as in
            :meth:`interactions`); players no frequency touches get zeros.
        """
        values, players, _ = self._player_values(
            "interaction_values", self._as_tuple(inputs)[0], feature_mask, baselines, index, max_order
        )
        return {order: players.expand(v, order) for order, v in values.items()}

    def expected_value(self, baselines: Any = None) -> Tensor:
        """Scalar: the explained function's mean over the background rows (or ``baselines``), SHAP's base value."""
        if baselines is None:
            return self.spectrum.evaluate(self.background_bits.to(self.dtype)).mean()
        raw, _ = validated_background(self._convert(baselines), self.n_features, name="baselines")
        self.encoder.check(raw, "baselines")
        return self.spectrum.evaluate(self.encoder.encode(raw, self.dtype)).mean()

    def to_shap(self, inputs: Any, feature_mask: Any = None, baselines: Any = None, player_names: Any = None) -> Any:
        """A ``shap.Explanation`` of ``inputs`` ``(Q, n)`` for shap's waterfall, beeswarm and force plots.

        Without ``feature_mask`` the columns are the input features (named by the background DataFrame's columns
        when there was one); with it, one column per player (``player_names``, default ``"player <id>"``).
        Values plus the base value equal the explained output at each row (efficiency). Needs ``shap``.
        """
        x = self._convert(inputs)
        names: Any
        if feature_mask is None:
            values, names, data = self.attribute(x, baselines=baselines), self.feature_names, x
        else:
            players, player_map_ = self._player_values("shapley", (x,), feature_mask, baselines)[:2]
            values, data = player_map_.expand(players, 1), None
            names = player_names or [f"player {int(i)}" for i in player_map_.ids]
        base = self.expected_value(baselines).expand(values.shape[0])
        return to_shap_explanation(values.detach(), base.detach(), data, feature_names=names)

    def to_shapiq(
        self,
        inputs: Any,
        index: Index = "k-SII",
        max_order: int | None = None,
        feature_mask: Any = None,
        baselines: Any = None,
    ) -> list[Any]:
        """One ``shapiq.InteractionValues`` per row of ``inputs``, for shapiq's network and upset plots.

        Arguments as :meth:`interaction_values`; needs ``shapiq``.
        """
        result = self.interaction_values(inputs, index, max_order, feature_mask, baselines)
        order = max(result)
        return to_shapiq_values(result, index, self.expected_value(baselines).detach(), max_order=order)

    def _first_order(
        self, kind: str, inputs: tuple[Tensor, ...], feature_mask: Any, baselines: Any
    ) -> tuple[Tensor, ...]:
        """Shapley or Banzhaf values shaped like the inputs (each feature gets its player's value)."""
        values, players, shapes = self._player_values(kind, inputs, feature_mask, baselines)
        return unflatten_values(players.to_inputs(values), inputs, shapes)

    def _player_values(
        self,
        kind: str,
        inputs: tuple[Tensor, ...],
        feature_mask: Any,
        baselines: Any,
        index: Index = "k-SII",
        max_order: int | None = None,
    ) -> tuple[Any, PlayerMap, list[torch.Size]]:
        """The template every value takes: validate once, encode, closed form on the active players."""
        mask = feature_mask if feature_mask is None or isinstance(feature_mask, tuple) else (feature_mask,)
        with settings.using(max_memory=self.max_memory):
            x, shapes = self._inputs(inputs)
            players = self._players(mask, shapes)
            plan = self._plan(players, baselines)
            bits = self.encoder.encode(x, self.dtype)
            relaxed = self.relaxed and not bool(((bits == 0) | (bits == 1)).all())
            if relaxed and (kind != "shapley" or players.binary_groups is not None):
                raise ValueError(
                    "relaxed=True extends the Shapley values of singleton players to real-valued inputs; "
                    f"{kind.replace('_', ' ')} and grouped players need binary inputs"
                )
            if kind == "shapley":
                return plan.shapley(bits, relaxed=relaxed), players, shapes
            if kind == "banzhaf":
                return plan.banzhaf(bits), players, shapes
            if kind == "interactions":
                return plan.interactions(bits), players, shapes
            order = check_index(index, max_order, plan.m)
            return _interaction_values(bits, plan.term, plan.groups, plan.m, index, order), players, shapes

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
            if len(feature_mask) != len(shapes):
                raise ValueError(f"feature_mask has {len(feature_mask)} tensors for {len(shapes)} inputs")
            ids = player_ids(feature_mask, self.n_features, "feature_mask", self.background.device, shapes)
        return player_map(self.encoder.owner, self.n_features, ids)

    def _plan(self, players: PlayerMap, baselines: Any) -> ValuePlan:
        """The closed forms against the background (cached) or against explicit ``baselines`` (built per call)."""
        amplitudes = self.surrogate.amplitudes
        spectrum = FourierSpectrum.trusted(
            self.surrogate.frequencies, amplitudes if self.differentiable else amplitudes.detach()
        )
        if baselines is not None:
            raw, _ = validated_background(self._convert(baselines), self.n_features, name="baselines")
            self.encoder.check(raw, "baselines")
            bits = self.encoder.encode(raw, self.dtype)
            return ValuePlan(spectrum, bits, players.binary_groups, players.m_active, self.kernel)
        bits = self.background_bits

        def build() -> ValuePlan:
            return ValuePlan(spectrum, bits.to(self.dtype), players.binary_groups, players.m_active, self.kernel)

        if self.differentiable:  # the plan holds the amplitudes' graph: build it per call
            return build()
        state = (amplitudes.data_ptr(), amplitudes._version, bits.data_ptr(), self.dtype)
        return self._plans.get(state, (players.key, self.kernel), build)

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

"""``FourierShap``: Captum-compatible interventional SHAP values from a sparse Fourier spectrum."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from torchxplain._core import ExplainerBase, check_binary, check_matrix, float_dtype
from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.surrogate import SparseFourierSurrogate
from torchxplain.fourier.values import (
    banzhaf_values,
    shapley_interactions,
    shapley_values,
    validate_groups,
)


class FourierShap(ExplainerBase):
    """Exact interventional SHAP values of a sparse Fourier representation of a model on {0,1}^n.

    Construct it from a black box (``FourierShap(model, background, k=...)`` fits a sparse spectrum by
    querying ``model`` once), from a known spectrum (:meth:`from_spectrum`) or from a tree ensemble
    (``from_trees``). Values are then closed forms on the spectrum (paper Eq. 5): two matrix
    products per chunk of (query, background) pairs.

    Args:
        forward_func: the model, a callable on ``(B, n)`` float tensors in {0,1} returning ``(B,)``
            or ``(B, C)`` (pick ``C`` with ``target``). Never registered as a submodule.
        background: ``(B, n)`` binary background distribution (the interventional reference).
        k: number of Fourier coefficients to keep.
        max_degree: optional cap on the frequency degree.
        n_queries: query budget for the fit (``None``: the method's default).
        method: ``"auto"``, ``"exact"``, ``"hashing"`` or ``"regression"`` (see ``fit_sparse_fourier``).
        target: output column for multi-output models.
        groups: default players, an ``(n,)`` integer id per feature (e.g. one-hot blocks); a
            ``feature_mask`` passed to :meth:`attribute` overrides it.
        seed: seed of the fit's random queries.
        relaxed: accept non-binary queries and explain the multilinear extension (needed by
            ``NoiseTunnel`` and ``sensitivity_max``, which add continuous noise).
        max_memory: budget for chunked intermediates (bytes or e.g. ``"2GB"``).
        show_progress: progress bar during the fit.
        spectrum: a known spectrum (skips the fit; see :meth:`from_spectrum`).
        differentiable: keep the autograd graph from the surrogate's amplitudes to the values (to train
            through the values); off by default, since the graph would hold every chunk's intermediates.
        **fit_options: passed to ``fit_sparse_fourier`` (e.g. ``batch_size``; ``eval_data`` defaults to the
            background, so the fit report gives the surrogate's R² on the data distribution too).
    """

    def __init__(
        self,
        forward_func: Callable[..., Tensor] | None,
        background: Tensor,
        k: int = 256,
        max_degree: int | None = None,
        n_queries: int | None = None,
        method: str = "auto",
        target: int | None = None,
        groups: Tensor | None = None,
        seed: int = 0,
        relaxed: bool = False,
        max_memory: int | str | None = None,
        show_progress: bool | None = None,
        spectrum: FourierSpectrum | None = None,
        differentiable: bool = False,
        **fit_options: Any,
    ) -> None:
        super().__init__(forward_func)
        check_matrix(background, "background")
        check_binary(background, "background")
        n = background.shape[1]
        self.fit_report = None
        if spectrum is None:
            if forward_func is None:
                raise ValueError("pass a forward_func to fit, or build the explainer with FourierShap.from_spectrum")
            from torchxplain.fourier.recovery import fit_sparse_fourier

            spectrum, self.fit_report = fit_sparse_fourier(
                forward_func,
                n,
                k=k,
                max_degree=max_degree,
                n_queries=n_queries,
                method=method,
                target=target,
                seed=seed,
                device=background.device,
                show_progress=show_progress,
                return_report=True,
                **{"eval_data": background, **fit_options},
            )
        elif spectrum.n_features != n:
            raise ValueError(f"background has {n} features but the spectrum has {spectrum.n_features}")
        dtype = float_dtype(background) if background.is_floating_point() else spectrum.dtype
        self.surrogate = SparseFourierSurrogate(spectrum.to(device=background.device, dtype=dtype), max_memory)
        if forward_func is None:
            self.__dict__["forward_func"] = self.surrogate
            self.owns_forward_func = True
        self.register_buffer("background", background.to(dtype))
        self.register_buffer("groups", None if groups is None else validate_groups(groups, n)[0])
        self.target = target
        self.relaxed = relaxed
        self.max_memory = max_memory
        self.differentiable = differentiable

    @classmethod
    def from_spectrum(
        cls,
        spectrum: FourierSpectrum,
        background: Tensor,
        groups: Tensor | None = None,
        relaxed: bool = False,
        max_memory: int | str | None = None,
        differentiable: bool = False,
    ) -> FourierShap:
        """An explainer of a known spectrum; ``forward_func`` is its :class:`SparseFourierSurrogate`.

        Args:
            spectrum: ``k`` frequencies on ``n`` features.
            background: ``(B, n)`` binary background.
            groups, relaxed, max_memory, differentiable: as in the constructor.
        """
        return cls(
            None,
            background,
            groups=groups,
            relaxed=relaxed,
            max_memory=max_memory,
            spectrum=spectrum,
            differentiable=differentiable,
        )

    @classmethod
    def from_trees(cls, model: Any, background: Tensor, target: int | None = None, **options: Any) -> FourierShap:
        """An explainer of a tree ensemble's exact spectrum (scikit-learn, XGBoost, LightGBM); its values equal
        interventional TreeSHAP's. Options (``encoding``, ``feature_groups``, ``energy``, ``threshold``, ...) are
        documented in :func:`torchxplain.fourier.tree_explainer.from_trees`."""
        from torchxplain.fourier.tree_explainer import from_trees

        return from_trees(cls, model, background, target, **options)

    @property
    def spectrum(self) -> FourierSpectrum:
        """The explained spectrum."""
        return self.surrogate.spectrum

    @property
    def n_features(self) -> int:
        return self.surrogate.n_features

    def _config(self) -> dict[str, Any]:
        """Constructor metadata for ``save``; the spectrum, background and groups are in the ``state_dict``."""
        return {
            "n_features": self.n_features,
            "target": self.target,
            "relaxed": self.relaxed,
            "max_memory": self.max_memory,
            "has_groups": self.groups is not None,
            "differentiable": self.differentiable,
        }

    @classmethod
    def _from_config(
        cls, config: dict[str, Any], state: dict[str, Tensor], forward_func: Callable[..., Tensor] | None
    ) -> FourierShap:
        """Rebuild from ``_config()`` and the ``state_dict``; without ``forward_func`` the surrogate is the model."""
        spectrum = FourierSpectrum(state["surrogate.frequencies"], state["surrogate.amplitudes"])
        groups = state["groups"] if config["has_groups"] else None
        return cls(
            forward_func,
            state["background"],
            target=config["target"],
            groups=groups,
            relaxed=config["relaxed"],
            max_memory=config["max_memory"],
            spectrum=spectrum,
            differentiable=config.get("differentiable", False),
        )

    def _attribute(
        self,
        inputs: tuple[Tensor, ...],
        *,
        baselines: Any,
        target: Any,
        additional_forward_args: Any,
        feature_mask: tuple[Tensor, ...] | None,
        show_progress: bool,
        **kwargs: Any,
    ) -> tuple[Tensor, ...]:
        if kwargs:
            raise TypeError(f"FourierShap.attribute got unexpected arguments {sorted(kwargs)}")
        if additional_forward_args is not None:
            raise ValueError("FourierShap explains the fitted spectrum; additional_forward_args are not used")
        self._check_target(target)
        x, shapes = self._flatten(inputs)
        groups, m = self._players(feature_mask, shapes, x.shape[0])
        background = self._background(baselines)
        phi = shapley_values(
            self._spectrum_for_values(), x, background, groups=groups, max_memory=self.max_memory, relaxed=self.relaxed
        )
        return self._unflatten(phi if groups is None else phi[:, groups], inputs, shapes)

    def banzhaf(
        self,
        inputs: Tensor | tuple[Tensor, ...],
        feature_mask: Tensor | tuple[Tensor, ...] | None = None,
        baselines: Tensor | None = None,
    ) -> Tensor | tuple[Tensor, ...]:
        """Interventional Banzhaf values, shaped like ``inputs`` (each feature gets its group's value)."""
        is_tuple = isinstance(inputs, tuple)
        inputs_t = inputs if is_tuple else (inputs,)
        x, shapes = self._flatten(inputs_t)
        if feature_mask is not None and not isinstance(feature_mask, tuple):
            feature_mask = (feature_mask,)
        groups, _ = self._players(feature_mask, shapes, x.shape[0])
        beta = banzhaf_values(
            self._spectrum_for_values(), x, self._background(baselines), groups=groups, max_memory=self.max_memory
        )
        out = self._unflatten(beta if groups is None else beta[:, groups], inputs_t, shapes)
        return out if is_tuple else out[0]

    def interactions(
        self,
        inputs: Tensor | tuple[Tensor, ...],
        feature_mask: Tensor | tuple[Tensor, ...] | None = None,
        baselines: Tensor | None = None,
    ) -> Tensor:
        """Pairwise Shapley interaction index between players.

        Returns:
            ``(Q, m, m)`` with ``m`` the number of players (features, or groups of ``feature_mask``).
        """
        inputs_t = inputs if isinstance(inputs, tuple) else (inputs,)
        x, shapes = self._flatten(inputs_t)
        if feature_mask is not None and not isinstance(feature_mask, tuple):
            feature_mask = (feature_mask,)
        groups, _ = self._players(feature_mask, shapes, x.shape[0])
        return shapley_interactions(
            self._spectrum_for_values(), x, self._background(baselines), groups=groups, max_memory=self.max_memory
        )

    # -----------------------------------------------------------------------------------------------
    def _spectrum_for_values(self) -> FourierSpectrum:
        amplitudes = self.surrogate.amplitudes
        return FourierSpectrum(self.surrogate.frequencies, amplitudes if self.differentiable else amplitudes.detach())

    def _check_target(self, target: Any) -> None:
        if target is None:
            return
        if isinstance(target, Tensor):
            values = set(target.flatten().tolist())
        elif isinstance(target, (list, tuple)):
            values = set(target)
        else:
            values = {target}
        if values != {self.target}:
            raise ValueError(
                f"this explainer was fitted for target={self.target}; got target={target}. "
                "Build one explainer per output column"
            )

    def _background(self, baselines: Any) -> Tensor:
        if baselines is None:
            return self.background
        if not isinstance(baselines, Tensor):
            raise TypeError("baselines must be None or a (B, n) binary background tensor")
        check_matrix(baselines, "baselines", self.n_features)
        check_binary(baselines, "baselines")
        return baselines.to(self.background.dtype)

    def _flatten(self, inputs: tuple[Tensor, ...]) -> tuple[Tensor, list[torch.Size]]:
        shapes = [t.shape for t in inputs]
        rows = {t.shape[0] for t in inputs}
        if len(rows) != 1 or any(t.ndim < 2 for t in inputs):
            got = [tuple(s) for s in shapes]
            raise ValueError(f"inputs must be tensors (Q, ...) with the same Q, got shapes {got}")
        x = torch.cat([t.reshape(t.shape[0], -1) for t in inputs], dim=1)
        if x.shape[1] != self.n_features:
            raise ValueError(f"inputs hold {x.shape[1]} features in all, but the spectrum has {self.n_features}")
        if x.device != self.background.device:
            raise ValueError(
                f"inputs are on {x.device} but the explainer is on {self.background.device}; call .to(device)"
            )
        if not self.relaxed:
            try:
                check_binary(x, "inputs")
            except ValueError as err:
                raise ValueError(
                    f"{err}. To explain continuous inputs (NoiseTunnel, sensitivity_max) on the "
                    "multilinear extension, build the explainer with relaxed=True"
                ) from None
        return x.to(self.background.dtype), shapes

    def _players(
        self, feature_mask: tuple[Tensor, ...] | None, shapes: list[torch.Size], n_rows: int
    ) -> tuple[Tensor | None, int]:
        if feature_mask is None:
            return (None, self.n_features) if self.groups is None else (self.groups, int(self.groups.max()) + 1)
        if len(feature_mask) != len(shapes):
            raise ValueError(f"feature_mask has {len(feature_mask)} tensors for {len(shapes)} inputs")
        flat = []
        for mask, shape in zip(feature_mask, shapes):
            full = torch.broadcast_to(mask, shape).reshape(shape[0], -1)
            if not bool((full == full[:1]).all()):
                raise ValueError("feature_mask must be the same for every row (one grouping of players per call)")
            flat.append(full[0])
        ids = torch.cat(flat)
        _, groups = torch.unique(ids, return_inverse=True)
        return groups.to(self.background.device), int(groups.max()) + 1

    @staticmethod
    def _unflatten(values: Tensor, inputs: tuple[Tensor, ...], shapes: list[torch.Size]) -> tuple[Tensor, ...]:
        out, start = [], 0
        for t, shape in zip(inputs, shapes):
            width = t[0].numel()
            dtype = t.dtype if t.is_floating_point() else values.dtype
            out.append(values[:, start : start + width].reshape(shape).to(dtype))
            start += width
        return tuple(out)

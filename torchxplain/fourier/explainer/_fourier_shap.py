"""``FourierShap``: Captum-compatible interventional SHAP values from a sparse Fourier spectrum.

One class serves every source of a spectrum — a black box fitted by queries (the constructor), a known spectrum
(:meth:`FourierShap.from_spectrum`) and a tree ensemble's exact spectrum (:meth:`FourierShap.from_trees`) — and
every kind of input through its encoder (binary rows, or continuous rows of a tree ensemble). All values take one
path: validate the inputs once, encode them, evaluate the closed forms with a
:class:`~torchxplain.fourier.values._plan.ValuePlan` cached per background and players, and map the players' values
back to the inputs.

Example::

    import torch, torchxplain as tx
    from sklearn.datasets import load_diabetes
    from sklearn.ensemble import RandomForestRegressor

    x, y = load_diabetes(return_X_y=True)
    model = RandomForestRegressor(n_estimators=20, max_depth=5).fit(x, y)
    explainer = tx.FourierShap.from_trees(model, x[:100])   # continuous: thresholds grouped per feature
    phi = explainer.attribute(torch.tensor(x[100:110]))    # (10, 10) per original feature
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import torch
from torch import Tensor

from torchxplain._core import settings
from torchxplain._core.devices import check_device
from torchxplain._core.inputs import check_feature_names, rows
from torchxplain.fourier.encoding._encoders import BinaryEncoder
from torchxplain.fourier.explainer._core import FourierExplainerCore
from torchxplain.fourier.explainer._forward_args import as_args, bind
from torchxplain.fourier.explainer._outputs import single_output
from torchxplain.fourier.explainer._persistence import explainer_config, explainer_from_config
from torchxplain.fourier.fit._api import Method, fit_sparse_fourier
from torchxplain.fourier.fit._oracle import model_placement
from torchxplain.fourier.spectrum._spectrum import FourierSpectrum
from torchxplain.fourier.trees._source import tree_source
from torchxplain.fourier.values._plan import Kernel


class FourierShap(FourierExplainerCore):
    """Exact interventional SHAP values of a sparse Fourier representation of a model.

    Construct it from a black box (``FourierShap(model, background, k=...)`` fits a sparse spectrum by querying
    ``model`` once), from a known spectrum (:meth:`from_spectrum`) or from a tree ensemble (:meth:`from_trees`).
    Values are then closed forms on the spectrum (paper Eq. 5).

    What each input is explained against: ``background=`` (any method) is a set of rows every input is explained
    against (default: the constructor's background); Captum's ``baselines=`` give one reference per input row — a
    scalar, a ``(1, n)`` row for all, or an ``(N, n)`` tensor whose row ``i`` is input ``i``'s reference — and any
    other row count is refused (see :mod:`~torchxplain.fourier.explainer._references`). ``player_values`` gives one
    value per player with the players' names.

    Args:
        forward_func: the model, a callable on ``(B, n)`` float tensors in {0,1} returning ``(B,)`` or ``(B, C)``
            (pick ``C`` with ``target``). Never registered as a submodule.
        background: ``(B, n)`` binary background rows (tensor, numpy array or DataFrame): the interventional
            reference.
        k: most Fourier coefficients to keep (``None``: as many as ``target_r2`` needs).
        max_degree: optional cap on the frequency degree.
        n_queries: query budget for the fit (``None``: the method's default).
        method: ``"auto"``, ``"hybrid"``, ``"exact"``, ``"hashing"`` or ``"regression"`` (see ``fit_sparse_fourier``).
        target: output column for multi-output models.
        groups: default players, an ``(n,)`` integer id per input feature (e.g. one-hot blocks); a
            ``feature_mask`` passed to :meth:`attribute` overrides it. The fit is held to hybrid points of these
            players, so explain with the same players (the fit report's ``n_players``).
        seed: seed of the fit's random queries.
        relaxed: accept non-binary queries and explain the multilinear extension (needed by ``NoiseTunnel`` and
            ``sensitivity_max``, which add continuous noise).
        max_memory: budget for chunked intermediates (bytes or e.g. ``"2GB"``; default ``tx.settings.max_memory``).
        show_progress: progress bar during the fit.
        differentiable: keep the autograd graph from the surrogate's amplitudes to the values (to train through
            the values); off by default, since the graph would hold every chunk's intermediates.
        kernel: closed-form kernel, ``"auto"`` (chosen by a cost model) or a kernel name (see ``ValuePlan``).
        data: ``(R, n)`` binary rows like the ones to be explained (e.g. the training set): the fit is held to
            hybrids of these rows with the background (default: the background's own hybrids).
        additional_forward_args: Captum's extra model arguments: every query of the fit calls
            ``forward_func(x, *additional_forward_args)``, so the spectrum explains that function (the same
            arguments for every row: a per-example tensor would make each row another function). ``attribute``
            accepts the same arguments again (Captum code passes them every call), not others. Not saved.
        device: where the fit queries the model; the background's device (a background tensor elsewhere is
            refused, not moved). It must exist on this machine.
        **fit_options: passed to ``fit_sparse_fourier`` (``target_r2=0.99`` by default: a fit whose held-out
            hybrid R² misses it raises a ``FitQualityWarning``; ``time_budget``, ``one_hot``, ``n_validation``, ...).

    Attributes:
        spectrum: the explained spectrum; ``encoder``: the input encoding; ``fit_report``: the black-box fit's
        report (``None`` otherwise); ``pruning``: a :class:`PruningReport` when a tree spectrum was pruned;
        ``feature_names``: the background DataFrame's columns, if any.
    """

    def __init__(
        self,
        forward_func: Callable[..., Tensor] | None,
        background: Any,
        k: int | None = None,
        max_degree: int | None = None,
        n_queries: int | None = None,
        method: Method = "auto",
        target: int | None = None,
        groups: Any = None,
        seed: int = 0,
        relaxed: bool = False,
        max_memory: int | str | None = None,
        show_progress: bool | None = None,
        differentiable: bool = False,
        kernel: Kernel = "auto",
        data: Any = None,
        additional_forward_args: Any = None,
        device: torch.device | str | None = None,
        **fit_options: Any,
    ) -> None:
        super().__init__(forward_func)
        if forward_func is None or not callable(forward_func):
            raise TypeError(
                "forward_func must be the model to fit (a callable on (B, n) binary tensors); for a known spectrum "
                "use FourierShap.from_spectrum, for a tree ensemble FourierShap.from_trees"
            )
        args = as_args(additional_forward_args)
        place = None if device is None else check_device(device)
        with settings.using(max_memory=max_memory, show_progress=show_progress):
            converted = rows(background, "background", device=place)
            raw, names = converted.tensor, converted.feature_names
            if place is not None and raw.device != place:
                raise ValueError(
                    f"background is on {raw.device} but device={str(device)!r}; the explainer lives on its "
                    f"background's device: pass background.to({str(place)!r})"
                )
            encoder = BinaryEncoder(raw.shape[1])
            encoder.check(raw, "background")
            data_rows = None
            if data is not None:
                given = rows(data, "data", n_features=raw.shape[1], device=raw.device)
                check_feature_names(names, given.feature_names, "data")  # a frame's columns, as the background's
                data_rows = given.tensor
                encoder.check(data_rows, "data")
            # the model with its arguments bound: queried where (and in the dtype) the model itself would be
            query_device, query_dtype = model_placement(forward_func, raw.device, fit_options.pop("dtype", None), raw)
            spectrum, report = cast(
                tuple[FourierSpectrum, Any],
                fit_sparse_fourier(
                    bind(forward_func, args),
                    raw.shape[1],
                    k=k,
                    max_degree=max_degree,
                    n_queries=n_queries,
                    method=method,
                    target=target,
                    seed=seed,
                    device=query_device,
                    dtype=query_dtype,
                    return_report=True,
                    background=raw,
                    data=data_rows,
                    groups=groups,
                    **fit_options,
                ),
            )
        self._setup(
            spectrum,
            encoder,
            raw,
            raw.bool(),
            names=names,
            outputs=single_output(target, "model output" if target is None else f"model output {target}"),
            groups=groups,
            relaxed=relaxed,
            max_memory=max_memory,
            differentiable=differentiable,
            kernel=kernel,
            fit_report=report,
        )
        self.__dict__["additional_forward_args"] = args

    # --- constructors ------------------------------------------------------------------------------------
    @classmethod
    def from_spectrum(
        cls,
        spectrum: FourierSpectrum,
        background: Any,
        groups: Any = None,
        relaxed: bool = False,
        max_memory: int | str | None = None,
        differentiable: bool = False,
        kernel: Kernel = "auto",
    ) -> FourierShap:
        """An explainer of a known spectrum; ``forward_func`` is its :class:`SparseFourierSurrogate`.

        Args:
            spectrum: ``k`` frequencies on ``n`` binary features.
            background: ``(B, n)`` binary background rows.
            groups, relaxed, max_memory, differentiable, kernel: as in the constructor.
        """
        if not isinstance(spectrum, FourierSpectrum):
            raise TypeError(f"spectrum must be a FourierSpectrum, got {type(spectrum).__name__}")
        converted = rows(background, "background", n_features=spectrum.n_features)
        raw, names = converted.tensor, converted.feature_names
        encoder = BinaryEncoder(spectrum.n_features)
        encoder.check(raw, "background")
        return cls._assemble(
            spectrum,
            encoder,
            raw,
            raw.bool(),
            names=names,
            outputs=single_output(None, "spectrum"),
            groups=groups,
            relaxed=relaxed,
            max_memory=max_memory,
            differentiable=differentiable,
            kernel=kernel,
        )

    @classmethod
    def from_trees(
        cls,
        model: Any,
        background: Any,
        target: int | None = None,
        *,
        encoding: Any = "auto",
        feature_groups: Any = None,
        energy: float | None = None,
        threshold: float | None = None,
        relaxed: bool = False,
        max_memory: int | str | None = None,
        kernel: Kernel = "auto",
    ) -> FourierShap:
        """An explainer of a tree ensemble's exact spectrum; its values equal interventional TreeSHAP's.

        Args:
            model: a fitted scikit-learn, XGBoost, LightGBM (or other supported) tree model.
            background: ``(B, p)`` background rows (the interventional reference), binary or raw.
            target: output index for multi-output models (class of a classifier).
            encoding: ``"binary"`` (inputs in {0,1}; players are the inputs or ``feature_groups``), ``"thresholds"``
                (continuous inputs; every split becomes a binary feature owned by the feature it splits), a
                :class:`~torchxplain.fourier.TreeEncoding`, or ``"auto"`` (binary when the background is 0/1
                and every split separates 0 from 1).
            feature_groups: optional ``(p,)`` integer player id per input feature (e.g. one-hot blocks).
            energy, threshold: prune the non-constant spectrum (``energy=0.9995`` is the paper's setting); the
                explainer's ``pruning`` attribute reports what was kept.
            relaxed: binary encoding only: accept real-valued queries on the multilinear extension.
            max_memory: budget for chunked intermediates.
            kernel: as in the constructor.

        Returns:
            An explainer whose ``attribute`` gives the interventional SHAP values of the model output, per input
            feature, in the background's float dtype (float32 for integer backgrounds).
        """
        with settings.using(max_memory=max_memory):
            source = tree_source(model, background, target, encoding, energy, threshold, relaxed)
        return cls._assemble(
            source.spectra,
            source.encoder,
            source.background,
            source.bits,
            names=source.feature_names,
            outputs=source.outputs,
            groups=feature_groups,
            groups_name="feature_groups",
            relaxed=relaxed,
            max_memory=max_memory,
            differentiable=False,
            kernel=kernel,
            pruning=source.pruning,
            families=source.families,
        )

    def _config(self) -> dict[str, Any]:
        """JSON-able metadata for ``save`` (see :func:`torchxplain.fourier.explainer._persistence.explainer_config`)."""
        return explainer_config(self)

    @classmethod
    def _from_config(
        cls, config: dict[str, Any], state: dict[str, Tensor], forward_func: Callable[..., Tensor] | None
    ) -> FourierShap:
        """Rebuild a saved explainer (see :func:`torchxplain.fourier.explainer._persistence.explainer_from_config`)."""
        return cast(FourierShap, explainer_from_config(cls, config, state, forward_func))


__all__ = ["FourierShap"]

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
from dataclasses import replace
from typing import Any, Literal, cast

import torch
from torch import Tensor

from torchxplain._core import settings
from torchxplain._core.devices import check_device
from torchxplain._core.inputs import check_feature_names, dense_players, player_ids, rows
from torchxplain.fourier.encoding._encoders import BinaryEncoder, InputEncoder
from torchxplain.fourier.explainer._continuous import continuous_source, non_binary
from torchxplain.fourier.explainer._core import FourierExplainerCore
from torchxplain.fourier.explainer._forward_args import as_args, bind
from torchxplain.fourier.explainer._outputs import Outputs, single_output
from torchxplain.fourier.explainer._persistence import explainer_config, explainer_from_config
from torchxplain.fourier.fit._api import Method, checked_sizes, fit_validated, resolve_auto_groups
from torchxplain.fourier.fit._options import FitOptions, fit_options_from
from torchxplain.fourier.fit._oracle import Oracle, model_placement
from torchxplain.fourier.fit._report import FitReport, enumeration_report
from torchxplain.fourier.spectrum._spectrum import FourierSpectrum
from torchxplain.fourier.trees._leaf_source import Route, check_route, choose_route, empty_spectra, leaf_route
from torchxplain.fourier.trees._leaves import leaf_table
from torchxplain.fourier.trees._source import tree_source
from torchxplain.fourier.trees.adapters._dispatch import parse_model_outputs
from torchxplain.fourier.values._plan import Kernel


def _enumeration_source(n: int, m: int, found: Any, dtype: torch.dtype) -> tuple[FourierSpectrum, FitReport]:
    """The (empty) spectrum and the report of an explainer that enumerates coalitions through the model."""
    spectrum = FourierSpectrum.trusted(torch.zeros(0, n, dtype=torch.bool), torch.zeros(0, dtype=dtype))
    reason = (
        "requested: exact values by enumerating, for each (row, background row) pair, every coalition of the "
        "players they differ in (2^d model queries per pair, made when values are asked for)"
    )
    report = enumeration_report(n, m, None if found is None else found.description, reason)
    return spectrum, report


class FourierShap(FourierExplainerCore):
    """Exact interventional SHAP values of a sparse Fourier representation of a model.

    Construct it from a black box (``FourierShap(model, background, k=...)`` fits a sparse spectrum by querying
    ``model`` once), from a known spectrum (:meth:`from_spectrum`) or from a tree ensemble (:meth:`from_trees`).
    Values are then closed forms on the spectrum (paper Eq. 5).

    Continuous (or mixed continuous / one-hot / binary) rows: when any entry of ``background`` or ``data`` is not
    0/1, each column is encoded by thresholds at the midpoints of its values in ``data`` ∪ ``background`` (at most
    ``max_thresholds`` per column, a :class:`~torchxplain.fourier.FitOptions` field, default 128), one player per
    column (``groups="auto"``: one per one-hot block too), and the spectrum is fitted on the codes of hybrid points
    (``fit_report.method == "continuous"``): its SHAP-R² estimate is measured against the model on held-out rows
    of ``data`` kept out of the thresholds and the fit. ``method="auto"`` takes that route; ``method="enumerate"``
    gives exact values through the model at raw hybrids instead (for few players). Values are per column
    ``(Q, p)``; rows must be finite.

    What each input is explained against: ``background=`` (any method) is a set of rows every input is explained
    against (default: the constructor's background); Captum's ``baselines=`` give one reference per input row — a
    scalar, a ``(1, n)`` row for all, or an ``(N, n)`` tensor whose row ``i`` is input ``i``'s reference — and any
    other row count is refused (see :mod:`~torchxplain.fourier.explainer._references`). ``player_values`` gives one
    value per player with the players' names.

    Args:
        forward_func: the model, a callable on ``(B, n)`` float tensors (0/1, or the raw rows of continuous inputs)
            returning ``(B,)`` or ``(B, C)`` (pick ``C`` with ``target``). Never registered as a submodule.
        background: ``(B, n)`` background rows (tensor, numpy array or DataFrame), binary or continuous: the
            interventional reference.
        k: most Fourier coefficients to keep (``None``: as many as ``target_r2`` needs).
        max_degree: optional cap on the frequency degree.
        n_queries: query budget for the fit (``None``: the method's default).
        method: ``"auto"``, ``"tabulate"``, ``"hybrid"``, ``"exact"``, ``"hashing"`` or ``"regression"`` (see
            ``fit_sparse_fourier``; continuous inputs take ``"auto"``, the continuous fit), or ``"enumerate"``: no
            fit; Shapley, Banzhaf and pairwise interaction values are exact, by enumerating each (row, background
            row) pair's coalitions through the model when asked for (``2^d`` queries per pair for its ``d``
            differing players, at raw hybrids for continuous inputs: for few players and few rows; the library's
            reference).
        target: output column for multi-output models.
        groups: default players, an ``(n,)`` integer id per input feature (e.g. one-hot blocks), or ``"auto"`` to
            find the one-hot blocks of ``data`` and ``background`` (the fit report's ``players`` says what was
            found); a ``feature_mask`` passed to :meth:`attribute` overrides it. The fit is held to hybrid points of
            these players, so explain with the same players (the fit report's ``n_players``).
        seed: seed of the fit's random queries.
        relaxed: accept non-binary queries and explain the multilinear extension (needed by ``NoiseTunnel`` and
            ``sensitivity_max``, which add continuous noise).
        max_memory: budget for chunked intermediates (bytes or e.g. ``"2GB"``; default ``tx.settings.max_memory``).
        show_progress: progress bar during the fit.
        differentiable: keep the autograd graph from the surrogate's amplitudes to the values (to train through
            the values); off by default, since the graph would hold every chunk's intermediates.
        kernel: closed-form kernel, ``"auto"`` (chosen by a cost model) or a kernel name (see ``ValuePlan``).
        data: ``(R, n)`` rows like the ones to be explained (e.g. the training set): the fit is held to hybrids of
            these rows with the background (default: the background's own hybrids); a DataFrame must have the
            background's columns.
        target_r2: the estimated R² of the SHAP values on held-out rows the fit is held to (``None``: no check);
            a fit below it raises a ``FitQualityWarning`` that says what to change.
        options: the fit's other knobs (:class:`~torchxplain.fourier.FitOptions`).
        **fit_options: :class:`~torchxplain.fourier.FitOptions` fields by name (``time_budget=``, ``one_hot=``,
            ``n_validation=``, ...), merged into ``options``.
        additional_forward_args: Captum's extra model arguments: every query of the fit calls
            ``forward_func(x, *additional_forward_args)``, so the spectrum explains that function (the same
            arguments for every row: a per-example tensor would make each row another function). ``attribute``
            accepts the same arguments again (Captum code passes them every call), not others. Not saved.
        device: where the fit queries the model; the background's device (a background tensor elsewhere is
            refused, not moved). It must exist on this machine.

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
        method: Method | Literal["enumerate"] = "auto",
        target: int | None = None,
        groups: Any = None,
        seed: int = 0,
        relaxed: bool = False,
        max_memory: int | str | None = None,
        show_progress: bool | None = None,
        differentiable: bool = False,
        kernel: Kernel = "auto",
        data: Any = None,
        target_r2: float | None = 0.99,
        options: FitOptions | None = None,
        additional_forward_args: Any = None,
        device: torch.device | str | None = None,
        **fit_options: Any,
    ) -> None:
        super().__init__(forward_func)
        if forward_func is None or not callable(forward_func):
            raise TypeError(
                "forward_func must be the model to fit (a callable on (B, n) tensors); for a known spectrum "
                "use FourierShap.from_spectrum, for a tree ensemble FourierShap.from_trees"
            )
        options = fit_options_from({**fit_options, "options": options}, max_memory, show_progress)
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
            given = None if data is None else rows(data, "data", n_features=raw.shape[1], device=raw.device)
            if given is not None:
                check_feature_names(names, given.feature_names, "data")  # a frame's columns, as the background's
            data_rows = None if given is None else given.tensor.to(raw.device)
            why = non_binary(raw, data_rows, names)
            query_device, query_dtype = model_placement(
                forward_func, raw.device if options.device is None else options.device, options.dtype, raw
            )
            if why is not None:
                source = continuous_source(
                    bind(forward_func, args),
                    raw,
                    data_rows,
                    names,
                    groups,
                    method=method,
                    **checked_sizes(k, max_degree, n_queries, target),
                    seed=seed,
                    target_r2=target_r2,
                    options=replace(options, device=query_device, dtype=query_dtype),
                    relaxed=relaxed,
                    why=why,
                )
                spectrum, bits, ids, report = source.spectrum, source.bits, source.ids, source.report
                encoder: InputEncoder = source.encoder
                if source.enumerator is not None:
                    self.__dict__["enumerator"] = source.enumerator  # plain attribute: the model is never registered
            else:
                spectrum, encoder, bits, ids, report = self._binary_source(
                    forward_func,
                    args,
                    raw,
                    data_rows,
                    names,
                    groups,
                    k,
                    max_degree,
                    n_queries,
                    method,
                    target,
                    seed,
                    relaxed,
                    target_r2,
                    options,
                    query_device,
                    query_dtype,
                )
        self._setup(
            spectrum,
            encoder,
            raw,
            bits,
            names=names,
            outputs=single_output(target, "model output" if target is None else f"model output {target}"),
            groups=ids,
            groups_checked=True,
            relaxed=relaxed,
            max_memory=max_memory,
            differentiable=differentiable,
            kernel=kernel,
            fit_report=report,
        )
        self.__dict__["additional_forward_args"] = args

    def _binary_source(
        self,
        forward_func: Callable[..., Tensor],
        args: Any,
        raw: Tensor,
        data_rows: Tensor | None,
        names: Any,
        groups: Any,
        k: int | None,
        max_degree: int | None,
        n_queries: int | None,
        method: str,
        target: int | None,
        seed: int,
        relaxed: bool,
        target_r2: float | None,
        options: FitOptions,
        query_device: torch.device,
        query_dtype: torch.dtype,
    ) -> tuple[FourierSpectrum, BinaryEncoder, Tensor, Tensor | None, FitReport]:
        """The binary routes (every entry of the background and ``data`` 0 or 1): a fit, or enumeration."""
        encoder = BinaryEncoder(raw.shape[1])  # non_binary found every entry of both tables 0 or 1: no check owed
        bits = raw.bool()
        data_bits = None if data_rows is None else data_rows.bool()
        found = None
        if isinstance(groups, str):
            tables = [bits] if data_bits is None else [data_bits, bits]
            found = resolve_auto_groups(groups, tables, names)
            ids: Tensor | None = found.ids
        else:
            ids = player_ids(groups, raw.shape[1], "groups", raw.device)
        index, m = (
            (torch.arange(raw.shape[1], device=raw.device), raw.shape[1]) if ids is None else dense_players(ids)[::2]
        )
        if method == "enumerate":
            if relaxed:
                raise ValueError("relaxed=True explains a spectrum's extension; method='enumerate' has none")
            oracle = Oracle(
                bind(forward_func, args), raw.shape[1], query_device, query_dtype, options.batch_size, target
            )
            spectrum, report = _enumeration_source(raw.shape[1], m, found, query_dtype)
            self.__dict__["enumerator"] = oracle  # plain attribute: the user's model is never registered
            return spectrum, encoder, bits, ids, report
        spectrum, report = fit_validated(
            bind(forward_func, args),
            raw.shape[1],
            background=bits,
            data=data_bits,
            players=index,
            m=m,
            **checked_sizes(k, max_degree, n_queries, target),
            method=method,
            seed=seed,
            target_r2=target_r2,
            eval_data=None,
            options=replace(options, device=query_device, dtype=query_dtype),
            found=found,
        )
        return spectrum, encoder, bits, ids, report

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
        route: Route = "auto",
    ) -> FourierShap:
        """An explainer of a tree ensemble; its values equal interventional TreeSHAP's, exactly.

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
            route: ``"spectrum"`` (the exact Fourier spectrum: interactions of every order, pruning, relaxed inputs,
                saving; its size grows as ``2^depth`` per leaf), ``"leaves"`` (Shapley and Banzhaf values straight from
                the leaves for trees of any depth and native categorical splits, in memory that grows with the leaves
                and the rows; pairwise interactions and ``spectrum`` extract the spectrum on first use when it fits
                ``max_memory``, and saving is refused), or ``"auto"``: the spectrum when it is small (at most
                2,048 terms; 65,536 for oblivious trees, CatBoost's) or a spectrum-only option is set, else the
                leaves.

        Returns:
            An explainer whose ``attribute`` gives the interventional SHAP values of the model output, per input
            feature, in the background's float dtype (float32 for integer backgrounds).
        """
        route = check_route(route)
        with settings.using(max_memory=max_memory):
            ensembles = parse_model_outputs(model, target, background)
            asked = [n for n, v in (("energy", energy), ("threshold", threshold), ("relaxed", relaxed)) if v]
            asked += ["encoding"] if not (encoding is None or isinstance(encoding, str) and encoding == "auto") else []
            tables = [leaf_table(e) for e in ensembles]
            if choose_route(route, ensembles, tables, asked) == "leaves":
                found = leaf_route(ensembles, background, tables)
                spectra, families = empty_spectra(found.background.shape[1], len(ensembles))
                explainer = cls._assemble(
                    spectra,  # the leaf route holds no spectrum
                    found.source.encoder,
                    found.background,
                    found.background,
                    names=found.feature_names,
                    outputs=Outputs(found.targets, found.output_names),
                    groups=feature_groups,
                    groups_name="feature_groups",
                    relaxed=False,
                    max_memory=max_memory,
                    differentiable=False,
                    kernel=kernel,
                    families=families,
                )
                explainer.__dict__["leaves"] = found.source  # plain attribute: tensors the value plans read
                return cast(FourierShap, explainer)
            source = tree_source(model, background, target, encoding, energy, threshold, relaxed, ensembles)
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
        if self.enumerator is not None:
            raise ValueError(
                "an explainer with method='enumerate' holds no spectrum to save (it queries the model); save the "
                "model, or fit a spectrum (method='auto') to save the explainer"
            )
        if self.leaves is not None:
            raise ValueError(
                "this explainer takes the leaf route (route='leaves'): it reads the model's leaf tables and holds no "
                "spectrum to save. Save the model itself and rebuild with FourierShap.from_trees(model, background), "
                "or build it with route='spectrum' when the spectrum fits memory"
            )
        return explainer_config(self)

    @classmethod
    def _from_config(
        cls, config: dict[str, Any], state: dict[str, Tensor], forward_func: Callable[..., Tensor] | None
    ) -> FourierShap:
        """Rebuild a saved explainer (see :func:`torchxplain.fourier.explainer._persistence.explainer_from_config`)."""
        return cast(FourierShap, explainer_from_config(cls, config, state, forward_func))


__all__ = ["FourierShap"]

"""``FourierShap``: Captum-compatible interventional SHAP values from a source of a spectrum (or of exact values).

The constructor walks explainer → router → source → engine: the black box's inputs are validated and its players
found once (:func:`~torchxplain.fourier.sources._problem.black_box_problem`), the router picks the source priced in
seconds (:func:`~torchxplain.fourier.sources._route.route`), and the source builds what the explainer holds
(:class:`~torchxplain.fourier.sources._built.Built`). :meth:`FourierShap.from_spectrum` and
:meth:`FourierShap.from_trees` are the sugar for the other two sources. All values then take one path
(:mod:`~torchxplain.fourier.explainer._core`).

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
from typing import Any, cast

import torch
from torch import Tensor

from torchxplain._core import settings
from torchxplain._core.validation import check_int
from torchxplain.fourier.explainer._core import FourierExplainerCore
from torchxplain.fourier.explainer._forward_args import as_args, bind, refuse_per_row
from torchxplain.fourier.explainer._persistence import explainer_config, explainer_from_config
from torchxplain.fourier.fit import FitOptions
from torchxplain.fourier.sources import (
    SOURCES,
    KnownSpectrum,
    Route,
    TreeRoute,
    Trees,
    black_box_problem,
    refuse_foreign,
    route,
)
from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.values import Kernel

PLACEMENT_OPTIONS = ("device", "show_progress", "max_memory")
"""``FitOptions`` fields that are the explainer's own arguments (``options=`` sugar maps them there)."""


def _knobs(knobs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Knobs by name, with an ``options=FitOptions(...)`` expanded into its non-default fields; and the placement
    fields it set (device, progress, memory)."""
    options = knobs.pop("options", None)
    if options is None:
        return knobs, {}
    if not isinstance(options, FitOptions):
        raise TypeError(f"options must be a FitOptions, got {type(options).__name__}")
    defaults = FitOptions()
    given = {
        name: getattr(options, name) for name in FitOptions.names() if getattr(options, name) != getattr(defaults, name)
    }
    both = sorted(set(given) & set(knobs))
    if both:
        raise TypeError(f"{', '.join(both)} given both by name and in options=; pass each once")
    placement = {name: given.pop(name) for name in PLACEMENT_OPTIONS if name in given}
    return knobs | given, placement


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
    other row count is refused. ``player_values`` gives one
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
        encoder: the input encoding (an :class:`~torchxplain.fourier.InputEncoder`).
        fit_report: the black-box fit's :class:`~torchxplain.fourier.FitReport` (``None`` otherwise).
        pruning: a :class:`~torchxplain.fourier.PruningReport` when a tree spectrum was pruned, else ``None``.
        feature_names: the background DataFrame's columns, if any.

    Example:
        >>> import torch
        >>> import torchxplain as tx
        >>> def model(x):  # a black box on 3 binary features
        ...     return 2 * x[:, 0] + x[:, 0] * x[:, 1]
        >>> explainer = tx.FourierShap(model, background=torch.zeros(1, 3))
        >>> explainer.fit_report.method  # 2^3 combinations: tabulated, so exact
        'tabulate'
        >>> explainer.attribute(torch.tensor([[1.0, 1.0, 0.0]]))  # sums to model(x) - model(background) = 3
        tensor([[2.5000, 0.5000, 0.0000]])
    """

    def __init__(
        self,
        forward_func: Callable[..., Tensor] | None,
        background: Any,
        *,
        data: Any = None,
        method: Any = "auto",
        groups: Any = None,
        target: int | None = None,
        seed: int = 0,
        relaxed: bool = False,
        differentiable: bool = False,
        kernel: Kernel = "auto",
        max_memory: int | str | None = None,
        show_progress: bool | None = None,
        additional_forward_args: Any = None,
        device: torch.device | str | None = None,
        **knobs: Any,
    ) -> None:
        super().__init__(forward_func)
        self._black_box(
            forward_func,
            background,
            None,
            data=data,
            method=method,
            groups=groups,
            target=target,
            seed=seed,
            relaxed=relaxed,
            differentiable=differentiable,
            kernel=kernel,
            max_memory=max_memory,
            show_progress=show_progress,
            additional_forward_args=additional_forward_args,
            device=device,
            knobs=knobs,
        )

    @classmethod
    def _for_rows(cls, forward_func: Callable[..., Tensor], background: Any, rows: Any, **kwargs: Any) -> FourierShap:
        """The constructor when the rows to explain are known (``explain_after_fit``): the router prices the
        routes for those rows instead of :data:`~torchxplain.fourier.sources._route.ASSUMED_ROWS` like ``data``."""
        explainer = cls.__new__(cls)
        FourierExplainerCore.__init__(explainer, forward_func)
        names = ["data", "method", "groups", "target", "seed", "relaxed", "differentiable", "kernel", "max_memory"]
        names += ["show_progress", "additional_forward_args", "device"]
        defaults = {"method": "auto", "seed": 0, "relaxed": False, "differentiable": False, "kernel": "auto"}
        given = {name: kwargs.pop(name, defaults.get(name)) for name in names}
        explainer._black_box(forward_func, background, rows, **given, knobs=kwargs)
        return explainer

    def _black_box(
        self,
        forward_func: Callable[..., Tensor] | None,
        background: Any,
        rows: Any,
        *,
        data: Any,
        method: Any,
        groups: Any,
        target: Any,
        seed: Any,
        relaxed: bool,
        differentiable: bool,
        kernel: Kernel,
        max_memory: int | str | None,
        show_progress: bool | None,
        additional_forward_args: Any,
        device: torch.device | str | None,
        knobs: dict[str, Any],
    ) -> None:
        """explainer → router → source → engine (module docstring)."""
        if forward_func is None or not callable(forward_func):
            raise TypeError(
                "forward_func must be the model to fit (a callable on (B, n) tensors); for a known spectrum "
                "use FourierShap.from_spectrum, for a tree ensemble FourierShap.from_trees"
            )
        knobs, placement = _knobs(knobs)
        device = placement.get("device", device)
        max_memory = placement.get("max_memory", max_memory)
        show_progress = placement.get("show_progress", show_progress)
        if isinstance(target, Tensor) and target.numel() == 1 and not target.is_floating_point():
            target = int(target)
        args = as_args(additional_forward_args)
        refuse_per_row(args, {"background": background, "data": data})  # Captum's per-example arguments
        with settings.using(max_memory=max_memory, show_progress=show_progress):
            problem = black_box_problem(
                bind(forward_func, args),
                background,
                data,
                groups,
                target=check_int(target, "target", minimum=0, optional=True),
                seed=check_int(seed, "seed", minimum=0),
                device=device,
                rows_to_explain=rows,
            )
            if relaxed and problem.continuous:
                raise ValueError(
                    f"relaxed=True extends a spectrum of binary inputs to real values, but {problem.why_continuous}; "
                    "drop it (continuous rows are explained at their own values)"
                )
            chosen = route(problem, method, knobs)
            built = chosen.source.build(problem, chosen.reason)
        if built.report is not None:
            built = replace(built, report=replace(built.report, route=chosen.as_records()))
        self._setup(built, relaxed=relaxed, max_memory=max_memory, differentiable=differentiable, kernel=kernel)
        self.__dict__["route"] = chosen
        self.__dict__["additional_forward_args"] = args
        self.show_progress = show_progress

    route: Route | None = None
    """The router's decision (source, reason, candidates with predicted seconds) of a black box; ``None`` else."""

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
        **knobs: Any,
    ) -> FourierShap:
        """An explainer of a known spectrum (the :class:`~torchxplain.fourier.KnownSpectrum` source);
        ``forward_func`` is its :class:`~torchxplain.SparseFourierSurrogate`.

        Args:
            spectrum: ``k`` frequencies on ``n`` binary features.
            background: ``(B, n)`` binary background rows.
            groups, relaxed, max_memory, differentiable, kernel: as in the constructor.
            **knobs: refused: a known spectrum has no knobs of its own (the message names the source a knob
                belongs to).
        """
        refuse_foreign(knobs, KnownSpectrum, SOURCES)
        built = KnownSpectrum().build(spectrum, background, groups)
        return cast(
            FourierShap,
            cls._assemble(built, relaxed=relaxed, max_memory=max_memory, differentiable=differentiable, kernel=kernel),
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
        route: TreeRoute = "auto",
        **knobs: Any,
    ) -> FourierShap:
        """An explainer of a tree ensemble (the :class:`~torchxplain.fourier.Trees` source); its values equal
        interventional TreeSHAP's, exactly.

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
                the leaves for trees of any depth and native categorical splits from ``category`` DataFrame columns,
                in memory that grows with the leaves and the rows; pairwise interactions and ``spectrum`` extract the
                spectrum on first use when it fits ``max_memory``, and saving is refused), or ``"auto"``: the
                spectrum when it is small (at most 2,048 terms; 65,536 for oblivious trees, CatBoost's) or a
                spectrum-only option is set, else the leaves.
            **knobs: refused (the message names the source a knob belongs to).

        Returns:
            An explainer whose ``attribute`` gives the interventional SHAP values of the model output, per input
            feature, in the background's float dtype (float32 for integer backgrounds).
        """
        refuse_foreign(knobs, Trees, SOURCES)
        source = Trees(encoding=encoding, energy=energy, threshold=threshold, route=route)
        with settings.using(max_memory=max_memory):
            built = source.build(model, background, target, relaxed, feature_groups)
        return cast(
            FourierShap,
            cls._assemble(built, relaxed=relaxed, max_memory=max_memory, differentiable=False, kernel=kernel),
        )

    def _route_reason(self) -> str | None:
        """The provider's reasons (joined), else the black-box router's (:attr:`route`)."""
        reason = super()._route_reason()
        return reason if reason is not None or self.route is None else self.route.reason

    def _config(self) -> dict[str, Any]:
        """JSON-able metadata for ``save`` (see :func:`torchxplain.fourier.explainer._persistence.explainer_config`)."""
        self._refuse("save")
        return explainer_config(self)

    @classmethod
    def _from_config(
        cls, config: dict[str, Any], state: dict[str, Tensor], forward_func: Callable[..., Tensor] | None
    ) -> FourierShap:
        """Rebuild a saved explainer (see :func:`torchxplain.fourier.explainer._persistence.explainer_from_config`)."""
        return cast(FourierShap, explainer_from_config(cls, config, state, forward_func))


__all__ = ["FourierShap"]

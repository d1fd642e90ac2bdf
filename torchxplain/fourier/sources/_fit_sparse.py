"""``fit_sparse_fourier``: a black box's sparse spectrum by queries, as a function (no explainer).

With a background it goes through the router like ``FourierShap(model, background)`` does, among the sources that
give a spectrum (:class:`~torchxplain.fourier.Tabulate`, :class:`~torchxplain.fourier.Fit`, or a requested
:class:`~torchxplain.fourier.CubeFit`); without one it fits the uniform cube (:func:`~torchxplain.fourier.sources.
_route.route_cube` picks the method).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch
from torch import Tensor

from torchxplain._core import settings
from torchxplain._core.validation import check_int
from torchxplain.fourier.fit import (
    UNIFORM_DEFAULT_K,
    FitOptions,
    FitReport,
    Oracle,
    binary_rows,
    fit_options_from,
    fit_validated,
    model_placement,
    r2_score,
)
from torchxplain.fourier.sources._fit import PLACEMENT, check_target_r2
from torchxplain.fourier.sources._problem import black_box_problem
from torchxplain.fourier.sources._route import route, route_cube
from torchxplain.fourier.sources._tabulate import Tabulate
from torchxplain.fourier.spectrum import FourierSpectrum

CUBE = ("auto", "exact", "hashing", "regression")


def fit_sparse_fourier(
    f: Callable[[Tensor], Tensor],
    n_features: int,
    k: int | None = None,
    max_degree: int | None = None,
    n_queries: int | None = None,
    method: str = "auto",
    seed: int | torch.Generator = 0,
    *,
    background: Any = None,
    data: Any = None,
    groups: Any = None,
    target: int | None = None,
    target_r2: float | None = 0.99,
    eval_data: Any = None,
    options: FitOptions | None = None,
    return_report: bool = False,
    **option_fields: Any,
) -> FourierSpectrum | tuple[FourierSpectrum, FitReport]:
    """Fit a sparse spectrum ``h(x) = Σ_f a_f (-1)^{<f,x>}`` to a black box by querying it (module docstring).

    Args:
        f: any callable mapping a ``(B, n)`` float tensor of 0/1 inputs to ``(B,)`` or ``(B, C)`` outputs, called
            under ``no_grad`` in batches, in the dtype of :class:`~torchxplain.settings.dtype_policy`.
        n_features: ``n``, the number of binary inputs.
        k: most Walsh terms kept (``None``: as many as the fit finds).
        max_degree: most players per term (``None``: the fit's ladder, 2 to 4); a degree cap of the cube methods.
        n_queries: query budget of the fit (``None``: each route's default).
        method: ``"auto"`` (the router: tabulation when the players' level grid is small and cheapest, else a fit on
            hybrid points), ``"tabulate"``, ``"fit"`` (``"hybrid"``), or a cube method ``"exact"``, ``"hashing"``,
            ``"regression"``.
        seed: int or ``torch.Generator``; same seed, same spectrum (budgets count queries, not seconds).
        background: ``(D, n)`` binary background rows of the SHAP values to come: the fit is held to hybrid points
            of rows with it.
        data: ``(R, n)`` binary rows like the ones to be explained (default: the background, with each single bit
            constant over it also at its other value; a grouped player constant over it is refused).
        groups: ``(n,)`` integer player id per feature, ``"auto"`` (one-hot blocks found in ``data`` and
            ``background``) or ``None`` (singletons). Explain with the same players.
        target: output column for multi-output ``f``.
        target_r2: the held-out R² the fit is held to (``None``: no check); below it a ``FitQualityWarning``.
        eval_data: optional ``(rows, n)`` binary inputs on which the report also gives the R².
        options: the other knobs (:class:`~torchxplain.fourier.FitOptions`).
        return_report: also return a :class:`~torchxplain.fourier.FitReport`.
        **option_fields: :class:`~torchxplain.fourier.FitOptions` fields by name, merged into ``options``.

    Returns:
        A :class:`~torchxplain.FourierSpectrum` with amplitudes in ``f``'s output dtype, sorted by decreasing
        ``|a_f|``; with ``return_report=True``, ``(spectrum, FitReport)``.

    Raises:
        ValueError: continuous rows (``FourierShap(f, background, data=...)`` fits them and keeps the threshold
            encoding the spectrum is on), or a knob the chosen route does not take.
    Example:
        >>> import torch
        >>> import torchxplain as tx
        >>> spec = tx.fit_sparse_fourier(lambda x: 1 + 2 * x[:, 0], n_features=3)  # = 2 - (-1)^x0
        >>> spec.frequencies.int(), spec.amplitudes
        (tensor([[0, 0, 0],
                [1, 0, 0]], dtype=torch.int32), tensor([ 2., -1.]))
    """
    if not callable(f):
        raise TypeError(f"f must be callable on a (B, n) tensor, got {type(f).__name__}")
    opts = fit_options_from({**option_fields, "options": options})
    n = check_int(n_features, "n_features", minimum=1)
    check_target_r2(target_r2)
    if method not in CUBE + ("tabulate", "fit", "hybrid"):
        raise ValueError(
            f"method must be one of {list(CUBE + ('tabulate', 'fit', 'hybrid'))} (FourierShap also takes 'enumerate'), "
            f"got {str(method)[:40]!r}"
        )
    if background is None:
        if data is not None or groups is not None or method not in CUBE:
            raise ValueError(
                "data=, groups= and the methods 'tabulate' and 'fit' hold the fit to hybrid points of rows with a "
                f"background: pass background= (the rows SHAP values will be computed against); without one the "
                f"methods are {list(CUBE)}"
            )
        spectrum, report = _fit_cube(f, n, k, max_degree, n_queries, method, seed, target, target_r2, eval_data, opts)
    else:
        sizes = (k, max_degree, n_queries)
        spectrum, report = _fit_hybrid(f, n, sizes, method, seed, background, data, groups, target, target_r2, opts)
        if eval_data is not None:
            report = _with_eval(report, spectrum, f, eval_data, n, target, opts)
    return (spectrum, report) if return_report else spectrum


def _fit_cube(
    f: Callable[[Tensor], Tensor],
    n: int,
    k: int | None,
    max_degree: int | None,
    n_queries: int | None,
    method: str,
    seed: int | torch.Generator,
    target: int | None,
    target_r2: float | None,
    eval_data: Any,
    opts: FitOptions,
) -> tuple[FourierSpectrum, FitReport]:
    device, dtype = model_placement(f, opts.device, opts.dtype, None)
    opts = replace(opts, device=device, dtype=dtype)
    size = k or UNIFORM_DEFAULT_K
    support = None if opts.support is None else binary_rows(opts.support, "support", n, device)
    used, reason = route_cube(method, n, size, max_degree, n_queries, support)
    return fit_validated(
        f,
        n,
        background=None,
        data=None,
        players=torch.arange(n, device=device),
        m=n,
        k=check_int(k, "k", minimum=1, optional=True),
        max_degree=check_int(max_degree, "max_degree", minimum=0, optional=True),
        n_queries=check_int(n_queries, "n_queries", minimum=1, optional=True),
        method=used,
        seed=seed,
        target=check_int(target, "target", minimum=0, optional=True),
        target_r2=target_r2,
        eval_data=None if eval_data is None else binary_rows(eval_data, "eval_data", n, device),
        options=opts,
        reason=reason,
    )


def _fit_hybrid(
    f: Callable[[Tensor], Tensor],
    n: int,
    sizes: tuple[int | None, int | None, int | None],
    method: str,
    seed: int | torch.Generator,
    background: Any,
    data: Any,
    groups: Any,
    target: int | None,
    target_r2: float | None,
    opts: FitOptions,
) -> tuple[FourierSpectrum, FitReport]:
    if isinstance(seed, torch.Generator):
        seed = seed.initial_seed()
    with settings.using(max_memory=opts.max_memory, show_progress=opts.show_progress):
        problem = black_box_problem(
            f,
            background,
            data,
            groups,
            target=check_int(target, "target", minimum=0, optional=True),
            seed=int(seed),
            device=opts.device,
            dtype=opts.dtype,
        )
        if problem.n_features != n:
            raise ValueError(f"background has {problem.n_features} features, but n_features={n}")
        if problem.continuous:
            raise ValueError(
                f"fit_sparse_fourier fits binary inputs, but {problem.why_continuous}. Continuous rows are fitted "
                "on threshold codes of their columns by FourierShap(f, background, data=rows), which keeps the "
                "encoding the spectrum is on (explainer.spectrum, explainer.encoder)"
            )
        defaults = FitOptions()
        knobs = {
            name: getattr(opts, name)
            for name in FitOptions.names()
            if name not in PLACEMENT and getattr(opts, name) != getattr(defaults, name)
        }
        given = dict(zip(("k", "max_degree", "n_queries"), sizes))
        knobs |= {name: value for name, value in given.items() if value is not None}
        if target_r2 != Tabulate.target_r2:
            knobs["target_r2"] = target_r2
        chosen = route(problem, method, knobs, spectral=True)
        built = chosen.source.build(problem, chosen.reason)
    assert built.report is not None  # every spectral source reports its fit
    return built.spectra[0], built.report


def _with_eval(
    report: FitReport,
    spectrum: FourierSpectrum,
    f: Callable[[Tensor], Tensor],
    eval_data: Any,
    n: int,
    target: int | None,
    opts: FitOptions,
) -> FitReport:
    """The report with the R² on ``eval_data`` (queries counted as validation)."""
    device, dtype = model_placement(f, opts.device, opts.dtype, None)
    rows = binary_rows(eval_data, "eval_data", n, device)
    oracle = Oracle(f, n, device, dtype, opts.batch_size, target)
    oracle.phase = "validation"
    r2 = r2_score(oracle(rows), spectrum.evaluate_unchecked(rows.to(spectrum.dtype)).to(torch.float64))
    return replace(report, r2_eval=r2, n_validation_queries=report.n_validation_queries + oracle.rows)

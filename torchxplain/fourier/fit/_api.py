"""Fit a sparse Fourier spectrum to a black box from queries: ``fit_sparse_fourier`` and its ``FitReport``.

Two regimes:

* **With a background** (``background=``, optionally ``data=`` and ``groups=``): the fit is held to where
  interventional SHAP evaluates the model, hybrid points ``(x_S, b_{~S})``
  (:mod:`~torchxplain.fourier.fit.hybrid._sampler`). The headline of the report is the R² on fresh held-out
  hybrids, next to the R² of the SHAP values estimated on held-out rows; ``target_r2`` applies to the latter by
  default (``target_metric``).
  ``method="hybrid"`` fits on hybrid samples in an identifiable player basis with an escalation ladder
  (:mod:`~torchxplain.fourier.fit.hybrid._ladder`); ``"exact"`` queries the whole cube and keeps the smallest
  ``k`` that meets the target; ``"hashing"``/``"regression"`` fit on the cube (exact for exactly sparse models
  such as trees) and are checked on hybrids. ``"auto"`` takes ``"exact"`` up to ``n = 16``, else ``"hybrid"``,
  then the sparse WHT by hashing if the ladder missed the target and budget is left.
* **Without a background**: the fit is on uniform inputs of the cube (``"exact"``, ``"hashing"``,
  ``"regression"``; :mod:`~torchxplain.fourier.fit.cube._uniform`), the headline is the R² on uniform inputs.

A checked R² below ``target_r2`` raises a :class:`FitQualityWarning` that says what to change.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal

import torch
from torch import Tensor

from torchxplain._core import check_int, make_generator, settings
from torchxplain.fourier.fit._options import binary_rows, players, validation_seed
from torchxplain.fourier.fit._oracle import Oracle, model_placement
from torchxplain.fourier.fit._report import FitQualityWarning, FitReport, TargetMetric, r2_score, warn_if_below_target
from torchxplain.fourier.fit.cube._regression import uniform_inputs
from torchxplain.fourier.fit.cube._uniform import AUTO_EXACT_MAX_FEATURES, choose_uniform, fit_uniform, plan_hashing
from torchxplain.fourier.fit.hybrid._basis import build_basis, check_one_hot
from torchxplain.fourier.fit.hybrid._checks import path_validation
from torchxplain.fourier.fit.hybrid._ladder import (
    Budget,
    Scorer,
    Target,
    advice,
    fit_hybrid,
    hashing_fallback,
    pick_k_exact,
)
from torchxplain.fourier.fit.hybrid._sampler import HybridSampler
from torchxplain.fourier.spectrum._spectrum import FourierSpectrum

Method = Literal["auto", "exact", "hashing", "regression", "hybrid"]
METHODS = ("auto", "exact", "hashing", "regression", "hybrid")
NUMERICAL_ZERO = 1e-10
"""Terms with ``|a_f| <= NUMERICAL_ZERO × max |a|`` after the fit are dropped as rounding noise."""
UNIFORM_DEFAULT_K = 256
"""``k`` of the cube methods when ``k=None``."""
HASHING_FALLBACK_K = (1024, 4096)
"""``method="auto"`` with a background tries the sparse WHT at these ``k`` when the hybrid ladder missed."""

__all__ = ["METHODS", "FitQualityWarning", "FitReport", "fit_sparse_fourier"]


def fit_sparse_fourier(
    f: Callable[[Tensor], Tensor],
    n_features: int,
    k: int | None = None,
    max_degree: int | None = None,
    n_queries: int | None = None,
    method: Method = "auto",
    batch_size: int = 4096,
    seed: int | torch.Generator = 0,
    device: torch.device | str | None = None,
    target: int | None = None,
    eval_data: Tensor | None = None,
    show_progress: bool | None = None,
    return_report: bool = False,
    *,
    background: Tensor | None = None,
    data: Tensor | None = None,
    groups: Tensor | None = None,
    one_hot: bool | None = None,
    target_r2: float | None = 0.99,
    target_metric: TargetMetric = "shap",
    time_budget: float | None = 120.0,
    dtype: torch.dtype | None = None,
    support: Tensor | None = None,
    threshold: float | None = None,
    n_validation: int = 8192,
    n_bits: int | None = None,
    n_hashes: int | None = None,
    n_delays: int | None = None,
    n_refit: int | None = None,
    singleton_tol: float = 0.3,
    max_memory: int | str | None = None,
) -> FourierSpectrum | tuple[FourierSpectrum, FitReport]:
    """Fit a sparse spectrum ``h(x) = Σ_f a_f (-1)^{<f,x>}`` to a black box by querying it (module docstring).

    Args:
        f: any callable mapping a ``(B, n)`` float tensor of 0/1 inputs to ``(B,)`` or ``(B, C)`` outputs,
            called under ``no_grad`` in batches; queried in the dtype policy of :mod:`~torchxplain.fourier.fit._oracle`
            (an ``nn.Module``'s parameter dtype, else the dtype of ``background``/``data``, else the default).
        n_features: ``n``, the number of binary inputs.
        k: most Walsh terms kept (the speed knob of the SHAP values). ``None``: with a background, as many as
            the target needs (up to the ladder's largest stage); without, 256.
        max_degree: cap on the degree (players per term for ``"hybrid"``; ``None``: the ladder's, 2 to 4).
        n_queries: query budget for the fit (``None``: unlimited for ``"hybrid"``, each method's default else).
        method: ``"auto"``, ``"exact"``, ``"hashing"``, ``"regression"`` or ``"hybrid"`` (module docstring).
        batch_size: rows per call of ``f``.
        seed: int or ``torch.Generator``; same seed, same spectrum.
        device: where queries are built and ``f`` is called (default: ``f``'s parameters, else the rows', cpu).
        target: output column for multi-output ``f``.
        eval_data: optional ``(rows, n)`` binary inputs on which the report also gives the R².
        show_progress: progress bars (``None``: ``tx.settings.show_progress``).
        return_report: also return a :class:`FitReport`.
        background: ``(D, n)`` binary background rows of the SHAP values to come: turns on the hybrid regime.
        data: ``(R, n)`` binary rows like the ones to be explained (e.g. the training set); default: the
            background. The fit holds for hybrids of these rows with the background.
        groups: ``(n,)`` integer player id per feature (one player per categorical variable); default
            singletons. Hybrids are formed at the player level, so explain with the same players.
        one_hot: ``True`` declares every multi-feature group one-hot and checks it on ``data`` and
            ``background`` (an error names the first bad row and group); ``None``/``False``: each group is
            coded by the patterns it takes (one-hot groups get reference coding either way).
        target_r2: the held-out R² the fit is held to (``None``: no check). Below it a
            :class:`FitQualityWarning` says what to change; ``"auto"``/``"hybrid"``/``"exact"`` escalate to reach it.
        target_metric: with a background, what ``target_r2`` applies to: ``"shap"``, the R² of the SHAP values
            on held-out rows, estimated from permutation paths (:mod:`~torchxplain.fourier.fit.hybrid._checks`), or
            ``"hybrid"``, the surrogate's R² on held-out hybrid points (stricter: a surrogate can be right on the
            averages SHAP takes while off point by point). Without a background the uniform R² is checked.
        time_budget: seconds the hybrid ladder may spend (``None``: unlimited).
        dtype: dtype of the query tensors (overrides the policy above).
        support: ``(s, n)`` bool candidate frequencies for ``"regression"``.
        threshold: drop terms with ``|a_f| < threshold`` after the fit.
        n_validation: held-out points per R² check (hybrid and uniform; ``0`` skips the uniform one).
        n_bits, n_hashes, n_delays, n_refit, singleton_tol: ``"hashing"`` sizes
            (:func:`~torchxplain.fourier.fit.cube._uniform.plan_hashing`).
        max_memory: memory budget for chunked intermediates (bytes or e.g. ``"1GB"``).

    Returns:
        A :class:`FourierSpectrum` on ``device`` with amplitudes in ``f``'s output dtype, sorted by decreasing
        ``|a_f|``; with ``return_report=True``, ``(spectrum, FitReport)``.
    """
    if not callable(f):
        raise TypeError(f"f must be callable on a (B, n) tensor, got {type(f).__name__}")
    n = check_int(n_features, "n_features", minimum=1)
    k = check_int(k, "k", minimum=1, optional=True)
    max_degree = check_int(max_degree, "max_degree", minimum=0, optional=True)
    n_queries = check_int(n_queries, "n_queries", minimum=1, optional=True)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    n_validation = check_int(n_validation, "n_validation", minimum=0)
    if isinstance(target, Tensor) and target.numel() == 1 and not target.is_floating_point():
        target = int(target)
    target = check_int(target, "target", minimum=0, optional=True)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if threshold is not None and not threshold >= 0:
        raise ValueError(f"threshold must be a non-negative amplitude (or None), got {threshold!r}")
    if not 0 < singleton_tol < 1:
        raise ValueError(f"singleton_tol must be in (0, 1), got {singleton_tol}")
    if target_r2 is not None and (
        isinstance(target_r2, bool) or not isinstance(target_r2, (int, float)) or target_r2 > 1
    ):
        raise ValueError(f"target_r2 must be a number <= 1 or None, got {target_r2!r}")
    if target_metric not in ("shap", "hybrid"):
        raise ValueError(f"target_metric must be 'shap' or 'hybrid', got {target_metric!r}")
    goal = Target(None if target_r2 is None else float(target_r2), target_metric)
    if time_budget is not None and (
        isinstance(time_budget, bool) or not isinstance(time_budget, (int, float)) or not time_budget > 0
    ):
        raise ValueError(f"time_budget must be a positive number of seconds or None, got {time_budget!r}")
    if background is None and (data is not None or groups is not None or one_hot or method == "hybrid"):
        raise ValueError(
            "data=, groups=, one_hot= and method='hybrid' fit on hybrid points of rows with a background: "
            "pass background= (the rows SHAP values will be computed against)"
        )
    first = next((t for t in (background, data) if isinstance(t, Tensor)), None)
    device, dtype = model_placement(f, device, dtype, first)
    method_used: str = method
    stages: list[dict[str, Any]] = []
    cube_energy: tuple[float, float] | None
    with settings.using(max_memory=max_memory, show_progress=show_progress):
        oracle = Oracle(f, n, device, dtype, batch_size, target)
        gen = make_generator(seed, device)
        uniform: dict[str, Any] = {
            "generator": gen,
            "device": device,
            "batch_size": batch_size,
            "support": None if support is None else binary_rows(support, "support", n, device),
            "hashing_sizes": {"n_bits": n_bits, "n_hashes": n_hashes, "n_delays": n_delays, "n_refit": n_refit},
            "singleton_tol": singleton_tol,
        }
        start = time.perf_counter()
        hybrid: _Hybrid | None = None
        if background is None:
            method_used, reason = (
                (method, "requested")
                if method != "auto"
                else choose_uniform(n, k or UNIFORM_DEFAULT_K, max_degree, n_queries, uniform["support"])
            )
            fit = fit_uniform(oracle, n, k or UNIFORM_DEFAULT_K, max_degree, n_queries, method_used, **uniform)
            spectrum, params = _spectrum(fit.frequencies, fit.amplitudes, k, threshold), fit.params
            hint = "Raise k" + (" (or drop max_degree)" if max_degree is not None else "") + ", or pass background= "
            hint += "(and data=, rows like those you explain) to fit where SHAP evaluates the model."
            cube_energy = fit.cube_energy
        else:
            hybrid = _Hybrid(background, data, groups, one_hot, n, device, n_validation, seed, oracle)
            deadline = None if time_budget is None else start + float(time_budget)
            budget = Budget(n_queries, deadline)
            spectrum, method_used, reason, stages, params, hint, cube_energy = _fit_hybrid(
                hybrid, oracle, method, n, k, max_degree, n_queries, time_budget, goal, budget, uniform, gen
            )
            spectrum = _spectrum(spectrum.frequencies, spectrum.amplitudes.to(torch.float64), k, threshold)
        wall = time.perf_counter() - start
        fit_queries = oracle.rows
        report = _report(
            spectrum,
            oracle,
            hybrid,
            eval_data,
            n_validation,
            seed,
            cube_energy,
            method=method_used,
            reason=reason,
            n_features=n,
            k=k if k is not None or hybrid is not None else UNIFORM_DEFAULT_K,
            max_degree=max_degree,
            n_queries=fit_queries,
            wall_time_s=wall,
            target_r2=target_r2,
            target_metric=target_metric,
            stages=tuple(stages),
            params=params,
            device=device,
        )
    warn_if_below_target(report, hint + " Or lower target_r2 (None turns the check off).")
    spectrum = spectrum.to(oracle.out_dtype or torch.get_default_dtype())
    return (spectrum, report) if return_report else spectrum


def _spectrum(freqs: Tensor, amp: Tensor, k: int | None, threshold: float | None) -> FourierSpectrum:
    """The fitted terms without rounding-level amplitudes, cut to ``k`` and ``threshold``."""
    zero = NUMERICAL_ZERO * float(amp.abs().max()) if amp.numel() else 0.0
    return FourierSpectrum(freqs, amp).prune(k=k, threshold=max(threshold or 0.0, zero))


class _Hybrid:
    """The hybrid regime's validated rows, players, sampler and held-out paths (queried once)."""

    def __init__(
        self,
        background: object,
        data: object,
        groups: object,
        one_hot: bool | None,
        n: int,
        device: torch.device,
        n_validation: int,
        seed: int | torch.Generator,
        oracle: Oracle,
    ) -> None:
        self.background = binary_rows(background, "background", n, device)
        self.rows = self.background if data is None else binary_rows(data, "data", n, device)
        self.players, self.m = players(groups, n, device)
        if one_hot:
            check_one_hot(self.background, self.players, self.m, "background")
            if data is not None:
                check_one_hot(self.rows, self.players, self.m, "data")
        self.sampler = HybridSampler(self.rows, self.background, self.players, self.m)
        oracle.phase = "validation"
        gen = make_generator(validation_seed(seed), device)
        self.validation = path_validation(self.sampler, max(n_validation, 256), oracle, gen)
        self.score = Scorer(self.validation)
        oracle.rows = 0  # the held-out queries are counted as validation queries in the report


def _fit_hybrid(
    h: _Hybrid,
    oracle: Oracle,
    method: str,
    n: int,
    k: int | None,
    max_degree: int | None,
    n_queries: int | None,
    time_budget: float | None,
    goal: Target,
    budget: Budget,
    uniform: dict[str, Any],
    gen: torch.Generator,
) -> tuple[FourierSpectrum, str, str, list[dict[str, Any]], dict[str, Any], str, tuple[float, float] | None]:
    """Fit in the hybrid regime: ``(spectrum, method, reason, stages, params, advice, cube energy)``."""
    reason = "requested"
    if method == "auto":
        exact_ok = n <= AUTO_EXACT_MAX_FEATURES and (n_queries is None or n_queries >= 2**n)
        method = "exact" if exact_ok else "hybrid"
        reason = (
            f"auto: all 2^{n} inputs fit the budget, so the exact WHT cut to the smallest k meeting the target"
            if exact_ok
            else f"auto: n={n} is too large to query the whole cube, so a fit on hybrid samples"
        )
    if method != "hybrid":
        fit = fit_uniform(
            oracle, n, k or (2**n if method == "exact" else UNIFORM_DEFAULT_K), max_degree, n_queries, method, **uniform
        )
        spectrum = FourierSpectrum(fit.frequencies, fit.amplitudes)
        if method == "exact":
            spectrum, stages = pick_k_exact(fit.frequencies, fit.amplitudes, h.score, k, goal)
        else:
            stages = [{"method": method, "k": len(spectrum), **h.score(spectrum)}]
        hint = "Raise k, or use method='hybrid' to fit where SHAP evaluates the model."
        return spectrum, method, reason, stages, fit.params, hint, fit.cube_energy
    basis = build_basis(torch.cat((h.rows, h.background)), h.players, h.m)
    spectrum, stages, why = fit_hybrid(
        oracle,
        h.sampler,
        basis,
        h.score,
        k=k,
        max_degree=max_degree,
        budget=budget,
        target=goal,
        generator=gen,
    )
    params: dict[str, Any] = {"units": basis.n_units, "one_hot_players": sum(basis.one_hot), "stopped": why}
    if reason.startswith("auto") and goal.value is not None and why not in ("target met", "time budget"):

        def run(size: int, left: int | None) -> FourierSpectrum:
            fit = fit_uniform(oracle, n, size, max_degree, left, "hashing", **uniform)
            return FourierSpectrum(fit.frequencies, fit.amplitudes)

        def plan_queries(size: int, left: int | None) -> int | None:
            try:
                return plan_hashing(n, size, max_degree, left, **uniform["hashing_sizes"]).total_queries(n)
            except ValueError:
                return None

        sizes = HASHING_FALLBACK_K if k is None else (k,)
        spectrum, method = hashing_fallback(run, plan_queries, oracle, sizes, h.score, spectrum, stages, goal, budget)
        if method == "hashing":
            reason += "; the ladder missed the target and the sparse WHT by hashing did better"
    return spectrum, method, reason, stages, params, advice(why, k, n_queries, time_budget), None


def _report(
    spectrum: FourierSpectrum,
    oracle: Oracle,
    hybrid: _Hybrid | None,
    eval_data: object,
    n_validation: int,
    seed: int | torch.Generator,
    cube_energy: tuple[float, float] | None,
    device: torch.device,
    **fields: Any,
) -> FitReport:
    """The report's R² checks (queries counted as validation) and fields."""
    start = time.perf_counter()
    oracle.phase = "validation"
    r2_uniform = r2_eval = r2_hybrid = r2_shap = r2_shap_se = r2_background = None
    if cube_energy is not None:  # Parseval on the whole cube: the residual energy is what was dropped
        total, variance = cube_energy
        dropped = total - float((spectrum.amplitudes**2).sum())
        r2_uniform = 1.0 - max(dropped, 0.0) / variance if variance > 0 else 1.0
    elif n_validation:
        x = uniform_inputs(n_validation, spectrum.n_features, make_generator(validation_seed(seed) + 1, device), device)
        r2_uniform = r2_score(oracle(x), spectrum.evaluate(x))
    if eval_data is not None:
        rows = binary_rows(eval_data, "eval_data", spectrum.n_features, device)
        r2_eval = r2_score(oracle(rows), spectrum.evaluate(rows))
    n_val = oracle.rows - fields["n_queries"]
    if hybrid is not None:
        scores = hybrid.score(spectrum)
        r2_hybrid, r2_shap, r2_shap_se = scores["r2"], scores["r2_shap"], scores["r2_shap_se"]
        r2_background = r2_score(oracle(hybrid.background), spectrum.evaluate(hybrid.background))
        n_val = oracle.rows - fields["n_queries"] + hybrid.validation.n_queries
    return FitReport(
        n_terms=len(spectrum),
        n_validation_queries=n_val,
        validation_time_s=time.perf_counter() - start,
        r2_uniform=r2_uniform,
        r2_eval=r2_eval,
        r2_hybrid=r2_hybrid,
        r2_shap=r2_shap,
        r2_shap_se=r2_shap_se,
        r2_background=r2_background,
        n_players=None if hybrid is None else hybrid.m,
        **fields,
    )

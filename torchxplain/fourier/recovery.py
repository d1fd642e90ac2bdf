"""Fit a sparse Fourier spectrum to a black box from queries: ``fit_sparse_fourier`` and its ``FitReport``.

Two regimes:

* **With a background** (``background=``, optionally ``data=`` and ``groups=``): the fit is held to where
  interventional SHAP evaluates the model, hybrid points ``(x_S, b_{~S})`` (:mod:`~torchxplain.fourier.hybrid`).
  The headline of the report is the R² on fresh held-out hybrids, and ``target_r2`` applies to it.
  ``method="hybrid"`` fits on hybrid samples in an identifiable player basis with an escalation ladder
  (:mod:`~torchxplain.fourier.hybrid_recovery`); ``"exact"`` queries the whole cube and keeps the smallest
  ``k`` that meets the target; ``"hashing"``/``"regression"`` fit on the cube (exact for exactly sparse models
  such as trees) and are checked on hybrids. ``"auto"`` takes ``"exact"`` up to ``n = 16``, else ``"hybrid"``,
  then the sparse WHT by hashing if the ladder missed the target and budget is left.
* **Without a background**: the fit is on uniform inputs of the cube (``"exact"``, ``"hashing"``,
  ``"regression"``; :mod:`~torchxplain.fourier.uniform_fit`), the headline is the R² on uniform inputs.

A headline R² below ``target_r2`` raises a :class:`FitQualityWarning` that says what to change.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal

import torch
from torch import Tensor

from torchxplain._core import check_binary, check_matrix, make_generator, settings
from torchxplain._core.inputs import to_tensor
from torchxplain.fourier.fit_report import FitQualityWarning, FitReport, r2_score, warn_if_below_target
from torchxplain.fourier.hybrid import HybridSampler
from torchxplain.fourier.hybrid_recovery import Budget, Validation, fit_hybrid, pick_k_exact
from torchxplain.fourier.oracle import Oracle, model_placement
from torchxplain.fourier.player_basis import build_basis, check_one_hot
from torchxplain.fourier.regression import uniform_inputs
from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.uniform_fit import AUTO_EXACT_MAX_FEATURES, choose_uniform, fit_uniform, plan_hashing

Method = Literal["auto", "exact", "hashing", "regression", "hybrid"]
METHODS = ("auto", "exact", "hashing", "regression", "hybrid")
NUMERICAL_ZERO = 1e-10
"""Terms with ``|a_f| <= NUMERICAL_ZERO × max |a|`` after the fit are dropped as rounding noise."""
UNIFORM_DEFAULT_K = 256
"""``k`` of the cube methods when ``k=None``."""
HASHING_FALLBACK_K = (1024, 4096)
"""``method="auto"`` with a background tries the sparse WHT at these ``k`` when the hybrid ladder missed."""

__all__ = ["METHODS", "FitQualityWarning", "FitReport", "fit_sparse_fourier"]


def _check_int(value: object, name: str, minimum: int, allow_none: bool = False) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def _rows(x: object, name: str, n: int, device: torch.device) -> tuple[Tensor, Tensor]:
    """``(as given (a tensor), bool copy on device)`` of a binary ``(rows, n)`` input."""
    t = to_tensor(x, name, device=device, ndim=2).tensor
    check_matrix(t, name, n)
    check_binary(t, name)
    return t, t.to(device=device).bool()


def _players(groups: object, n: int, device: torch.device) -> tuple[Tensor, int]:
    """``(player id 0..m-1 per feature, m)`` from any integer ids (renumbered in sorted order)."""
    if groups is None:
        return torch.arange(n, device=device), n
    t = to_tensor(groups, "groups", device=device, ndim=1).tensor
    if t.is_floating_point() or t.dtype == torch.bool or t.shape != (n,):
        raise ValueError(
            f"groups must be an integer player id per feature, shape ({n},); got dtype {t.dtype}, shape "
            f"{tuple(t.shape)}. Pass e.g. torch.arange({n}) for singletons or the one-hot block of each column"
        )
    ids, inverse = torch.unique(t.to(device), return_inverse=True)
    return inverse.long(), int(ids.numel())


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
    time_budget: float | None = 120.0,
    dtype: torch.dtype | None = None,
    support: Tensor | None = None,
    threshold: float | None = None,
    n_validation: int = 4096,
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
            called under ``no_grad`` in batches; queried in the dtype policy of :mod:`~torchxplain.fourier.oracle`
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
        target_r2: the headline R² the fit is held to (``None``: no check). Below it a
            :class:`FitQualityWarning` says what to change; ``"auto"``/``"hybrid"``/``"exact"`` escalate to reach it.
        time_budget: seconds the hybrid ladder may spend (``None``: unlimited).
        dtype: dtype of the query tensors (overrides the policy above).
        support: ``(s, n)`` bool candidate frequencies for ``"regression"``.
        threshold: drop terms with ``|a_f| < threshold`` after the fit.
        n_validation: held-out points per R² check (hybrid and uniform; ``0`` skips the uniform one).
        n_bits, n_hashes, n_delays, n_refit, singleton_tol: ``"hashing"`` sizes
            (:func:`~torchxplain.fourier.uniform_fit.plan_hashing`).
        max_memory: memory budget for chunked intermediates (bytes or e.g. ``"1GB"``).

    Returns:
        A :class:`FourierSpectrum` on ``device`` with amplitudes in ``f``'s output dtype, sorted by decreasing
        ``|a_f|``; with ``return_report=True``, ``(spectrum, FitReport)``.
    """
    with settings.using(max_memory=max_memory, show_progress=show_progress):
        spectrum, report, advice = _fit(**locals())
    warn_if_below_target(report, advice)
    return (spectrum, report) if return_report else spectrum


def _fit(**a: Any) -> tuple[FourierSpectrum, FitReport, str]:
    f, method = a["f"], a["method"]
    if not callable(f):
        raise TypeError(f"f must be callable on a (B, n) tensor, got {type(f).__name__}")
    n = _check_int(a["n_features"], "n_features", 1)
    assert n is not None
    k = _check_int(a["k"], "k", 1, allow_none=True)
    max_degree = _check_int(a["max_degree"], "max_degree", 0, allow_none=True)
    n_queries = _check_int(a["n_queries"], "n_queries", 1, allow_none=True)
    batch_size = _check_int(a["batch_size"], "batch_size", 1)
    n_validation = _check_int(a["n_validation"], "n_validation", 0)
    assert batch_size is not None and n_validation is not None
    target = a["target"]
    if isinstance(target, Tensor) and target.numel() == 1 and not target.is_floating_point():
        target = int(target)
    target = _check_int(target, "target", 0, allow_none=True)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if not 0 < a["singleton_tol"] < 1:
        raise ValueError(f"singleton_tol must be in (0, 1), got {a['singleton_tol']}")
    target_r2, time_budget = a["target_r2"], a["time_budget"]
    if target_r2 is not None and not (isinstance(target_r2, (int, float)) and target_r2 <= 1):
        raise ValueError(f"target_r2 must be a number <= 1 or None, got {target_r2!r}")
    if time_budget is not None and not (isinstance(time_budget, (int, float)) and time_budget > 0):
        raise ValueError(f"time_budget must be a positive number of seconds or None, got {time_budget!r}")
    hybrid = a["background"] is not None
    if not hybrid and (a["data"] is not None or a["groups"] is not None or method == "hybrid"):
        raise ValueError(
            "data=, groups= and method='hybrid' fit on hybrid points of rows with a background: pass background="
        )
    given = [a["background"], a["data"]]
    first = next((t for t in given if isinstance(t, Tensor)), None)
    device, dtype = model_placement(f, a["device"], a["dtype"], first)
    support = eval_data = None
    if a["support"] is not None:
        support = _rows(a["support"], "support", n, device)[1]
    if a["eval_data"] is not None:
        eval_data = _rows(a["eval_data"], "eval_data", n, device)[1]
    gen = make_generator(a["seed"], device)
    oracle = Oracle(f, n, device, dtype, batch_size, target)
    hashing_sizes = {key: a[key] for key in ("n_bits", "n_hashes", "n_delays", "n_refit")}
    uniform = {
        "generator": gen,
        "device": device,
        "batch_size": batch_size,
        "support": support,
        "hashing_sizes": hashing_sizes,
        "singleton_tol": a["singleton_tol"],
    }
    start = time.perf_counter()
    stages: list[dict[str, Any]] = []
    params: dict[str, Any] = {}
    cube_energy = None
    validation = background = None
    m: int | None = None
    advice = "Pass background= (and data=, rows like those you explain) to fit where SHAP evaluates the model."
    if hybrid:
        background = _rows(a["background"], "background", n, device)[1]
        rows = background if a["data"] is None else _rows(a["data"], "data", n, device)[1]
        players, m = _players(a["groups"], n, device)
        if a["one_hot"]:
            check_one_hot(background, players, m, "background")
            if a["data"] is not None:
                check_one_hot(rows, players, m, "data")
        sampler = HybridSampler(rows, background, players, m)
        oracle.phase = "validation"
        z_val = sampler.sample(max(n_validation, 256), make_generator(_validation_seed(a["seed"]), device))
        validation = Validation(z_val, oracle(z_val))
        oracle.rows = 0  # validation queries are counted apart (below)
        n_val_hybrid = z_val.shape[0]
    if method == "auto":
        if hybrid:
            exact_ok = n <= AUTO_EXACT_MAX_FEATURES and (n_queries is None or n_queries >= 2**n)
            method = "exact" if exact_ok else "hybrid"
            reason = (
                f"auto: all 2^{n} inputs fit the budget, so the exact WHT cut to the smallest k meeting the target"
                if exact_ok
                else f"auto: n={n} is too large for the whole cube, so a fit on hybrid samples"
            )
        else:
            method, reason = choose_uniform(n, k or UNIFORM_DEFAULT_K, max_degree, n_queries, support)
    else:
        reason = "requested"
    deadline = None if time_budget is None else start + float(time_budget)
    if method == "hybrid":
        assert validation is not None and background is not None and m is not None
        basis = build_basis(torch.cat((rows, background)), players, m)
        budget = Budget(n_queries, deadline)
        spectrum, stages, why = fit_hybrid(
            oracle,
            sampler,
            basis,
            validation,
            k=k,
            max_degree=max_degree,
            budget=budget,
            target_r2=target_r2,
            generator=gen,
        )
        params.update(units=basis.n_units, one_hot_players=sum(basis.one_hot), stopped=why)
        advice = _hybrid_advice(why, k, n_queries, time_budget)
        if a["method"] == "auto" and target_r2 is not None and why not in ("target met", "time budget"):
            fit_args = {"n": n, "max_degree": max_degree, "hashing_sizes": hashing_sizes, "uniform": uniform}
            spectrum, method = _hashing_fallback(fit_args, oracle, k, validation, spectrum, stages, target_r2, budget)
            if method == "hashing":
                reason += "; the ladder missed the target and the sparse WHT by hashing did better"
        freqs, amp = spectrum.frequencies, spectrum.amplitudes.to(torch.float64)
    else:
        size = k or (2**n if method == "exact" and hybrid else UNIFORM_DEFAULT_K)
        fit = fit_uniform(oracle, n, size, max_degree, n_queries, method, **uniform)
        freqs, amp, params, cube_energy = fit.frequencies, fit.amplitudes, fit.params, fit.cube_energy
        if hybrid and method == "exact":
            assert validation is not None
            spectrum, stages = pick_k_exact(freqs, amp, validation, k, target_r2)
            freqs, amp = spectrum.frequencies, spectrum.amplitudes
        advice = "Raise k" + (" (or drop max_degree)" if max_degree is not None else "") + ". " + advice * (not hybrid)
    fit_queries = oracle.rows
    out_dtype = oracle.out_dtype or torch.get_default_dtype()
    zero = NUMERICAL_ZERO * float(amp.abs().max()) if amp.numel() else 0.0
    spectrum = FourierSpectrum(freqs, amp).prune(k=k, threshold=max(a["threshold"] or 0.0, zero))
    wall = time.perf_counter() - start

    start = time.perf_counter()
    oracle.phase = "validation"
    r2_uniform = r2_eval = r2_hybrid = r2_background = None
    if cube_energy is not None:  # Parseval on the whole cube: the residual energy is what was dropped
        total, variance = cube_energy
        dropped = total - float((spectrum.amplitudes**2).sum())
        r2_uniform = 1.0 - max(dropped, 0.0) / variance if variance > 0 else 1.0
    elif n_validation:
        x = uniform_inputs(n_validation, n, make_generator(_validation_seed(a["seed"]) + 1, device), device)
        r2_uniform = r2_score(oracle(x), spectrum.evaluate(x))
    if eval_data is not None:
        r2_eval = r2_score(oracle(eval_data), spectrum.evaluate(eval_data))
    n_val = oracle.rows - fit_queries
    if validation is not None and background is not None:
        r2_hybrid = validation.r2(spectrum)
        r2_background = r2_score(oracle(background), spectrum.evaluate(background))
        n_val = oracle.rows - fit_queries + n_val_hybrid
    report = FitReport(
        method=method,
        reason=reason,
        n_features=n,
        k=k if k is not None or hybrid else UNIFORM_DEFAULT_K,
        n_terms=len(spectrum),
        max_degree=max_degree,
        n_queries=fit_queries,
        n_validation_queries=n_val,
        wall_time_s=wall,
        validation_time_s=time.perf_counter() - start,
        r2_uniform=r2_uniform,
        r2_eval=r2_eval,
        r2_hybrid=r2_hybrid,
        r2_background=r2_background,
        target_r2=target_r2,
        n_players=m,
        stages=tuple(stages),
        params=params,
    )
    advice += " Or lower target_r2 (None turns the check off)."
    return spectrum.to(out_dtype), report, advice


def _hybrid_advice(why: str, k: int | None, n_queries: int | None, time_budget: float | None) -> str:
    if why == "query budget":
        return f"The query budget ran out: raise n_queries (now {n_queries:,})."
    if why == "time budget":
        return f"The time budget ran out: raise time_budget (now {time_budget} s), or fit on a GPU (device=)."
    if k is not None:
        return f"Raise k (now {k}), or pass k=None to let the fit size itself."
    return (
        "More terms and samples stopped helping: the model is not sparse on these hybrids. Pass data= with "
        "fewer rows closer to the ones you explain, raise max_degree, or use an exact method for few players."
    )


def _hashing_fallback(
    fit_args: dict[str, Any],
    oracle: Oracle,
    k: int | None,
    validation: Validation,
    best: FourierSpectrum,
    stages: list[dict[str, Any]],
    target_r2: float,
    budget: Budget,
) -> tuple[FourierSpectrum, str]:
    """After a missed hybrid ladder: the sparse WHT by hashing (exact for exactly sparse models such as trees)
    at the :data:`HASHING_FALLBACK_K` sizes that fit the query and (measured per-query) time budgets."""
    best_r2, method = max(s["r2"] for s in stages), "hybrid"
    n, max_degree, sizes = fit_args["n"], fit_args["max_degree"], fit_args["hashing_sizes"]
    for size in HASHING_FALLBACK_K if k is None else (k,):
        left = budget.queries_left(oracle.rows)
        try:
            plan = plan_hashing(n, size, max_degree, left, **sizes)
        except ValueError:
            break
        time_left = budget.time_left()
        if time_left is not None and plan.total_queries(n) * oracle.seconds_per_row() > time_left:
            break
        start = time.perf_counter()
        fit = fit_uniform(oracle, n, size, max_degree, left, "hashing", **fit_args["uniform"])
        spectrum = FourierSpectrum(fit.frequencies, fit.amplitudes)
        r2 = validation.r2(spectrum)
        stages.append(
            {
                "method": "hashing",
                "k": size,
                "queries": plan.total_queries(n),
                "r2": r2,
                "seconds": round(time.perf_counter() - start, 3),
            }
        )
        if r2 > best_r2:
            best, best_r2, method = spectrum, r2, "hashing"
        if r2 >= target_r2:
            break
    return best, method


def _validation_seed(seed: int | torch.Generator) -> int:
    """A seed for the validation inputs, independent of the fit's draws (and reproducible)."""
    base = seed.initial_seed() if isinstance(seed, torch.Generator) else int(seed)
    return (base * 1_000_003 + 12_345) % 2**62

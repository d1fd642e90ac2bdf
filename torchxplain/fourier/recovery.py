"""Fit a sparse Fourier spectrum to a black box from queries: ``fit_sparse_fourier`` and its ``FitReport``.

Methods (``method=``):

* ``"exact"``: all ``2**n`` queries and one fast WHT (``n <= 22``), then the ``k`` largest amplitudes.
* ``"hashing"``: the sparse WHT of Amrollahi et al. (2019) made robust SPRIGHT-style (several random delays
  per bit, weighted vote, residual singleton test, peeling), then a least-squares refit of the recovered
  support on fresh uniform queries (see :mod:`torchxplain.fourier.sparse_wht`).
* ``"regression"``: random uniform queries and least squares over every frequency of degree
  ``<= max_degree`` (dense, or CoSaMP when there are many), or over a given ``support``.
* ``"auto"``: picks one of the above from ``n``, ``k``, ``max_degree`` and ``n_queries`` and says why.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import torch
from torch import Tensor, nn

from torchxplain._core import (
    as_tensor,
    check_binary,
    check_matrix,
    chunk_bounds,
    make_generator,
    progress,
)
from torchxplain.fourier.fwht import (
    EXACT_MAX_FEATURES,
    count_low_degree,
    exact_amplitudes,
    index_bits,
    low_degree_index,
)
from torchxplain.fourier.regression import LS_MAX_COLUMNS, least_squares, refit, regression, uniform_inputs
from torchxplain.fourier.sparse_wht import HashingPlan, default_delays, sparse_wht
from torchxplain.fourier.spectrum import FourierSpectrum

METHODS = ("auto", "exact", "hashing", "regression")
AUTO_EXACT_MAX_FEATURES = 16
"""``method="auto"`` queries the whole cube up to this ``n`` (65,536 queries), or beyond within the budget."""
NUMERICAL_ZERO = 1e-10
"""Terms with ``|a_f| <= NUMERICAL_ZERO × max |a|`` after the fit are dropped as rounding noise."""
REFIT_MAX_FACTOR = 3
"""The hashing refit keeps at most ``REFIT_MAX_FACTOR × k`` peeled terms (largest peeled amplitudes first)."""
MAX_CANDIDATES = 3_000_000
"""Largest number of low-degree candidate frequencies the low-degree decoder and regression enumerate."""


@dataclass(frozen=True)
class FitReport:
    """What :func:`fit_sparse_fourier` did.

    Attributes:
        method: the method used (``"exact"``, ``"hashing"`` or ``"regression"``).
        reason: why it was used (``method="auto"``'s choice, or "requested").
        n_features: ``n``. k: the requested number of terms. n_terms: terms in the returned spectrum.
        max_degree: the degree cap (``None``: none).
        n_queries: queries of ``f`` spent on the fit (the budget ``n_queries`` bounds this number).
        n_validation_queries: further queries spent on the R² checks (fresh uniform inputs and ``eval_data``).
        wall_time_s: seconds for the fit; validation_time_s: seconds for the R² checks.
        r2_uniform: R² of the spectrum against ``f`` on uniform inputs (``exact``: computed on the whole cube
            from Parseval; otherwise on ``n_validation`` fresh inputs); ``None`` when ``n_validation=0``.
        r2_eval: R² on ``eval_data`` (``None`` without it).
        params: method parameters (hash sizes, delays, refit queries, peeling rounds, solver, ...).
    """

    method: str
    reason: str
    n_features: int
    k: int
    n_terms: int
    max_degree: int | None
    n_queries: int
    n_validation_queries: int
    wall_time_s: float
    validation_time_s: float
    r2_uniform: float | None
    r2_eval: float | None
    params: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        def r2(value: float | None) -> str:
            return "not computed" if value is None else f"{value:.6f}"

        cap = "" if self.max_degree is None else f", degree <= {self.max_degree}"
        params = ", ".join(f"{key}={value}" for key, value in self.params.items())
        return "\n".join(
            [
                f"fit_sparse_fourier: method={self.method!r} ({self.reason})",
                f"  terms: {self.n_terms} (k={self.k} requested{cap}) on n={self.n_features} features",
                f"  queries: {self.n_queries:,} for the fit, {self.n_validation_queries:,} for validation",
                f"  wall time: {self.wall_time_s:.3f} s fit, {self.validation_time_s:.3f} s validation",
                f"  R^2 on uniform inputs: {r2(self.r2_uniform)}; on eval_data: {r2(self.r2_eval)}",
                f"  parameters: {params}",
            ]
        )


class _Oracle:
    """Queries ``f`` in batches on its device and dtype, checks each answer, counts rows and batches."""

    def __init__(
        self,
        f: Callable[[Tensor], Tensor],
        n_features: int,
        device: torch.device,
        dtype: torch.dtype,
        batch_size: int,
        target: int | None,
        show_progress: bool | None,
    ) -> None:
        self.f, self.n, self.device, self.dtype = f, n_features, device, dtype
        self.batch_size, self.target, self.show_progress = batch_size, target, show_progress
        self.phase = "fit"
        self.rows = 0
        self.batches = 0
        self.out_dtype: torch.dtype | None = None

    def __call__(self, x: Tensor) -> Tensor:
        """``(B, n)`` bool inputs -> ``(B,)`` float64 outputs of ``f`` (its ``target`` column)."""
        bounds = chunk_bounds(x.shape[0], self.batch_size)
        show = self.show_progress if len(bounds) > 1 else False
        parts = [self._batch(x[a:b]) for a, b in progress(bounds, show, desc=f"querying f ({self.phase})")]
        return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.float64, device=x.device)

    def _batch(self, x: Tensor) -> Tensor:
        last = self.rows + x.shape[0] - 1
        where = f"query batch {self.batches} ({self.phase} phase, rows {self.rows}..{last})"
        with torch.no_grad():
            out = self.f(x.to(device=self.device, dtype=self.dtype))
        if not isinstance(out, Tensor):
            raise TypeError(f"f must return a torch.Tensor, got {type(out).__name__} in {where}")
        if out.is_complex() or out.ndim not in (1, 2) or out.shape[0] != x.shape[0]:
            raise ValueError(
                f"f must map a ({x.shape[0]}, {self.n}) batch to shape ({x.shape[0]},) or ({x.shape[0]}, C) "
                f"real values; {where} returned shape {tuple(out.shape)} and dtype {out.dtype}"
            )
        if out.ndim == 2:
            if out.shape[1] > 1 and self.target is None:
                raise ValueError(f"f returns {out.shape[1]} outputs per row ({where}); pass target= to pick")
            column = 0 if self.target is None else self.target
            if column >= out.shape[1]:
                raise ValueError(f"target={self.target} but f returns {out.shape[1]} outputs ({where})")
            out = out[:, column]
        elif self.target not in (None, 0):
            raise ValueError(f"target={self.target} but f returns one output per row ({where})")
        bad = ~torch.isfinite(out)
        if bool(bad.any()):
            row = int(bad.nonzero()[0, 0])
            raise ValueError(
                f"f returned NaN or infinite values in {where}: first at row {self.rows + row}, "
                f"input {x[row].int().tolist()}"
            )
        if self.out_dtype is None:
            self.out_dtype = out.dtype if out.is_floating_point() else torch.get_default_dtype()
        self.rows += x.shape[0]
        self.batches += 1
        return out.detach().to(device=x.device, dtype=torch.float64)


def _r2(y: Tensor, pred: Tensor) -> float:
    """Coefficient of determination; ``nan`` when ``y`` is constant."""
    total = float(((y - y.mean()) ** 2).sum())
    resid = float(((y - pred) ** 2).sum())
    return 1.0 - resid / total if total > 0 else (1.0 if resid == 0 else float("nan"))


def _model_placement(
    f: object, device: torch.device | str | None, dtype: torch.dtype | None
) -> tuple[torch.device, torch.dtype]:
    """Device and dtype of the queries: given, else those of ``f``'s first parameter, else cpu / default."""
    param = next(f.parameters(), None) if isinstance(f, nn.Module) else None
    if device is None:
        device = param.device if param is not None else torch.device("cpu")
    if dtype is None:
        dtype = param.dtype if param is not None and param.is_floating_point() else torch.get_default_dtype()
    return torch.device(device), dtype


def _check_int(value: object, name: str, minimum: int, allow_none: bool = False) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def plan_hashing(
    n_features: int, k: int, max_degree: int | None, n_queries: int | None, **overrides: int | None
) -> HashingPlan:
    """Sizes of a hashing run within a query budget.

    The default uses ``2**b >= 2k`` buckets, 3 hashes, 3 base delays per bit (bitwise decoder) or
    ``2 log2(candidates) + 4`` delays (low-degree decoder, when ``max_degree`` leaves at most
    :data:`MAX_CANDIDATES` candidates), and ``max(10k, 1000)`` refit queries. Under a budget it shrinks
    (fewer hashes, buckets, delays, refit queries); leftover budget goes to the refit (up to ``100 k``).
    ``overrides`` (``n_bits``, ``n_hashes``, ``n_delays``, ``n_refit``) are kept fixed.

    Raises:
        ValueError: if even the smallest plan needs more than ``n_queries``; the message gives that minimum.
    """
    n_cand = count_low_degree(n_features, max_degree) if max_degree is not None else None
    decoder = "low-degree" if n_cand is not None and n_cand <= MAX_CANDIDATES else "bitwise"
    log_k = math.ceil(math.log2(max(k, 2)))
    top_bits = max(1, min(log_k + 1, n_features - 1, 24))
    fixed = {key: value for key, value in overrides.items() if value is not None}
    if decoder == "bitwise":
        min_delays = 1
    else:
        min_delays = min(64, math.ceil(math.log2(max(n_cand / 2**top_bits, 2))) + 8)

    def make(bits: int, hashes: int, delays: int, refit_rows: int) -> HashingPlan:
        values = {"n_bits": bits, "n_hashes": hashes, "n_delays": delays, "n_refit": refit_rows} | fixed
        return HashingPlan(decoder=decoder, **values)

    default = make(top_bits, 3, default_delays(decoder, n_cand), max(10 * k, 1000))
    if n_queries is None:
        return default
    ladder = [
        default,
        replace(default, n_refit=fixed.get("n_refit", 4 * k)),
        make(top_bits, 2, default_delays(decoder, n_cand), 4 * k),
        make(top_bits, 2, min_delays, 4 * k),
        make(max(1, min(log_k, top_bits)), 2, min_delays, 2 * k),
    ]
    for plan in ladder:
        hashing = plan.hashing_queries(n_features)
        if plan.total_queries(n_features) <= n_queries:
            if "n_refit" not in fixed:
                plan = replace(plan, n_refit=max(plan.n_refit, min(n_queries - hashing, 100 * k)))
            return plan
    smallest = ladder[-1]
    raise ValueError(
        f"n_queries={n_queries:,} is too small to recover k={k} coefficients on n={n_features} features with "
        f"method='hashing': it needs at least {smallest.total_queries(n_features):,} queries "
        f"({smallest.n_hashes} hashes x {smallest.delays_per_hash(n_features)} delays x 2^{smallest.n_bits} "
        f"buckets + {smallest.n_refit} refit queries). Raise n_queries or lower k"
        + ("" if max_degree is not None else ", or pass max_degree to decode against low-degree candidates")
    )


def _regression_sizes(
    n_features: int, k: int, max_degree: int | None, support: Tensor | None, n_queries: int | None
) -> tuple[int, int]:
    """``(queries to use, minimum queries)`` for ``method="regression"``."""
    if support is not None:
        minimum, default = support.shape[0], max(10 * support.shape[0], 1000)
    else:
        if max_degree is None:
            raise ValueError(
                "method='regression' needs max_degree (all frequencies of degree <= d) "
                "or support= (a (s, n) bool tensor of candidate frequencies)"
            )
        n_cand = count_low_degree(n_features, max_degree)
        if n_cand > MAX_CANDIDATES:
            raise ValueError(
                f"method='regression' with n={n_features}, max_degree={max_degree} has {n_cand:,} candidate "
                f"frequencies (limit {MAX_CANDIDATES:,}); lower max_degree or use method='hashing'"
            )
        if n_cand <= LS_MAX_COLUMNS:
            minimum = min(math.ceil(1.5 * n_cand), 3 * k + 1)
            default = max(2 * n_cand, 3 * k + 1)
        else:
            minimum = 3 * k + 1
            default = max(1000, 4 * k * math.ceil(math.log2(n_cand)))
    if n_queries is None:
        return default, minimum
    if n_queries < minimum:
        raise ValueError(
            f"n_queries={n_queries:,} is too small for method='regression' with k={k}: it needs at least "
            f"{minimum:,} random queries. Raise n_queries or lower k"
        )
    return n_queries, minimum


def _choose(n: int, k: int, max_degree: int | None, n_queries: int | None, support: Tensor | None) -> tuple[str, str]:
    """``method="auto"``: the method and a sentence saying why."""
    if n <= EXACT_MAX_FEATURES and (
        n_queries is None and n <= AUTO_EXACT_MAX_FEATURES or n_queries is not None and n_queries >= 2**n
    ):
        return "exact", f"auto: all 2^{n} = {2**n:,} inputs fit the query budget, so the spectrum is exact"
    if support is not None:
        return "regression", "auto: a candidate support was given, so least squares on it"
    if max_degree is not None:
        n_cand = count_low_degree(n, max_degree)
        budget_ok = n_queries is None or n_queries >= _regression_sizes(n, k, max_degree, None, None)[0]
        if n_cand <= LS_MAX_COLUMNS and budget_ok:
            return "regression", (
                f"auto: only {n_cand:,} frequencies have degree <= {max_degree}, "
                "so dense least squares over all of them"
            )
    why = f"n={n} is too large to query all 2^{n} inputs"
    if max_degree is not None:
        why += f" and degree <= {max_degree} leaves {count_low_degree(n, max_degree):,} candidates"
    return "hashing", f"auto: {why}, so the sparse WHT by hashing"


def fit_sparse_fourier(
    f: Callable[[Tensor], Tensor],
    n_features: int,
    k: int = 256,
    max_degree: int | None = None,
    n_queries: int | None = None,
    method: str = "auto",
    batch_size: int = 4096,
    seed: int | torch.Generator = 0,
    device: torch.device | str | None = None,
    target: int | None = None,
    eval_data: Tensor | None = None,
    show_progress: bool | None = None,
    return_report: bool = False,
    *,
    dtype: torch.dtype | None = None,
    support: Tensor | None = None,
    threshold: float | None = None,
    n_validation: int = 2000,
    n_bits: int | None = None,
    n_hashes: int | None = None,
    n_delays: int | None = None,
    n_refit: int | None = None,
    singleton_tol: float = 0.3,
    max_memory: int | str | None = None,
) -> FourierSpectrum | tuple[FourierSpectrum, FitReport]:
    """Fit a ``k``-sparse Fourier spectrum ``h(x) = Σ_f a_f (-1)^{<f,x>}`` to a black box by querying it.

    Args:
        f: any callable mapping a ``(B, n)`` float tensor of 0/1 inputs to ``(B,)`` or ``(B, C)`` outputs
            (an ``nn.Module`` is queried on the device and dtype of its parameters), under ``no_grad``.
        n_features: ``n``, the number of binary inputs.
        k: number of Fourier terms to keep (the speed–accuracy knob of the SHAP values).
        max_degree: keep only frequencies of degree ``<= max_degree`` (``None``: no cap). Enables the
            low-degree decoder of ``"hashing"`` and is required by ``"regression"`` without ``support``.
        n_queries: budget of queries for the fit (``None``: each method's default). Too small a budget raises
            ``ValueError`` naming the minimum.
        method: ``"auto"``, ``"exact"``, ``"hashing"`` or ``"regression"`` (module docstring).
        batch_size: rows per call of ``f``.
        seed: int or ``torch.Generator``; same seed, same spectrum.
        device: where queries are built and ``f`` is called (default: ``f``'s parameters, else cpu).
        target: output column for multi-output ``f`` (``(B, C)`` outputs).
        eval_data: optional ``(rows, n)`` binary inputs (e.g. the background and query rows) on which the
            report gives the R² of the spectrum against ``f``.
        show_progress: progress bars (``None``: on unless ``TORCHXPLAIN_PROGRESS=0``).
        return_report: also return a :class:`FitReport`.
        dtype: dtype of the query tensors (default: ``f``'s parameters, else the default dtype).
        support: ``(s, n)`` bool candidate frequencies for ``"regression"``.
        threshold: drop terms with ``|a_f| < threshold`` after the fit.
        n_validation: fresh uniform queries for the report's R² (``0`` skips; ``"exact"`` needs none).
        n_bits, n_hashes, n_delays, n_refit: ``"hashing"`` sizes (see :func:`plan_hashing`).
        singleton_tol: ``"hashing"`` singleton test: largest residual energy fraction of a one-term bucket.
        max_memory: memory budget for chunked intermediates (bytes or e.g. ``"1GB"``).

    Returns:
        A :class:`FourierSpectrum` on ``device`` with amplitudes in ``f``'s output dtype (in the units of
        ``f``), sorted by decreasing ``|a_f|``; with ``return_report=True``, ``(spectrum, FitReport)``.
    """
    if not callable(f):
        raise TypeError(f"f must be callable on a (B, n) tensor, got {type(f).__name__}")
    n = _check_int(n_features, "n_features", 1)
    k = _check_int(k, "k", 1)
    max_degree = _check_int(max_degree, "max_degree", 0, allow_none=True)
    n_queries = _check_int(n_queries, "n_queries", 1, allow_none=True)
    batch_size = _check_int(batch_size, "batch_size", 1)
    n_validation = _check_int(n_validation, "n_validation", 0)
    if isinstance(target, Tensor) and target.numel() == 1 and not target.is_floating_point():
        target = int(target)
    target = _check_int(target, "target", 0, allow_none=True)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if not 0 < singleton_tol < 1:
        raise ValueError(f"singleton_tol must be in (0, 1), got {singleton_tol}")
    device, dtype = _model_placement(f, device, dtype)
    if support is not None:
        support = check_matrix(as_tensor(support, "support"), "support", n)
        support = check_binary(support, "support").bool().to(device)
    if eval_data is not None:
        eval_data = check_matrix(as_tensor(eval_data, "eval_data"), "eval_data", n)
        eval_data = check_binary(eval_data, "eval_data").bool().to(device)
    gen = make_generator(seed, device)
    oracle = _Oracle(f, n, device, dtype, batch_size, target, show_progress)

    if method == "auto":
        method, reason = _choose(n, k, max_degree, n_queries, support)
    else:
        reason = "requested"
    start = time.perf_counter()
    params: dict[str, Any] = {}
    r2_uniform: float | None = None
    cube_energy = (0.0, 0.0)
    if method == "exact":
        if n > EXACT_MAX_FEATURES:
            raise ValueError(
                f"method='exact' queries all 2^n inputs and supports n_features <= {EXACT_MAX_FEATURES}; got "
                f"n_features={n}. Use method='hashing' (sparse WHT), or 'regression' with max_degree"
            )
        if n_queries is not None and n_queries < 2**n:
            raise ValueError(
                f"method='exact' needs all 2^{n} = {2**n:,} queries, but n_queries="
                f"{n_queries:,}; raise n_queries or use method='hashing'"
            )
        amps = exact_amplitudes(oracle, n, device, batch_size, show_progress)
        index = torch.arange(amps.numel(), device=device)
        cube_energy = (float((amps**2).sum()), float((amps[1:] ** 2).sum()))
        if max_degree is not None:
            keep_deg = index_bits(index, n).sum(1) <= max_degree
            index, amps = index[keep_deg], amps[keep_deg]
        top = torch.topk(amps.abs(), min(k, amps.numel())).indices
        freqs, amp = index_bits(index[top], n), amps[top]
        params["terms_available"] = int(amps.numel())
    elif method == "hashing":
        plan = plan_hashing(
            n, k, max_degree, n_queries, n_bits=n_bits, n_hashes=n_hashes, n_delays=n_delays, n_refit=n_refit
        )
        oracle.phase = "hashing"
        found, found_amp, info = sparse_wht(
            oracle,
            n,
            plan,
            max_degree=max_degree,
            generator=gen,
            device=device,
            batch_size=batch_size,
            singleton_tol=singleton_tol,
            show_progress=show_progress,
            max_memory=max_memory,
        )
        oracle.phase = "refit"
        if found.shape[0] == 0:
            found = torch.zeros(1, n, dtype=torch.bool, device=device)
        elif found.shape[0] > REFIT_MAX_FACTOR * k:  # dense spectra: refit the largest peeled terms only
            found = found[torch.topk(found_amp.abs(), REFIT_MAX_FACTOR * k).indices]
        freqs, amp = refit(oracle, found, plan.n_refit, k, gen, device)
        params.update(
            n_bits=plan.n_bits,
            n_hashes=plan.n_hashes,
            n_delays=plan.n_delays,
            decoder=plan.decoder,
            n_refit=plan.n_refit,
            peeling_rounds=info["rounds"],
            recovered=int(found_amp.numel()),
        )
    else:
        m, _ = _regression_sizes(n, k, max_degree, support, n_queries)
        oracle.phase = "regression"
        x = uniform_inputs(m, n, gen, device)
        y = oracle(x)
        if support is not None:
            freqs, amp = support, least_squares(x, y, support, max_memory)
            params.update(solver="least squares on the given support", candidates=support.shape[0])
        else:
            index = low_degree_index(n, max_degree, device)
            freqs, amp, info = regression(x, y, index, k, max_memory=max_memory)
            params.update(info)
        params["samples"] = m
    fit_queries = oracle.rows
    out_dtype = oracle.out_dtype or torch.get_default_dtype()
    # amplitudes at rounding level (the zeros of an exactly sparse function) are not terms
    zero = NUMERICAL_ZERO * float(amp.abs().max()) if amp.numel() else 0.0
    spectrum = FourierSpectrum(freqs, amp).prune(k=k, threshold=max(threshold or 0.0, zero))
    wall = time.perf_counter() - start

    start = time.perf_counter()
    oracle.phase = "validation"
    if method == "exact":
        # Parseval on the whole cube: the kept amplitudes are exact, the residual energy is what was dropped
        total, variance = cube_energy
        dropped = total - float((spectrum.amplitudes**2).sum())
        r2_uniform = 1.0 - max(dropped, 0.0) / variance if variance > 0 else 1.0
    elif n_validation:
        x = uniform_inputs(n_validation, n, make_generator(_validation_seed(seed), device), device)
        r2_uniform = _r2(oracle(x), spectrum.evaluate(x, max_memory))
    r2_eval = None
    if eval_data is not None:
        r2_eval = _r2(oracle(eval_data), spectrum.evaluate(eval_data, max_memory))
    spectrum = spectrum.to(out_dtype)
    if not return_report:
        return spectrum
    report = FitReport(
        method=method,
        reason=reason,
        n_features=n,
        k=k,
        n_terms=len(spectrum),
        max_degree=max_degree,
        n_queries=fit_queries,
        n_validation_queries=oracle.rows - fit_queries,
        wall_time_s=wall,
        validation_time_s=time.perf_counter() - start,
        r2_uniform=r2_uniform,
        r2_eval=r2_eval,
        params=params,
    )
    return spectrum, report


def _validation_seed(seed: int | torch.Generator) -> int:
    """A seed for the validation inputs, independent of the fit's draws (and reproducible)."""
    base = seed.initial_seed() if isinstance(seed, torch.Generator) else int(seed)
    return (base * 1_000_003 + 12_345) % 2**63

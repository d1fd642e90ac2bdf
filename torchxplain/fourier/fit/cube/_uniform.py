"""Fits on uniform inputs of the cube: the exact WHT, the sparse WHT by hashing, and low-degree regression.

* ``"exact"``: all ``2**n`` queries and one fast WHT (``n <= 22``), then the ``k`` largest amplitudes.
* ``"hashing"``: the sparse WHT of Amrollahi et al. (2019) made robust SPRIGHT-style (several random delays
  per bit, weighted vote, residual singleton test, peeling), then a least-squares refit of the recovered
  support on fresh uniform queries (see :mod:`torchxplain.fourier.fit.cube._hashing`).
* ``"regression"``: random uniform queries and least squares over every frequency of degree
  ``<= max_degree`` (dense, or CoSaMP when there are many), or over a given ``support``.

These recover the spectrum on the whole cube; they are exact for exactly sparse functions (trees) whatever
the data. For one-hot or low-weight data, :mod:`torchxplain.fourier.fit.hybrid._ladder` fits where SHAP looks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import Tensor

from torchxplain.fourier.fit._oracle import Oracle
from torchxplain.fourier.fit.cube._hashing import HashingPlan, default_delays, sparse_wht
from torchxplain.fourier.fit.cube._regression import LS_MAX_COLUMNS, least_squares, refit, regression, uniform_inputs
from torchxplain.fourier.spectrum import (
    EXACT_MAX_FEATURES,
    count_low_degree,
    exact_amplitudes,
    index_bits,
    low_degree_index,
)

AUTO_EXACT_MAX_FEATURES = 16
"""``method="auto"`` queries the whole cube up to this ``n`` (65,536 queries), or beyond within the budget."""
REFIT_MAX_FACTOR = 3
"""The hashing refit keeps at most ``REFIT_MAX_FACTOR × k`` peeled terms (largest peeled amplitudes first)."""
MAX_CANDIDATES = 3_000_000
"""Largest number of low-degree candidate frequencies the low-degree decoder and regression enumerate."""


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


def regression_sizes(
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


def choose_uniform(
    n: int, k: int, max_degree: int | None, n_queries: int | None, support: Tensor | None
) -> tuple[str, str]:
    """``method="auto"``: the method and a sentence saying why."""
    if n <= EXACT_MAX_FEATURES and (
        n_queries is None and n <= AUTO_EXACT_MAX_FEATURES or n_queries is not None and n_queries >= 2**n
    ):
        return "exact", f"auto: all 2^{n} = {2**n:,} inputs fit the query budget, so the spectrum is exact"
    if support is not None:
        return "regression", "auto: a candidate support was given, so least squares on it"
    if max_degree is not None:
        n_cand = count_low_degree(n, max_degree)
        budget_ok = n_queries is None or n_queries >= regression_sizes(n, k, max_degree, None, None)[0]
        if n_cand <= LS_MAX_COLUMNS and budget_ok:
            return "regression", (
                f"auto: only {n_cand:,} frequencies have degree <= {max_degree}, "
                "so dense least squares over all of them"
            )
    why = f"n={n} is too large to query all 2^{n} inputs"
    if max_degree is not None:
        why += f" and degree <= {max_degree} leaves {count_low_degree(n, max_degree):,} candidates"
    return "hashing", f"auto: {why}, so the sparse WHT by hashing"


@dataclass(frozen=True)
class UniformFit:
    """A fit on the cube: frequencies ``(K, n)`` bool, amplitudes ``(K,)`` float64, parameters, and for
    ``"exact"`` the cube's total and non-constant energy (for the Parseval R²) and every amplitude."""

    frequencies: Tensor
    amplitudes: Tensor
    params: dict[str, Any]
    cube_energy: tuple[float, float] | None = None
    all_amplitudes: Tensor | None = None


def fit_uniform(
    oracle: Oracle,
    n: int,
    k: int,
    max_degree: int | None,
    n_queries: int | None,
    method: str,
    generator: torch.Generator,
    device: torch.device,
    batch_size: int,
    *,
    support: Tensor | None,
    hashing_sizes: dict[str, int | None],
    singleton_tol: float,
) -> UniformFit:
    """Run one of ``"exact"``, ``"hashing"`` or ``"regression"`` (module docstring) on validated arguments."""
    params: dict[str, Any] = {}
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
        oracle.phase = "exact"
        amps = exact_amplitudes(oracle, n, device, batch_size)
        index = torch.arange(amps.numel(), device=device)
        energy = (float((amps**2).sum()), float((amps[1:] ** 2).sum()))
        if max_degree is not None:
            keep_deg = index_bits(index, n).sum(1) <= max_degree
            index, amps = index[keep_deg], amps[keep_deg]
        order = torch.argsort(amps.abs(), descending=True)
        params["terms_available"] = int(amps.numel())
        full = amps[order]
        top = order[: min(k, amps.numel())]
        return UniformFit(index_bits(index[top], n), amps[top], params, energy, full)
    if method == "hashing":
        plan = plan_hashing(n, k, max_degree, n_queries, **hashing_sizes)
        oracle.phase = "hashing"
        found, found_amp, info = sparse_wht(
            oracle,
            n,
            plan,
            max_degree=max_degree,
            generator=generator,
            device=device,
            batch_size=batch_size,
            singleton_tol=singleton_tol,
        )
        oracle.phase = "refit"
        if found.shape[0] == 0:
            found = torch.zeros(1, n, dtype=torch.bool, device=device)
        elif found.shape[0] > REFIT_MAX_FACTOR * k:  # dense spectra: refit the largest peeled terms only
            found = found[torch.topk(found_amp.abs(), REFIT_MAX_FACTOR * k).indices]
        freqs, amp = refit(oracle, found, plan.n_refit, k, generator, device)
        params.update(
            n_bits=plan.n_bits,
            n_hashes=plan.n_hashes,
            n_delays=plan.n_delays,
            decoder=plan.decoder,
            n_refit=plan.n_refit,
            peeling_rounds=info["rounds"],
            recovered=int(found_amp.numel()),
        )
        return UniformFit(freqs, amp, params)
    m, _ = regression_sizes(n, k, max_degree, support, n_queries)
    oracle.phase = "regression"
    x = uniform_inputs(m, n, generator, device)
    y = oracle(x)
    if support is not None:
        freqs, amp = support, least_squares(x, y, support)
        params.update(solver="least squares on the given support", candidates=support.shape[0])
    else:
        assert max_degree is not None  # _regression_sizes refuses a missing degree without a support
        freqs, amp, info = regression(x, y, low_degree_index(n, max_degree, device), k)
        params.update(info)
    params["samples"] = m
    return UniformFit(freqs, amp, params)

"""The continuous route of a black-box fit: thresholds from the data, a block fit on raw hybrids, a held-out check.

``FourierShap(model, background, data=X_train)`` on rows with non-binary columns ends here (validated tensors):

1. Held-out rows: when ``data`` has at least :data:`~torchxplain.fourier.fit._api.HOLD_OUT_MIN_DATA` rows, a
   random tenth of them (64 to 1,024) is kept out of the thresholds *and* of the fit, so the check sees values
   the encoding never saw (its discretization error is part of the estimate).
2. Encoding: :meth:`~torchxplain.fourier.ThresholdEncoding.from_data`'s rules on the fit's rows and the background (the
   midpoints of their values, at most ``max_thresholds`` per column by equal counts); a one-hot block keeps one
   threshold per column.
3. Fit: :func:`~torchxplain.fourier.fit.continuous._ladder.run_ladder` queries the model on raw hybrids of the
   fit's rows with the background (a thermometer code of a hybrid is the hybrid of the codes, so the fitted tables
   are exactly a spectrum on the codes) and escalates until the SHAP values' R² estimated on the held-out rows
   (:class:`~torchxplain.fourier.fit.hybrid._checks.HeldOut`, the model queried at raw hybrids, the surrogate at
   their codes) reaches ``target_r2``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from torchxplain._core import make_generator, settings
from torchxplain.fourier.encoding import ThresholdEncoding
from torchxplain.fourier.fit._one_hot import FoundPlayers
from torchxplain.fourier.fit._options import FitOptions, validation_seed
from torchxplain.fourier.fit._oracle import Oracle, model_placement
from torchxplain.fourier.fit._report import FitReport, domain_note, fitted_range, warn_if_below_target
from torchxplain.fourier.fit.continuous._ladder import STAGES, constant_fit, run_ladder
from torchxplain.fourier.fit.continuous._levels import RawPlayers
from torchxplain.fourier.fit.hybrid._checks import MAX_ROWS, MIN_ROWS, HeldOut, cheapest_exact
from torchxplain.fourier.fit.hybrid._ladder import Target
from torchxplain.fourier.fit.hybrid._sampler import HybridSampler
from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.values import ValuePlan

MAX_DEGREE = 3
"""Default most players per fitted block (the ladder's triples)."""
HOLD_OUT_MIN_DATA = 4 * MIN_ROWS
"""``data`` rows needed before the held-out rows are kept out of the thresholds and the fit."""


def fit_continuous(
    f: Callable[[Tensor], Tensor],
    background: Tensor,
    data: Tensor | None,
    players: Tensor,
    m: int,
    *,
    max_thresholds: int | None,
    max_degree: int | None,
    n_queries: int | None,
    seed: int | torch.Generator,
    target: int | None,
    target_r2: float | None,
    options: FitOptions,
    found: FoundPlayers | None,
    reason: str,
) -> tuple[ThresholdEncoding, FourierSpectrum, FitReport]:
    """Fit a spectrum on the threshold codes of continuous (or mixed) rows (module docstring).

    Args:
        f: the model on raw ``(B, p)`` float rows -> ``(B,)`` or ``(B, C)``.
        background: ``(D, p)`` finite raw rows; data: ``(R, p)`` finite raw rows like the explained ones, or ``None``.
        players: ``(p,)`` int64 player index per column, ``0..m-1`` (a one-hot block's columns share one).
        max_thresholds: cap per column (``None``: every midpoint); max_degree: most players per block.
        n_queries: the fit's query budget (``None``: the whole ladder); the check's queries come on top.
        seed: the fit's seed (the check's is derived from it); target: output column of a multi-output model.
        target_r2: the estimated SHAP R² the ladder is held to (``None``: the whole ladder, no warning).
        options: batch size, device, dtype, validation budget; found: what ``groups="auto"`` found.
        reason: why this route was taken (the router's words, for the report).

    Returns:
        ``(encoding, spectrum on its codes, report)``.
    """
    device, dtype = model_placement(f, options.device, options.dtype, background)
    goal = Target(None if target_r2 is None else float(target_r2), options.target_metric)
    degree = MAX_DEGREE if max_degree is None else max_degree
    budget = STAGES[-1].samples if n_queries is None else n_queries
    with settings.using(max_memory=options.max_memory, show_progress=options.show_progress):
        start, cpu = time.perf_counter(), time.process_time()
        generator = make_generator(validation_seed(seed), background.device)
        rows = background if data is None else data
        held_out = data is not None and rows.shape[0] >= HOLD_OUT_MIN_DATA
        input_dtype = torch.float32 if rows.dtype == torch.float32 else torch.float64
        if held_out:
            count = min(MAX_ROWS, max(MIN_ROWS, rows.shape[0] // 10))
            order = torch.randperm(rows.shape[0], generator=generator, device=rows.device)
            check_rows, fit_rows = _within_range(rows[order[:count]], rows[order[count:]], background, input_dtype)
        else:
            check_rows = fit_rows = rows
        pooled = torch.cat((fit_rows.to(torch.float64), background.to(torch.float64)))
        encoding = ThresholdEncoding._from_checked(pooled, input_dtype, max_thresholds)
        levels = RawPlayers(encoding, players, torch.cat((fit_rows, background)))
        oracle = Oracle(f, background.shape[1], device, dtype, options.batch_size, target)
        oracle.phase = "validation"
        check_start = time.perf_counter()
        # pairs of continuous rows differ in nearly every player: paths where they cost less than enumeration
        check = HeldOut(check_rows, background, players, m, options.n_validation, generator, oracle, cheapest_exact())
        check_counts = (oracle.rows, oracle.seconds, oracle.cpu_seconds, time.perf_counter() - check_start)
        oracle.rows, oracle.seconds, oracle.cpu_seconds, oracle.phase = 0, 0.0, 0.0, "fit"
        bit_players = players[encoding.feature.to(players.device)]
        background_codes = encoding._transform(background).to(torch.float64)  # rows checked once, above

        def closed_form(spectrum: FourierSpectrum, x: Tensor) -> Tensor:
            plan = ValuePlan(spectrum, background_codes, bit_players, m)
            return plan.shapley(encoding._transform(x).to(torch.float64))

        if encoding.n_binary == 0:  # no column varies over the fit's rows: no block to fit (torch.cat failed)
            result = constant_fit(oracle, background[:1], check, m)
        else:
            result = run_ladder(
                oracle,
                levels,
                HybridSampler(fit_rows, background, players, m),
                check,
                closed_form,
                target=goal,
                max_degree=degree,
                max_queries=budget,
                generator=make_generator(seed, background.device),
            )
        best = max(result.stages, key=lambda s: s["r2_shap" if goal.metric == "shap" else "r2"])
        per_column = torch.bincount(encoding.feature, minlength=encoding.n_features)
        report = FitReport(
            method="continuous",
            reason=reason,
            n_features=encoding.n_binary,
            k=None,
            n_terms=len(result.spectrum),
            max_degree=degree,
            n_queries=oracle.rows,
            n_validation_queries=check_counts[0],
            wall_time_s=time.perf_counter() - start,
            validation_time_s=check_counts[3],
            r2_uniform=None,
            r2_eval=None,
            r2_hybrid=best["r2"],
            r2_shap=best["r2_shap"],
            r2_shap_se=best["r2_shap_se"],
            target_r2=target_r2,
            target_metric=goal.metric,
            n_players=m,
            stages=tuple(result.stages),
            params=_params(check, held_out, per_column, max_thresholds),
            model_time_s=oracle.seconds + check_counts[1],
            cpu_time_s=time.process_time() - cpu,
            model_cpu_time_s=oracle.cpu_seconds + check_counts[2],
            stopped=result.stopped,
            players=None if found is None else found.description,
            domain=domain_note(
                fitted_range(input_dtype, background, data),
                f"hybrids of {check_rows.shape[0]} {'held-out ' if held_out else ''}rows of "
                f"{'data' if data is not None else 'the background'} with the background",
                "column",
                "data and background" if data is not None else "the background",
            ),
        )
    warn_if_below_target(report, _advice(report, data is not None, m, max_thresholds, degree))
    return encoding, result.spectrum.to(oracle.out_dtype or torch.get_default_dtype()), report


def _within_range(check: Tensor, fit: Tensor, background: Tensor, input_dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """The held-out rows that lie within the range of the fit's rows and the background (the others join the fit's
    rows): holding a row out may hide a new value from the thresholds, but never widen the range the thresholds
    cover beyond what they were built from — a row of ``data`` outside it would be explained without a word (the
    explainer's domain is the range of ``data`` and background)."""
    span = fitted_range(input_dtype, fit, background)
    values = check.to(input_dtype).double()
    inside = ~((values < span[0]) | (values > span[1])).any(1)
    return check[inside], torch.cat((fit, check[~inside]))


def _params(check: HeldOut, held_out: bool, per_column: Tensor, cap: int | None) -> dict[str, Any]:
    shared = "" if held_out else "; rows shared with the thresholds and the fit (pass data= with >= 256 rows)"
    return {
        "thresholds": int(per_column.sum()),
        "thresholds_per_column": f"{int(per_column.min())}..{int(per_column.max())}",
        "max_thresholds": cap,
        "check": check.describe() + ("; rows held out of the thresholds and the fit" if held_out else shared),
    }


def _advice(report: FitReport, has_data: bool, m: int, cap: int | None, degree: int) -> str:
    """What to change when the continuous fit stopped below its target."""
    if not has_data:
        return (
            "No data= was given, so the fit holds only for hybrids of the background with itself: pass data= (rows "
            "like the ones you explain, e.g. the training set)."
        )
    stopped = report.stopped or ""
    tips = []
    if stopped.startswith("query budget"):
        tips.append(f"raise n_queries (now {report.n_queries:,})")
    if degree < MAX_DEGREE:
        tips.append(f"raise max_degree (now {degree})")
    default = FitOptions.max_thresholds
    if cap is not None and default is not None and cap < default:
        tips.append(f"raise max_thresholds (now {cap})")
    enumerate_hint = (
        f" With {m} players, exact values through the model are affordable for a few rows: "
        "FourierShap(model, background, method='enumerate')."
        if m <= 12
        else ""
    )
    if tips:
        return "To fit closer: " + ", ".join(tips) + "." + enumerate_hint
    return (
        "The model is not low-order on these hybrids (interactions of many features, e.g. a saturating output or "
        "ReLU kinks across rows): the ladder's blocks of up to three features stopped gaining. Explain a less "
        "saturated output (a logit instead of a probability), or use exact enumeration or a sampling explainer for "
        "the rows that matter." + enumerate_hint
    )

"""The black-box fit engine on validated inputs: :func:`fit_validated` and the report of what it did.

The route is decided before this module is called (by the router of :mod:`~torchxplain.fourier.sources`), and
arrives as ``method`` with its ``reason``:

* **With a background** (hybrid regime): interventional SHAP evaluates the model only at hybrids ``(x_S, b_{~S})``
  of the rows with the background, and every hybrid lies on the product of the players' observed levels
  (:mod:`~torchxplain.fourier.fit._levels`). ``"tabulate"`` (:mod:`~torchxplain.fourier.fit._tabulate`) queries every
  level combination once — the spectrum is then exact for any row and background on those levels; ``"hybrid"``
  (:mod:`~torchxplain.fourier.fit.hybrid._ladder`) fits a sparse regression on hybrid samples in the
  reference-coded basis, grown stage by stage until the SHAP values' R², estimated on held-out rows, reaches
  ``target_r2``, or the query budget (:data:`DEFAULT_QUERIES`) is spent; ``"exact"``, ``"hashing"`` and
  ``"regression"`` fit on the cube and are checked on the held-out rows.
* **Without a background**: fits on uniform inputs of the cube (``"exact"``, ``"hashing"``, ``"regression"``;
  :mod:`~torchxplain.fourier.fit.cube._uniform`); the headline is the R² on uniform inputs.

A checked R² below ``target_r2`` raises a :class:`FitQualityWarning` that says what to change.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import Tensor

from torchxplain._core import make_generator, settings
from torchxplain.fourier.fit._levels import PlayerLevels
from torchxplain.fourier.fit._one_hot import FoundPlayers, check_one_hot
from torchxplain.fourier.fit._options import FitOptions, binary_rows, validation_seed
from torchxplain.fourier.fit._oracle import Oracle, model_placement
from torchxplain.fourier.fit._report import (
    FitReport,
    TargetMetric,
    domain_note,
    fitted_range,
    r2_score,
    warn_if_below_target,
)
from torchxplain.fourier.fit._tabulate import check_tabulation, grid_index, table_spectrum, tabulate
from torchxplain.fourier.fit._walsh import UnitWalsh
from torchxplain.fourier.fit.cube._regression import uniform_inputs
from torchxplain.fourier.fit.cube._uniform import fit_uniform
from torchxplain.fourier.fit.hybrid._checks import MAX_ROWS, MIN_ROWS, HeldOut
from torchxplain.fourier.fit.hybrid._ladder import Ladder, Target, score
from torchxplain.fourier.fit.hybrid._regression import TermFit, prune_terms
from torchxplain.fourier.fit.hybrid._sampler import HybridSampler
from torchxplain.fourier.fit.hybrid._terms import PointDesign
from torchxplain.fourier.spectrum import FourierSpectrum

Method = Literal["tabulate", "hybrid", "exact", "hashing", "regression"]
METHODS = ("tabulate", "hybrid", "exact", "hashing", "regression")
CUBE_METHODS = ("exact", "hashing", "regression")
NUMERICAL_ZERO = 1e-10
"""Terms with ``|a_f| <= NUMERICAL_ZERO × max |a|`` after a cube fit are dropped as rounding noise."""
UNIFORM_DEFAULT_K = 256
"""``k`` of the cube methods when ``k=None``."""
DEFAULT_QUERIES = 2**21
"""The hybrid fit's query budget when ``n_queries=None`` (the held-out check's queries come on top)."""
TABULATE_LIMIT = 2**20
"""``method="auto"`` tabulates grids up to this many points when ``n_queries=None`` (up to ``n_queries`` else)."""
TABULATE_CHECK = 4096
"""Queries of the held-out check of a tabulated spectrum (exact on the grid: the check confirms the model is
deterministic, and costs little)."""
HOLD_OUT_MIN_DATA = 4 * MIN_ROWS
"""``data`` rows needed before the held-out rows are kept out of the fit (else the check reuses the fit's rows)."""


def fit_validated(
    f: Callable[[Tensor], Tensor],
    n: int,
    *,
    background: Tensor | None,
    data: Tensor | None,
    players: Tensor,
    m: int,
    k: int | None,
    max_degree: int | None,
    n_queries: int | None,
    method: str,
    seed: int | torch.Generator,
    target: int | None,
    target_r2: float | None,
    eval_data: Tensor | None,
    options: FitOptions,
    reason: str,
    found: FoundPlayers | None = None,
    rows: HybridRows | None = None,
) -> tuple[FourierSpectrum, FitReport]:
    """The fit on validated inputs (bool rows on the query device, dense player indices), by the route ``method``
    the router chose for ``reason``; ``rows``: the hybrid regime's rows and levels when the router already made
    them (:func:`hybrid_rows`)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if target_r2 is not None and (
        isinstance(target_r2, bool) or not isinstance(target_r2, (int, float)) or not target_r2 <= 1
    ):
        raise ValueError(f"target_r2 must be a number <= 1 or None, got {target_r2!r}")
    first = background if background is not None else data
    device, dtype = model_placement(f, options.device, options.dtype, first)
    goal = Target(None if target_r2 is None else float(target_r2), options.target_metric)
    with settings.using(max_memory=options.max_memory, show_progress=options.show_progress):
        oracle = Oracle(f, n, device, dtype, options.batch_size, target)
        start, cpu = time.perf_counter(), time.process_time()
        if background is None:
            spectrum, fields, hint = _fit_cube(oracle, n, k, max_degree, n_queries, method, seed, options, device)
            fields["reason"] = reason
            check = None
        else:
            made = rows if rows is not None else hybrid_rows(background, data, players, m, options.one_hot)
            regime = _HybridRegime(oracle, background, data, players, m, options, seed, found, made)
            spectrum, fields, hint = regime.fit(k, max_degree, n_queries, method, reason, goal, seed, start)
            check = regime.check
        fields["wall_time_s"] = time.perf_counter() - start
        fields["cpu_time_s"] = time.process_time() - cpu
        fields["model_time_s"] = oracle.seconds + (0.0 if background is None else regime.check_seconds[0])
        fields["model_cpu_time_s"] = oracle.cpu_seconds + (0.0 if background is None else regime.check_seconds[1])
        fields["n_queries"] = oracle.rows
        report = _report(
            spectrum,
            oracle,
            check,
            eval_data,
            options.n_validation,
            seed,
            device,
            target_r2,
            options.target_metric,
            fields,
        )
    warn_if_below_target(report, hint + " Or lower target_r2 (None turns the check off).")
    spectrum = spectrum.to(oracle.out_dtype or torch.get_default_dtype())
    return spectrum, report


def _fit_cube(
    oracle: Oracle,
    n: int,
    k: int | None,
    max_degree: int | None,
    n_queries: int | None,
    method: str,
    seed: int | torch.Generator,
    options: FitOptions,
    device: torch.device,
) -> tuple[FourierSpectrum, dict[str, Any], str]:
    """Fit on uniform inputs of the cube (no background)."""
    support = None if options.support is None else binary_rows(options.support, "support", n, device)
    size = k or UNIFORM_DEFAULT_K
    fit = fit_uniform(oracle, n, size, max_degree, n_queries, method, **_cube_options(options, seed, device, support))
    spectrum = _cut(fit.frequencies, fit.amplitudes, k if k is not None else size, options.threshold)
    hint = "Raise k" + (" (or drop max_degree)" if max_degree is not None else "") + ", or pass background= "
    hint += "(and data=, rows like those you explain) to fit where SHAP evaluates the model."
    fields = {
        "method": method,
        "k": size,
        "max_degree": max_degree,
        "params": fit.params,
        "cube_energy": fit.cube_energy,
    }
    return spectrum, fields, hint


def _cube_options(
    options: FitOptions, seed: int | torch.Generator, device: torch.device, support: Any
) -> dict[str, Any]:
    return {
        "generator": make_generator(seed, device),
        "device": device,
        "batch_size": options.batch_size,
        "support": support,
        "hashing_sizes": {
            "n_bits": options.n_bits,
            "n_hashes": options.n_hashes,
            "n_delays": options.n_delays,
            "n_refit": options.n_refit,
        },
        "singleton_tol": options.singleton_tol,
    }


def _cut(freqs: Tensor, amp: Tensor, k: int | None, threshold: float | None) -> FourierSpectrum:
    """The fitted terms without rounding-level amplitudes, cut to ``k`` and ``threshold``."""
    zero = NUMERICAL_ZERO * float(amp.abs().max()) if amp.numel() else 0.0
    return FourierSpectrum.trusted(freqs, amp).prune(k=k, threshold=max(threshold or 0.0, zero))


@dataclass(frozen=True)
class HybridRows:
    """The rows a hybrid-regime fit is held to, and their players' levels.

    Attributes:
        rows: ``(R, n)`` bool: ``data``, or without it the background plus one row where every single-bit player
            constant over the background takes its other value (:func:`_with_both_values`).
        flipped: how many such bits were flipped (0 with ``data``).
        levels: the players' observed levels over ``rows`` and the background.
        has_data: whether ``data`` was given.
    """

    rows: Tensor
    flipped: int
    levels: PlayerLevels
    has_data: bool

    @property
    def where(self) -> str:
        """Where the levels come from, for reports."""
        if self.has_data:
            return "data and background"
        flipped = f" (and the other value of its {self.flipped} constant bits: no data= was given)"
        return "the background" + (flipped if self.flipped else "")

    def describe_grid(self) -> str:
        """The level grid in words: its size and the players' level counts."""
        sizes = self.levels.level_count()
        shown = "·".join(str(s) for s in sizes) if len(sizes) <= 8 else f"{len(sizes)} players' level counts"
        return f"{self.levels.grid_size:,} level combinations ({shown})"


def hybrid_rows(background: Tensor, data: Tensor | None, players: Tensor, m: int, one_hot: bool | None) -> HybridRows:
    """The rows and levels of a hybrid-regime fit (``one_hot``: check declared one-hot players first).

    Raises:
        ValueError: a declared one-hot player that is not one-hot (the row is named), or without ``data`` a
            grouped player constant over the background.
    """
    if one_hot:
        check_one_hot(background, players, m, "background")
        if data is not None:
            check_one_hot(data, players, m, "data")
    rows, flipped = (data, 0) if data is not None else _with_both_values(background, players, m)
    return HybridRows(rows, flipped, PlayerLevels(torch.cat((rows, background)), players, m), data is not None)


class _HybridRegime:
    """The hybrid regime of one fit: levels, held-out rows and check, sampler."""

    def __init__(
        self,
        oracle: Oracle,
        background: Tensor,
        data: Tensor | None,
        players: Tensor,
        m: int,
        options: FitOptions,
        seed: int | torch.Generator,
        found: FoundPlayers | None,
        made: HybridRows,
    ) -> None:
        self.oracle, self.background, self.players, self.m, self.options = oracle, background, players, m, options
        rows, self.flipped, self.has_data = made.rows, made.flipped, made.has_data
        if self.flipped:
            oracle.domain_note = (
                f". No data= was given, so the fit also queries the {self.flipped} bits that are constant in the "
                "background at their other value (rows you explain may hold it); pass data= (rows like those "
                "you explain) to query only their hybrids with the background"
            )
        self.levels = made.levels
        self.made = made
        self.found = found
        self.generator = make_generator(validation_seed(seed), background.device)
        held = min(MAX_ROWS, max(MIN_ROWS, rows.shape[0] // 10))
        if data is not None and rows.shape[0] >= HOLD_OUT_MIN_DATA:
            order = torch.randperm(rows.shape[0], generator=self.generator, device=rows.device)
            self.check_rows, self.fit_rows, self.held_out = rows[order[:held]], rows[order[held:]], True
        else:
            self.check_rows, self.fit_rows, self.held_out = rows, rows, False

    def _held_out(self, budget: int) -> HeldOut:
        """Query the held-out check (its queries and seconds are counted apart from the fit's)."""
        oracle = self.oracle
        oracle.phase = "validation"
        check = HeldOut(self.check_rows, self.background, self.players, self.m, budget, self.generator, oracle)
        self.check_seconds = (oracle.seconds, oracle.cpu_seconds)
        oracle.rows, oracle.seconds, oracle.cpu_seconds = 0, 0.0, 0.0  # the fit's counts start here
        return check

    def _domain(self, method: str) -> str:
        """:attr:`FitReport.domain`: the check's rows, and the fitted rows' range (the whole cube for a cube fit)."""
        rows = f"{'held-out ' if self.held_out else ''}rows of {'data' if self.has_data else 'the background'}"
        within = method in ("tabulate", "hybrid")
        domain = fitted_range(torch.float64, self.fit_rows, self.check_rows, self.background) if within else None
        over = "data and background" if self.has_data else "the background (each constant bit also at its other value)"
        return domain_note(domain, f"hybrids of {self.check_rows.shape[0]} {rows} with the background", "bit", over)

    def fit(
        self,
        k: int | None,
        max_degree: int | None,
        n_queries: int | None,
        method: str,
        reason: str,
        goal: Target,
        seed: int | torch.Generator,
        start: float,
    ) -> tuple[FourierSpectrum, dict[str, Any], str]:
        grid = self.levels.grid_size
        if method == "tabulate" and n_queries is not None and grid > n_queries:
            raise ValueError(
                f"method='tabulate' queries all {self.made.describe_grid()} but n_queries={n_queries:,}; raise "
                "n_queries or use method='auto'"
            )
        if method == "tabulate":
            check_tabulation(self.levels)  # its tables must fit max_memory: refused before any query
        budget = self.options.n_validation
        self.check = self._held_out(min(budget, TABULATE_CHECK) if method == "tabulate" else budget)
        self.oracle.phase = "fit"
        params: dict[str, Any] = {"levels": sum(self.levels.level_count()), "grid": self.levels.grid_size}
        if self.flipped:
            params["bits_constant_in_background"] = self.flipped
        stages: list[dict[str, Any]] = []
        stopped = None
        hint = ""
        fit: TermFit | None
        design, check_values = None, None
        if method == "tabulate":
            fit, values = tabulate(self.oracle, self.levels)
            check_values = values[grid_index(self.levels.codes(self.check.points), self.levels.level_count())]
            spectrum = table_spectrum(self.levels, values)
            stopped = "every level combination queried"
            hint = (
                f"Raise k (now {k}), or leave k=None for the exact spectrum."
                if k is not None
                else "The tabulated spectrum is exact on the grid: if it misses, the model is not deterministic."
            )
        elif method == "hybrid":
            deadline = None if self.options.time_budget is None else start + float(self.options.time_budget)
            sampler = HybridSampler(self.fit_rows, self.background, self.players, self.m)
            ladder = Ladder(
                self.oracle,
                self.levels,
                sampler,
                self.check,
                goal,
                max_degree=max_degree,
                max_queries=DEFAULT_QUERIES if n_queries is None else n_queries,
                generator=make_generator(seed, self.background.device),
                deadline=deadline,
            )
            result = ladder.run()
            fit, spectrum, stages, stopped = result.fit, result.spectrum, result.stages, result.stopped
            design = ladder.check_design
            hint = _advice(stopped, n_queries, self.m, self.has_data)
        else:
            fit = None
            cube = _cube_options(self.options, seed, self.background.device, None)
            n = self.levels.n_features
            size = k or (2**n if method == "exact" else UNIFORM_DEFAULT_K)
            uniform = fit_uniform(self.oracle, n, size, max_degree, n_queries, method, **cube)
            spectrum = FourierSpectrum.trusted(uniform.frequencies, uniform.amplitudes)
            params.update(uniform.params)
            hint = "Raise k, or use method='auto' to fit where SHAP evaluates the model."
        if fit is not None and k is not None and len(spectrum) > k:
            fit = prune_terms(fit, self.levels, self.check.points, k)
            spectrum = fit.spectrum(UnitWalsh(self.levels))
            stages.append({"method": f"pruned to k={k}", "terms": int(fit.keys.numel()), "walsh_terms": len(spectrum)})
        if fit is None:  # a cube fit: cut to k, drop rounding-level terms, evaluate the spectrum on the check
            cut = _cut(spectrum.frequencies, spectrum.amplitudes.to(torch.float64), k, self.options.threshold)
            surrogate = cut.evaluate_unchecked(self.check.points.to(torch.float64)).to(torch.float64)
        elif self.options.threshold:  # terms cut by amplitude: the term fit no longer equals the spectrum
            cut = spectrum.prune(threshold=self.options.threshold)
            surrogate = cut.evaluate_unchecked(self.check.points.to(torch.float64)).to(torch.float64)
        elif check_values is not None and k is None:  # the tabulated fit equals the table on every hybrid
            cut, surrogate = spectrum.prune(), check_values
        else:
            cut = spectrum.prune()  # sorted by |a_f|; the expansion already dropped rounding-level terms
            surrogate = fit.predict_on(
                PointDesign(self.levels, fit.codec, self.check.points) if design is None else design
            )
        scores = score(self.check, surrogate, cut)
        if stages and stages[-1].get("method") != "hybrid":
            stages[-1].update(scores)
        params["check"] = self.check.describe() + ("" if self.held_out else "; rows shared with the fit")
        fields = {
            "method": method,
            "reason": reason,
            "k": k,
            "max_degree": max_degree,
            "stages": tuple(stages),
            "params": params,
            "stopped": stopped,
            "players": None if self.found is None else self.found.description,
            "n_players": self.m,
            "scores": scores,
            "domain": self._domain(method),
        }
        return cut, fields, hint


def _with_both_values(background: Tensor, players: Tensor, m: int) -> tuple[Tensor, int]:
    """The rows the fit is held to when no ``data=`` says which rows will be explained: the background, plus one
    row where every single-bit player that is constant over the background takes its other value (else the fit
    never sees that value, and a row holding it, e.g. any input against Captum's usual single baseline row, would
    be explained by a spectrum that ignores the bit: zero values without a word). A constant player of several
    bits has no one other value (a one-hot block has several, a free group 2^w): it is refused with the fix.
    Returns the rows and the number of bits flipped."""
    sizes = torch.bincount(players, minlength=m)
    same = (background == background[:1]).all(0)
    varies = torch.zeros(m, dtype=torch.bool, device=players.device).index_put_((players,), ~same, accumulate=True)
    wide = ((sizes > 1) & ~varies).nonzero()[:, 0].tolist()
    if wide:
        features = [(players == g).nonzero()[:, 0].tolist() for g in wide[:3]]
        raise ValueError(
            f"no data= was given and {len(wide)} grouped player(s) (features {features}"
            f"{' ...' if len(wide) > 3 else ''}) take one value in every background row, so the fit would never "
            "see their other values (a row explained there would get zero values): pass data= (rows like those "
            "you explain), or a background where those players vary"
        )
    constant = (sizes[players] == 1) & same
    flipped = int(constant.sum())
    if not flipped:
        return background, 0
    extra = background[:1].clone()
    extra[:, constant] = ~extra[:, constant]
    return torch.cat((background, extra)), flipped


def _advice(stopped: str, n_queries: int | None, m: int, has_data: bool) -> str:
    """What to change when the ladder stopped below the target."""
    if not has_data:
        return (
            "No data= was given, so the fit holds only for hybrids of the background with itself: pass data= (rows "
            "like the ones you explain, e.g. the training set)."
        )
    if stopped.startswith("query budget"):
        return f"The query budget ran out: raise n_queries (now {n_queries or DEFAULT_QUERIES:,})."
    if stopped.startswith("time budget"):
        return "The time budget ran out: raise FitOptions(time_budget=...), drop it, or fit on a GPU (device=)."
    enumerate_hint = (
        f" With {m} players, exact values by enumeration are affordable for known rows: "
        "FourierShap(model, background, method='enumerate')."
        if m <= 12
        else ""
    )
    return (
        "More terms and samples stopped helping: the model is not sparse on these hybrids (interactions of more "
        "players than max_degree, or too many levels). Raise max_degree, pass data= with rows closer to the ones "
        "you explain, or group features into fewer players." + enumerate_hint
    )


def _report(
    spectrum: FourierSpectrum,
    oracle: Oracle,
    check: HeldOut | None,
    eval_data: Tensor | None,
    n_validation: int,
    seed: int | torch.Generator,
    device: torch.device,
    target_r2: float | None,
    target_metric: TargetMetric,
    fields: dict[str, Any],
) -> FitReport:
    """The report's R² checks (queries counted as validation) and fields."""
    start = time.perf_counter()
    fit_queries = oracle.rows
    oracle.phase = "validation"
    r2_uniform = r2_eval = r2_hybrid = r2_shap = r2_shap_se = r2_background = None
    cube_energy = fields.pop("cube_energy", None)
    if cube_energy is not None:  # Parseval on the whole cube: the residual energy is what was dropped
        total, variance = cube_energy
        dropped = total - float((spectrum.amplitudes.to(torch.float64) ** 2).sum())
        r2_uniform = 1.0 - max(dropped, 0.0) / variance if variance > 0 else 1.0
    elif check is None and n_validation:
        x = uniform_inputs(n_validation, spectrum.n_features, make_generator(validation_seed(seed) + 1, device), device)
        r2_uniform = r2_score(oracle(x), spectrum.evaluate_unchecked(x))
    if eval_data is not None:
        r2_eval = r2_score(oracle(eval_data), spectrum.evaluate_unchecked(eval_data.to(spectrum.dtype)))
    n_val = oracle.rows - fit_queries
    if check is not None:
        scores = fields.pop("scores")
        r2_hybrid, r2_shap, r2_shap_se = scores["r2"], scores["r2_shap"], scores["r2_shap_se"]
        n_val += check.n_queries
    return FitReport(
        n_features=spectrum.n_features,
        n_terms=len(spectrum),
        n_validation_queries=n_val,
        validation_time_s=time.perf_counter() - start,
        r2_uniform=r2_uniform,
        r2_eval=r2_eval,
        r2_hybrid=r2_hybrid,
        r2_shap=r2_shap,
        r2_shap_se=r2_shap_se,
        r2_background=r2_background,
        target_r2=target_r2,
        target_metric=target_metric,
        **fields,
    )

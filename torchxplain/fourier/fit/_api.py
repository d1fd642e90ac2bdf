"""Fit a sparse Fourier spectrum to a black box from queries: ``fit_sparse_fourier`` and its ``FitReport``.

Two regimes:

* **With a background** (``background=``, optionally ``data=`` and ``groups=``): interventional SHAP evaluates the
  model only at hybrids ``(x_S, b_{~S})`` of the rows with the background, and every hybrid lies on the product of
  the players' observed levels (:mod:`~torchxplain.fourier.fit._levels`). ``method="auto"`` takes the exact route
  whenever it is affordable: **tabulation** (:mod:`~torchxplain.fourier.fit._tabulate`) queries every level
  combination once when their number fits the query budget (``2^20`` by default), and the spectrum is
  then exact for any row and background on those levels. Otherwise a **hybrid fit**
  (:mod:`~torchxplain.fourier.fit.hybrid._ladder`): a sparse regression on hybrid samples in the reference-coded
  basis, grown stage by stage until the SHAP values' R², estimated on held-out rows, reaches ``target_r2``, or the
  query budget (``2^21`` queries by default) is spent. ``"exact"``, ``"hashing"`` and ``"regression"`` fit on the cube
  and are checked on the held-out rows. The report says which route was taken and why.
* **Without a background**: fits on uniform inputs of the cube (``"exact"``, ``"hashing"``, ``"regression"``;
  :mod:`~torchxplain.fourier.fit.cube._uniform`); the headline is the R² on uniform inputs.

Exact SHAP values by enumerating coalitions through the model, for few players and known rows, are
``FourierShap(model, background, method="enumerate")`` (:mod:`~torchxplain.fourier.fit._enumerate`).
A checked R² below ``target_r2`` raises a :class:`FitQualityWarning` that says what to change.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

import torch
from torch import Tensor

from torchxplain._core import make_generator, settings
from torchxplain._core.inputs import rows as boundary_rows
from torchxplain._core.validation import check_int
from torchxplain.fourier.fit._levels import PlayerLevels
from torchxplain.fourier.fit._one_hot import FoundPlayers, check_one_hot, find_one_hot_blocks
from torchxplain.fourier.fit._options import FitOptions, binary_rows, fit_options_from, players, validation_seed
from torchxplain.fourier.fit._oracle import Oracle, model_placement
from torchxplain.fourier.fit._report import FitQualityWarning, FitReport, TargetMetric, r2_score, warn_if_below_target
from torchxplain.fourier.fit._tabulate import grid_index, table_spectrum, tabulate
from torchxplain.fourier.fit._walsh import UnitWalsh
from torchxplain.fourier.fit.cube._regression import uniform_inputs
from torchxplain.fourier.fit.cube._uniform import choose_uniform, fit_uniform
from torchxplain.fourier.fit.hybrid._checks import MAX_ROWS, MIN_ROWS, HeldOut
from torchxplain.fourier.fit.hybrid._ladder import Ladder, Target, score
from torchxplain.fourier.fit.hybrid._regression import TermFit, prune_terms
from torchxplain.fourier.fit.hybrid._sampler import HybridSampler
from torchxplain.fourier.fit.hybrid._terms import PointDesign
from torchxplain.fourier.spectrum._spectrum import FourierSpectrum
from torchxplain.fourier.values._grid import GridKernel

Method = Literal["auto", "tabulate", "hybrid", "exact", "hashing", "regression"]
METHODS = ("auto", "tabulate", "hybrid", "exact", "hashing", "regression")
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

__all__ = ["METHODS", "FitQualityWarning", "FitReport", "fit_sparse_fourier"]


def fit_sparse_fourier(
    f: Callable[[Tensor], Tensor],
    n_features: int,
    k: int | None = None,
    max_degree: int | None = None,
    n_queries: int | None = None,
    method: Method = "auto",
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
        f: any callable mapping a ``(B, n)`` float tensor of 0/1 inputs to ``(B,)`` or ``(B, C)`` outputs,
            called under ``no_grad`` in batches, in the dtype of :class:`~torchxplain.settings.dtype_policy`.
        n_features: ``n``, the number of binary inputs.
        k: most Walsh terms kept (the speed knob of the values; ``None``: as many as the fit finds).
        max_degree: most players per term of a hybrid fit (``None``: the ladder's, 2 to 4); a degree cap of the
            cube methods.
        n_queries: query budget of the fit (``None``: ``2^21`` with a background — tabulation up to ``2^20``
            combinations — and each cube method's default without).
        method: ``"auto"``, ``"tabulate"``, ``"hybrid"``, ``"exact"``, ``"hashing"`` or ``"regression"``.
        seed: int or ``torch.Generator``; same seed, same spectrum (budgets count queries, not seconds).
        background: ``(D, n)`` binary background rows of the SHAP values to come: turns on the hybrid regime.
        data: ``(R, n)`` binary rows like the ones to be explained (e.g. the training set; default: the
            background, with each single bit that is constant over it also at its other value; a grouped player
            constant over it is refused). The fit holds for hybrids of these rows with the background; some are
            held out for the check when there are enough.
        groups: ``(n,)`` integer player id per feature (one player per categorical variable), ``"auto"`` to find
            the one-hot blocks of ``data`` and ``background``, or
            ``None`` (singletons). Explain with the same players.
        target: output column for multi-output ``f``.
        target_r2: the held-out R² the fit is held to (``None``: no check). Below it a :class:`FitQualityWarning`
            says what to change; the hybrid ladder escalates to reach it.
        eval_data: optional ``(rows, n)`` binary inputs on which the report also gives the R².
        options: the other knobs (:class:`FitOptions`: time budget, validation size, batch size, device, ...).
        return_report: also return a :class:`FitReport`.
        **option_fields: :class:`FitOptions` fields by name (``batch_size=``, ``time_budget=``, ...), merged into
            ``options``.

    Returns:
        A :class:`FourierSpectrum` on the query device with amplitudes in ``f``'s output dtype, sorted by
        decreasing ``|a_f|``; with ``return_report=True``, ``(spectrum, FitReport)``.

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
    if background is None and (data is not None or groups is not None or method in ("hybrid", "tabulate")):
        raise ValueError(
            "data=, groups= and method='hybrid'/'tabulate' fit on hybrid points of rows with a background: pass "
            "background= (the rows SHAP values will be computed against)"
        )
    first = background if isinstance(background, Tensor) else data if isinstance(data, Tensor) else None
    device, dtype = model_placement(f, opts.device, opts.dtype, first)
    opts = replace(opts, device=device, dtype=dtype)  # the query placement of the user's rows, resolved once
    bg = None if background is None else binary_rows(background, "background", n, device)
    rows = None if data is None else binary_rows(data, "data", n, device)
    found = None
    if isinstance(groups, str):
        found = resolve_auto_groups(groups, [r for r in (rows, bg) if r is not None], _names(data, background))
        player_index, m = found.ids, found.n_players
    else:
        player_index, m = players(groups, n, device)
    spectrum, report = fit_validated(
        f,
        n,
        background=bg,
        data=rows,
        players=player_index,
        m=m,
        **checked_sizes(k, max_degree, n_queries, target),
        method=method,
        seed=seed,
        target_r2=target_r2,
        eval_data=None if eval_data is None else binary_rows(eval_data, "eval_data", n, device),
        options=opts,
        found=found,
    )
    return (spectrum, report) if return_report else spectrum


def resolve_auto_groups(groups: str, tables: list[Tensor], names: tuple[str, ...] | None) -> FoundPlayers:
    """The players of ``groups="auto"``: the one-hot blocks of the rows (:func:`find_one_hot_blocks`)."""
    if groups != "auto":
        raise ValueError(f"groups must be an integer id per feature, 'auto' or None, got {groups[:40]!r}")
    return find_one_hot_blocks(torch.cat(tables), names)


def _names(*frames: Any) -> tuple[str, ...] | None:
    for frame in frames:
        if frame is not None and hasattr(frame, "columns"):
            return boundary_rows(frame.iloc[:1], "data").feature_names
    return None


def checked_sizes(k: object, max_degree: object, n_queries: object, target: object) -> dict[str, int | None]:
    """The fit's integer arguments, checked (a one-element integer tensor ``target`` is taken as an int)."""
    if isinstance(target, Tensor) and target.numel() == 1 and not target.is_floating_point():
        target = int(target)
    return {
        "k": check_int(k, "k", minimum=1, optional=True),
        "max_degree": check_int(max_degree, "max_degree", minimum=0, optional=True),
        "n_queries": check_int(n_queries, "n_queries", minimum=1, optional=True),
        "target": check_int(target, "target", minimum=0, optional=True),
    }


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
    found: FoundPlayers | None = None,
) -> tuple[FourierSpectrum, FitReport]:
    """The fit on validated inputs (bool rows on the query device, dense player indices): the public entry
    and ``FourierShap(model, ...)`` both end here, so every input is converted and checked once."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS} (FourierShap also takes 'enumerate'), got {method!r}")
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
            check = None
        else:
            regime = _HybridRegime(oracle, background, data, players, m, options, seed, found)
            spectrum, fields, hint = regime.fit(k, max_degree, n_queries, method, goal, seed, start)
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
    used, reason = (
        (method, "requested") if method != "auto" else choose_uniform(n, size, max_degree, n_queries, support)
    )
    fit = fit_uniform(oracle, n, size, max_degree, n_queries, used, **_cube_options(options, seed, device, support))
    spectrum = _cut(fit.frequencies, fit.amplitudes, k if k is not None else size, options.threshold)
    hint = "Raise k" + (" (or drop max_degree)" if max_degree is not None else "") + ", or pass background= "
    hint += "(and data=, rows like those you explain) to fit where SHAP evaluates the model."
    fields = {
        "method": used,
        "reason": reason,
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
class _Route:
    method: str
    reason: str


class _HybridRegime:
    """The hybrid regime of one fit: levels, held-out rows and check, sampler, and the route taken."""

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
    ) -> None:
        self.oracle, self.background, self.players, self.m, self.options = oracle, background, players, m, options
        rows = background if data is None else data
        self.has_data = data is not None
        self.flipped = 0
        if data is None:
            rows, self.flipped = _with_both_values(background, players, m)
            if self.flipped:
                oracle.domain_note = (
                    f". No data= was given, so the fit also queries the {self.flipped} bits that are constant in the "
                    "background at their other value (rows you explain may hold it); pass data= (rows like those "
                    "you explain) to query only their hybrids with the background"
                )
        if options.one_hot:
            check_one_hot(background, players, m, "background")
            if data is not None:
                check_one_hot(data, players, m, "data")
        self.levels = PlayerLevels(torch.cat((rows, background)), players, m)
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

    def _where(self) -> str:
        if self.has_data:
            return "data and background"
        flipped = f" (and the other value of its {self.flipped} constant bits: no data= was given)"
        return "the background" + (flipped if self.flipped else "")

    def route(self, method: str, n_queries: int | None) -> _Route:
        grid = self.levels.grid_size
        sizes = self.levels.level_count()
        shown = "·".join(str(s) for s in sizes) if len(sizes) <= 8 else f"{len(sizes)} players' level counts"
        if method == "tabulate":
            if n_queries is not None and grid > n_queries:
                raise ValueError(
                    f"method='tabulate' queries all {grid:,} level combinations ({shown}) but n_queries={n_queries:,}; "
                    "raise n_queries or use method='auto'"
                )
            return _Route("tabulate", f"requested: every one of the {grid:,} level combinations ({shown}) queried once")
        if method != "auto":
            return _Route(method, "requested")
        limit = TABULATE_LIMIT if n_queries is None else n_queries
        if grid <= limit and (GridKernel.fits(self.m) or grid <= 4096):
            return _Route(
                "tabulate",
                f"auto: the {self.m} players take {grid:,} level combinations ({shown}) in {self._where()}, "
                f"within the {limit:,}-query budget, so each was queried once: the spectrum is exact",
            )
        why = f"{grid:.3g} level combinations" if grid > limit else f"{self.m} players (tabulated values need <= 14)"
        return _Route(
            "hybrid",
            f"auto: {why} is too many to tabulate within {limit:,} queries, so a sparse fit on hybrid samples",
        )

    def fit(
        self,
        k: int | None,
        max_degree: int | None,
        n_queries: int | None,
        method: str,
        goal: Target,
        seed: int | torch.Generator,
        start: float,
    ) -> tuple[FourierSpectrum, dict[str, Any], str]:
        route = self.route(method, n_queries)
        budget = self.options.n_validation
        self.check = self._held_out(min(budget, TABULATE_CHECK) if route.method == "tabulate" else budget)
        self.oracle.phase = "fit"
        params: dict[str, Any] = {"levels": sum(self.levels.level_count()), "grid": self.levels.grid_size}
        if self.flipped:
            params["bits_constant_in_background"] = self.flipped
        stages: list[dict[str, Any]] = []
        stopped = None
        hint = ""
        fit: TermFit | None
        design, check_values = None, None
        if route.method == "tabulate":
            fit, values = tabulate(self.oracle, self.levels)
            check_values = values[grid_index(self.levels.codes(self.check.points), self.levels.level_count())]
            spectrum = table_spectrum(self.levels, values)
            stopped = "every level combination queried"
            hint = (
                f"Raise k (now {k}), or leave k=None for the exact spectrum."
                if k is not None
                else "The tabulated spectrum is exact on the grid: if it misses, the model is not deterministic."
            )
        elif route.method == "hybrid":
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
            size = k or (2**n if route.method == "exact" else UNIFORM_DEFAULT_K)
            uniform = fit_uniform(self.oracle, n, size, max_degree, n_queries, route.method, **cube)
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
            "method": route.method,
            "reason": route.reason,
            "k": k,
            "max_degree": max_degree,
            "stages": tuple(stages),
            "params": params,
            "stopped": stopped,
            "players": None if self.found is None else self.found.description,
            "n_players": self.m,
            "scores": scores,
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

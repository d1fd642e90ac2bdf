"""The router: the one place that decides how a black box is explained, priced in predicted seconds.

:func:`route` takes a validated :class:`~torchxplain.fourier.sources._problem.Problem` (binary or continuous rows,
players found once) and ``method``:

* a source object or a method name with its knobs → that source (a knob it does not take is refused, naming the
  source it belongs to);
* ``"auto"`` → every source that takes the given knobs is a candidate — :class:`Tabulate` (binary rows whose level
  grid is small), :class:`Enumerate` (each (row, background row) pair's coalitions through the model) and
  :class:`Correct` (Shapley values to a tolerance, with standard errors) — and each is priced in seconds: the model's
  cost per row, measured on a small probe batch on its device, times the model rows the route needs, plus our own
  algebra's time from its cost model. The exact candidates cost what they cost; the correction is priced at its
  build plus, per row, the model rows its pilot forecasts for the design it will run (or the row's enumeration,
  where it enumerates the row outright). The cheapest exact candidate wins whenever it costs no more than
  :data:`EXACT_PREMIUM` times the correction (the forecasts' measured error); the report lists every candidate
  with its predicted seconds and says why the winner won. :class:`Fit` (a surrogate whose accuracy
  is checked, not guaranteed; priced at its full ladder) is a candidate only when the knobs rule the correction out
  (``k=``, ``max_degree=``, ...); then the exact route wins when it costs no more than the fit.

The rows to be explained are known to ``explain_after_fit`` (``problem.rows``); a constructor prices enumeration
for :data:`ASSUMED_ROWS` rows like ``data`` (pass ``method=`` to choose another route).

**Prices that do not move with the load.** Our own algebra's cost model is in seconds on the machine where its
constants were measured, at which a reference workload (:func:`reference_seconds`: small matrix products and
activations, like a torch model's) took :data:`REFERENCE_SECONDS`. The probe times the reference workload beside
the model, on the same device and on one thread (as the constants were measured; on a busy machine OpenMP threads
waiting on each other would price a scheduler's delay, not the work), each the best of :data:`TIMED_RUNS` runs (a
CPU run the scheduler paused counts its CPU seconds, :func:`_timed`), and scales our constants by the ratio: a
loaded machine slows the model, the reference and our algebra alike, so the ranking of the routes stays the same
and only the predicted seconds grow. The route taken is always reported; ``method=`` pins it.

:func:`route_cube` is the choice among the cube fits of ``fit_sparse_fourier`` without a background.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, cast

import torch
from torch import Tensor

from torchxplain._core.seeding import make_generator
from torchxplain._core.settings import parse_memory
from torchxplain.fourier.fit import (
    AUTO_EXACT_MAX_FEATURES,
    CONTINUOUS_STAGES,
    DEFAULT_QUERIES,
    LS_MAX_COLUMNS,
    MAX_DIFFERING,
    PILOT_ROUNDS,
    PILOT_ROWS,
    Oracle,
    pair_sizes,
    regression_sizes,
    tabulation_bytes,
)
from torchxplain.fourier.sources._base import BlackBoxSource, Source, refuse_foreign, source_from
from torchxplain.fourier.sources._correct import Correct
from torchxplain.fourier.sources._enumerate import Enumerate
from torchxplain.fourier.sources._fit import CubeFit, Fit
from torchxplain.fourier.sources._problem import Problem
from torchxplain.fourier.sources._spectrum import KnownSpectrum
from torchxplain.fourier.sources._tabulate import Tabulate
from torchxplain.fourier.sources._trees import Trees
from torchxplain.fourier.spectrum import EXACT_MAX_FEATURES, count_low_degree
from torchxplain.fourier.values import GridKernel

try:
    import resource
except ImportError:  # Windows: runs are timed in wall seconds
    resource = None  # type: ignore[assignment]

SOURCES: tuple[type[Source], ...] = (Enumerate, Tabulate, Correct, Fit, CubeFit, Trees, KnownSpectrum)
"""Every source, in the order messages list them."""
BLACK_BOX: tuple[type[Source], ...] = (Enumerate, Tabulate, Correct, Fit, CubeFit)
"""The sources of ``FourierShap(model, background, method=...)``."""
AUTO: tuple[type[Source], ...] = (Tabulate, Enumerate, Correct, Fit)
"""The candidates of ``method="auto"``: the routes that meet the accuracy target (exact ones, and :class:`Correct`,
to its tolerance); :class:`Fit` only when the knobs rule :class:`Correct` out (its surrogate's accuracy is checked,
not guaranteed)."""
ASSUMED_ROWS = 1_000
"""Rows a constructor prices enumeration for when the rows to explain are not known yet."""
PROBE_ROWS = 4096
"""Rows of the probe batch that times the model: the routes' batch size, so that a model's cost per call is spread
as in the routes (GB1's random forest, 1,024 rows: 2.6 times its cost per row in the routes' batches)."""
REFERENCE_SECONDS = 7.4e-4
"""Seconds of :func:`reference_seconds`'s workload on one thread of the machine the cost constants below were
measured on (``benchmarks/route_costs.py`` measures both)."""
SAMPLED_ROWS = 64
"""Rows of ``data`` whose pairs with the background are counted to price enumeration when the rows are unknown."""
GRID_CHECK = 4096
"""Held-out queries of a tabulated spectrum (its check)."""

# Our own algebra, seconds per unit at REFERENCE_SECONDS (one CPU thread of the project's 2-core x86 machine,
# measured by benchmarks/route_costs.py). They only have to rank routes whose costs differ by large factors.
ENUMERATE_PER_ROW = 5.2e-9
"""Building a hybrid and weighing its game value, per model row and per column (``benchmarks/route_costs.py``:
5.1-6.5 ns on the benchmark's diabetes MLP, 10 columns, and GB1's MLP and forest, 80)."""
TABULATE_PER_POINT = 1.2e-6
"""Expanding a level table into Walsh terms, per grid point and per player."""
FIT_PER_SAMPLE = {False: 3.6e-4, True: 3.2e-4}
"""A fit's own work per hybrid sample (binary, continuous), over its whole ladder."""
CORRECT_PER_ROW = (1.5e-7, 1.1e-8)
"""The correction's own work per model row, its build's included (spread over :data:`ASSUMED_ROWS` rows): a
constant and a part per player (draws, hybrids, weights, control variates), least squares over the benchmark's
cases (``benchmarks/route_costs.py``, at the reference speed: 0.29 µs at 10 players (diabetes), 0.38 and 0.73 at 40
(tanh40; sgemm, with the per-pair regression), 0.71 and 1.36 at 80 (GB1's MLP and forest))."""
EXACT_PREMIUM = 1.3
"""An exact route wins over the correction when it costs at most this many times as much: the forecasts' error.
Measured (``benchmarks/route_costs.py``, one thread, load 2-3 on 2 cores), the predicted over the measured seconds
for 1,000 rows were 0.94-1.03 for enumeration and 0.78-1.30 for the correction (whose rows its pilot forecasts to
1-9%); where both apply, enumeration's ratio over the correction's was 0.93 (GB1's MLP), 1.10 (diabetes) and 1.31
(GB1's forest, where enumeration measured 1.9 times faster). At 1.3, an exact route the forecasts make up to 30%
dearer against the correction than it is still wins; the correction wins where it measured clearly faster
(diabetes' MLP: 1.47 times, forecast 1.6)."""
CORRECT_COALITIONS = 32
"""Coalitions per player and background row the correction is priced at per explained row when an exact route
costs less than its build alone (its pilot is not run then; what it spent at ``target_r2=0.999`` on the
benchmark's MLPs ranged from 4 to 130)."""


@dataclass(frozen=True)
class Candidate:
    """One route the router priced.

    Attributes:
        method: ``"tabulate"``, ``"enumerate"`` or ``"fit"``. exact: whether its values are exact.
        seconds: predicted seconds (model and our own algebra), ``None`` when the route is out.
        model_rows: model rows it needs. note: what the prediction covers, or why the route is out.
    """

    method: str
    exact: bool
    seconds: float | None
    model_rows: int | None
    note: str

    def describe(self) -> str:
        """The candidate in words, for reports."""
        if self.seconds is None:
            return f"{self.method}: out ({self.note})"
        rows = "" if self.model_rows is None else f", {self.model_rows:,} model rows"
        return f"{self.method}: {self.seconds:.3g} s predicted ({self.note}{rows})"


@dataclass(frozen=True)
class Route:
    """The router's decision: the source, why, the candidates it priced, the model's measured seconds per row and
    the machine's speed factor (the reference workload's time now over its time where the cost constants were
    measured)."""

    source: BlackBoxSource
    reason: str
    candidates: tuple[Candidate, ...] = ()
    seconds_per_row: float | None = None
    slowdown: float | None = None

    def as_records(self) -> tuple[dict[str, Any], ...]:
        """The candidates as JSON-able records (kept in the fit report)."""
        return tuple(
            {"method": c.method, "exact": c.exact, "seconds": c.seconds, "model_rows": c.model_rows, "note": c.note}
            for c in self.candidates
        )


def route(problem: Problem, method: Any, knobs: dict[str, Any], spectral: bool = False) -> Route:
    """The source that explains ``problem`` (module docstring); ``spectral``: only sources that give a spectrum
    (``fit_sparse_fourier``).

    Raises:
        TypeError: a knob no candidate takes (the message names the source it belongs to), or knobs by name beside
            a source object.
        ValueError: an unknown method name.
    """
    sources = tuple(s for s in BLACK_BOX if not (spectral and s is Enumerate))
    if not (isinstance(method, str) and method == "auto"):
        source = cast(BlackBoxSource, source_from(method, knobs, sources, SOURCES))
        where = f" ({problem.why_continuous})" if problem.continuous else ""
        return Route(source, f"requested: {source.title}: {source.summary}{where}")
    candidates = tuple(s for s in AUTO if s in sources)
    allowed = [s for s in candidates if set(knobs) <= set(s.knobs())]
    if not allowed:
        _refuse_auto(knobs, candidates)
    if Correct in allowed and Fit in allowed:
        allowed.remove(Fit)  # the fit only where the knobs rule the correction out (AUTO)
    return _priced(problem, [cast(BlackBoxSource, s(**knobs)) for s in allowed])


def _refuse_auto(knobs: dict[str, Any], candidates: tuple[type[Source], ...]) -> None:
    """Knobs that no ``method="auto"`` candidate takes together: name where each belongs."""
    best = max(candidates, key=lambda s: len(set(knobs) & set(s.knobs())))
    try:
        refuse_foreign(knobs, best, SOURCES)
    except TypeError as err:
        raise TypeError(f"method='auto' chooses among {', '.join(s.title for s in candidates)}; {err}") from None


def _priced(problem: Problem, sources: list[BlackBoxSource]) -> Route:
    """Price every candidate; the cheapest exact one wins when it costs no more than the fit."""
    seconds_per_row, slowdown = probe(problem) if len(sources) > 1 else (0.0, 1.0)
    prices = Prices(seconds_per_row, slowdown)
    candidates: list[tuple[BlackBoxSource, Candidate]] = []
    ordered = sorted(sources, key=lambda s: isinstance(s, Correct))  # exact routes first: they bound the correction
    for source in ordered:
        if isinstance(source, Tabulate):
            candidates.append((source, _tabulate(problem, source, prices)))
        elif isinstance(source, Enumerate):
            candidates.append((source, _enumerate(problem, prices)))
        elif isinstance(source, Correct):
            priced = [c.seconds for _, c in candidates if c.exact and c.seconds is not None]
            candidates.append((source, _correct(problem, source, prices, min(priced, default=None))))
        else:
            assert isinstance(source, Fit)
            candidates.append((source, _fit(problem, source, prices)))
    feasible = [(s, c) for s, c in candidates if c.seconds is not None or len(candidates) == 1]
    if not feasible:
        raise ValueError(
            "no route can explain this black box: " + "; ".join(c.describe() for _, c in candidates) + ". Group "
            "the features into fewer players, or allow a fit (drop the knobs that rule it out)"
        )
    accurate = [(s, c) for s, c in feasible if isinstance(s, Correct)]
    fit = accurate[0] if accurate else next(((s, c) for s, c in feasible if not c.exact), None)
    exact = min(((s, c) for s, c in feasible if c.exact), key=lambda sc: sc[1].seconds or 0.0, default=None)
    fit_seconds = None if fit is None else fit[1].seconds
    premium = EXACT_PREMIUM if accurate else 1.0
    if exact is not None and (fit_seconds is None or (exact[1].seconds or 0.0) <= premium * fit_seconds):
        chosen, why = exact, "the cheapest exact route"
        if fit_seconds and exact[1].seconds:
            why += f", {fit_seconds / exact[1].seconds:.3g}x cheaper than a fit"
    else:
        assert fit is not None
        chosen, why = fit, "cheaper than every exact route" if exact is not None else "no exact route applies"
        if accurate and any(not c.exact and s is not chosen[0] for s, c in feasible):
            why += " (and held to its tolerance: a fit's accuracy is only checked)"
    listed = "; ".join(c.describe() for _, c in candidates)
    speed = "" if len(sources) == 1 else f"; the model answers in {seconds_per_row * 1e6:.3g} µs per row"
    explained = "the rows to explain" if problem.rows is not None else f"{ASSUMED_ROWS:,} rows like data"
    where = f"{problem.why_continuous}; " if problem.continuous else ""
    reason = (
        f"auto: {where}{chosen[1].method} is {why} for {explained} (candidates: {listed}{speed}); "
        f"{chosen[0].summary}; method= pins a route"
    )
    return Route(chosen[0], reason, tuple(c for _, c in candidates), seconds_per_row, slowdown)


@dataclass(frozen=True)
class Prices:
    """The model's seconds per row and the factor that scales our own algebra's constants to this machine now."""

    per_row: float
    slowdown: float


TIMED_RUNS = 7
"""Runs of a timed workload; the best counts (a run that waited for the scheduler is not the machine's speed)."""


def _timed(device: torch.device, work: Any) -> float:
    """Best of :data:`TIMED_RUNS` runs of ``work()`` in wall seconds (synchronised on a GPU), except that a CPU run
    that never waited but was paused by the scheduler for other processes (involuntary context switches, no
    voluntary one) counts its CPU seconds: on a busy machine its wall seconds hold their time too (a 4,096-row probe
    of a 3x300 MLP read 1.6 times its cost at load 2 on 2 cores); a model that waits (on a device, a server, its
    own threads) is priced at the time it takes."""
    best = float("inf")
    for _ in range(TIMED_RUNS):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        switches, start, cpu = _switches(), time.perf_counter(), time.process_time()
        work()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        waited, paused = (after - before for after, before in zip(_switches(), switches, strict=True))
        best = min(best, min(cpu, wall) if device.type == "cpu" and paused and not waited else wall)
    return best


def _switches() -> tuple[int, int]:
    """This process's voluntary and involuntary context switches so far (zeros where ``resource`` is missing:
    Windows, where every run counts its wall seconds)."""
    if resource is None:
        return 0, 0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_nvcsw, usage.ru_nivcsw


def reference_seconds(device: torch.device) -> float:
    """Seconds (:func:`_timed`) of a fixed workload of small torch ops on ``device`` (50 products of
    ``(256, 64) @ (64, 64)`` with a ReLU): the machine's speed right now, as the model and our algebra see it."""
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(256, 64, generator=generator).to(device)
    w = torch.randn(64, 64, generator=generator).to(device)

    def work() -> None:
        for _ in range(50):
            torch.relu(a @ w)

    return _timed(device, work)


def probe(problem: Problem) -> tuple[float, float]:
    """The model's seconds per row on a :data:`PROBE_ROWS`-row batch on its device (best of :data:`TIMED_RUNS`
    warm runs, :func:`_timed`), and the slowdown of the reference workload against :data:`REFERENCE_SECONDS`
    (module docstring)."""
    oracle = Oracle(problem.model, problem.n_features, problem.device, problem.dtype, PROBE_ROWS, problem.target)
    rows = problem.background if problem.data is None else problem.data
    batch = rows[torch.arange(PROBE_ROWS, device=rows.device) % rows.shape[0]]
    if not problem.continuous:
        batch = batch.bool()
    oracle.phase = "probe"
    oracle(batch[:8])  # warm-up: first calls pay for lazy initialisation
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as our constants were measured: threads waiting on a busy machine price nothing
    try:
        per_row = _timed(problem.device, lambda: oracle(batch)) / PROBE_ROWS
        slowdown = reference_seconds(problem.device) / REFERENCE_SECONDS
    finally:
        torch.set_num_threads(threads)
    return per_row, slowdown


def _tabulate(problem: Problem, source: Tabulate, prices: Prices) -> Candidate:
    if problem.continuous:
        return Candidate("tabulate", True, None, None, "continuous columns have as many levels as values")
    made = problem.hybrid_rows(source.one_hot)
    grid, m = made.levels.grid_size, problem.players.m
    if grid > source.limit:
        return Candidate("tabulate", True, None, grid, f"{made.describe_grid()}, over the {source.limit:,} limit")
    if not (GridKernel.fits(m) or grid <= GRID_CHECK):
        return Candidate("tabulate", True, None, grid, f"{m} players: tabulated values need at most 14")
    if tabulation_bytes(made.levels) > parse_memory():  # priced: its tables must fit max_memory
        return Candidate("tabulate", True, None, grid, f"the tables of {made.describe_grid()} exceed max_memory")
    rows = grid + min(source.n_validation, GRID_CHECK)
    seconds = rows * prices.per_row + grid * m * TABULATE_PER_POINT * prices.slowdown
    return Candidate("tabulate", True, seconds, rows, f"every one of {made.describe_grid()}, once")


def _enumerate(problem: Problem, prices: Prices) -> Candidate:
    players, background = problem.players, problem.background
    if problem.rows is None and problem.data is None:  # nothing says which rows come: any may differ everywhere
        if players.m > MAX_DIFFERING:
            return Candidate(
                "enumerate", True, None, None, f"{players.m} players, without data= to say how many a row changes"
            )
        rows = ASSUMED_ROWS * background.shape[0] * 2**players.m
        counted = f"{ASSUMED_ROWS:,} rows differing from the background in every player (no data= given)"
    else:
        if problem.rows is not None:
            x, scale, counted = problem.rows, 1.0, "the rows to explain"
        else:
            assert problem.data is not None
            pool = problem.data
            pick = torch.randperm(pool.shape[0], generator=make_generator(problem.seed), device="cpu")[:SAMPLED_ROWS]
            x, scale = pool[pick.to(pool.device)], ASSUMED_ROWS / min(SAMPLED_ROWS, pool.shape[0])
            counted = f"{ASSUMED_ROWS:,} rows like data"
        if x.shape[0] == 0:
            return Candidate("enumerate", True, 0.0, 0, "no rows")
        if not problem.continuous:
            x, background = x.bool(), background.bool()
        sizes = pair_sizes(x, background, players.index, players.m)
        widest = int(sizes.max())
        if widest > MAX_DIFFERING:
            return Candidate(
                "enumerate",
                True,
                None,
                None,
                f"a pair differs in {widest} players (enumeration stops at {MAX_DIFFERING})",
            )
        rows = int(float((2.0**sizes).sum()) * scale)
    seconds = rows * (prices.per_row + ENUMERATE_PER_ROW * problem.n_features * prices.slowdown)
    return Candidate("enumerate", True, seconds, rows, f"2^d per (row, background row) pair for {counted}")


def _correct(problem: Problem, source: Correct, prices: Prices, exact: float | None) -> Candidate:
    """The correction: its build (the surrogate's fit and the pilot) and, per explained row, the row's enumeration
    where the plan enumerates the row outright (``exact_row_rows``), else the model rows its pilot forecasts to the
    tolerance for the design the plan runs (the plan report's ``forecast``, at most the budget). When some exact
    route costs more than the build alone, the build is made here (the source reuses it); else the rows are priced
    at :data:`CORRECT_COALITIONS` coalitions per player and background row (the exact route wins anyway)."""
    players, d_rows = problem.players, problem.background.shape[0]
    if problem.rows is None and problem.data is None:  # as for enumeration: any row may differ everywhere
        scale = float(ASSUMED_ROWS)
        enumeration = torch.full((1,), float(d_rows) * 2.0 ** min(players.m, 62), dtype=torch.float64)
    else:
        rows_, scale = _rows_to_price(problem)
        background = problem.background if problem.continuous else problem.background.bool()
        sizes = pair_sizes(rows_ if problem.continuous else rows_.bool(), background, players.index, players.m)
        enumeration = (2.0 ** sizes.clamp(max=62).to(torch.float64)).sum(1)
    build = 2 * source.fit_samples + PILOT_ROWS * PILOT_ROUNDS * 2 * d_rows
    own = (CORRECT_PER_ROW[0] + CORRECT_PER_ROW[1] * players.m) * prices.slowdown
    per_row = prices.per_row + own
    sampled, how = float(CORRECT_COALITIONS * players.m * d_rows), "typical"
    whole = enumeration <= sampled  # rows the correction enumerates outright
    if exact is None or exact > build * per_row:
        plan, _ = source.plan(problem)
        assert plan.report is not None
        sampled, how = plan.report.forecast, "its pilot's"
        whole = enumeration <= min(plan.options.exact_row_rows, source.budget)
    spent = torch.where(whole, enumeration, min(sampled, float(source.budget)))
    rows = int(float(spent.sum()) * scale) + build
    target = f"target_r2={source.target_r2}" if source.tolerance is None else f"tolerance {source.tolerance:g}"
    note = f"a surrogate and a correction to {target} at {how} rows per row, with standard errors"
    return Candidate("correct", False, rows * per_row, rows, note)


def _rows_to_price(problem: Problem) -> tuple[Tensor, float]:
    """The rows the correction is priced on and the factor to the rows it will explain (as :func:`_enumerate`)."""
    if problem.rows is not None:
        return problem.rows, 1.0
    assert problem.data is not None
    pool = problem.data
    pick = torch.randperm(pool.shape[0], generator=make_generator(problem.seed), device="cpu")[:SAMPLED_ROWS]
    return pool[pick.to(pool.device)], ASSUMED_ROWS / min(SAMPLED_ROWS, pool.shape[0])


def _fit(problem: Problem, source: Fit, prices: Prices) -> Candidate:
    if problem.continuous:
        samples = CONTINUOUS_STAGES[-1].samples if source.n_queries is None else source.n_queries
    else:
        samples = DEFAULT_QUERIES if source.n_queries is None else source.n_queries
    rows = samples + source.n_validation
    seconds = rows * prices.per_row + samples * FIT_PER_SAMPLE[problem.continuous] * prices.slowdown
    return Candidate("fit", False, seconds, rows, "a surrogate over its whole ladder, approximate")


def route_cube(
    method: str, n: int, k: int, max_degree: int | None, n_queries: int | None, support: Tensor | None
) -> tuple[str, str]:
    """``fit_sparse_fourier`` without a background: the cube method and a sentence why (``method="auto"`` picks
    one)."""
    if method != "auto":
        return method, "requested"
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
                f"auto: only {n_cand:,} frequencies have degree <= {max_degree}, so dense least squares over all "
                "of them"
            )
    why = f"n={n} is too large to query all 2^{n} inputs"
    if max_degree is not None:
        why += f" and degree <= {max_degree} leaves {count_low_degree(n, max_degree):,} candidates"
    return "hashing", f"auto: {why}, so the sparse WHT by hashing"

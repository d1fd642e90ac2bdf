"""Where the public call's time goes: ``FourierShap.from_trees(model, background).attribute(x)`` split by phase.

Each phase is one of the library's functions, wrapped for the measurement to add its inclusive time (on the
benchmark's clock) to a counter; the table shows the median over the runs. Phases nest (the indented ones are
parts of the one above them), and ``rest`` is the time outside every listed phase.
"""

from __future__ import annotations

import collections
import functools
import importlib
import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import _tree_peers

import torchxplain as tx

PHASES = [
    ("parse the model", "torchxplain.fourier.sources._trees", "parse_model_outputs", 0),
    ("resolve the encoding", "torchxplain.fourier.sources._trees", "resolve_encoding", 0),
    ("extract the spectrum", "torchxplain.fourier.sources._trees", "extract", 0),
    ("node paths and sources", "torchxplain.fourier.trees._extraction", "Expansion", 1),
    ("support families", "torchxplain.fourier.trees._extraction", "assign_families", 1),
    ("family search (intervals)", "torchxplain.fourier.trees._extraction", "support_families", 1),
    ("merge terms", "torchxplain.fourier.trees._extraction", "TermBuffer.result", 1),
    ("(k, n) frequencies", "torchxplain.fourier.trees._extraction", "_dense", 1),
    ("explainer state (surrogate)", "torchxplain.fourier.explainer._core", "FourierExplainerCore._setup", 0),
    ("attribute", "torchxplain.fourier.explainer._core", "FourierExplainerCore._attribute", 0),
    ("inputs and players", "torchxplain.fourier.explainer._core", "FourierExplainerCore._inputs", 1),
    ("cost model", "torchxplain.fourier.values._plan", "ValuePlan._decide", 1),
    ("layout and moments", "torchxplain.fourier.values._plan", "SupportLayout", 1),
    ("tables", "torchxplain.fourier.values._plan", "build_tables", 1),
    ("explain (gathers)", "torchxplain.fourier.values._plan", "explain", 1),
]


@contextmanager
def phase_clock() -> Iterator[collections.Counter[str]]:
    """Wrap every phase; yield the counter of seconds (reset it between runs)."""
    seconds: collections.Counter[str] = collections.Counter()
    restore: list[tuple[Any, str, Any]] = []
    for label, module, attr, _ in PHASES:
        owner: Any = importlib.import_module(module)
        *path, name = attr.split(".")
        for part in path:
            owner = getattr(owner, part)
        original = getattr(owner, name)
        restore.append((owner, name, original))
        setattr(owner, name, _timed(original, label, seconds))
    try:
        yield seconds
    finally:
        for owner, name, original in reversed(restore):
            setattr(owner, name, original)


def _timed(fn: Callable[..., Any], label: str, seconds: collections.Counter[str]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = _tree_peers.clock()
        try:
            return fn(*args, **kwargs)
        finally:
            seconds[label] += _tree_peers.clock() - start

    return wrapper


def profile_call(model: Any, background: Any, queries: Any, runs: int) -> tuple[float, dict[str, float]]:
    """Median total seconds of fresh public calls and the median seconds of each phase."""
    totals, parts = [], []
    with phase_clock() as seconds:
        for _ in range(runs + 1):  # the first run warms the caches and is left out
            seconds.clear()
            start = _tree_peers.clock()
            tx.FourierShap.from_trees(model, background).attribute(queries)
            totals.append(_tree_peers.clock() - start)
            parts.append(dict(seconds))
    totals, parts = totals[1:], parts[1:]
    return statistics.median(totals), {
        label: statistics.median(p.get(label, 0.0) for p in parts) for label, *_ in PHASES
    }


def print_profile(title: str, total: float, parts: dict[str, float]) -> None:
    """The phases of one case, in ms, with the share of the total."""
    print(f"\n{title}: {total * 1e3:.1f} ms")
    top = 0.0
    for label, _, _, level in PHASES:
        ms = parts[label] * 1e3
        if level == 0:
            top += parts[label]
        if ms >= 0.05:
            print(f"  {'  ' * level}{label:<{32 - 2 * level}} {ms:9.2f} ms  {100 * parts[label] / total:5.1f}%")
    rest = total - top
    print(f"  {'rest (validation, outputs, Python)':<32} {rest * 1e3:9.2f} ms  {100 * rest / total:5.1f}%")

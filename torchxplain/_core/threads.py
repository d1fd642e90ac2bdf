"""Independent pieces of work on several CPU threads, each with one intra-op thread.

Some hot paths issue many small tensor operations (tens of thousands of elements each): too small for torch's
intra-op threads to pay, but independent across pieces (ranges of trees, say). Those run the pieces on Python
threads instead; torch releases the GIL inside its operations, so the threads' operations overlap.

Each worker runs in a copy of the caller's :mod:`contextvars` context (so the caller's ``tx.settings`` blocks hold
there too, as :mod:`torchxplain._core.settings` requires) and with one intra-op thread, so that the workers do not
also start intra-op teams that would compete for the same cores. ``torch.set_num_threads`` in a worker leaves the
caller's own count as it is, but it also sets the count that threads started later begin with: the caller sets its
count again once every worker has stopped (a thread that the program starts meanwhile begins with one).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import torch

R = TypeVar("R")


def cpu_workers(device: torch.device, pieces: int) -> int:
    """How many threads :func:`run_split` should use for ``pieces`` independent pieces of work on ``device``: the
    caller's intra-op thread count (``torch.get_num_threads()``) on the CPU, at most one per piece; one elsewhere (a
    GPU's kernels are queued on one stream either way)."""
    if device.type != "cpu":
        return 1
    return max(1, min(torch.get_num_threads(), pieces))


def run_split(work: Callable[[int], R], workers: int) -> list[R]:
    """``[work(0), ..., work(workers - 1)]``, each call on its own thread (module docstring), or in the caller's
    thread when ``workers`` is 1. Results come back in order, whatever order the threads finish in, and the first
    exception raised by a worker is raised here once all have stopped."""
    if workers <= 1:
        return [work(0)]
    threads = torch.get_num_threads()

    def one(i: int) -> R:
        torch.get_num_threads()  # the thread's lazy initialisation first: it would reset the count set below
        torch.set_num_threads(1)
        return work(i)

    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(contextvars.copy_context().run, one, i) for i in range(workers)]
            return [future.result() for future in futures]
    finally:
        torch.set_num_threads(threads)

"""``run_split``: pieces of work on worker threads, in the caller's settings, with one intra-op thread each."""

from __future__ import annotations

import threading

import pytest
import torch

import torchxplain as tx
from torchxplain._core.settings import parse_memory
from torchxplain._core.threads import cpu_workers, run_split


@pytest.fixture
def three_threads():
    threads = torch.get_num_threads()
    torch.set_num_threads(3)
    yield
    torch.set_num_threads(threads)


def test_each_piece_runs_once_on_its_own_thread_in_order(three_threads):
    seen: list[tuple[int, int, int]] = []
    lock = threading.Lock()
    started = threading.Barrier(3, timeout=10)  # every worker waits for the others: three threads at once

    def work(i: int) -> int:
        started.wait()
        with lock:
            seen.append((i, threading.get_ident(), torch.get_num_threads()))
        return 10 * i

    assert run_split(work, 3) == [0, 10, 20]
    assert sorted(i for i, _, _ in seen) == [0, 1, 2]
    assert len({ident for _, ident, _ in seen}) == 3 and threading.get_ident() not in {t for _, t, _ in seen}
    assert {count for _, _, count in seen} == {1}  # one intra-op thread inside a worker
    assert torch.get_num_threads() == 3  # the caller's count, unchanged


def test_workers_see_the_callers_settings_and_leave_the_count_for_new_threads(three_threads):
    with tx.settings.max_memory("3MiB"):
        budgets = run_split(lambda i: parse_memory(), 2)
    assert budgets == [3 * 2**20] * 2
    later: list[int] = []
    thread = threading.Thread(target=lambda: later.append(torch.get_num_threads()))
    thread.start()
    thread.join()
    assert later == [3]  # a thread started afterwards starts from the caller's count, not a worker's one


def test_a_workers_exception_reaches_the_caller(three_threads):
    def work(i: int) -> int:
        if i == 1:
            raise ValueError("piece 1 failed")
        return i

    with pytest.raises(ValueError, match="piece 1 failed"):
        run_split(work, 3)
    assert torch.get_num_threads() == 3


def test_one_worker_runs_in_the_callers_thread():
    assert run_split(lambda i: (i, threading.get_ident()), 1) == [(0, threading.get_ident())]


def test_cpu_workers_follow_the_thread_count_and_the_pieces(three_threads):
    cpu = torch.device("cpu")
    assert cpu_workers(cpu, 10) == 3
    assert cpu_workers(cpu, 2) == 2
    assert cpu_workers(cpu, 0) == 1
    assert cpu_workers(torch.device("meta"), 10) == 1  # not the CPU: one stream of kernels

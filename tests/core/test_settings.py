"""tx.settings: context managers for the memory budget, progress bars, validation level and dtype policy."""

from __future__ import annotations

import io
import sys
import threading
import time

import pytest
import torch

import torchxplain as tx
from torchxplain._core import check_binary, progress, progress_enabled, rows_per_chunk
from torchxplain.settings import DEFAULT_MAX_MEMORY
from torchxplain.testing import tiny_memory_budget


def test_max_memory_nests_and_restores():
    assert tx.settings.max_memory.value() == DEFAULT_MAX_MEMORY
    with tx.settings.max_memory("1GB"):
        assert tx.settings.max_memory.value() == 2**30
        with tx.settings.max_memory(3 * 2**20):
            assert tx.settings.max_memory.value() == 3 * 2**20
            assert rows_per_chunk(2**20, 100) == 3
        assert tx.settings.max_memory.value() == 2**30
    assert tx.settings.max_memory.value() == DEFAULT_MAX_MEMORY


def test_explicit_argument_overrides_the_setting():
    with tx.settings.max_memory("4MB"):
        assert rows_per_chunk(2**20, 100) == 4
        assert rows_per_chunk(2**20, 100, "8MB") == 8
        assert tx.settings.max_memory.resolve("16MB") == 16 * 2**20


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        (1, ValueError, "at least 1 MiB"),
        (True, TypeError, "bool"),
        (1.5e9, TypeError, "float"),
        ("lots", ValueError, "like '2GB'"),
        ("9" * 10_000, ValueError, "like '2GB'"),
        (None, TypeError, "None"),
    ],
)
def test_bad_budgets_are_refused_with_the_fix(value, error, match):
    with pytest.raises(error, match=match):
        tx.settings.max_memory(value)


def test_long_bad_budget_is_not_echoed_in_full():
    with pytest.raises(ValueError) as info:
        tx.settings.parse_memory("x" * 100_000)
    assert len(str(info.value)) < 200


def test_settings_are_per_thread():
    seen = {}

    def worker():
        seen["thread"] = tx.settings.max_memory.value()

    with tx.settings.max_memory("2GB"):
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        assert tx.settings.max_memory.value() == 2 * 2**30
    assert seen["thread"] == DEFAULT_MAX_MEMORY


def test_show_progress_default_reads_the_environment(monkeypatch):
    monkeypatch.setenv("TORCHXPLAIN_PROGRESS", "0")
    assert not progress_enabled()
    with tx.settings.show_progress(True):
        assert progress_enabled()
        assert not progress_enabled(False)
    monkeypatch.setenv("TORCHXPLAIN_PROGRESS", "1")
    assert progress_enabled()
    with pytest.raises(TypeError, match="True or False"):
        tx.settings.show_progress("yes")


def test_validation_shapes_skips_value_scans_only():
    x = torch.tensor([[0.0, 2.0]])
    with pytest.raises(ValueError, match="binary"):
        check_binary(x, "x")
    with tx.settings.validation("shapes"):
        assert check_binary(x, "x") is x
    with pytest.raises(ValueError, match="one of"):
        tx.settings.validation("none")


def test_dtype_policy():
    half, double = torch.zeros(1, dtype=torch.bfloat16), torch.zeros(1, dtype=torch.float64)
    assert tx.settings.dtype_policy.compute_dtype(half) == torch.float32
    assert tx.settings.dtype_policy.compute_dtype(half, double) == torch.float64
    with tx.settings.dtype_policy("float64"):
        assert tx.settings.dtype_policy.compute_dtype(half) == torch.float64
    with tx.settings.dtype_policy("float32"):
        assert tx.settings.dtype_policy.compute_dtype(double) == torch.float32


def test_tiny_budget_is_for_tests_only():
    with tiny_memory_budget(64):
        assert tx.settings.max_memory.value() == 64
        assert rows_per_chunk(8, 100) == 8
    with pytest.raises(ValueError, match="positive"):
        with tiny_memory_budget(0):
            pass


def test_using_applies_only_the_given_arguments():
    with tx.settings.max_memory("2GB"), tx.settings.show_progress(False):
        with tx.settings.using(max_memory="8MB"):
            assert tx.settings.max_memory.value() == 8 * 2**20
            assert tx.settings.show_progress.value() is False
        with tx.settings.using(show_progress=True):
            assert tx.settings.max_memory.value() == 2 * 2**30
            assert tx.settings.show_progress.value() is True
        assert tx.settings.max_memory.value() == 2 * 2**30
    with pytest.raises(ValueError, match="1 MiB"), tx.settings.using(max_memory=10):
        pass


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize("tty", [True, False])
def test_bars_are_on_by_default_only_where_they_can_be_seen(monkeypatch, tty):
    monkeypatch.delenv("TORCHXPLAIN_PROGRESS", raising=False)
    monkeypatch.setattr(sys, "stderr", _Stream(tty))
    assert progress_enabled() is tty  # a log file or a pipe gets no bars
    monkeypatch.setenv("TORCHXPLAIN_PROGRESS", "on")
    assert progress_enabled()  # asked for everywhere
    monkeypatch.setenv("TORCHXPLAIN_PROGRESS", "off")
    assert not progress_enabled()


def test_a_bar_stays_silent_for_work_under_a_second(monkeypatch):
    stream = _Stream(True)
    monkeypatch.setattr(sys, "stderr", stream)
    assert list(progress(range(5), show=True, desc="quick")) == list(range(5))
    assert stream.getvalue() == ""
    slow = []
    for i in progress(range(3), show=True, desc="slow", total=3):
        time.sleep(0.6)  # past the one-second delay: the bar appears
        slow.append(i)
    assert slow == [0, 1, 2] and "slow" in stream.getvalue()

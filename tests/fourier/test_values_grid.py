"""The level-grid kernel equals brute-force coalition enumeration on random spectra (grouped and singleton
players, Shapley, Banzhaf and pairwise interactions), also for queries with levels the background lacks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchxplain as tx
from tests.fourier import brute_force
from torchxplain.fourier.values._plan import ValuePlan

KINDS = [("shapley", brute_force.shapley), ("banzhaf", brute_force.banzhaf), ("interactions", brute_force.interactions)]


@pytest.mark.parametrize("groups", [np.array([0, 0, 1, 1, 1, 2, 3, 3]), np.arange(6)], ids=["grouped", "singletons"])
def test_the_grid_kernel_equals_brute_force(groups):
    rng = np.random.default_rng(len(groups))
    n, m = len(groups), int(groups.max()) + 1
    freq, amp = rng.integers(0, 2, (30, n)).astype(bool), rng.normal(size=30)
    background = rng.integers(0, 2, (3, n)).astype(float)  # few rows: queries bring levels it lacks
    queries = rng.integers(0, 2, (6, n)).astype(float)
    spectrum = tx.FourierSpectrum(torch.tensor(freq), torch.tensor(amp))
    plan = ValuePlan(spectrum, torch.tensor(background), None if m == n else torch.tensor(groups), m, "grid")
    for kind, reference in KINDS:
        for batch in (queries[:2], queries):  # the tables grow with the second batch's new levels
            got = getattr(plan, kind)(torch.tensor(batch)).numpy()
            np.testing.assert_allclose(got, reference(freq, amp, batch, background, groups), rtol=0, atol=1e-12)
    assert plan.describe()["choices"]["shapley"]["kernel"] == "grid"


def test_auto_picks_the_grid_for_a_dense_spectrum_of_few_players():
    rng = np.random.default_rng(1)
    groups = np.repeat(np.arange(3), 6)  # 3 one-hot-like players of 6 bits
    freq = rng.integers(0, 2, (3000, 18)).astype(bool)
    spectrum = tx.FourierSpectrum(torch.tensor(freq), torch.tensor(rng.normal(size=3000)))
    levels = np.eye(6)[rng.integers(0, 6, (40, 3))].reshape(40, -1)
    plan = ValuePlan(spectrum, torch.tensor(levels), torch.tensor(groups), 3)
    plan.shapley(torch.tensor(levels[:20]))
    assert plan.describe()["choices"]["shapley"]["kernel"] == "grid"


def test_the_grid_kernel_takes_players_wider_than_one_packed_word():
    # two players of 70 and 3 bits (a thermometer code of 70 thresholds is one player): packed keys of two words
    rng = np.random.default_rng(2)
    groups = np.repeat([0, 1], [70, 3])
    codes = (np.arange(70)[None] < rng.integers(0, 71, (5, 1))).astype(float)
    rows = np.hstack([codes, rng.integers(0, 2, (5, 3))])
    freq = np.zeros((8, 73), dtype=bool)
    freq[np.arange(8), rng.integers(0, 73, 8)] = True
    freq[4:, 71] = True  # interactions across the players
    amp = rng.normal(size=8)
    spectrum = tx.FourierSpectrum(torch.tensor(freq), torch.tensor(amp))
    plan = ValuePlan(spectrum, torch.tensor(rows[:3]), torch.tensor(groups), 2, "grid")
    got = plan.shapley(torch.tensor(rows)).numpy()
    np.testing.assert_allclose(got, brute_force.shapley(freq, amp, rows, rows[:3], groups), rtol=0, atol=1e-12)

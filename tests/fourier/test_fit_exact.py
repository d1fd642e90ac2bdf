"""Exact routes of the black-box fit: tabulation and enumeration equal brute-force coalition enumeration through
the model itself (numpy, tests/fourier/brute_force.py), on random categorical models."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchxplain as tx
from tests.fourier import brute_force
from torchxplain.fourier.fit._enumerate import PairGames, differing_players, enumerate_shapley, enumeration_queries
from torchxplain.fourier.fit._levels import PlayerLevels
from torchxplain.fourier.fit._oracle import Oracle
from torchxplain.fourier.fit._tabulate import table_spectrum, tabulate
from torchxplain.fourier.fit._walsh import UnitWalsh


def categorical_case(seed: int, kinds: tuple[str, ...], rows: int):
    """Rows of blocks of each kind ('onehot3', 'onehot4', 'bit', 'patterns3': any 3-bit patterns, 'thermo4': a
    4-threshold thermometer code), the players, and a random smooth nonlinear float64 model."""
    rng = np.random.default_rng(seed)
    blocks, groups = [], []
    for g, kind in enumerate(kinds):
        if kind.startswith("onehot"):
            width = int(kind[-1])
            block = np.eye(width)[rng.integers(0, width, rows)]
        elif kind == "bit":
            block = rng.integers(0, 2, (rows, 1)).astype(float)
        elif kind == "patterns3":
            block = rng.integers(0, 2, (rows, 3)).astype(float)
        else:
            level = rng.integers(0, 5, rows)
            block = (level[:, None] > np.arange(4)[None]).astype(float)
        blocks.append(block)
        groups += [g] * block.shape[1]
    x = np.concatenate(blocks, axis=1)
    weights = rng.normal(size=(x.shape[1], 8))
    out = rng.normal(size=8)

    def predict(z: np.ndarray) -> np.ndarray:
        return np.tanh(z @ weights) @ out + z[:, 0] * z[:, -1]

    return x, np.array(groups), predict


def _torch_model(predict):
    return lambda z: torch.as_tensor(predict(z.double().numpy()))


CASES = [
    ("onehot3", "onehot4", "bit"),
    ("patterns3", "bit", "onehot3"),
    ("thermo4", "onehot3", "bit", "bit"),
]


@pytest.mark.parametrize("kinds", CASES)
def test_tabulation_and_enumeration_equal_brute_force(kinds):
    x, groups, predict = categorical_case(0, kinds, 60)
    data, background, queries = x[:40], x[40:48], x[48:54]
    players, m = torch.as_tensor(groups), int(groups.max()) + 1
    truth = brute_force.model_shapley(predict, queries, background, groups)
    oracle = Oracle(_torch_model(predict), x.shape[1], torch.device("cpu"), torch.float64, 4096, None)
    levels = PlayerLevels(torch.as_tensor(np.concatenate((data, background))).bool(), players, m)
    fit, values = tabulate(oracle, levels)
    spectrum = fit.spectrum(UnitWalsh(levels))
    assert oracle.rows == levels.grid_size
    direct = table_spectrum(levels, values)  # the fast route of a whole table: the same spectrum
    order = lambda s: s.frequencies.long().numpy() @ (2 ** np.arange(s.n_features))  # noqa: E731
    a, b = np.argsort(order(spectrum)), np.argsort(order(direct))
    np.testing.assert_array_equal(spectrum.frequencies.numpy()[a], direct.frequencies.numpy()[b])
    np.testing.assert_allclose(
        spectrum.amplitudes.numpy()[a], direct.amplitudes.numpy()[b], atol=1e-12
    )  # every grid point queried once
    tabulated = tx.fourier.shapley_values(spectrum, torch.as_tensor(queries), torch.as_tensor(background), groups)
    enumerated = enumerate_shapley(
        oracle, torch.as_tensor(queries).bool(), torch.as_tensor(background).bool(), players, m
    )
    np.testing.assert_allclose(tabulated.numpy(), truth, atol=1e-10)
    np.testing.assert_allclose(enumerated.numpy(), truth, atol=1e-12)


def test_the_tabulated_spectrum_equals_the_model_on_every_hybrid():
    x, groups, predict = categorical_case(1, ("onehot4", "patterns3", "thermo4"), 80)
    players, m = torch.as_tensor(groups), int(groups.max()) + 1
    levels = PlayerLevels(torch.as_tensor(x).bool(), players, m)
    oracle = Oracle(_torch_model(predict), x.shape[1], torch.device("cpu"), torch.float64, 4096, None)
    spectrum = tabulate(oracle, levels)[0].spectrum(UnitWalsh(levels))
    rng = np.random.default_rng(2)
    a, b = x[rng.integers(0, 80, 500)], x[rng.integers(0, 80, 500)]
    take = rng.integers(0, 2, (500, m)).astype(bool)[:, groups]
    hybrids = np.where(take, a, b)
    np.testing.assert_allclose(spectrum.evaluate(torch.as_tensor(hybrids)).numpy(), predict(hybrids), atol=1e-10)


def test_enumeration_counts_its_queries_and_skips_equal_players():
    x, groups, predict = categorical_case(3, ("onehot3", "onehot3", "bit"), 30)
    players, m = torch.as_tensor(groups), int(groups.max()) + 1
    queries, background = torch.as_tensor(x[:5]).bool(), torch.as_tensor(x[5:12]).bool()
    oracle = Oracle(_torch_model(predict), x.shape[1], torch.device("cpu"), torch.float64, 4096, None)
    enumerate_shapley(oracle, queries, background, players, m)
    expected = sum(
        2 ** len({int(groups[j]) for j in np.nonzero(q.numpy() != b.numpy())[0]}) for q in queries for b in background
    )
    assert oracle.rows == enumeration_queries(queries, background, players, m) == expected


@pytest.mark.parametrize("kind", ["onehot", "real"])
def test_pair_games_points_are_each_coalitions_hybrid(kind):
    """Every point is the hybrid of its pair and coalition (bit i of the code takes player ``members[i]`` from the
    row), checked against a direct construction: on one-hot rows (few columns differ: the background row is copied
    and the differing columns set) and on real rows (most columns differ: every entry selected by its bit)."""
    rng = np.random.default_rng(4)
    if kind == "onehot":  # 20 blocks; a pair differs in at most 3 of them
        x, groups, _ = categorical_case(5, ("onehot4",) * 16 + ("bit",) * 4, 120)
        redrawn = np.argsort(rng.random((60, 20)), axis=1) < rng.integers(0, 4, (60, 1))  # 0-3 blocks per pair
        a = torch.as_tensor(x[:60]).bool()
        b = torch.as_tensor(np.where(redrawn[:, groups], x[60:], x[:60])).bool()
    else:
        groups = np.repeat(np.arange(6), 2)
        rows = torch.as_tensor(rng.normal(size=(40, 12)))
        rows[rng.random((40, 12)) < 0.2] = 0.0  # some columns equal in a pair, some players too
        a, b = rows[rng.integers(0, 40, 60)], rows[rng.integers(0, 40, 60)]
    players, m = torch.as_tensor(groups), int(groups.max()) + 1
    games = PairGames(a, b, players, m)
    seen = 0
    for block in games.blocks:
        d = block.members.shape[1]
        for j, pair in enumerate(block.pairs.tolist()):
            for code in range(2**d):
                coalition = block.members[j][[bool(code >> i & 1) for i in range(d)]]
                take = torch.isin(players, coalition)
                expected = torch.where(take, a[pair], b[pair])
                assert torch.equal(games.points[block.start + j * 2**d + code], expected)
                seen += 1
    assert seen == games.n_queries == int((2 ** differing_players(a, b, players, m).sum(1)).sum())

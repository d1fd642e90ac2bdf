"""The sparse regression of the hybrid fit: its pool, its normal equations by scatter-adds and its selection,
against dense numpy references built independently from the level codes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torchxplain.fourier.fit._keys import TermKeys
from torchxplain.fourier.fit._levels import PlayerLevels
from torchxplain.fourier.fit.hybrid._regression import Selection, select_terms
from torchxplain.fourier.fit.hybrid._sampler import HybridSampler
from torchxplain.fourier.fit.hybrid._terms import MIN_COUNT, TermPool

SIZES = (3, 4, 2, 5, 3, 1)  # one-hot blocks (the last never varies)


def one_hot_case(seed: int, rows: int = 200, samples: int = 3000):
    rng = np.random.default_rng(seed)
    levels = rng.integers(0, SIZES, size=(rows, len(SIZES)))
    start = np.cumsum((0,) + SIZES[:-1])
    x = np.zeros((rows, sum(SIZES)), dtype=bool)
    x[np.arange(rows)[:, None], start + levels] = True
    groups = torch.repeat_interleave(torch.arange(len(SIZES)), torch.tensor(SIZES))
    data = torch.as_tensor(x)
    lv = PlayerLevels(data, groups, len(SIZES))
    z = HybridSampler(data, data[:15], groups, len(SIZES)).sample(samples, torch.Generator().manual_seed(seed))
    return lv, z, groups


def dense_design(lv: PlayerLevels, z: torch.Tensor, pool: TermPool) -> np.ndarray:
    """``(N, T)`` 0/1 design in numpy: a term is on where the point shows each of its units' levels."""
    zs = z.numpy()
    columns = []
    for units in pool.units(torch.arange(len(pool))).tolist():
        on = np.ones(zs.shape[0], dtype=bool)
        for u in units:
            if u == lv.n_units:
                continue
            g = int(lv.unit_player[u])
            level = lv.levels[g][u - int(lv.offsets[g]) + 1].numpy()
            on &= (zs[:, lv.bits[g].numpy()] == level).all(1)
        columns.append(on)
    return np.stack(columns, 1).astype(float)


def test_the_pool_holds_every_term_active_on_enough_samples_with_its_incidences():
    lv, z, _ = one_hot_case(0)
    pool = TermPool(TermKeys.for_levels(lv), lv.active_units(z), 3)
    design = dense_design(lv, z, pool)
    np.testing.assert_array_equal(design.sum(0), pool.counts.numpy())
    assert (design.sum(0) >= MIN_COUNT).all()
    rebuilt = np.zeros_like(design)
    rebuilt[pool.incidence.rows.numpy(), pool.incidence.cols.numpy()] = 1.0
    np.testing.assert_array_equal(rebuilt, design)
    # completeness: every pair of levels of distinct players seen together on >= MIN_COUNT samples is a term
    codes = lv.codes(z).numpy()
    degree_two = int((pool.degrees == 2).sum())
    pairs_total = 0
    for g in range(len(SIZES)):
        for h in range(g + 1, len(SIZES)):
            mask = (codes[:, g] > 0) & (codes[:, h] > 0)
            _, counts = np.unique(codes[mask][:, [g, h]], axis=0, return_counts=True)
            pairs_total += int((counts >= MIN_COUNT).sum())
    assert degree_two == pairs_total


@pytest.mark.parametrize("rounds", [1, 4])
def test_the_sparse_normal_equations_solve_the_dense_least_squares(rounds):
    lv, z, _ = one_hot_case(1)
    pool = TermPool(TermKeys.for_levels(lv), lv.active_units(z), 3)
    y = torch.randn(z.shape[0], dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    selection = Selection(pool, y)
    order = torch.randperm(len(pool), generator=torch.Generator().manual_seed(3))
    for part in torch.tensor_split(order, rounds):  # the Cholesky factor is extended rounds - 1 times
        selection.add(part)
    design = np.concatenate((np.ones((z.shape[0], 1)), dense_design(lv, z, pool)[:, order.numpy()]), 1)
    want = np.linalg.lstsq(design, y.numpy(), rcond=None)[0]
    got = np.concatenate(([selection.constant], selection.coefficients.numpy()))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-8)


def test_selection_finds_a_term_whose_lower_order_parts_cancel():
    """A degree-3 interaction with no degree-1 or degree-2 part in the reference coding: support discovery by
    heredity would need its parents; the pool holds it from the start."""
    lv, z, _ = one_hot_case(4, samples=6000)
    codes = lv.codes(z)
    pick = (codes[:, 0] == 1) & (codes[:, 1] == 2) & (codes[:, 3] == 1)
    main = (codes[:, 2] == 1).double()
    y = 3.0 * pick.double() + 0.5 * main + 0.25
    pool = TermPool(TermKeys.for_levels(lv), lv.active_units(z), 3)
    fit = select_terms(pool, y)
    predicted = fit.predict(lv, z)
    torch.testing.assert_close(predicted, y, rtol=0, atol=1e-8)
    big = fit.coefficients.abs() > 1e-6
    assert int(big.sum()) == 2 and sorted(fit.degrees[big].tolist()) == [1, 3]

"""Every interaction index against shapiq's ExactComputer on the brute-force interventional game (n ≤ 10)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_limits

from tests.fourier.cases import random_case, random_groups
from tests.fourier.interaction_reference import (
    coalitions,
    exact_computer,
    fsii_exact,
    interventional_game,
    ours_at,
    spectrum_game,
)
from torchxplain import FourierSpectrum
from torchxplain.fourier import INDICES, interaction_values
from torchxplain.testing import tiny_memory_budget

TOL = 1e-10
ORDERS = {index: [1] if index in ("SV", "BV") else [1, 2, 3] for index in INDICES}
# (seed, n features, k frequencies, background rows, queries, grouped players)
CASES = [(0, 7, 30, 5, 2, False), (1, 10, 40, 4, 1, True), (2, 10, 30, 3, 1, False), (3, 9, 25, 6, 1, True)]


@pytest.fixture(autouse=True)
def _one_blas_thread():
    """shapiq's FSII/FBII least squares are small; many BLAS threads only contend on a loaded machine."""
    with threadpool_limits(1):
        yield


def _check_against_shapiq(result, game, computer, m, index, order, q):
    if index == "FSII":
        # shapiq imposes FSII's two constraints by a weight of 1e8 (a penalty), accurate to ~1e-9: compare
        # with the exact constrained least squares to TOL and with shapiq to the penalty's accuracy.
        exact = fsii_exact(game, m, order)
        worst = max(abs(ours_at(result, q, s) - value) for s, value in exact.items())
        assert worst < TOL, f"FSII order {order}: {worst:.2e} from the exact constrained fit"
        tol = 1e-7
    else:
        tol = TOL
    reference = computer(index, order)
    worst = max(abs(ours_at(result, q, s) - reference[s]) for s in coalitions(m, order))
    assert worst < tol, f"{index} order {order}: max |ours - shapiq| = {worst:.2e}"


def _shapiq_case(seed: int, n: int, k: int, n_bg: int, n_q: int, grouped: bool):
    """A random spectrum case with its players and, per query, the spectrum's game and shapiq's exact computer."""
    spec, freq, amp, xq, bg = random_case(seed, n, k, n_bg, n_q)
    groups = random_groups(seed + 7, n) if grouped else np.arange(n)
    m = int(groups.max()) + 1
    player_ids = torch.tensor(groups) if grouped else None
    games = [spectrum_game(freq, amp, xq[q].numpy(), bg.numpy(), groups) for q in range(n_q)]
    return spec, xq, bg, m, player_ids, games, [exact_computer(game, m) for game in games]


@pytest.mark.parametrize("seed,n,k,n_bg,n_q,grouped", CASES)
def test_every_index_matches_shapiq_exact_computer(seed, n, k, n_bg, n_q, grouped):
    spec, xq, bg, m, player_ids, games, computers = _shapiq_case(seed, n, k, n_bg, n_q, grouped)
    for index, orders in ORDERS.items():
        for order in (o for o in orders if o <= m):
            result = interaction_values(spec, xq, bg, index=index, max_order=order, groups=player_ids)
            assert sorted(result) == list(range(order + 1))
            for q in range(n_q):
                _check_against_shapiq(result, games[q], computers[q], m, index, order, q)


def _exact_spectrum_of(predict, n: int) -> FourierSpectrum:
    """All 2^n Walsh amplitudes ``a_f = mean_x h(x) (-1)^{<f,x>}`` by a dense Hadamard product (numpy)."""
    cube = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1).astype(float)
    hadamard = 1.0 - 2.0 * ((cube @ cube.T) % 2)
    amplitudes = hadamard @ predict(cube) / 2**n
    return FourierSpectrum(torch.tensor(cube, dtype=torch.bool), torch.tensor(amplitudes))


@pytest.fixture(scope="module")
def mlp():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)).double()

    def predict(z: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return net(torch.tensor(z, dtype=torch.float64)).squeeze(-1).numpy()

    return predict


@pytest.mark.parametrize("grouped", [False, True])
def test_small_mlp_made_a_spectrum_by_exact_wht_matches_shapiq(mlp, grouped):
    n = 8
    spec = _exact_spectrum_of(mlp, n)
    rng = np.random.default_rng(5)
    bg = rng.integers(0, 2, size=(4, n)).astype(float)
    x = rng.integers(0, 2, size=(1, n)).astype(float)
    groups = np.array([0, 0, 1, 2, 2, 2, 3, 4]) if grouped else np.arange(n)
    m = int(groups.max()) + 1
    game = interventional_game(mlp, x[0], bg, groups)  # the network itself, not the spectrum
    computer = exact_computer(game, m)
    for index, orders in ORDERS.items():
        for order in orders:
            result = interaction_values(
                spec, torch.tensor(x), torch.tensor(bg), index=index, max_order=order,
                groups=torch.tensor(groups) if grouped else None,
            )  # fmt: skip
            _check_against_shapiq(result, game, computer, m, index, order, 0)


def test_orders_are_symmetric_with_zeros_on_repeated_players():
    spec, _, _, xq, bg = random_case(11, 6, 30, 4, 3)
    result = interaction_values(spec, xq, bg, index="k-SII", max_order=3)
    assert result[0].shape == (3,) and result[1].shape == (3, 6)
    assert result[2].shape == (3, 6, 6) and result[3].shape == (3, 6, 6, 6)
    pairs = result[2]
    torch.testing.assert_close(pairs, pairs.transpose(1, 2), rtol=0, atol=0)
    assert torch.all(torch.diagonal(pairs, dim1=1, dim2=2) == 0)
    triples = result[3]
    for perm in [(0, 2, 1, 3), (0, 3, 2, 1), (0, 2, 3, 1)]:
        torch.testing.assert_close(triples, triples.permute(perm), rtol=0, atol=1e-15)
    i = torch.arange(6)
    assert torch.all(triples[:, i, i, :] == 0) and torch.all(triples[:, :, i, i] == 0)
    assert pairs.abs().sum() > 0 and triples.abs().sum() > 0


def test_chunking_does_not_change_the_result():
    spec, _, _, xq, bg = random_case(12, 7, 40, 9, 5)
    groups = torch.tensor(random_groups(3, 7))
    for index in ("STII", "FSII"):
        whole = interaction_values(spec, xq, bg, index=index, max_order=3, groups=groups)
        with tiny_memory_budget(2048):
            chunked = interaction_values(spec, xq, bg, index=index, max_order=3, groups=groups)
        for t in whole:
            torch.testing.assert_close(chunked[t], whole[t], rtol=0, atol=1e-12)


def test_float32_and_array_inputs():
    spec, _, _, xq, bg = random_case(13, 6, 20, 4, 2)
    ref = interaction_values(spec, xq, bg, index="SII", max_order=2)
    spec32 = FourierSpectrum(spec.frequencies, spec.amplitudes.float())
    got = interaction_values(spec32, xq.numpy(), bg.tolist(), index="SII", max_order=2)
    assert got[2].dtype == torch.float32
    torch.testing.assert_close(got[2].double(), ref[2], rtol=0, atol=1e-5)


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"index": "SHAP"}, ValueError, "index must be one of"),
        ({"index": "SV", "max_order": 2}, ValueError, "is a value"),
        ({"index": "SII", "max_order": 7}, ValueError, "between 1 and the number of players"),
        ({"index": "SII", "max_order": 2.0}, TypeError, "max_order must be an int"),
        ({"groups": torch.tensor([0, 0, 2, 2, -4, 3])}, ValueError, "groups must hold non-negative player ids"),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs, error, match):
    spec, _, _, xq, bg = random_case(14, 6, 10, 3, 1)
    with pytest.raises(error, match=match):
        interaction_values(spec, xq, bg, **kwargs)


def test_non_binary_queries_are_refused():
    spec, _, _, xq, bg = random_case(15, 5, 10, 3, 1)
    with pytest.raises(ValueError, match="x must hold binary"):
        interaction_values(spec, xq * 0.5, bg)


def test_differentiable_in_the_amplitudes():
    """The result is linear in the amplitudes: its gradient is the result of each frequency alone."""
    spec, _, _, xq, bg = random_case(16, 5, 8, 3, 2)
    amplitudes = spec.amplitudes.clone().requires_grad_()
    total = interaction_values(FourierSpectrum(spec.frequencies, amplitudes), xq, bg, index="STII", max_order=2)[2]
    (grad,) = torch.autograd.grad(total.sum(), amplitudes)
    unit = torch.eye(len(spec), dtype=torch.float64)
    alone = [interaction_values(FourierSpectrum(spec.frequencies, e), xq, bg, index="STII", max_order=2) for e in unit]
    torch.testing.assert_close(grad, torch.stack([r[2].sum() for r in alone]), rtol=0, atol=1e-12)
    assert grad.abs().sum() > 0


@pytest.mark.parametrize("seed,n,k,n_bg,n_q,grouped", CASES)
@pytest.mark.parametrize("kernel", ["small_support", "gemm"])
def test_every_index_of_either_kernel_matches_shapiq(seed, n, k, n_bg, n_q, grouped, kernel):
    """The small-support tables (orders 0..2 of every index) and the dense kernel, each forced, against shapiq."""
    spec, xq, bg, m, player_ids, games, computers = _shapiq_case(seed, n, k, n_bg, n_q, grouped)
    for index, orders in ORDERS.items():
        for order in (o for o in orders if o <= min(m, 2)):
            result = interaction_values(spec, xq, bg, index=index, max_order=order, groups=player_ids, kernel=kernel)
            for q in range(n_q):
                _check_against_shapiq(result, games[q], computers[q], m, index, order, q)


def test_tables_refuse_orders_above_two():
    spec, _, _, xq, bg = random_case(0, 7, 30, 5, 2)
    with pytest.raises(ValueError, match="tabulates interaction orders up to 2, got max_order=3"):
        interaction_values(spec, xq, bg, index="k-SII", max_order=3, kernel="small_support")

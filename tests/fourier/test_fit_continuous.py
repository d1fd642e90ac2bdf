"""The parts of the continuous black-box fit: levels, block design, least squares, Walsh expansion,
interaction screening. References: numpy slot counts and quantile cuts, dense least squares, direct evaluation of
the spectrum on codes, brute-force Shapley values over raw players (``tree_cases``)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import torch

import torchxplain as tx
from tests.fourier.tree_cases import brute_force_values
from torchxplain.fourier.fit.continuous._blocks import Block, Layout, fine_and_coarse
from torchxplain.fourier.fit.continuous._expand import spectrum_of
from torchxplain.fourier.fit.continuous._levels import RawPlayers
from torchxplain.fourier.fit.continuous._screen import gains, pairs, select, triples_of
from torchxplain.fourier.fit.continuous._solve import block_lstsq, predict
from torchxplain.fourier.fit.hybrid._sampler import HybridSampler


def _mixed(rows: int, seed: int) -> torch.Tensor:
    """Two continuous (one rounded: repeated values), one binary and a one-hot block of three columns."""
    rng = np.random.default_rng(seed)
    return torch.tensor(
        np.concatenate(
            [
                rng.normal(size=(rows, 1)),
                rng.normal(size=(rows, 1)).round(1),
                rng.integers(0, 2, (rows, 1)),
                np.eye(3)[rng.integers(0, 3, rows)],
            ],
            1,
        ),
        dtype=torch.float64,
    )


PLAYERS = torch.tensor([0, 1, 2, 3, 3, 3])


def _setup(max_thresholds: int | None, rows: int = 80, seed: int = 0):
    data = _mixed(rows, seed)
    encoding = tx.fourier.ThresholdEncoding.from_data(data, max_thresholds=max_thresholds)
    return data, encoding, RawPlayers(encoding, PLAYERS, data)


def test_levels_are_slots_and_hot_columns():
    data, encoding, players = _setup(6)
    fresh = _mixed(50, seed=1)
    levels = players.levels(fresh).numpy()
    for j in range(3):
        kept = encoding.threshold[encoding.feature == j].numpy()
        np.testing.assert_array_equal(levels[:, j], (fresh[:, j].numpy()[:, None] > kept[None]).sum(1))
    np.testing.assert_array_equal(levels[:, 3], fresh[:, 3:].numpy().argmax(1))
    assert players.one_hot.tolist() == [False, False, False, True]
    assert players.n_levels.tolist() == [7, int((encoding.feature == 1).sum()) + 1, 2, 3]


def test_a_block_of_columns_must_be_one_hot():
    data = _mixed(40, 0)
    data[5, 3:] = torch.tensor([1.0, 1.0, 0.0])
    encoding = tx.fourier.ThresholdEncoding.from_data(data)
    with pytest.raises(ValueError, match="row 5 .* not one-hot"):
        RawPlayers(encoding, PLAYERS, data)


@pytest.mark.parametrize("k", [2, 3, 5])
def test_coarse_levels_merge_neighbouring_slots_at_equal_counts(k):
    data, encoding, players = _setup(None, rows=200)
    coarse = players.coarse(k)
    fine = players.levels(data)
    for g in range(2):  # the continuous players
        n = int(players.n_levels[g])
        mapping = coarse.level[g, :n].numpy()
        assert int(coarse.sizes[g]) <= k and mapping[0] == 0
        assert (np.diff(mapping) >= 0).all() and (np.diff(mapping) <= 1).all()  # consecutive slots merge
        # reference: the first slot boundary at or past each quantile q/k of the rows
        counts = np.bincount(fine[:, g].numpy(), minlength=n)
        below = np.concatenate(([0.0], np.cumsum(counts)[:-1])) / counts.sum()
        cuts = []
        for q in range(1, k):
            past = [s for s in range(1, n) if below[s] >= q / k - 1e-12]
            if past and past[0] not in cuts:
                cuts.append(past[0])
        np.testing.assert_array_equal(np.flatnonzero(np.diff(mapping)) + 1, sorted(cuts))
        # a coarse level's monomial is the bit of the threshold at its cut
        first = int(players.first_bit[g])
        for c, s in enumerate(sorted(cuts), start=1):
            assert int(coarse.bits[g, c]) == first + s - 1
    assert coarse.sizes[3] == 3 and coarse.sizes[2] == 2  # one-hot and binary players keep their levels


def _design(layout: Layout, active: torch.Tensor) -> torch.Tensor:
    dense = torch.zeros(active.shape[0], layout.n_columns, dtype=torch.float64)
    dense.scatter_(1, active, 1.0)
    return dense


def test_block_least_squares_fits_like_dense_least_squares():
    data, encoding, players = _setup(4)
    blocks = [Block((g,), None) for g in range(4)] + [Block((0, 1), 3), Block((0, 3), 2), Block((1, 2, 3), 2)]
    layout = Layout(players, blocks, fine_and_coarse(players, blocks))
    z = HybridSampler(data, data[:10], PLAYERS, 4).sample(3000, torch.Generator().manual_seed(0))
    y = torch.sin(z.sum(1)) + z[:, 0] * z[:, 1]
    active = layout.active(players.levels(z))
    coef, _ = block_lstsq(active, y, layout.n_columns)
    dense = _design(layout, active)
    expected = dense @ torch.linalg.lstsq(dense, y[:, None], driver="gelsd").solution[:, 0]
    torch.testing.assert_close(predict(active, coef), expected, atol=1e-8, rtol=0)


def _piecewise_model(players: RawPlayers, seed: int, triple_weight: float = 0.5):
    """A model that is a table over the players' fine levels: main effects, a pair and a triple."""
    gen = torch.Generator().manual_seed(seed)
    sizes = [int(s) for s in players.n_levels]
    main = [torch.randn(s, generator=gen, dtype=torch.float64) for s in sizes]
    pair = torch.randn(sizes[0], sizes[3], generator=gen, dtype=torch.float64)
    triple = torch.randn(sizes[1], sizes[2], sizes[3], generator=gen, dtype=torch.float64)

    def model(x: torch.Tensor) -> torch.Tensor:
        lv = players.levels(x)
        out = sum(main[g][lv[:, g]] for g in range(4))
        return out + pair[lv[:, 0], lv[:, 3]] + triple_weight * triple[lv[:, 1], lv[:, 2], lv[:, 3]]

    return model


def test_the_expansion_is_the_fitted_function_on_every_code():
    data, encoding, players = _setup(5)
    model = _piecewise_model(players, 1)
    blocks = [Block((g,), None) for g in range(4)] + [Block((0, 3), 8), Block((1, 2, 3), 8)]
    layout = Layout(players, blocks, fine_and_coarse(players, blocks))
    z = HybridSampler(data, data[:12], PLAYERS, 4).sample(6000, torch.Generator().manual_seed(2))
    coef, _ = block_lstsq(layout.active(players.levels(z)), model(z), layout.n_columns)
    spectrum = spectrum_of(layout, coef, encoding.n_binary)
    fresh = _mixed(300, seed=3)  # unseen values: the codes put them in slots
    evaluated = spectrum.evaluate(encoding.transform(fresh).double())
    torch.testing.assert_close(evaluated, predict(layout.active(players.levels(fresh)), coef), atol=1e-10, rtol=0)


def test_a_model_piecewise_constant_on_the_bins_is_fitted_exactly():
    """Fine levels everywhere (the coarse resolution covers every slot): the fit recovers the model on the
    hybrids, and its closed-form values per player equal brute-force Shapley values of the raw model to 1e-9."""
    data, encoding, players = _setup(5)
    model = _piecewise_model(players, 4)
    background = data[:12]
    blocks = [Block((g,), None) for g in range(4)] + [Block((0, 3), 8), Block((1, 2, 3), 8)]
    layout = Layout(players, blocks, fine_and_coarse(players, blocks))
    z = HybridSampler(data, background, PLAYERS, 4).sample(20000, torch.Generator().manual_seed(5))
    coef, _ = block_lstsq(layout.active(players.levels(z)), model(z), layout.n_columns)
    spectrum = spectrum_of(layout, coef, encoding.n_binary)
    rows = data[20:30]
    phi = tx.fourier.shapley_values(
        spectrum, encoding.transform(rows).double(), encoding.transform(background).double(), PLAYERS[encoding.feature]
    )
    masks = torch.tensor(list(itertools.product([0, 1], repeat=4)), dtype=torch.bool).flip(1)  # bit g at [g]
    hybrid = torch.where(masks[:, PLAYERS][None, :, None, :], rows[:, None, None, :], background[None, None])
    games = model(hybrid.reshape(-1, 6)).reshape(rows.shape[0], 16, background.shape[0]).mean(2)
    np.testing.assert_allclose(phi.numpy(), brute_force_values(games.numpy()), atol=1e-9, rtol=0)


def test_screening_finds_the_planted_interaction():
    data, encoding, players = _setup(None, rows=300)
    z = HybridSampler(data, data[:30], PLAYERS, 4).sample(20000, torch.Generator().manual_seed(6))
    y = z[:, 0] + z[:, 1] + 0.8 * torch.tanh(z[:, 0]) * z[:, 3] + 0.05 * torch.randn(20000, dtype=torch.float64)
    blocks = [Block((g,), None) for g in range(4)]
    layout = Layout(players, blocks, fine_and_coarse(players, blocks))
    active = layout.active(players.levels(z))
    coef, _ = block_lstsq(active, y, layout.n_columns)
    candidates = pairs(4, z.device)
    scores = gains(players.levels(z), players.coarse(4), candidates, y - predict(active, coef))
    assert select(candidates, scores, 1) == [(0, 3)]
    # a hybrid takes several players from one row, so other pairs pick up a little of the planted one
    planted = int((candidates == torch.tensor([0, 3])).all(1).nonzero())
    others = torch.cat((scores[:planted], scores[planted + 1 :]))
    assert float(scores[planted]) > 10 * float(others.max())
    assert triples_of([(0, 1), (1, 2)], z.device).tolist() == [[0, 1, 2]]


class _ExactCheck:
    """A held-out check by enumeration: every coalition of every (row, background row) pair, exact Shapley values
    of the model and of the surrogate on those points (brute force), their R²."""

    def __init__(self, model, rows: torch.Tensor, background: torch.Tensor) -> None:
        self.rows, self.background = rows, background
        masks = torch.tensor(list(itertools.product([0, 1], repeat=4)), dtype=torch.bool).flip(1)
        take = masks[:, PLAYERS][None, :, None, :]
        self.points = torch.where(take, rows[:, None, None, :], background[None, None]).reshape(-1, 6)
        self.values = model(self.points)

    def _phi(self, values: torch.Tensor) -> np.ndarray:
        games = values.reshape(self.rows.shape[0], 16, self.background.shape[0]).mean(2)
        return brute_force_values(games.numpy())

    def r2(self, surrogate: torch.Tensor) -> float:
        return 1 - float(((surrogate - self.values) ** 2).sum() / ((self.values - self.values.mean()) ** 2).sum())

    def shap_r2(self, surrogate: torch.Tensor, phi_h: torch.Tensor) -> tuple[float, float]:
        truth, ours = self._phi(self.values), self._phi(surrogate)
        np.testing.assert_allclose(phi_h.numpy(), ours, atol=1e-9)  # the closed form is the surrogate's values
        return 1 - float(((truth - ours) ** 2).sum() / ((truth - truth.mean()) ** 2).sum()), 0.0


def _ladder(model, data, encoding, players, max_degree=3, max_queries=1 << 17):
    from torchxplain.fourier.fit.continuous._ladder import run_ladder
    from torchxplain.fourier.fit.hybrid._ladder import Target
    from torchxplain.fourier.values._plan import ValuePlan

    background = data[:10]
    check = _ExactCheck(model, data[60:66], background)
    bits = PLAYERS[encoding.feature]

    def closed_form(spectrum, rows):
        plan = ValuePlan(spectrum, encoding.transform(background).double(), bits, 4)
        return plan.shapley(encoding.transform(rows).double())

    sampler = HybridSampler(data[:60], background, PLAYERS, 4)
    return run_ladder(
        model,
        players,
        sampler,
        check,
        closed_form,
        target=Target(0.99, "shap"),
        max_degree=max_degree,
        max_queries=max_queries,
        generator=torch.Generator().manual_seed(0),
    )


def test_the_ladder_stops_when_the_target_is_met():
    data, encoding, players = _setup(5)
    model = _piecewise_model(players, 7, triple_weight=0.0)  # main effects and one pair: the first stage's blocks
    result = _ladder(model, data, encoding, players)
    assert result.stopped == "target met" and len(result.stages) == 1
    assert result.stages[0]["r2_shap"] > 1 - 1e-9


def test_the_ladder_escalates_and_returns_its_best_stage_when_it_cannot_meet_the_target():
    data, encoding, players = _setup(5)
    model = _piecewise_model(players, 8)
    result = _ladder(model, data, encoding, players, max_degree=1)  # main effects only cannot fit the pair
    assert result.stopped != "target met" and len(result.stages) >= 3
    best = max(s["r2_shap"] for s in result.stages)
    assert best < 0.99
    fresh = _mixed(40, seed=9)
    torch.testing.assert_close(
        result.spectrum.evaluate(encoding.transform(fresh).double()),
        predict(result.layout.active(players.levels(fresh)), result.coefficients),
        atol=1e-10,
        rtol=0,
    )
    small = _ladder(model, data, encoding, players, max_degree=1, max_queries=20_000)
    assert small.stopped == "query budget (stage 2 needs 32,768 samples, n_queries=20,000)"
    assert len(small.stages) == 1 and small.stages[0]["samples"] == 16_384


def test_no_stage_holds_more_columns_than_half_its_samples():
    rng = np.random.default_rng(11)
    data, bg = rng.normal(size=(400, 12)), rng.normal(size=(20, 12))  # 12 x 128 thresholds: 1,548 main columns

    def model(z):  # every pair interacts: screening wants every pair at 8 and then 16 bins
        return (z.sum(1) ** 2) / 10

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tx.fourier.FitQualityWarning)
        report = tx.FourierShap(model, bg, data=data, n_queries=40_000, show_progress=False).fit_report
    assert len(report.stages) == 2
    for stage in report.stages:
        assert stage["columns"] <= stage["samples"] // 2, stage
    assert report.stages[0]["interactions"] > 0

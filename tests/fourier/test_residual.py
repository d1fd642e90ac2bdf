"""The residual correction (issue 30): unbiased Shapley values of a black box with standard errors.

References, independent of the library's value code: ``brute_force.model_shapley`` (numpy: every coalition of the
players, the model at the raw hybrids, averaged over the background, the Shapley formula over all ``2^m``
coalitions) and, for the design's weights, the Shapley formula of a random game enumerated here.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from math import comb, factorial

import numpy as np
import pytest
import torch

import torchxplain as tx
from tests.fourier.brute_force import model_shapley
from torchxplain._core import settings
from torchxplain.fourier.fit import CorrectionOptions, correct, fit_additive
from torchxplain.fourier.fit.residual._design import SIZE_LAWS, draw, hybrids, size_table, slot_terms
from torchxplain.fourier.fit.residual._plan import CorrectedPlan


@pytest.fixture(autouse=True)
def one_thread():
    """Hundreds of small calls: torch's thread pool would spend more time waking than working."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def planted(z: torch.Tensor) -> torch.Tensor:
    """Interactions up to order three on five continuous columns."""
    z = z.double()
    return torch.tanh(z[:, 0] * z[:, 1] - z[:, 2]) + z[:, 3] * z[:, 4] ** 2 + torch.sin(z[:, 0] + z[:, 3] * z[:, 2])


def case(seed: int, rows: int = 4, background: int = 6, p: int = 5) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, p, generator=gen, dtype=torch.float64)
    b = torch.randn(background, p, generator=gen, dtype=torch.float64)
    exact = model_shapley(lambda z: planted(torch.as_tensor(z)).numpy(), x.numpy(), b.numpy(), np.arange(p))
    return x, b, exact


def shapley_of_table(v: np.ndarray, d: int) -> np.ndarray:
    phi = np.zeros(d)
    for i in range(d):
        for mask in range(2**d):
            if not (mask >> i) & 1:
                s = bin(mask).count("1")
                phi[i] += factorial(s) * factorial(d - s - 1) / factorial(d) * (v[mask | 1 << i] - v[mask])
    return phi


@pytest.mark.parametrize("law", SIZE_LAWS)
def test_design_weights_give_shapley_values_and_control_variates_in_expectation(law: str) -> None:
    """Enumerated over every interior coalition with its probability: the endpoints' share plus the expected
    weighted odd part is the Shapley value of a random game; the line's odd part and an additive game's features
    have the expectations the estimator relies on."""
    d = 6
    rng = np.random.default_rng(0)
    v = rng.normal(size=2**d)
    table = size_table(d, law, torch.device("cpu"))  # type: ignore[arg-type]
    masks = [m for m in range(1, 2**d - 1)]
    inside = torch.tensor([[(m >> j) & 1 for j in range(d)] for m in masks], dtype=torch.bool)
    size = inside.sum(1)
    dd = torch.full_like(size, d)
    positive, negative, ratio, line = slot_terms(size, dd, torch.ones_like(size, dtype=torch.bool), table)
    weights = torch.where(inside, positive[:, None], negative[:, None])  # a_i(S)
    features = inside.double() - ratio[:, None]  # w_j = [j ∈ S] - s/d
    prob = table[d, size] / torch.tensor([comb(d, int(s)) for s in size], dtype=torch.float64)
    odd = torch.tensor([(v[m] - v[(2**d - 1) ^ m]) / 2 for m in masks], dtype=torch.float64)
    expected = (prob[:, None] * weights * odd[:, None]).sum(0) + (v[-1] - v[0]) / d
    np.testing.assert_allclose(expected.numpy(), shapley_of_table(v, d), atol=1e-12)
    np.testing.assert_allclose((prob[:, None] * weights * line[:, None]).sum(0).numpy(), 0.0, atol=1e-12)
    beta = torch.tensor(rng.normal(size=d))
    cv = (prob[:, None] * weights * (features @ beta)[:, None]).sum(0)
    np.testing.assert_allclose(cv.numpy(), (beta - beta.sum() / d).numpy(), atol=1e-12)


def test_unbiased_over_seeds_with_regression_refits() -> None:
    """The mean over 200 seeds is the brute-force value within 4 standard errors of that mean (per entry), with
    the per-pair regression refitted three times inside the budget; and the reported standard errors are not
    optimistic (the seeds' spread is at most 1.3 times the mean reported variance)."""
    x, b, exact = case(1)
    runs = [
        correct(planted, x, b, torch.arange(5), 5, options=CorrectionOptions(budget=144, seed=seed, slots=6))
        for seed in range(200)
    ]
    values = torch.stack([r.values for r in runs]).numpy()
    assert int(runs[0].rounds.min()) >= 10  # refits after rounds 4, 6 and 9
    spread = values.std(0, ddof=1)
    assert np.all(np.abs(values.mean(0) - exact) <= 4 * spread / np.sqrt(len(runs)) + 1e-12)
    reported = torch.stack([r.standard_errors for r in runs]).square().mean(0).numpy()
    assert np.all(spread**2 <= 1.3 * reported + 1e-12)


def test_intervals_cover_brute_force_values() -> None:
    """95% intervals (value ± 1.96 standard errors) cover 90-99% of (row, player) entries on planted models."""
    covered, total = 0, 0
    for seed in range(4):
        x, b, exact = case(10 + seed, rows=30, background=8)
        est = correct(planted, x, b, torch.arange(5), 5, options=CorrectionOptions(budget=640, seed=seed))
        z = np.abs(est.values.numpy() - exact) / est.standard_errors.numpy()
        covered += int((z <= 1.96).sum())
        total += z.size
    assert 0.90 <= covered / total <= 0.99


def test_same_seed_same_values_in_any_batch_and_chunking() -> None:
    """A row's values depend on its values and the seed only: alone, in a batch, in tiny chunks, in another
    order; another seed gives other values."""
    x, b, _ = case(2, rows=6)
    options = CorrectionOptions(budget=400, seed=7, tolerance=1e-3)
    whole = correct(planted, x, b, torch.arange(5), 5, options=options)
    with settings.max_memory(2**20):
        chunked = correct(planted, x.flip(0), b, torch.arange(5), 5, options=options)
    alone = correct(planted, x[2:3], b, torch.arange(5), 5, options=options)
    assert torch.equal(whole.values, chunked.values.flip(0))
    assert torch.equal(whole.standard_errors[2], alone.standard_errors[0])
    assert torch.equal(whole.values[2], alone.values[0])
    other = correct(planted, x, b, torch.arange(5), 5, options=CorrectionOptions(budget=400, seed=8, tolerance=1e-3))
    assert not torch.equal(whole.values, other.values)


def test_standard_errors_zero_when_the_surrogate_is_exact() -> None:
    """An additive model on discrete columns is its own additive surrogate: the correction has nothing left to
    estimate, its standard errors are zero and the values exact; so with a known non-additive surrogate equal to
    the model."""
    gen = torch.Generator().manual_seed(3)
    levels = torch.tensor([-1.0, 0.5, 2.0])
    pool = levels[torch.randint(0, 3, (200, 4), generator=gen)]
    b, x = pool[:5], pool[5:12]
    weights = torch.tensor([[0.3, -1.0, 2.0], [1.5, 0.0, -0.5], [0.2, 0.9, -2.0], [-1.0, 1.0, 0.4]])

    def additive(z: torch.Tensor) -> torch.Tensor:
        code = (z[..., None] == levels).double().argmax(-1)
        return weights.double().gather(1, code.T).sum(0)

    model = fit_additive(additive, pool[12:], b, torch.arange(4), 4, samples=2048, seed=0)
    est = correct(additive, x, b, torch.arange(4), 4, additive=model, options=CorrectionOptions(budget=200))
    exact = model_shapley(lambda z: additive(torch.as_tensor(z)).numpy(), x.numpy(), b.numpy(), np.arange(4))
    assert float(est.standard_errors.max()) <= 1e-9
    np.testing.assert_allclose(est.values.numpy(), exact, atol=1e-9)

    class Known:
        def __call__(self, z: torch.Tensor) -> torch.Tensor:
            return planted(z)

        def shapley(self, rows: torch.Tensor) -> torch.Tensor:
            return torch.as_tensor(
                model_shapley(lambda z: planted(torch.as_tensor(z)).numpy(), rows.numpy(), xb.numpy(), np.arange(5))
            )

    xq, xb, exact = case(4)
    est = correct(planted, xq, xb, torch.arange(5), 5, surrogate=Known(), options=CorrectionOptions(budget=120))
    assert float(est.standard_errors.max()) == 0.0
    np.testing.assert_allclose(est.values.numpy(), exact, atol=1e-12)


def test_grouped_players_and_binary_rows() -> None:
    """One-hot blocks as players: hybrids take each block whole; the mean over seeds is the grouped brute force,
    with rounds weighted (pairs that differ in one player are exact, in none are zero, without a model row)."""
    gen = torch.Generator().manual_seed(5)
    groups = torch.tensor([0, 0, 0, 1, 1, 2, 3, 3, 3])
    sizes = [3, 2, 1, 3]

    def one_hot(n: int) -> torch.Tensor:
        parts = []
        for k in sizes:
            if k == 1:
                parts.append(torch.randint(0, 2, (n, 1), generator=gen).double())
            else:
                parts.append(torch.nn.functional.one_hot(torch.randint(0, k, (n,), generator=gen), k).double())
        return torch.cat(parts, 1)

    w = torch.randn(9, generator=gen, dtype=torch.float64)

    def model(z: torch.Tensor) -> torch.Tensor:
        z = z.double()
        return torch.tanh(z @ w) + z[:, 0] * z[:, 5] * z[:, 7] - z[:, 3] * z[:, 8]

    x, b = one_hot(5), one_hot(6)
    exact = model_shapley(lambda z: model(torch.as_tensor(z)).numpy(), x.numpy(), b.numpy(), groups.numpy())
    options = CorrectionOptions(budget=96, round_weights=(1.0, 3.0, 6.0))  # weights fixed in advance keep it unbiased
    runs = [correct(model, x, b, groups, 4, options=replace(options, seed=s)) for s in range(150)]
    values = torch.stack([r.values for r in runs]).numpy()
    spread = values.std(0, ddof=1)
    assert np.all(np.abs(values.mean(0) - exact) <= 4 * spread / np.sqrt(len(runs)) + 1e-12)
    same = correct(model, b[:2], b, groups, 4, options=CorrectionOptions(budget=96))
    assert int(same.model_rows.max()) <= 2 * 6 * 12
    flat = list(itertools.chain.from_iterable([[i] * k for i, k in enumerate(sizes)]))
    assert flat == groups.tolist()


def test_enumerated_pairs_are_exact() -> None:
    """Pairs (or whole rows) cheap enough to enumerate are exact: the values are the brute force ones, with zero
    standard errors, for the model rows of the enumeration (``Σ_b 2^d``), when it fits the budget."""
    x, b, exact = case(6, rows=3, background=4)
    for options in (
        CorrectionOptions(budget=200, exact_pair_rows=30),
        CorrectionOptions(budget=200, exact_row_rows=128),
    ):
        est = correct(planted, x, b, torch.arange(5), 5, options=options)
        np.testing.assert_allclose(est.values.numpy(), exact, atol=1e-12)
        assert float(est.standard_errors.max()) == 0.0
        assert est.model_rows.tolist() == [4 * 2**5] * 3
    sampled = correct(planted, x, b, torch.arange(5), 5, options=CorrectionOptions(budget=100, exact_row_rows=128))
    assert float(sampled.standard_errors.min()) > 0.0  # 128 model rows do not fit a budget of 100


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bool])
def test_hybrids_are_exact_copies_of_whole_players(dtype: torch.dtype) -> None:
    """The bit-selected points and complements equal ``where(S, x, b)`` and ``where(S, b, x)`` built here per
    column from the drawn coalitions, with grouped players (NaN and signed zeros copied as they are)."""
    gen = torch.Generator().manual_seed(9)
    players = torch.tensor([0, 0, 1, 2, 2, 2, 3])
    x = torch.randn(3, 7, generator=gen, dtype=torch.float64)
    b = torch.randn(4, 7, generator=gen, dtype=torch.float64)
    x[0, 1], b[1, 2], b[2, 0] = float("nan"), -0.0, 0.0
    x, b = (x > 0, b > 0) if dtype == torch.bool else (x.to(dtype), b.to(dtype))
    differ = torch.ones(3, 4, 4, dtype=torch.bool)  # every player may join: coalitions of any columns
    sample = draw(torch.arange(3), differ, 4, size_table(4, "uniform", torch.device("cpu")))
    live = sample.live.reshape(-1).nonzero()[:, 0]
    points = hybrids(x, b, sample, players, live)
    q, k = live // 4, live % 4
    take = sample.inside[q, k][:, players]
    want = torch.cat(
        (torch.where(take, x[q], b[sample.background[q, k]]), torch.where(take, b[sample.background[q, k]], x[q]))
    )
    assert live.numel() > 0 and points.dtype == dtype
    assert torch.equal(
        points.view(torch.uint8) if dtype != torch.bool else points,
        want.view(torch.uint8) if dtype != torch.bool else want,
    )


def test_real_rows_are_cast_to_the_query_dtype_before_their_hybrids() -> None:
    """``query_dtype`` casts the rows once (the query casts every hybrid anyway): the same values and standard
    errors as a query that casts each hybrid itself."""
    x, b, _ = case(3)

    def model32(z: torch.Tensor) -> torch.Tensor:
        return planted(z.to(torch.float32))

    options = CorrectionOptions(budget=200, seed=2)
    plain = correct(model32, x, b, torch.arange(5), 5, options=options)
    cast = correct(model32, x, b, torch.arange(5), 5, options=options, query_dtype=torch.float32)
    assert torch.equal(plain.values, cast.values) and torch.equal(plain.standard_errors, cast.standard_errors)


def test_float_rows_with_a_bool_background_pair_as_equal_dtypes() -> None:
    """The binary route passes float rows with a bool background: hybrids are built in their common dtype (a bool
    background viewed as 64-bit words once took 8 columns per word), the values those of bool rows."""
    gen = torch.Generator().manual_seed(11)
    x, b = torch.randint(0, 2, (4, 9), generator=gen).bool(), torch.randint(0, 2, (6, 9), generator=gen).bool()
    w = torch.randn(9, generator=gen, dtype=torch.float64)

    def model(z: torch.Tensor) -> torch.Tensor:
        z = z.double()
        return torch.tanh(z @ w) + z[:, 0] * z[:, 5] * z[:, 7]

    options = CorrectionOptions(budget=120, seed=4)
    as_bool = correct(model, x, b, torch.arange(9), 9, options=options)
    as_float = correct(model, x.double(), b, torch.arange(9), 9, options=options)
    assert torch.equal(as_bool.values, as_float.values)
    exact = model_shapley(
        lambda z: model(torch.as_tensor(z)).numpy(), x.double().numpy(), b.double().numpy(), np.arange(9)
    )
    assert (np.abs(as_float.values.numpy() - exact) <= 4 * as_float.standard_errors.numpy() + 1e-12).all()


def wide(z: torch.Tensor) -> torch.Tensor:
    """The planted interactions on the first five of twelve columns, and a saturating sum of the others."""
    z = torch.as_tensor(z).double()
    return planted(z[:, :5]) + torch.tanh(z[:, 5:] @ torch.linspace(-1.0, 1.0, 7, dtype=torch.float64))


def test_fourier_shap_with_a_tolerance_explains_to_it_with_standard_errors():
    """``tolerance=`` turns the correction on (it is a knob of tx.fourier.Correct only): ``explain`` returns values
    within their intervals of the brute force ones, every row's RMS standard error at the tolerance or below,
    ``attribute`` keeps Captum's shape, a ``feature_mask`` regroups the players, and Banzhaf values are refused
    with the routes that give them."""
    gen = torch.Generator().manual_seed(7)
    data = torch.randn(300, 12, generator=gen, dtype=torch.float64)
    background, x = data[:8], data[8:14]
    explainer = tx.FourierShap(wide, background, data=data[20:], tolerance=0.01, show_progress=False)
    assert explainer.fit_report.method == "correct" and "correct" in explainer.fit_report.reason
    explanation = explainer.explain(x)
    exact = model_shapley(lambda z: wide(z).numpy(), x.numpy(), background.numpy(), np.arange(12))
    assert explanation.route == "correct" and float(explanation.stderr.min()) > 0
    assert (np.abs(explanation.values.numpy() - exact) <= 4 * explanation.stderr.numpy()).all()
    assert float(explanation.stderr.square().mean(1).max()) <= 0.01**2
    assert explainer.attribute(x).shape == x.shape
    groups = np.array([0, 0, 1, 1, 2, 3, 3, 3, 3, 4, 4, 4])
    grouped = explainer.explain(x, feature_mask=torch.as_tensor(groups)[None])
    exact = model_shapley(lambda z: wide(z).numpy(), x.numpy(), background.numpy(), groups)
    assert (np.abs(grouped.values.numpy() - exact) <= 4 * grouped.stderr.numpy() + 1e-12).all()
    with pytest.raises(ValueError, match="method='enumerate'"):
        explainer.explain(x, kind="banzhaf")


def test_to_shap_keeps_the_standard_errors_of_estimated_values():
    """shap's ``Explanation.error_std`` has no setter: the standard errors go in through its constructor, per input
    feature (each feature its player's) or per player under a ``feature_mask``, and a mis-shaped one is refused."""
    pytest.importorskip("shap")
    gen = torch.Generator().manual_seed(3)
    data = torch.randn(200, 12, generator=gen, dtype=torch.float64)
    explainer = tx.FourierShap(wide, data[:6], data=data[20:], tolerance=0.02, show_progress=False)
    x = data[6:10]
    explanation = explainer.explain(x)
    assert explanation.stderr is not None and float(explanation.stderr.min()) > 0
    np.testing.assert_array_equal(explanation.to_shap().error_std, explanation.stderr.numpy())
    groups = torch.as_tensor([0, 0, 1, 1, 2, 3, 3, 3, 3, 4, 4, 4])
    grouped = explainer.explain(x, feature_mask=groups[None])
    assert grouped.stderr is not None
    np.testing.assert_array_equal(grouped.to_shap().error_std, grouped.stderr.numpy())
    with pytest.raises(ValueError, match=r"error_std must have the values' shape \(4, 12\), got \(4, 5\)"):
        tx.fourier.to_shap_explanation(explanation.values, 0.0, error_std=grouped.stderr)


def test_the_fit_reports_met_only_on_a_lower_confidence_bound():
    """GB1's forest on single bits: the check estimated 0.9997 ± 0.0063 while 200 rows gave 0.9896; a target of
    0.99 is not "met" on that estimate (its one-sided 97.5% bound is 0.9874)."""
    report = tx.fourier.FitReport(
        method="hybrid", reason="", n_features=80, k=None, n_terms=1, max_degree=None, n_queries=1,
        n_validation_queries=1, wall_time_s=0.0, validation_time_s=0.0, r2_uniform=None, r2_eval=None,
        r2_hybrid=0.999, r2_shap=0.9997, r2_shap_se=0.0063, target_r2=0.99,
    )  # fmt: skip
    assert report.met_target is False and "BELOW TARGET" in str(report)
    assert replace(report, r2_shap_se=0.004).met_target is True


def order_two(z: torch.Tensor) -> torch.Tensor:
    """Products of pairs of six continuous columns and a nonlinear function of each: every pair game is of order
    two, so its odd part is additive."""
    z = torch.as_tensor(z).double()
    return (
        z[:, 0] * z[:, 1] + torch.sin(z[:, 2]) * z[:, 3] - z[:, 4] ** 2 * z[:, 5] + torch.exp(0.3 * z[:, 1]) + z[:, 2]
    )


def test_outer_sizes_are_exact_and_start_exact_control_variates_for_games_of_order_two() -> None:
    """With the outer sizes (1 and d - 1) queried, a game of order two has nothing left to sample: the values are
    the brute force ones with zero standard errors, for 2 d model rows per pair and the rounds' (their residuals
    are zero); without them the same budget leaves sampling error."""
    gen = torch.Generator().manual_seed(11)
    x, b = torch.randn(3, 6, generator=gen, dtype=torch.float64), torch.randn(5, 6, generator=gen, dtype=torch.float64)
    exact = model_shapley(lambda z: order_two(torch.as_tensor(z)).numpy(), x.numpy(), b.numpy(), np.arange(6))
    est = correct(order_two, x, b, torch.arange(6), 6, options=CorrectionOptions(budget=400, strata_rows=180))
    np.testing.assert_allclose(est.values.numpy(), exact, atol=1e-10)
    assert float(est.standard_errors.max()) <= 1e-9
    assert int(est.model_rows.min()) >= 2 * 6 * 5 and int(est.model_rows.max()) <= 400
    sampled = correct(order_two, x, b, torch.arange(6), 6, options=CorrectionOptions(budget=400, strata_rows=0))
    assert float(sampled.standard_errors.min()) > 1e-6


@pytest.mark.parametrize("levels", [1, 2])
def test_outer_sizes_share_plus_the_sizes_between_give_shapley_values(levels: int) -> None:
    """Enumerated: the outer sizes' exact share (``2 Σ_j c_i({j}) r({j})``) plus the expected weighted residual
    over the sizes between, with the law's probabilities, is the Shapley value of a random game, for any control
    variates (the estimator of the rounds with the outer sizes known)."""
    import torchxplain.fourier.fit.residual._estimate as est_module

    d, rng = 7, np.random.default_rng(3)
    v = rng.normal(size=2**d)
    table = size_table(d, "uniform", torch.device("cpu"))
    masks = list(range(1, 2**d - 1))
    inside = torch.tensor([[(m >> j) & 1 for j in range(d)] for m in masks], dtype=torch.bool)
    size = inside.sum(1)
    between = (size >= 1 + levels) & (size <= d - 1 - levels)
    positive, negative, ratio, line = slot_terms(size, torch.full_like(size, d), between, table)
    weights = torch.where(inside, positive[:, None], negative[:, None])
    prob = table[d, size] / torch.tensor([comb(d, int(s)) for s in size], dtype=torch.float64)
    full = 2**d - 1
    delta_f = v[full] - v[0]
    odd = torch.tensor([(v[m] - v[full ^ m]) / 2 for m in masks], dtype=torch.float64)
    y = odd - torch.tensor([(2 * int(s) - d) / (2 * d) for s in size], dtype=torch.float64) * delta_f
    outer = torch.tensor([float(y[masks.index(1 << j)]) for j in range(d)], dtype=torch.float64)
    beta = torch.tensor(rng.normal(size=d))
    resid = y - (inside.double() - ratio[:, None] * between[:, None]) @ beta  # on the sizes between only
    sampled_part = (prob[:, None] * weights * resid[:, None]).sum(0)

    rows = est_module._Rows.__new__(est_module._Rows)  # the known part through the estimator's own code
    rows.differ = torch.ones(1, 1, d, dtype=torch.bool)
    rows.d = torch.full((1, 1), d)
    rows.delta_f = torch.tensor([[delta_f]], dtype=torch.float64)
    rows.enumerated = torch.zeros(1, 1, dtype=torch.bool)
    rows.pair_values = torch.zeros(1, 1, d, dtype=torch.float64)
    rows.strata = torch.ones(1, 1, dtype=torch.bool)
    rows.outer = outer[None, None]
    rows.strata2 = torch.full((1, 1), levels == 2)
    pairs = torch.zeros(d, d, dtype=torch.float64)
    for j, k in itertools.combinations(range(d), 2):
        pairs[j, k] = pairs[k, j] = y[masks.index((1 << j) | (1 << k))]
    rows.outer2 = pairs[None, None] if levels == 2 else None
    rows.beta = beta[None, None]
    rows.beta_sum = beta.sum()[None, None]
    known = rows.exact_part(torch.arange(1))[0]
    np.testing.assert_allclose((known + sampled_part).numpy(), shapley_of_table(v, d), atol=1e-12)


@pytest.mark.parametrize(("budget", "strata_rows", "known"), [(288, 144, 48), (400, 200, 168)])
def test_unbiased_over_seeds_with_outer_sizes_and_intervals_cover(budget: int, strata_rows: int, known: int) -> None:
    """With the outer sizes queried (1 and d - 1; then 2 and d - 2 as well) and the rounds sampling the sizes
    between (refits included), the mean over seeds is the brute-force value within 4 standard errors of that mean,
    the standard errors are not optimistic, and 95% intervals cover 90-99% of the entries."""
    gen = torch.Generator().manual_seed(12)
    x, b = torch.randn(3, 6, generator=gen, dtype=torch.float64), torch.randn(4, 6, generator=gen, dtype=torch.float64)

    def model(z: torch.Tensor) -> torch.Tensor:
        return planted(z[:, :5]) * torch.cos(z[:, 5]) + z[:, 1] * z[:, 3] * z[:, 5]

    exact = model_shapley(lambda z: model(torch.as_tensor(z)).numpy(), x.numpy(), b.numpy(), np.arange(6))
    options = CorrectionOptions(budget=budget, slots=4, strata_rows=strata_rows)
    runs = [correct(model, x, b, torch.arange(6), 6, options=replace(options, seed=s)) for s in range(200)]
    assert int(runs[0].rounds.min()) >= 10 and int(runs[0].model_rows.min()) >= known  # refits after 4, 6, 9
    values = torch.stack([r.values for r in runs]).numpy()
    spread = values.std(0, ddof=1)
    assert np.all(np.abs(values.mean(0) - exact) <= 4 * spread / np.sqrt(len(runs)) + 1e-12)
    reported = torch.stack([r.standard_errors for r in runs]).square().mean(0).numpy()
    assert np.all(spread**2 <= 1.3 * reported + 1e-12)
    z = np.abs(values - exact) / torch.stack([r.standard_errors for r in runs]).numpy()
    assert 0.90 <= float((z <= 1.96).mean()) <= 0.99


@pytest.mark.parametrize(("m", "d_rows", "pays"), [(12, 2, True), (20, 16, False)])
def test_the_plan_keeps_the_outer_sizes_only_where_they_spend_fewer_model_rows(m: int, d_rows: int, pays: bool) -> None:
    """A game of order two with strong pairwise products: its outer sizes make each pair exact for a fixed
    ``d (d + 1)`` model rows (sizes 1, 2, d - 2 and d - 1); the per-pair regression without them learns the same
    additive odd part from the rounds. Which is cheaper depends on d and the background: the plan's choice, made on
    its pilot rows, must be the one that spends fewer model rows on other rows to the same tolerance (here by at
    least 1.3 times either way)."""
    a = torch.randn(m, m, generator=torch.Generator().manual_seed(1), dtype=torch.float64).triu(1)

    def game(z: torch.Tensor) -> torch.Tensor:
        z = z.double()
        return ((z @ a) * z).sum(1)

    gen = torch.Generator().manual_seed(0)
    pool, b = (
        torch.randn(64, m, generator=gen, dtype=torch.float64),
        torch.randn(d_rows, m, generator=gen, dtype=torch.float64),
    )
    plan = CorrectedPlan.build(game, b, pool, torch.arange(m), m, seed=0)
    assert (plan.options.strata_rows > 0) == pays
    x = torch.randn(8, m, generator=gen, dtype=torch.float64)
    spent = {}
    for outer in (False, True):
        options = replace(plan.options, strata_rows=50_000 if outer else 0, regression=None)
        spent[outer] = float(
            correct(game, x, b, torch.arange(m), m, additive=plan.additive, options=options).model_rows.double().mean()
        )
    assert (spent[True] * 1.3 < spent[False]) if pays else (spent[False] * 1.3 < spent[True])
    # the router prices the correction at the plan's forecast for the design it runs: within 10% of what it spends
    rows = torch.randn(64, m, generator=gen, dtype=torch.float64)
    assert abs(plan.report.forecast / float(plan.explain(rows).model_rows.double().mean()) - 1) < 0.1

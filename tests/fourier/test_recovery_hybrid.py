"""Fitting where SHAP looks: hybrid samples, the identifiable level basis, the held-out checks, the explainer."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
import torch

import torchxplain as tx
from torchxplain import fit_sparse_fourier
from torchxplain.fourier import FitQualityWarning, shapley_values
from torchxplain.fourier.fit._keys import TermKeys
from torchxplain.fourier.fit._levels import PlayerLevels
from torchxplain.fourier.fit._walsh import UnitWalsh, terms_to_walsh
from torchxplain.fourier.fit.hybrid._checks import HeldOut
from torchxplain.fourier.fit.hybrid._ladder import closed_form
from torchxplain.fourier.fit.hybrid._sampler import HybridSampler, size_table

SIZES = (3, 4, 2, 5, 3)  # one-hot groups: 17 bits, 360 valid rows


def one_hot_rows(levels: np.ndarray) -> torch.Tensor:
    """``(R, len(SIZES))`` level indices -> ``(R, 17)`` float64 one-hot rows (numpy, independent of the library)."""
    out = np.zeros((levels.shape[0], sum(SIZES)))
    start = np.cumsum((0,) + SIZES[:-1])
    out[np.arange(levels.shape[0])[:, None], start + levels] = 1.0
    return torch.tensor(out)


GROUPS = torch.repeat_interleave(torch.arange(len(SIZES)), torch.tensor(SIZES))
ALL_LEVELS = np.array(list(itertools.product(*[range(s) for s in SIZES])))


def planted(seed: int, n_terms: int = 40, max_order: int = 3) -> tuple[list[tuple[tuple[int, int], ...]], np.ndarray]:
    """A function of the five categorical variables: ``Σ_t c_t Π_{(g, l) ∈ t} [level_g = l]`` (distinct groups)."""
    rng = np.random.default_rng(seed)
    terms: set[tuple[tuple[int, int], ...]] = set()
    while len(terms) < n_terms:
        order = int(rng.integers(0, max_order + 1))
        chosen = sorted(rng.choice(len(SIZES), size=order, replace=False).tolist())
        terms.add(tuple((g, int(rng.integers(0, SIZES[g]))) for g in chosen))
    ordered = sorted(terms)
    return ordered, rng.normal(size=len(ordered))


def random_rows(seed: int, n_rows: int = 300) -> torch.Tensor:
    """``(n_rows, 17)`` float64 one-hot rows with uniformly random levels."""
    return one_hot_rows(np.random.default_rng(seed).integers(0, SIZES, size=(n_rows, len(SIZES))))


def planted_function(terms, coef):
    start = np.cumsum((0,) + SIZES[:-1])

    def f(x: torch.Tensor) -> torch.Tensor:
        z = x.double().numpy()
        out = np.zeros(z.shape[0])
        for term, c in zip(terms, coef):
            out += c * np.prod([z[:, start[g] + lv] for g, lv in term], axis=0) if term else c
        return torch.tensor(out)

    return f


def brute_force_grouped(f, xq: torch.Tensor, background: torch.Tensor, groups: torch.Tensor) -> np.ndarray:
    """Interventional SHAP per group by enumerating all coalitions of groups (independent of the library)."""
    m = int(groups.max()) + 1
    out = np.zeros((xq.shape[0], m))
    fact = [math.factorial(c) for c in range(m + 1)]
    for q in range(xq.shape[0]):
        v = {}
        for mask in range(2**m):
            take = torch.tensor([(mask >> int(g)) & 1 for g in groups], dtype=torch.bool)
            v[mask] = float(f(torch.where(take, xq[q], background)).mean())
        for i in range(m):
            for mask in range(2**m):
                if not (mask >> i) & 1:
                    s = bin(mask).count("1")
                    out[q, i] += fact[s] * fact[m - s - 1] / fact[m] * (v[mask | 1 << i] - v[mask])
    return out


# ---------------------------------------------------------------- the identifiable basis


def _level_indicator_values(rows: np.ndarray, blocks: list[np.ndarray], terms, coef, constant) -> np.ndarray:
    """``constant + Σ_t c_t Π_{(g, pattern) ∈ t} [rows' block g == pattern]`` in numpy."""
    out = np.full(rows.shape[0], float(constant))
    for term, c in zip(terms, coef):
        hit = np.ones(rows.shape[0], dtype=bool)
        for g, pattern in term:
            hit &= (rows[:, blocks[g]] == pattern).all(1)
        out += c * hit
    return out


def test_level_indicators_expand_exactly_into_walsh_terms():
    rng = np.random.default_rng(0)
    # players: a one-hot block of 4, a thermometer code of 3 thresholds, any patterns of 3 bits, a single bit
    onehot = np.eye(4)[rng.integers(0, 4, 200)]
    thermo = (rng.integers(0, 4, 200)[:, None] > np.arange(3)).astype(float)
    patterns = rng.integers(0, 2, (200, 3)).astype(float)
    bit = rng.integers(0, 2, (200, 1)).astype(float)
    rows = np.concatenate((onehot, thermo, patterns, bit), axis=1)
    groups = torch.tensor([0] * 4 + [1] * 3 + [2] * 3 + [3])
    blocks = [np.arange(0, 4), np.arange(4, 7), np.arange(7, 10), np.arange(10, 11)]
    levels = PlayerLevels(torch.as_tensor(rows).bool(), groups, 4)
    assert levels.level_count() == [4, 4, len(np.unique(patterns, axis=0)), 2]
    walsh = UnitWalsh(levels)
    for seed in range(4):
        g = np.random.default_rng(seed + 1)
        terms, units = [], []
        for _ in range(30):  # random terms: one non-reference level of each of up to four distinct players
            chosen = sorted(g.choice(4, size=int(g.integers(1, 5)), replace=False).tolist())
            picked = [(p, int(g.integers(1, levels.level_count()[p]))) for p in chosen]
            terms.append([(p, levels.levels[p][lv].numpy()) for p, lv in picked])
            units.append([int(levels.offsets[p]) + lv - 1 for p, lv in picked] + [levels.n_units] * (4 - len(picked)))
        coef = g.normal(size=30)
        spectrum = terms_to_walsh(walsh, torch.tensor(units), torch.tensor(coef), 0.7)
        hybrids = rows[g.integers(0, 200, 400)]  # every point on the players' observed levels
        want = _level_indicator_values(hybrids, blocks, terms, coef, 0.7)
        np.testing.assert_allclose(spectrum.evaluate(torch.as_tensor(hybrids)).numpy(), want, rtol=0, atol=1e-12)


def test_reference_level_is_the_most_frequent_and_term_keys_round_trip():
    levels = np.zeros((50, len(SIZES)), dtype=int)
    levels[:10, 1] = 2  # group 1: level 0 in 40 rows, level 2 in 10
    rows = one_hot_rows(levels).bool()
    lv = PlayerLevels(rows, GROUPS, len(SIZES))
    assert lv.levels[1][0].tolist() == [True, False, False, False]  # the reference: the most frequent level
    assert lv.n_units == 1 and lv.level_count() == [1, 2, 1, 1, 1]
    codes = lv.codes(rows)
    assert codes[:10, 1].tolist() == [1] * 10 and codes[10:].sum() == 0
    grid = PlayerLevels(random_rows(3).bool(), GROUPS, len(SIZES))
    for sizes in (grid.level_count(), [2] * 70):  # grid keys, and unit keys of a grid beyond 2^62
        codec = TermKeys(sizes, torch.device("cpu"))
        units = torch.tensor([[0, 3, codec.n_units], [1, codec.n_units, codec.n_units], [2, 5, 6]])  # distinct players
        assert torch.equal(codec.decode(codec.encode(torch.sort(units, 1).values), 3), torch.sort(units, 1).values)


# ---------------------------------------------------------------- hybrid samples


def test_hybrids_take_each_player_whole_from_the_row_or_the_background():
    rng = np.random.default_rng(1)
    rows = one_hot_rows(rng.integers(0, SIZES, size=(30, len(SIZES)))).bool()
    background = one_hot_rows(rng.integers(0, SIZES, size=(7, len(SIZES)))).bool()
    sampler = HybridSampler(rows, background, GROUPS, len(SIZES))
    z = sampler.sample(2000, torch.Generator().manual_seed(0))
    ones = z.double() @ torch.nn.functional.one_hot(GROUPS).double()
    assert bool((ones == 1).all())  # grouped hybrids of one-hot rows stay one-hot
    table = size_table(6, torch.device("cpu"))
    torch.testing.assert_close(table[:, -1], torch.ones(7, dtype=torch.float64))
    sizes = np.diff(np.concatenate(([0.0], table[6].numpy())))
    assert sizes[0] == pytest.approx(0.5 / 7) and sizes[1] > sizes[3]  # uniform half + kernel half


def test_planted_one_hot_function_is_recovered_exactly_from_hybrid_samples():
    terms, coef = planted(seed=3)
    f = planted_function(terms, coef)
    data = random_rows(2, 300)
    background = data[:12]
    exact = dict(target_r2=1 - 1e-9, target_metric="hybrid")  # hold the ladder to the pointwise fit
    spectrum, report = fit_sparse_fourier(
        f, 17, background=background, data=data, groups=GROUPS, method="hybrid", return_report=True, **exact
    )
    grid = one_hot_rows(ALL_LEVELS)
    torch.testing.assert_close(spectrum.evaluate(grid), f(grid), rtol=0, atol=1e-8)
    assert report.r2_hybrid == pytest.approx(1.0, abs=1e-12) and report.met_target
    assert report.method == "hybrid" and report.n_players == len(SIZES)
    xq = data[200:203]
    want = brute_force_grouped(f, xq, background, GROUPS)
    got = shapley_values(spectrum, xq, background, groups=GROUPS)
    np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=1e-8)


def test_singleton_players_on_one_hot_data_recover_within_group_interactions():
    # hybrids of one-hot rows at the bit level have 0, 1 or 2 ones per group: a bit pair of one group is active
    rng = np.random.default_rng(22)
    bits = [(0, 1), (3, 5), (7,), (9, 12, 3), (2, 9), (15,), (0, 9, 14), ()]
    coef = rng.normal(size=len(bits))

    def f(x: torch.Tensor) -> torch.Tensor:
        z = x.double().numpy()
        return torch.tensor(sum(c * np.prod(z[:, list(t)], axis=1) if t else c for t, c in zip(bits, coef)))

    data = random_rows(23)
    exact = dict(target_r2=1 - 1e-9, target_metric="hybrid")  # hold the ladder to the pointwise fit
    spectrum, report = fit_sparse_fourier(
        f, 17, background=data[:12], data=data, method="hybrid", return_report=True, **exact
    )
    sampler = HybridSampler(data.bool(), data[:12].bool(), torch.arange(17), 17)
    z = sampler.sample(3000, torch.Generator().manual_seed(1))
    assert bool(((z.double() @ torch.nn.functional.one_hot(GROUPS).double()) == 2).any())  # not one-hot
    torch.testing.assert_close(spectrum.evaluate(z.double()), f(z), rtol=0, atol=1e-8)
    assert report.n_players == 17 and report.r2_hybrid == pytest.approx(1.0, abs=1e-12)


def test_grouped_shap_of_a_fitted_surrogate_equals_brute_force_on_the_surrogate():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(17, 24), torch.nn.Tanh(), torch.nn.Linear(24, 1)).double()
    data = random_rows(4, 200)
    background = data[:6]
    spectrum = fit_sparse_fourier(
        net, 17, background=background, data=data, groups=GROUPS, n_queries=3000, target_r2=None, method="hybrid"
    )
    assert len(spectrum) > 20 and spectrum.degree >= 2

    def surrogate(x: torch.Tensor) -> torch.Tensor:
        return spectrum.evaluate(x.double())

    xq = data[100:103]
    want = brute_force_grouped(surrogate, xq, background, GROUPS)
    got = shapley_values(spectrum, xq, background, groups=GROUPS)
    np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=1e-10)


def test_fit_is_deterministic_per_seed():
    terms, coef = planted(seed=5, n_terms=80, max_order=4)
    rng = np.random.default_rng(6)
    noise = torch.tensor(rng.normal(size=(2**17,)) * 0.05)  # a fixed rough part: the fit is not exact

    def f(x: torch.Tensor) -> torch.Tensor:
        index = (x.long() * (1 << torch.arange(17))).sum(1)
        return planted_function(terms, coef)(x) + noise[index]

    data = one_hot_rows(rng.integers(0, SIZES, size=(300, len(SIZES))))
    kwargs = dict(background=data[:10], data=data, groups=GROUPS, return_report=True, n_queries=5000, method="hybrid")
    kwargs |= dict(n_validation=512)
    with pytest.warns(FitQualityWarning):
        a, ra = fit_sparse_fourier(f, 17, seed=7, **kwargs)
        b, rb = fit_sparse_fourier(f, 17, seed=7, **kwargs)
        c, _ = fit_sparse_fourier(f, 17, seed=8, **kwargs)
    assert torch.equal(a.frequencies, b.frequencies) and torch.equal(a.amplitudes, b.amplitudes)
    untimed = [[{key: v for key, v in s.items() if "seconds" not in key} for s in r.stages] for r in (ra, rb)]
    assert ra.r2_hybrid == rb.r2_hybrid and ra.r2_shap == rb.r2_shap and untimed[0] == untimed[1]
    assert not (a.frequencies.shape == c.frequencies.shape and torch.equal(a.amplitudes, c.amplitudes))


@pytest.mark.slow
def test_the_same_seed_gives_a_bit_identical_spectrum_while_another_process_loads_the_machine():
    """Budgets count queries and terms, never seconds: a loaded machine changes no decision of the ladder."""
    import subprocess
    import sys

    terms, coef = planted(seed=25, n_terms=60, max_order=4)
    noise = torch.tensor(np.random.default_rng(26).normal(size=(2**17,)) * 0.02)

    def f(x: torch.Tensor) -> torch.Tensor:  # a sparse part and a fixed rough part: the ladder takes stages
        return planted_function(terms, coef)(x) + noise[(x.long() * (1 << torch.arange(17))).sum(1)]

    data = random_rows(24, 400)
    kwargs = dict(background=data[:10], data=data, groups=GROUPS, method="hybrid", n_queries=40_000, seed=3)
    kwargs |= dict(n_validation=2048, return_report=True, target_r2=0.99999)
    with pytest.warns(FitQualityWarning):
        quiet, _ = fit_sparse_fourier(f, 17, **kwargs)
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(3)]
    try:
        with pytest.warns(FitQualityWarning):
            loaded, report = fit_sparse_fourier(f, 17, **kwargs)
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    assert torch.equal(quiet.frequencies, loaded.frequencies) and torch.equal(quiet.amplitudes, loaded.amplitudes)
    assert len(report.stages) >= 2  # more than one stage: the decisions between stages were taken under load


def _held_out(f, data, background, budget, seed=0):
    return HeldOut(data.bool(), background.bool(), GROUPS, len(SIZES), budget, torch.Generator().manual_seed(seed), f)


def _exact_r2(exact, surrogate, rows, background):
    truth = shapley_values(exact, rows.double(), background, groups=GROUPS)
    got = shapley_values(surrogate, rows.double(), background, groups=GROUPS)
    return 1 - float(((truth - got) ** 2).sum() / ((truth - truth.mean()) ** 2).sum())


def _estimate(check, surrogate):
    values = surrogate.evaluate(check.points.double())
    phi = closed_form(surrogate, check.rows, check.background, check.players, check.m)
    return check.shap_r2(values, phi)


def test_the_check_with_every_background_row_is_the_exact_shap_r2_on_its_rows():
    terms, coef = planted(seed=9)
    f = planted_function(terms, coef)
    data, background = random_rows(10, 300), random_rows(11, 4)  # 4 background rows: every pair is drawn
    exact = fit_sparse_fourier(f, 17, background=background, data=data, groups=GROUPS)  # tabulated: exact
    damaged = tx.FourierSpectrum(exact.frequencies, exact.amplitudes * (1 + 0.3 * torch.randn(len(exact))))
    check = _held_out(f, data, background, 10**6)
    assert check.all_exact and check.pairs == 4
    estimate, _ = _estimate(check, damaged)
    assert estimate == pytest.approx(_exact_r2(exact, damaged, check.rows, background), abs=1e-10)
    assert _estimate(check, exact)[0] == pytest.approx(1.0, abs=1e-10)


@pytest.mark.parametrize(("noise", "keep"), [(0.3, 1.0), (1.0, 0.5), (2.0, 1.0), (0.3, 0.2)])
def test_estimated_shap_r2_is_calibrated_on_planted_poor_fits(noise, keep):
    """Over independent draws of the held-out rows and pairs, the estimate is within 2 standard errors of the
    exact SHAP R² on the same rows far more often than not, good fits and poor ones alike."""
    terms, coef = planted(seed=9)
    f = planted_function(terms, coef)
    data, background = random_rows(10, 600), random_rows(12, 20)
    exact = fit_sparse_fourier(f, 17, background=background, data=data, groups=GROUPS)
    g = torch.Generator().manual_seed(int(10 * noise + 100 * keep))
    amplitudes = exact.amplitudes * (1 + noise * torch.randn(len(exact), generator=g, dtype=torch.float64))
    kept = torch.rand(len(exact), generator=g) < keep
    kept[0] = True
    poor = tx.FourierSpectrum(exact.frequencies[kept], amplitudes[kept])
    inside = []
    for seed in range(8):
        check = _held_out(f, data, background, 6000, seed)
        estimate, se = _estimate(check, poor)
        inside.append(abs(estimate - _exact_r2(exact, poor, check.rows, background)) <= 2 * se)
        assert 0 < se < math.inf
    assert sum(inside) >= 6, inside


# ---------------------------------------------------------------- the explainer, warnings and bad input


def test_explainer_fits_on_hybrids_of_the_data_and_reports_it():
    terms, coef = planted(seed=11)
    f = planted_function(terms, coef)
    data = random_rows(12, 300)
    background = data[:10]
    explainer = tx.FourierShap(f, background, data=data, groups=GROUPS, show_progress=False, method="hybrid")
    report = explainer.fit_report
    assert report.method == "hybrid" and report.n_players == len(SIZES) and report.r2_hybrid > 0.999999
    assert "held-out hybrid points" in str(report) and "target_r2=0.99 on the SHAP values" in str(report)
    assert report.met_target and report.r2_shap > 0.999999 and report.stopped == "target met"
    xq = data[250:253]
    want = brute_force_grouped(f, xq, background, GROUPS)
    got = explainer.attribute(xq, feature_mask=GROUPS)
    np.testing.assert_allclose(got.numpy()[:, np.cumsum((0,) + SIZES[:-1])], want, rtol=0, atol=1e-7)


def test_target_metric_hybrid_holds_the_pointwise_fit_to_the_target():
    terms, coef = planted(seed=16)
    f = planted_function(terms, coef)
    data = random_rows(17)
    kwargs = dict(background=data[:10], data=data, groups=GROUPS, k=12, return_report=True, n_validation=1024)
    with pytest.warns(
        FitQualityWarning, match=r"R\^2 = -?0\.\d+ on held-out hybrid points.*; R\^2 on the SHAP values.*Raise k"
    ):
        _, report = fit_sparse_fourier(f, 17, target_metric="hybrid", target_r2=0.999, **kwargs)
    assert report.checked[0] == "held-out hybrid points" and report.met_target is False
    assert report.n_terms <= 12 and report.r2_hybrid < 0.999


@pytest.mark.slow
def test_a_fit_below_target_warns_with_the_achieved_r2_and_what_to_change():
    from torchxplain._demo import train_mlp
    from torchxplain.data import load_gb1

    x, y, groups = load_gb1()
    rows = torch.randperm(x.shape[0], generator=torch.Generator().manual_seed(0))[:6000]
    mlp = train_mlp(x[rows], (y[rows] - y.mean()) / y.std(), hidden=32, epochs=1, seed=0, show_progress=False)
    with pytest.warns(
        FitQualityWarning,
        match=r"R\^2 = 0\.\d+ on the SHAP values.*; R\^2 on held-out hybrid points: 0\.\d+.*raise n_queries",
    ):
        explainer = tx.FourierShap(mlp, x[rows[:20]], data=x[rows], groups=groups, n_queries=2000, n_validation=1024)
    report = explainer.fit_report
    assert report.met_target is False and report.r2_shap < 0.99 and report.n_queries <= 2000
    assert "BELOW TARGET" in str(report)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # target_r2=None: no check, no warning
        tx.FourierShap(mlp, x[rows[:20]], data=x[rows], groups=groups, n_queries=2000, n_validation=512, target_r2=None)


@pytest.mark.parametrize(
    ("where", "row", "pattern", "ones"),
    [("background", 3, [1.0, 1.0, 0.0, 0.0], 2), ("data", 5, [0.0, 0.0, 0.0, 0.0], 0)],
)
def test_declared_one_hot_groups_that_are_not_one_hot_name_the_row_and_group(where, row, pattern, ones):
    data = random_rows(13, 40)
    background = data[:8].clone()
    target = background if where == "background" else data
    target[row, 3:7] = torch.tensor(pattern, dtype=torch.float64)  # group 1 holds features 3..6
    with pytest.raises(ValueError, match=rf"{where} row {row} has {ones} ones in player 1 \(features \[3, 4, 5, 6\]\)"):
        fit_sparse_fourier(lambda z: z.sum(1), 17, background=background, data=data, groups=GROUPS, one_hot=True)


def test_nan_outputs_on_hybrids_name_the_row():
    data = random_rows(14, 40)

    def f(z):
        return torch.where(z[:, 0] * z[:, 3] > 0, torch.nan, z.sum(1).double())

    with pytest.raises(ValueError, match=r"NaN or infinite values in query batch \d+ .*first at row \d+, input \["):
        fit_sparse_fourier(f, 17, background=data[:8], data=data, groups=GROUPS)


def test_a_float64_plain_callable_is_queried_in_the_rows_dtype():
    weights = torch.randn(17, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    seen = []

    def f(z):
        seen.append(z.dtype)
        return z @ weights  # fails on float32 queries with torch's own dtype error

    data = random_rows(15, 40)
    spectrum = fit_sparse_fourier(f, 17, background=data[:8], data=data, groups=GROUPS)
    assert set(seen) == {torch.float64} and spectrum.dtype == torch.float64
    with pytest.raises(RuntimeError):
        fit_sparse_fourier(f, 17, background=data[:8].float(), groups=GROUPS)  # float32 rows: float32 queries
    fit_sparse_fourier(f, 17, background=data[:8].float(), groups=GROUPS, dtype=torch.float64)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"data": torch.ones(3, 17)}, ValueError, "pass background="),
        ({"groups": GROUPS}, ValueError, "pass background="),
        ({"method": "hybrid"}, ValueError, "pass background="),
        ({"background": torch.ones(3, 16)}, ValueError, "background has 16 features"),
        ({"background": torch.full((3, 17), 0.5)}, ValueError, "fit_sparse_fourier fits binary inputs"),
        ({"background": torch.ones(3, 17), "groups": torch.zeros(16, dtype=torch.long)}, ValueError, "shape \\(17,\\)"),
        ({"background": torch.ones(3, 17), "groups": GROUPS.double()}, TypeError, "integer player id"),
        ({"background": torch.ones(3, 17), "target_r2": 2}, ValueError, "target_r2 must be"),
        ({"background": torch.ones(3, 17), "time_budget": 0}, ValueError, "time_budget must be"),
        ({"background": torch.ones(3, 17), "target_metric": "uniform"}, ValueError, "target_metric must be"),
        ({"background": random_rows(0, 20), "groups": GROUPS, "n_queries": 10}, ValueError, "needs at least 26"),
    ],
)
def test_hybrid_argument_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        fit_sparse_fourier(lambda z: z.sum(1), 17, **kwargs)


def test_the_hybrid_fit_report_survives_save_and_load(tmp_path):
    terms, coef = planted(seed=18)
    data = random_rows(19)
    explainer = tx.FourierShap(planted_function(terms, coef), data[:10], data=data, groups=GROUPS, n_validation=1024)
    loaded = tx.FourierShap.load(explainer.save(tmp_path / "hybrid.pt"))
    a, b = explainer.fit_report, loaded.fit_report
    assert (b.r2_hybrid, b.r2_shap, b.r2_shap_se, b.n_players, b.target_metric) == (
        a.r2_hybrid,
        a.r2_shap,
        a.r2_shap_se,
        a.n_players,
        a.target_metric,
    )
    assert [dict(s) for s in b.stages] == [dict(s) for s in a.stages] and b.met_target == a.met_target

"""fit_sparse_fourier: exact, hashing (sparse WHT) and regression recovery against independent references."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from sklearn.metrics import r2_score

from torchxplain import FourierSpectrum, fit_sparse_fourier
from torchxplain.fourier import FitReport
from torchxplain.fourier.fit.cube import _regression as regression_module
from torchxplain.fourier.spectrum._fwht import EXACT_MAX_FEATURES, count_low_degree, fwht, low_degree_index
from torchxplain.testing import tiny_memory_budget


def random_spectrum(n: int, k: int, degree: int, seed: int) -> dict[tuple[int, ...], float]:
    """``k`` distinct random frequencies of degree <= ``degree`` with amplitudes ±[0.5, 1.5) (plain Python)."""
    rng = np.random.default_rng(seed)
    terms: dict[tuple[int, ...], float] = {}
    while len(terms) < k:
        deg = int(rng.integers(0, degree + 1))
        key = tuple(sorted(rng.choice(n, size=deg, replace=False).tolist()))
        terms[key] = float(rng.uniform(0.5, 1.5) * rng.choice([-1.0, 1.0]))
    return terms


def as_function(terms: dict[tuple[int, ...], float], n: int):
    """The black box ``x -> Σ a_f Π_{i∈f} (-1)^{x_i}`` evaluated term by term (independent of the library)."""
    keys = list(terms)
    amps = torch.tensor([terms[key] for key in keys], dtype=torch.float64)

    def f(x: torch.Tensor) -> torch.Tensor:
        signs = 1.0 - 2.0 * x.double()
        cols = [signs[:, list(key)].prod(1) if key else torch.ones(x.shape[0], dtype=torch.float64) for key in keys]
        return torch.stack(cols, 1) @ amps

    return f


def as_terms(spectrum: FourierSpectrum) -> dict[tuple[int, ...], float]:
    return {
        tuple(row.nonzero()[:, 0].tolist()): float(a)
        for row, a in zip(spectrum.frequencies.cpu(), spectrum.amplitudes.cpu())
    }


class Counter:
    """Wraps a black box and counts the rows it is asked about."""

    def __init__(self, f) -> None:
        self.f, self.rows = f, 0

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        self.rows += x.shape[0]
        return self.f(x)


def assert_same_terms(found: dict, truth: dict, tol: float = 1e-6) -> None:
    assert set(found) == set(truth), (sorted(set(truth) - set(found))[:5], sorted(set(found) - set(truth))[:5])
    worst = max(abs(found[key] - truth[key]) for key in truth)
    assert worst <= tol, worst


def sylvester_hadamard(bits: int) -> torch.Tensor:
    h = torch.ones(1, 1, dtype=torch.float64)
    for _ in range(bits):
        h = torch.kron(torch.tensor([[1.0, 1.0], [1.0, -1.0]], dtype=torch.float64), h)
    return h


def table_function(table: torch.Tensor, n: int):
    weights = 2 ** torch.arange(n)

    def f(x: torch.Tensor) -> torch.Tensor:
        return table[(x.long() * weights).sum(1)]

    return f


# ---------------------------------------------------------------- fast WHT and exact method


@pytest.mark.parametrize("bits", [1, 2, 5, 8])
def test_fwht_equals_explicit_hadamard_product(bits):
    values = torch.randn(3, 2**bits, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(bits))
    expected = torch.einsum("st,btc->bsc", sylvester_hadamard(bits), values)
    torch.testing.assert_close(fwht(values, dim=1), expected, rtol=0, atol=1e-10)


def test_fwht_rejects_non_power_of_two():
    with pytest.raises(ValueError, match="power-of-two"):
        fwht(torch.zeros(6))


def test_exact_method_equals_hadamard_matrix_on_a_random_table():
    n = 8
    table = torch.randn(2**n, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    spec, report = fit_sparse_fourier(
        table_function(table, n), n, k=2**n, method="exact", return_report=True, show_progress=False
    )
    expected = sylvester_hadamard(n) @ table / 2**n  # entry s: frequency with bit i = bit i of s
    index = (spec.frequencies.long() * 2 ** torch.arange(n)).sum(1)
    torch.testing.assert_close(spec.amplitudes, expected[index], rtol=0, atol=1e-12)
    assert len(spec) == 2**n and report.n_queries == 2**n and report.r2_uniform == pytest.approx(1.0)


def test_exact_top_k_r2_is_the_r2_on_the_whole_cube():
    n, k = 9, 20
    table = torch.randn(2**n, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    f = table_function(table, n)
    spec, report = fit_sparse_fourier(f, n, k=k, method="exact", return_report=True, show_progress=False)
    cube = torch.tensor([[(i >> b) & 1 for b in range(n)] for i in range(2**n)], dtype=torch.float64)
    assert len(spec) == k
    assert report.r2_uniform == pytest.approx(r2_score(table.numpy(), spec.evaluate(cube).numpy()), abs=1e-10)
    top = torch.topk((sylvester_hadamard(n) @ table / 2**n).abs(), k).values
    torch.testing.assert_close(spec.amplitudes.abs().sort().values, top.sort().values, rtol=0, atol=1e-12)


def test_exact_degree_cap_keeps_only_low_degree_terms():
    terms = random_spectrum(10, 40, 4, seed=3)
    spec = fit_sparse_fourier(as_function(terms, 10), 10, k=100, max_degree=2, method="exact", show_progress=False)
    assert_same_terms(as_terms(spec), {key: a for key, a in terms.items() if len(key) <= 2}, tol=1e-12)


# ---------------------------------------------------------------- hashing (sparse WHT)


@pytest.mark.slow
@pytest.mark.parametrize("max_degree", [None, 3])
def test_hashing_recovers_k50_degree3_spectrum_on_40_features(max_degree):
    terms = random_spectrum(40, 50, 3, seed=11)
    f = Counter(as_function(terms, 40))
    spec, report = fit_sparse_fourier(
        f, 40, k=50, max_degree=max_degree, method="hashing", return_report=True, show_progress=False, seed=4
    )
    assert_same_terms(as_terms(spec), terms)
    assert report.n_queries + report.n_validation_queries == f.rows
    assert report.params["decoder"] == ("bitwise" if max_degree is None else "low-degree")
    # the printed query count is enough: the same budget recovers it again
    again = fit_sparse_fourier(
        f, 40, k=50, max_degree=max_degree, method="hashing", n_queries=report.n_queries, show_progress=False, seed=4
    )
    assert_same_terms(as_terms(again), terms)


def test_hashing_recovers_k200_degree2_spectrum_on_236_features():
    terms = random_spectrum(236, 200, 2, seed=5)
    f = Counter(as_function(terms, 236))
    spec, report = fit_sparse_fourier(
        f, 236, k=200, max_degree=2, method="hashing", return_report=True, show_progress=False, n_validation=0
    )
    assert_same_terms(as_terms(spec), terms)
    assert f.rows == report.n_queries
    assert str(report.n_queries) in str(report).replace(",", "")


def test_hashing_within_a_tight_budget():
    terms = random_spectrum(40, 50, 3, seed=12)
    spec, report = fit_sparse_fourier(
        as_function(terms, 40),
        40,
        k=50,
        method="hashing",
        n_queries=20_000,
        return_report=True,
        show_progress=False,
        n_validation=0,
    )
    assert report.n_queries <= 20_000
    assert_same_terms(as_terms(spec), terms)


def test_hashing_degrades_gracefully_with_noise():
    n, k = 40, 50
    terms = random_spectrum(n, k, 3, seed=13)
    clean = as_function(terms, n)
    x = torch.randint(0, 2, (3000, n), generator=torch.Generator().manual_seed(9))
    r2 = []
    for sigma in (0.3, 3.0, 10.0):  # the signal's variance is about 50
        gen = torch.Generator().manual_seed(1)

        def noisy(x, sigma=sigma, gen=gen):
            y = clean(x)
            return y + sigma * torch.randn(y.shape, generator=gen, dtype=y.dtype)

        spec = fit_sparse_fourier(noisy, n, k=k, max_degree=3, method="hashing", show_progress=False)
        r2.append(r2_score(clean(x).numpy(), spec.evaluate(x.double()).numpy()))
    assert r2[0] >= 0.999 and r2[1] >= 0.98 and 0.1 <= r2[2] < r2[1] < r2[0], r2


def test_hashing_is_seeded():
    terms = random_spectrum(30, 20, 2, seed=2)
    f = as_function(terms, 30)

    def noisy(x):
        return f(x) + 0.1 * torch.sin(x.double() @ torch.arange(30, dtype=torch.float64))

    a = fit_sparse_fourier(noisy, 30, k=20, method="hashing", seed=3, show_progress=False)
    b = fit_sparse_fourier(noisy, 30, k=20, method="hashing", seed=3, show_progress=False)
    torch.testing.assert_close(a.amplitudes, b.amplitudes, rtol=0, atol=0)
    assert torch.equal(a.frequencies, b.frequencies)


# ---------------------------------------------------------------- regression


def test_dense_regression_recovers_low_degree_spectrum():
    terms = random_spectrum(12, 30, 2, seed=6)
    spec, report = fit_sparse_fourier(
        as_function(terms, 12), 12, k=30, max_degree=2, method="regression", return_report=True, show_progress=False
    )
    assert report.params["solver"] == "dense least squares"
    assert_same_terms(as_terms(spec), terms)


def test_cosamp_regression_recovers_sparse_spectrum_among_many_candidates():
    n, d = 30, 3
    assert count_low_degree(n, d) > 3000
    terms = random_spectrum(n, 20, d, seed=7)
    spec, report = fit_sparse_fourier(
        as_function(terms, n), n, k=20, max_degree=d, method="regression", return_report=True, show_progress=False
    )
    assert report.params["solver"] == "CoSaMP"
    assert_same_terms(as_terms(spec), terms)


def test_regression_on_a_given_support():
    terms = random_spectrum(50, 15, 3, seed=8)
    support = torch.zeros(len(terms) + 5, 50, dtype=torch.bool)
    for row, key in enumerate(terms):
        support[row, list(key)] = True
    support[len(terms) :, :3] = torch.tensor([[1, 0, 1], [1, 1, 1], [0, 1, 1], [0, 0, 1], [1, 1, 0]]).bool()
    support[len(terms) :, 49] = True  # five extra frequencies with true amplitude 0
    spec = fit_sparse_fourier(
        as_function(terms, 50), 50, k=100, method="regression", support=support, show_progress=False
    )
    assert_same_terms(as_terms(spec), terms)


@pytest.mark.parametrize(("gram_max_flops", "max_memory"), [(1e20, None), (0, None), (0, 2**16)])
def test_least_squares_paths_equal_numpy_lstsq(monkeypatch, gram_max_flops, max_memory):
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, 2, (800, 12), generator=gen).bool()
    freqs = torch.rand(60, 12, generator=gen) < 0.2
    y = torch.randn(800, dtype=torch.float64, generator=gen)
    design = (-1.0) ** (x.numpy()[:, None, :] & freqs.numpy()[None]).sum(-1)
    want = np.linalg.lstsq(design, y.numpy(), rcond=None)[0]
    monkeypatch.setattr(regression_module, "GRAM_MAX_FLOPS", gram_max_flops)
    if max_memory is None:
        got = regression_module.least_squares(x, y, freqs)
    else:
        with tiny_memory_budget(max_memory):
            got = regression_module.least_squares(x, y, freqs)
    np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=1e-10)


def test_low_degree_index_enumerates_every_frequency_once():
    index = low_degree_index(6, 3)
    assert index.shape[0] == count_low_degree(6, 3) == 1 + 6 + 15 + 20
    rows = {tuple(sorted(set(r.tolist()) - {6})) for r in index}
    assert len(rows) == index.shape[0]


# ---------------------------------------------------------------- auto, targets, report, devices


@pytest.mark.parametrize(
    ("n", "k", "max_degree", "expected"),
    [(10, 50, None, "exact"), (40, 50, None, "hashing"), (40, 50, 2, "regression"), (40, 50, 3, "hashing")],
)
def test_auto_picks_and_says_why(n, k, max_degree, expected):
    terms = random_spectrum(n, 10, 2, seed=n)
    spec, report = fit_sparse_fourier(
        as_function(terms, n), n, k=k, max_degree=max_degree, return_report=True, show_progress=False, n_validation=200
    )
    assert report.method == expected and report.reason.startswith("auto:")
    assert expected in str(report) and report.reason in str(report)
    assert_same_terms(as_terms(spec), terms)


def test_target_picks_one_output_column():
    t1, t2 = random_spectrum(20, 10, 2, seed=1), random_spectrum(20, 10, 2, seed=2)
    f1, f2 = as_function(t1, 20), as_function(t2, 20)
    both = fit_sparse_fourier(
        lambda x: torch.stack((f1(x), f2(x)), 1), 20, k=10, method="hashing", target=1, show_progress=False
    )
    assert_same_terms(as_terms(both), t2)


def test_eval_data_r2_matches_independent_computation():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).double()
    rows = torch.randint(0, 2, (60, 10), generator=torch.Generator().manual_seed(3)).double()
    spec, report = fit_sparse_fourier(
        net, 10, k=30, method="exact", eval_data=rows, return_report=True, show_progress=False
    )
    with torch.no_grad():
        truth = net(rows)[:, 0].numpy()
    pred = np.array([sum(a * (-1) ** sum(int(r[i]) for i in key) for key, a in as_terms(spec).items()) for r in rows])
    assert report.r2_eval == pytest.approx(r2_score(truth, pred), abs=1e-9)
    assert report.n_validation_queries == 60 and spec.dtype == torch.float64


def test_queries_follow_the_module_dtype_and_amplitudes_its_output_dtype():
    seen = []
    net = torch.nn.Linear(8, 1).double()

    def f(x):
        seen.append(x.dtype)
        return net(x).float()

    spec = fit_sparse_fourier(f, 8, k=9, method="exact", dtype=torch.float64, show_progress=False)
    assert set(seen) == {torch.float64} and spec.dtype == torch.float32
    spec = fit_sparse_fourier(torch.nn.Linear(8, 1), 8, k=9, show_progress=False)
    assert spec.dtype == torch.float32 and len(spec) == 9  # a linear model has degree <= 1: 1 + 8 terms


def test_report_is_frozen_and_prints():
    _, report = fit_sparse_fourier(torch.nn.Linear(5, 1), 5, k=3, return_report=True, show_progress=False)
    assert isinstance(report, FitReport)
    with pytest.raises(AttributeError):
        report.method = "hashing"
    text = str(report)
    assert "method='exact'" in text and "32 for the fit" in text


# ---------------------------------------------------------------- bad input


def test_wrong_output_shape_names_the_query_batch():
    with pytest.raises(ValueError, match=r"query batch 0 .*returned shape \(64, 3, 2\)"):
        fit_sparse_fourier(
            lambda x: torch.zeros(x.shape[0], 3, 2), 10, k=5, method="exact", batch_size=64, show_progress=False
        )
    with pytest.raises(ValueError, match=r"returned shape \(63,\)"):
        fit_sparse_fourier(
            lambda x: torch.zeros(x.shape[0] - 1), 10, k=5, method="exact", batch_size=64, show_progress=False
        )
    with pytest.raises(TypeError, match="torch.Tensor"):
        fit_sparse_fourier(lambda x: x.sum(1).numpy(), 10, k=5, show_progress=False)


def test_nan_output_names_the_query_batch_and_row():
    def f(x):
        y = x.sum(1).double()
        return torch.where(x.sum(1) == 10, torch.nan, y)  # only the all-ones input, index 1023

    with pytest.raises(ValueError, match=r"NaN or infinite values in query batch 7 .*row 1023"):
        fit_sparse_fourier(f, 10, k=5, method="exact", batch_size=128, show_progress=False)


def test_multi_output_needs_a_valid_target():
    f = torch.nn.Linear(6, 3)
    with pytest.raises(ValueError, match="pass target="):
        fit_sparse_fourier(f, 6, k=4, show_progress=False)
    with pytest.raises(ValueError, match="target=3"):
        fit_sparse_fourier(f, 6, k=4, target=3, show_progress=False)


def test_exact_refuses_large_n_and_suggests_hashing():
    with pytest.raises(ValueError, match=rf"n_features <= {EXACT_MAX_FEATURES}.*got n_features=30.*'hashing'"):
        fit_sparse_fourier(lambda x: x.sum(1), 30, k=5, method="exact")
    with pytest.raises(ValueError, match=r"needs all 2\^10 = 1,024 queries"):
        fit_sparse_fourier(lambda x: x.sum(1), 10, k=5, method="exact", n_queries=1000)


def test_too_small_budget_states_a_minimum_that_suffices():
    terms = random_spectrum(40, 50, 3, seed=14)
    f = as_function(terms, 40)
    with pytest.raises(ValueError, match="too small to recover k=50") as err:
        fit_sparse_fourier(f, 40, k=50, method="hashing", n_queries=5000)
    minimum = int(re.search(r"at least ([\d,]+) queries", str(err.value)).group(1).replace(",", ""))
    spec, report = fit_sparse_fourier(
        f, 40, k=50, method="hashing", n_queries=minimum, return_report=True, show_progress=False, n_validation=0
    )
    assert report.n_queries <= minimum and len(spec) <= 50
    with pytest.raises(ValueError, match=r"method='regression' with k=50: it needs at least 151"):
        fit_sparse_fourier(f, 40, k=50, max_degree=3, method="regression", n_queries=100)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"k": 0}, ValueError, "k must be >= 1"),
        ({"k": 2.5}, TypeError, "k must be an int"),
        ({"method": "fft"}, ValueError, "method must be one of"),
        ({"max_degree": -1}, ValueError, "max_degree must be >= 0"),
        ({"method": "regression"}, ValueError, "needs max_degree"),
        ({"eval_data": torch.ones(3, 4)}, ValueError, "eval_data has 4 features"),
        ({"eval_data": torch.full((3, 6), 0.5)}, ValueError, "eval_data must hold binary"),
        ({"singleton_tol": 1.5}, ValueError, "singleton_tol"),
        ({"threshold": -1.0}, ValueError, "threshold must be a non-negative amplitude"),
        ({"threshold": float("nan")}, ValueError, "threshold must be a non-negative amplitude"),
    ],
)
def test_argument_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        fit_sparse_fourier(lambda x: x.sum(1), 6, **({"k": 3} | kwargs))


def test_non_callable_is_rejected():
    with pytest.raises(TypeError, match="f must be callable"):
        fit_sparse_fourier(torch.ones(3), 6)


@pytest.mark.parametrize("threshold", [-1.0, float("nan")])
def test_prune_refuses_negative_and_nan_thresholds(threshold):
    spectrum = FourierSpectrum(torch.eye(3, dtype=torch.bool), torch.tensor([1.0, -2.0, 0.5]))
    with pytest.raises(ValueError, match="threshold must be a finite number >= 0"):
        spectrum.prune(threshold=threshold)
    assert len(spectrum.prune(threshold=0.75)) == 2  # a valid threshold still prunes

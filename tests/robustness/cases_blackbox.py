"""Black-box FourierShap cases: one background row, constant and partly undefined models, budgets,
Captum's arguments and the fit's options (each result against brute force or Captum on the model itself)."""

from __future__ import annotations

import warnings

import torch

import torchxplain as tx
from tests.integration._brute import interventional_shap
from tests.robustness.harness import case, result_case

FS = "torchxplain.FourierShap"


def model(x: torch.Tensor) -> torch.Tensor:
    x = x.double()
    return x[:, 0] - 2.0 * x[:, 1] * x[:, 2] + 0.5 * x[:, 3]


def two_outputs(x: torch.Tensor) -> torch.Tensor:
    return torch.stack((model(x), 3.0 * x.double()[:, 3]), 1)


def bits(rows: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, 2, (rows, 4), generator=torch.Generator().manual_seed(seed)).double()


def quiet_fit(*args, **kwargs) -> tx.FourierShap:
    """A black-box explainer whose construction must not warn (a FitQualityWarning fails the case)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", tx.fourier.FitQualityWarning)
        return tx.FourierShap(*args, show_progress=False, **kwargs)


def nan_off_data(x: torch.Tensor) -> torch.Tensor:
    """Finite where bits 1..3 are 0 (the data and its hybrids), NaN elsewhere."""
    out = 2.0 * x.double()[:, 0]
    return torch.where(x[:, 1:].sum(1) > 0, float("nan"), out)


def off_data_background() -> torch.Tensor:
    bg = torch.zeros(6, 4, dtype=torch.float64)
    bg[1::2, 0] = 1.0
    return bg


# rows that take every bit's other value than the single baseline row's (its own hybrids never show them)
SINGLE = torch.tensor([[0.0, 1.0, 1.0, 0.0]], dtype=torch.float64)
QUERIES = torch.tensor([[1.0, 0, 1, 1], [1, 1, 1, 1], [0, 0, 0, 0]], dtype=torch.float64)


@result_case(FS, "one background row (Captum's single baseline): exact values, no 'R^2 = nan' warning")
def _():
    want = interventional_shap(model, QUERIES, SINGLE)
    # tabulate saw only the one point (all values 0); exact warned R^2 = nan; auto takes the cheapest exact route
    for method in ("auto", "tabulate", "exact"):
        explainer = quiet_fit(model, SINGLE, method=method)
        torch.testing.assert_close(explainer.attribute(QUERIES), want, rtol=0, atol=1e-12)
        assert explainer.fit_report.method == "enumerate" or explainer.fit_report.r2_shap == 1.0, method


@result_case(FS, "a constant black box: zero values and R^2 = 1, no bogus warning (it said R^2 = nan)")
def _():
    explainer = quiet_fit(lambda x: torch.full((x.shape[0],), 3.0, dtype=torch.float64), bits(6))
    assert torch.equal(explainer.attribute(bits(3, 1)), torch.zeros(3, 4, dtype=torch.float64))
    assert explainer.fit_report.r2_shap == 1.0 and float(explainer.expected_value()) == 3.0


@result_case(FS, "a model NaN only off the data: fitted on the data's hybrids (the report queried the whole cube)")
def _():
    bg = off_data_background()
    explainer = quiet_fit(nan_off_data, bg, data=bg)
    torch.testing.assert_close(explainer.attribute(bg[:2]), interventional_shap(nan_off_data, bg[:2], bg))


@case(FS, "a model NaN off a background with constant bits, no data=", ValueError, r"NaN.*No data= was given.*data=")
def _():
    tx.FourierShap(nan_off_data, off_data_background(), show_progress=False)


@result_case(FS, "target_r2=1.0 with time_budget=1 on a dense model stops at a budget and warns (it ran 590 s)")
def _():
    weights = torch.randn(16, 16, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    background = torch.randint(0, 2, (20, 16), generator=torch.Generator().manual_seed(1)).double()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = tx.FourierShap(
            lambda x: torch.tanh(x.double() @ weights).sum(1), background, target_r2=1.0, time_budget=1
        ).fit_report
    assert report.method == "hybrid" and report.stopped.split(" (")[0] in ("time budget", "query budget")
    assert any(w.category is tx.fourier.FitQualityWarning for w in caught)


@result_case(FS, "Captum's arguments on a black box: scalar baselines, internal_batch_size, the convergence delta")
def _():
    from captum.attr import ShapleyValues

    explainer = quiet_fit(model, bits(6), method="exact")
    x = bits(5, 1)
    for baseline in (0.0, 1):  # Captum's own value of the model itself is the reference
        captum = ShapleyValues(model).attribute(x, baselines=baseline).double()
        torch.testing.assert_close(explainer.attribute(x, baselines=baseline), captum, rtol=0, atol=1e-6)
    whole, delta = explainer.attribute(x, return_convergence_delta=True)
    torch.testing.assert_close(explainer.attribute(x, internal_batch_size=2), whole, rtol=0, atol=1e-12)
    gap = whole.sum(1) - (model(x) - model(bits(6)).mean())  # the efficiency gap against the model
    torch.testing.assert_close(delta, gap, rtol=0, atol=1e-12)


@result_case(FS, "a per-example target list on a black box built for that output (lists were refused)")
def _():
    explainer = quiet_fit(two_outputs, bits(6), method="exact", target=1)
    x = bits(3, 1)
    want = interventional_shap(lambda z: two_outputs(z)[:, 1], x, bits(6))
    torch.testing.assert_close(explainer.attribute(x, target=[1, 1, 1]), want)
    torch.testing.assert_close(explainer.attribute(x, target=torch.tensor([1, 1, 1])), want)


@case(FS, "a per-example target naming an output the black box was not fitted for", ValueError, r"built for target=1")
def _():
    tx.FourierShap(two_outputs, bits(6), method="exact", target=1, show_progress=False).attribute(
        bits(3, 1), target=[1, 0, 1]
    )


@case(FS, "target_r2=nan", ValueError, r"target_r2 must be a number <= 1 or None, got nan")
def _():
    tx.FourierShap(model, bits(6), target_r2=float("nan"))


@case(FS, "a string one_hot flag", TypeError, r"one_hot must be True, False or None, got 'yes'")
def _():
    tx.FourierShap(model, bits(6), one_hot="yes")


@case("torchxplain.fourier.FitOptions", "a string threshold", TypeError, r"threshold must be a finite number >= 0")
def _():
    tx.fourier.FitOptions(threshold="0.1")


@case("torchxplain.fourier.FitOptions", "a string singleton_tol", TypeError, r"singleton_tol must be a finite number")
def _():
    tx.fourier.FitOptions(singleton_tol="0.3")


@case(FS, "a grouped player constant over the background, no data=", ValueError, r"grouped player.*\[\[0, 1\]\].*data=")
def _():
    tx.FourierShap(model, SINGLE, groups=[0, 0, 1, 2])  # the block's other values never reach the fit (all zeros)


# --- tabulation and grids priced before they are made ----------------------------------------------------------
class Counting:
    """A model that counts the rows it was asked about (a refusal must come before any query)."""

    def __init__(self) -> None:
        self.rows = 0

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        self.rows += x.shape[0]
        return x.double().sum(1)


def thirty_bits() -> torch.Tensor:
    return torch.randint(0, 2, (200, 30), generator=torch.Generator().manual_seed(0)).double()


@case(FS, "method='tabulate' on 30 single bits (2^30 points, 8 GiB)", ValueError, r"1,073,741,824 level .*1,048,576")
def _():
    counting = Counting()
    try:
        tx.FourierShap(counting, thirty_bits()[:10], data=thirty_bits(), method="tabulate", show_progress=False)
    finally:
        assert counting.rows == 0, counting.rows


@case(FS, "method='tabulate' with n_queries=2^31: tables above max_memory", ValueError, r"318 GiB, above max_memory")
def _():
    counting = Counting()
    try:
        tx.FourierShap(
            counting, thirty_bits()[:10], data=thirty_bits(), method="tabulate", n_queries=2**31, show_progress=False
        )
    finally:
        assert counting.rows == 0, counting.rows


@case("torchxplain.fit_sparse_fourier", "method='tabulate' above max_memory", ValueError, r"combinations fit\): use")
def _():
    bits13 = torch.randint(0, 2, (100, 13), generator=torch.Generator().manual_seed(0)).double()
    tx.fit_sparse_fourier(model, 13, background=bits13, data=bits13, method="tabulate", max_memory="1MB")


def fourteen_players() -> tuple[tx.FourierSpectrum, torch.Tensor]:
    freq = torch.zeros(15, 14, dtype=torch.bool)
    freq[torch.arange(1, 15), torch.arange(14)] = True
    freq[0, :3] = True
    amplitudes = torch.linspace(-1, 1, 15, dtype=torch.float64)
    background = torch.randint(0, 2, (6, 14), generator=torch.Generator().manual_seed(2)).double()
    return tx.FourierSpectrum(freq, amplitudes), background


@case(FS, "kernel='grid' whose tables exceed max_memory (3^14 coalition cells)", ValueError, r"kernel='grid' tabulates")
def _():
    spectrum, background = fourteen_players()
    tx.FourierShap.from_spectrum(spectrum, background, kernel="grid", max_memory="1MB").attribute(background[:2])


@result_case(FS, "kernel='auto' under a 1 MiB budget: not the grid kernel, the values of brute force")
def _():
    from tests.fourier.brute_force import shapley

    spectrum, background = fourteen_players()
    explainer = tx.FourierShap.from_spectrum(spectrum, background, max_memory="1MB")
    x = torch.randint(0, 2, (3, 14), generator=torch.Generator().manual_seed(3)).double()
    want = shapley(spectrum.frequencies.numpy(), spectrum.amplitudes.numpy(), x.numpy(), background.numpy())
    torch.testing.assert_close(explainer.attribute(x), torch.from_numpy(want), rtol=0, atol=1e-10)


# --- Captum's per-example additional_forward_args ---------------------------------------------------------------
def scaled(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return (x.double() * scale).sum(1)


@case(
    FS, "a per-row tensor in additional_forward_args (one per background row)", ValueError, r"\[0\] has shape \(6, 1\)"
)
def _():
    tx.FourierShap(scaled, bits(6), additional_forward_args=(torch.ones(6, 1, dtype=torch.float64),))


@case(
    FS, "a per-row tensor of the rows to explain (failed in the model)", ValueError, r"per-example tensor .*cannot be"
)
def _():
    tx.FourierShap(scaled, bits(6), data=bits(40), additional_forward_args=(torch.ones(5, 1, dtype=torch.float64),))


@result_case(FS, "a shared (1, n) tensor in additional_forward_args: accepted, values of brute force")
def _():
    scale = torch.tensor([[1.0, -2.0, 0.5, 3.0]], dtype=torch.float64)
    explainer = quiet_fit(scaled, bits(6), method="exact", additional_forward_args=(scale,))
    want = interventional_shap(lambda z: scaled(z, scale), bits(3, 1), bits(6))
    torch.testing.assert_close(explainer.attribute(bits(3, 1), additional_forward_args=(scale,)), want)

"""The sources of a spectrum and the router's records: a source's knobs are checked when it is made, a knob of
another source is refused naming its owner, and every route is checked against brute force."""

from __future__ import annotations

import torch

import torchxplain as tx
from tests.integration._brute import interventional_shap
from tests.robustness.harness import case, exempt, result_case

F = "torchxplain.fourier."


def model(x: torch.Tensor) -> torch.Tensor:
    x = x.double()
    return x[:, 0] - 2.0 * x[:, 1] * x[:, 2] + 0.5 * x[:, 3]


def bits(rows: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, 2, (rows, 4), generator=torch.Generator().manual_seed(seed)).double()


@case(F + "Enumerate", "batch_size=0", ValueError, r"batch_size must be >= 1")
def _():
    tx.fourier.Enumerate(batch_size=0)


@case(F + "Tabulate", "a grid over n_queries", ValueError, r"would query all 16 level combinations.*n_queries")
def _():
    tx.FourierShap(model, bits(20), method=tx.fourier.Tabulate(n_queries=8))


@case(F + "Correct", "neither a tolerance nor a target", ValueError, r"needs a tolerance= or a target_r2=")
def _():
    tx.fourier.Correct(target_r2=None)


@case(F + "Correct", "Banzhaf values", ValueError, r"Banzhaf values .* not estimated .*method='enumerate'")
def _():
    rows = torch.randn(40, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    explainer = tx.FourierShap(lambda z: z.prod(1), rows[:8], data=rows, method="correct", show_progress=False)
    explainer.banzhaf(rows[:2])


@result_case(F + "Correct", "values within their intervals of brute force, with standard errors")
def _():
    background, x = bits(12, 1), bits(5, 2)
    want = interventional_shap(model, x, background)
    explainer = tx.FourierShap(model, background, method="correct", tolerance=0.02, show_progress=False)
    explanation = explainer.explain(x)
    assert explanation.stderr is not None and explanation.route == "correct"
    assert bool(((explanation.values - want).abs() <= 5 * explanation.stderr + 1e-10).all())


@case(F + "Fit", "max_degree=0 on continuous rows", ValueError, r"max_degree=0 would fit a constant.*max_degree >= 1")
def _():
    rows = torch.randn(30, 3, dtype=torch.float64)
    tx.FourierShap(lambda z: z.sum(1), rows, method=tx.fourier.Fit(max_degree=0))


@case(F + "Fit", "threshold= on continuous rows", ValueError, r"threshold= drops small Walsh terms of a binary fit")
def _():
    rows = torch.randn(30, 3, dtype=torch.float64)
    tx.FourierShap(lambda z: z.sum(1), rows, method="fit", threshold=0.1)


@case(F + "CubeFit", "an unknown kind", ValueError, r"kind must be 'exact', 'hashing' or 'regression'")
def _():
    tx.fourier.CubeFit(kind="fft")


@case(F + "Trees", "a knob of a black-box fit", TypeError, r"k= is a knob of .*Fit.*Trees.*takes encoding, energy")
def _():
    from sklearn.tree import DecisionTreeRegressor

    x = bits(30).numpy()
    tx.FourierShap.from_trees(DecisionTreeRegressor(max_depth=2).fit(x, x[:, 0]), x, k=4)


@case(F + "KnownSpectrum", "a knob of the trees", TypeError, r"energy= is a knob of .*Trees.*takes no knobs")
def _():
    spectrum = tx.FourierSpectrum(torch.eye(4, dtype=torch.bool), torch.ones(4, dtype=torch.float64))
    tx.FourierShap.from_spectrum(spectrum, bits(5), energy=0.9)


@result_case(F + "Enumerate", "every route of a black box gives the brute-force values")
def _():
    background, x = bits(12, 1), bits(5, 2)
    want = interventional_shap(model, x, background)
    for method in ("auto", tx.fourier.Enumerate(), tx.fourier.Tabulate(), tx.fourier.Fit(), "exact"):
        explainer = tx.FourierShap(model, background, method=method, show_progress=False)
        torch.testing.assert_close(explainer.attribute(x), want, rtol=0, atol=1e-10)


exempt(
    "the router's record of a decision (built by FourierShap, read in fit_report and explainer.route)",
    F + "Candidate",
    F + "Route",
)


@result_case(F + "FourierExplanation", "the result of a grouped call: views agree with brute force and each other")
def _():
    background, x = bits(10, 3), bits(4, 4)
    groups = torch.tensor([0, 0, 1, 2])
    explainer = tx.FourierShap(model, background, groups=groups, method="enumerate")
    explanation = explainer.explain(x, player_names=["ab", "c", "d"])
    want = interventional_shap(model, x, background)  # per feature
    # features 0 and 1 never interact (the model is x0 - 2 x1 x2 + x3/2), so the group {0, 1} gets their sum
    torch.testing.assert_close(explanation.values[:, 0], want[:, 0] + want[:, 1], rtol=0, atol=1e-12)
    torch.testing.assert_close(explanation.per_feature(), explanation.attribution(), rtol=0, atol=0)
    assert explanation.player_names == ("ab", "c", "d") and explanation.to_frame().shape == (4, 4)

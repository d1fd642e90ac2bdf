"""``FourierShap(model, background, data=)`` on continuous and mixed rows.

References, independent of the library's value code: ``brute_force.model_shapley`` (numpy: every coalition of the
players, the model evaluated at the raw hybrids ``where(S, x, b)``, averaged over the background, and the Shapley
formula over all ``2^m`` coalitions).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

import torchxplain as tx
from tests.fourier.brute_force import model_shapley, shap_r2
from torchxplain._core.saved_fields import SavedFieldError


def discrete_mixed(rows: int, seed: int) -> pd.DataFrame:
    """Two continuous columns on a few irregular values (every value a slot of its own), a binary column and a
    one-hot block of three columns, named like pandas' get_dummies."""
    rng = np.random.default_rng(seed)
    levels = np.array([-1.3, -0.2, 0.4, 1.7, 2.9])
    site = np.eye(3)[rng.integers(0, 3, rows)]
    return pd.DataFrame(
        {
            "age": levels[rng.integers(0, 5, rows)],
            "bmi": levels[rng.integers(0, 5, rows)] * 2 + 0.1,
            "sex": rng.integers(0, 2, rows).astype(float),
            "site_A": site[:, 0],
            "site_B": site[:, 1],
            "site_C": site[:, 2],
        }
    )


def piecewise_model(x):
    """Main effects, an age×bmi and an age×site pair: a function of each player's level, so piecewise constant on
    the encoding's slots and exactly a sum of the fit's blocks."""
    lib = torch if isinstance(x, torch.Tensor) else np
    return lib.sin(2 * x[:, 0]) + 0.3 * x[:, 1] ** 2 + x[:, 0] * x[:, 1] - 0.7 * x[:, 2] + x[:, 0] * x[:, 5] + x[:, 3]


PLAYERS = np.array([0, 1, 2, 3, 3, 3])


@pytest.fixture(scope="module")
def mixed():
    frame = discrete_mixed(300, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tx.fourier.FitQualityWarning)
        explainer = tx.FourierShap(
            piecewise_model, frame.iloc[:25], data=frame.iloc[25:], groups="auto", method="fit", show_progress=False
        )
    return frame, explainer


def test_a_model_piecewise_constant_on_the_bins_gets_the_exact_values(mixed):
    frame, explainer = mixed
    x = discrete_mixed(12, 1)  # new rows, on the same values
    phi = explainer.player_values(x).values.numpy()
    want = model_shapley(piecewise_model, x.to_numpy(), frame.iloc[:25].to_numpy(), PLAYERS)
    np.testing.assert_allclose(phi, want, atol=1e-9, rtol=0)
    report = explainer.fit_report
    assert report.method == "continuous" and "not 0/1" in report.reason and "column 'age'" in report.reason
    assert report.met_target and report.r2_shap > 0.999999


def test_mixed_rows_give_one_value_per_original_feature_and_names_flow_through(mixed):
    frame, explainer = mixed
    x = discrete_mixed(5, 2)
    phi = explainer.attribute(x)
    assert phi.shape == (5, 6)
    assert torch.equal(phi[:, 3], phi[:, 4]) and torch.equal(phi[:, 3], phi[:, 5])  # the block's one value
    values = explainer.player_values(x)
    assert values.names == ("age", "bmi", "sex", "site") and values.values.shape == (5, 4)
    assert explainer.feature_names == tuple(frame.columns)
    assert "one-hot block" in explainer.fit_report.players and "site" in explainer.fit_report.players
    pytest.importorskip("shap")
    assert list(explainer.to_shap(x).feature_names) == list(frame.columns)
    with pytest.raises(ValueError, match="columns that differ"):
        explainer.attribute(x[list(reversed(frame.columns))])


def test_save_and_load_round_trip_and_a_tampered_file_is_refused(mixed, tmp_path):
    frame, explainer = mixed
    x = discrete_mixed(6, 3)
    path = tmp_path / "continuous.pt"
    explainer.save(path)
    back = tx.FourierShap.load(path)
    assert torch.equal(back.attribute(x), explainer.attribute(x))
    assert back.feature_names == explainer.feature_names and back.fit_report == explainer.fit_report
    with pytest.raises(ValueError, match="NaN or infinite"):
        back.attribute(x.assign(age=np.nan))
    saved = torch.load(path, weights_only=True)
    metadata = json.loads(saved["metadata"])
    metadata["config"]["encoder"]["finite"] = "yes"
    saved["metadata"] = json.dumps(metadata)
    torch.save(saved, tmp_path / "tampered.pt")
    with pytest.raises(SavedFieldError, match="finite"):
        tx.FourierShap.load(tmp_path / "tampered.pt")
    saved = torch.load(path, weights_only=True)
    saved["state"]["background"][0, 0] = float("nan")
    torch.save(saved, tmp_path / "nan.pt")
    with pytest.raises(SavedFieldError, match="'background' holds NaN or infinite values"):
        tx.FourierShap.load(tmp_path / "nan.pt")


def test_enumeration_on_continuous_rows_is_exact_through_the_model():
    rng = np.random.default_rng(4)
    bg, x = rng.normal(size=(7, 5)), rng.normal(size=(4, 5))

    def model(z):
        lib = torch if isinstance(z, torch.Tensor) else np
        return lib.tanh(z[:, 0] * z[:, 1] - z[:, 2]) + z[:, 3] * z[:, 4] ** 2

    explainer = tx.FourierShap(model, bg, method="enumerate")
    np.testing.assert_allclose(
        explainer.attribute(x).numpy(), model_shapley(model, x, bg, np.arange(5)), atol=1e-10, rtol=0
    )
    assert explainer.fit_report.method == "enumerate" and "raw hybrids" in explainer.fit_report.reason
    delta = explainer.attribute(x, return_convergence_delta=True)[1]
    assert float(delta.abs().max()) < 1e-10
    with pytest.raises(ValueError, match="holds no spectrum to save"):
        explainer.save("never.pt")


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_enumeration_hybrids_are_exact_copies_for_grouped_players_and_pairs_of_every_size(dtype):
    rng = np.random.default_rng(11)
    bg = rng.normal(size=(6, 6))
    x = rng.normal(size=(5, 6))
    x[0] = bg[0]  # a row equal to a background row: a pair with no differing player
    x[1, :3] = bg[1, :3]  # pairs that differ in some players only
    x[2, 4] = -0.0  # signed zeros survive the bitwise selection
    bg[2, 4] = 0.0
    groups = np.array([0, 0, 1, 2, 2, 3])
    seen = []

    def model(z):
        if isinstance(z, torch.Tensor):
            seen.append(z)
            z = z.double()
        lib = torch if isinstance(z, torch.Tensor) else np
        sign = lib.copysign(lib.ones_like(z[:, 4]), z[:, 4])  # tells -0.0 from 0.0
        return lib.tanh(z[:, 0] * z[:, 1] - z[:, 2]) + z[:, 3] * z[:, 4] ** 2 + sign * z[:, 5]

    bg_t, x_t = torch.tensor(bg, dtype=dtype), torch.tensor(x, dtype=dtype)
    explainer = tx.FourierShap(model, bg_t, groups=torch.tensor(groups), method="enumerate")
    values = explainer.explain(x_t).values
    reference = model_shapley(model, x_t.double().numpy(), bg_t.double().numpy(), groups)
    np.testing.assert_allclose(values.double().numpy(), reference, atol=1e-5 if dtype == torch.float32 else 1e-9)
    queried = torch.cat(seen).double()
    allowed = torch.cat((x_t, bg_t)).double()  # every entry of a hybrid is the row's or the background row's
    assert bool((queried[:, :, None] == allowed.T[None]).any(2).all())
    assert bool(torch.signbit(queried[:, 4][queried[:, 4] == 0]).any())


def test_enumeration_of_a_float32_model_on_float64_rows_builds_its_hybrids_in_float32():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1), torch.nn.Flatten(0))
    rng = np.random.default_rng(3)
    bg, x = rng.normal(size=(6, 5)), rng.normal(size=(3, 5))
    x[0, 1] = bg[0, 1] + 1e-12  # distinct in float64, equal in float32: the model cannot tell them apart
    seen: list[torch.Tensor] = []
    net.register_forward_pre_hook(lambda module, args: seen.append(args[0]))

    def explain(dtype):
        seen.clear()
        explainer = tx.FourierShap(net, torch.tensor(bg, dtype=dtype), method="enumerate")
        return explainer.explain(torch.tensor(x, dtype=dtype)).values, sum(z.shape[0] for z in seen)

    values, rows = explain(torch.float64)
    assert {z.dtype for z in seen} == {torch.float32}
    values32, rows32 = explain(torch.float32)
    assert rows == rows32  # the hybrids of float32 rows: the pair (x[0], bg[0]) differs in 4 players, not 5

    def predict(z):
        with torch.no_grad():
            return net(torch.tensor(z, dtype=torch.float32)).double().numpy()

    reference = model_shapley(predict, x.astype(np.float32).astype(np.float64), bg.astype(np.float32), np.arange(5))
    np.testing.assert_allclose(values.double().numpy(), reference, atol=1e-6)
    np.testing.assert_allclose(values32.double().numpy(), reference, atol=1e-6)


class _MLP(torch.nn.Module):
    """A fixed random ReLU network on 6 features (its hybrids have interactions of every order)."""

    def __init__(self) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(3)
        self.w1 = torch.nn.Parameter(torch.randn(6, 24, generator=gen, dtype=torch.float64) * 0.6)
        self.b1 = torch.nn.Parameter(torch.randn(24, generator=gen, dtype=torch.float64) * 0.3)
        self.w2 = torch.nn.Parameter(torch.randn(24, generator=gen, dtype=torch.float64) * 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ self.w1 + self.b1) @ self.w2


@pytest.mark.slow  # a 30 s fit of the whole ladder
def test_the_reports_estimate_is_calibrated_against_the_exact_shap_r2():
    rng = np.random.default_rng(5)
    data, bg, test = rng.normal(size=(800, 6)), rng.normal(size=(30, 6)), rng.normal(size=(200, 6))
    model = _MLP()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tx.fourier.FitQualityWarning)
        explainer = tx.FourierShap(model, bg, data=data, method="fit", show_progress=False)
    report = explainer.fit_report

    def numpy_model(z):
        with torch.no_grad():
            return model(torch.as_tensor(z)).numpy()

    exact = shap_r2(model_shapley(numpy_model, test, bg, np.arange(6)), explainer.attribute(test).numpy())
    assert exact < 0.9995  # a fit with an error to estimate
    assert "held out of the thresholds and the fit" in report.params["check"]
    assert abs(report.r2_shap - exact) < 4 * report.r2_shap_se + 2e-3, (report.r2_shap, report.r2_shap_se, exact)


def test_a_model_the_bins_cannot_resolve_warns_with_what_to_change():
    rng = np.random.default_rng(6)
    data, bg = rng.normal(size=(600, 6)), rng.normal(size=(20, 6))

    def model(z):  # a six-way product: no block of at most three features holds it
        return torch.prod(torch.tanh(3 * z), 1)

    with pytest.warns(tx.fourier.FitQualityWarning, match="below target_r2=0.99.*raise n_queries"):
        explainer = tx.FourierShap(model, bg, data=data, n_queries=40_000, show_progress=False)
    assert explainer.fit_report.met_target is False
    assert explainer.fit_report.stopped.startswith("query budget")


def test_the_same_seed_gives_the_same_surrogate():
    rng = np.random.default_rng(7)
    data, bg = rng.normal(size=(300, 4)), rng.normal(size=(10, 4))

    def model(z):
        return z[:, 0] * z[:, 1] + torch.sin(z[:, 2]) - z[:, 3]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tx.fourier.FitQualityWarning)
        a, b = (tx.FourierShap(model, bg, data=data, seed=3, n_queries=40_000, show_progress=False) for _ in range(2))
    assert torch.equal(a.spectrum.frequencies, b.spectrum.frequencies)
    assert torch.equal(a.spectrum.amplitudes, b.spectrum.amplitudes)


def test_binary_rows_keep_the_binary_routes():
    bits = torch.randint(0, 2, (40, 5), generator=torch.Generator().manual_seed(0)).double()
    explainer = tx.FourierShap(lambda z: z[:, 0] * z[:, 1] - z[:, 2], bits, show_progress=False)
    assert explainer.fit_report.method == "tabulate"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"background": np.array([[0.5, np.nan], [1.0, 2.0]])}, r"background contains NaN.*impute"),
        ({"data": np.array([[0.5, np.inf], [1.0, 2.0]])}, r"data contains NaN or infinite.*impute"),
        ({"data": np.ones((4, 3)) * 0.5}, r"data has 3 features"),
        ({"relaxed": True}, r"relaxed=True .* not 0/1"),
        ({"k": 10}, r"k caps the Walsh terms .* leave k=None"),
        ({"method": "tabulate"}, r"method='tabulate' queries every combination.*not 0/1.*method='auto'"),
        ({"groups": "blocks"}, r"groups must be an integer id per feature, 'auto' or None"),
        ({"time_budget": 5.0}, r"budget counts queries"),
        ({"max_thresholds": 0}, r"max_thresholds must be"),
    ],
)
def test_bad_continuous_input_is_refused_early(kwargs, match):
    def model(z):
        return z.sum(1)

    arguments = {"background": np.array([[0.5, 1.5], [1.0, 2.0], [0.1, 0.3]]), **kwargs}
    with pytest.raises(ValueError, match=match):
        tx.FourierShap(model, **arguments)


def test_a_data_frame_whose_columns_differ_from_the_backgrounds_is_refused():
    frame = discrete_mixed(10, 8)
    with pytest.raises(ValueError, match="data has columns that differ"):
        tx.FourierShap(lambda z: z.sum(1), frame, data=frame[list(reversed(frame.columns))])

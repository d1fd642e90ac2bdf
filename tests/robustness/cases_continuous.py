"""Continuous black boxes (``FourierShap(model, background, data=)`` on non-0/1 rows): rows outside the
fitted range, degenerate columns, the model's own failures and arguments. Each result against brute force over
coalitions of the model itself (``tests.fourier.brute_force``) or an expected clear error."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

import torchxplain as tx
from tests.robustness.cases_fourier import load_crafted
from tests.robustness.harness import case, result_case

FS = "torchxplain.FourierShap"
QUICK = {"target_r2": None, "n_queries": 16_384, "n_validation": 1024}
"""A fit's first stage only: the cases check what is said about rows outside its range, not its accuracy."""


def quarters(rows: int, p: int, seed: int) -> torch.Tensor:
    """Rows on a grid of quarters (exact in every float dtype)."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(-8, 9, (rows, p), generator=gen).double() / 4


def nan_right(x: torch.Tensor) -> torch.Tensor:
    """A model undefined right of 1.5 in column 0."""
    x = x.double()
    return torch.where(x[:, 0] > 1.5, float("nan"), x.sum(1))


@result_case(FS, "a model NaN on a continuous row: the message quotes the row as queried (it was cast to int)")
def _():
    try:
        tx.FourierShap(nan_right, quarters(12, 3, 0), show_progress=False)
    except ValueError as err:
        found = re.search(r"input \[([^\]]*)\]", str(err))
        assert found is not None, str(err)
        row = torch.tensor([float(v) for v in found.group(1).split(", ")], dtype=torch.float64)
        assert bool(torch.isnan(nan_right(row[None]))), f"the quoted row {row.tolist()} is not one the model fails on"
        assert row[0] > 1.5 and bool((row * 4 == (row * 4).round()).all()), row  # real values, not ints
    else:
        raise AssertionError("a model that returns NaN on the fit's hybrids must be refused")


@result_case(FS, "continuous rows where every column holds one value: the constant fit (torch.cat failed)")
def _():
    from tests.fourier.brute_force import model_shapley

    row = torch.tensor([[0.5, 2.5, -1.25]], dtype=torch.float64)
    model = lambda x: torch.tanh(x.double()).sum(1) + x.double()[:, 0] * x.double()[:, 2]  # noqa: E731
    explainer = tx.FourierShap(model, row.expand(6, 3), data=row.expand(9, 3), method="fit", show_progress=False)
    report = explainer.fit_report
    assert report.r2_shap == 1.0 and report.stopped == "no column varies over the fit's rows", report
    torch.testing.assert_close(explainer.expected_value(), model(row)[0])  # the model itself at the one row
    same = row.expand(2, 3)
    want = torch.from_numpy(
        model_shapley(lambda z: model(torch.from_numpy(z)).numpy(), same.numpy(), row.numpy(), [0, 1, 2])
    )
    torch.testing.assert_close(explainer.attribute(same), want)


# --- rows outside the fitted range: a FitQualityWarning with the share and the measured effect, or honest codes --
def smooth(x: torch.Tensor) -> torch.Tensor:
    x = x.double()
    return torch.tanh(x[:, 0]) + 0.5 * x[:, 1] * x[:, 2] + 0.3 * x[:, 3]


def caught(call: Callable[[], Any]) -> tuple[Any, list[str]]:
    """``call()`` and the messages of the FitQualityWarnings it raised."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = call()
    return out, [str(w.message) for w in seen if w.category is tx.fourier.FitQualityWarning]


def numbers(pattern: str, text: str) -> list[float]:
    found = re.search(pattern, text)
    assert found is not None, (pattern, text)
    return [float(g) for g in found.groups()]


@result_case(FS, "rows at 3x the data's scale: a FitQualityWarning with the share outside and the model's change")
def _():
    data = quarters(300, 4, 1)
    explainer = tx.FourierShap(smooth, data[:16], data=data, method="fit", show_progress=False, **QUICK)
    inside, words = caught(lambda: explainer.attribute(data[:5]))
    assert not words, words  # rows of the data: no word
    far = quarters(12, 4, 2) * 3
    _, words = caught(lambda: explainer.attribute(far))
    assert len(words) == 1, words
    low, high = data.amin(0), data.amax(0)
    out = (far < low) | (far > high)
    share, up_to = numbers(r"([\d.]+)% of the entries of inputs", words[0])[0], numbers(r"up to ([\d.e+-]+)", words[0])
    assert abs(share - 100 * float(out.double().mean())) < 0.051, (share, words[0])
    moved = far[out.any(1)]
    change = (smooth(moved) - smooth(torch.minimum(torch.maximum(moved, low), high))).abs().max()
    assert abs(up_to[0] - float(change)) <= 1e-3 * float(change), (up_to, float(change))
    assert "columns constant there" not in explainer.fit_report.domain and "every column lies within" in (
        explainer.fit_report.domain
    )


def levels_model(x: Any) -> Any:
    """A function of discrete levels: main effects and two pairs (the pairs on columns whose levels X_test keeps)."""
    lib = torch if isinstance(x, torch.Tensor) else np
    return (
        lib.sin(x[:, 0])
        + 0.5 * x[:, 1]
        - 0.3 * x[:, 3] ** 2
        + x[:, 4] * (x[:, 5] > 0)
        + x[:, 2] * x[:, 4]
        + 0.2 * x[:, 6]
    )


@result_case("torchxplain.explain_after_fit", "X_test beyond X_train's range, a column constant there: X_test encoded")
def _():
    from tests.fourier.brute_force import model_shapley, shap_r2

    rng = np.random.default_rng(5)
    train = rng.choice([-1.0, 0.0, 1.0, 2.0], size=(300, 7))
    train[:, 6] = 0.5  # constant in training: every X_test value there was explained as 0.5 (value 0)
    test = rng.choice([-1.0, 0.0, 1.0, 2.0], size=(60, 7))
    test[:, [0, 1, 3, 6]] = rng.choice([-4.0, -1.0, 0.0, 1.0, 2.0, 5.0], size=(60, 4))  # beyond in 4 columns
    result, words = caught(lambda: tx.explain_after_fit(levels_model, train, test, tx.fourier.Fit(), n_background=40))
    assert result.explainer.fit_report.method == "continuous" and not words, (result.reason, words)
    want = model_shapley(levels_model, test, result.explainer.background.numpy(), np.arange(7))
    got = result.attributions.numpy()
    # R^2 0.236 (max error 6.3) when X_test's values were snapped to X_train's range; the fit's own error is left
    assert shap_r2(want, got) > 0.9999 and np.abs(got - want).max() < 0.2, (shap_r2(want, got), result.reason)


@result_case(FS, "a column constant in data and background: the rows that vary there are named, with the effect")
def _():
    data = quarters(300, 4, 3)
    data[:, 2] = 0.75
    explainer = tx.FourierShap(smooth, data[:16], data=data, method="fit", show_progress=False, **QUICK)
    assert "columns constant there, at index 2" in explainer.fit_report.domain, explainer.fit_report.domain
    x = quarters(6, 4, 4)
    _, words = caught(lambda: explainer.attribute(x))
    assert len(words) == 1 and "in columns 2)" in words[0], words
    changed = (smooth(x) - smooth(torch.cat((x[:, :2], torch.full((6, 1), 0.75), x[:, 3:]), 1))).abs().max()
    assert abs(numbers(r"up to ([\d.e+-]+)", words[0])[0] - float(changed)) <= 1e-3 * float(changed), words


@result_case(FS, "a bit constant in data and background (binary fit): a warning, and exact after explain_after_fit")
def _():
    from tests.integration._brute import interventional_shap

    def bits_model(x: torch.Tensor) -> torch.Tensor:
        x = x.double()
        return x[:, 0] + 2 * x[:, 1] * x[:, 2] - x[:, 3]

    data = torch.randint(0, 2, (300, 4), generator=torch.Generator().manual_seed(0)).double()
    data[:, 3] = 0  # never 1 in the data: the fit never saw the model's -1 there
    x = torch.tensor([[1.0, 1, 1, 1], [0, 1, 0, 1], [1, 0, 0, 0]], dtype=torch.float64)
    explainer = tx.FourierShap(bits_model, data[:20], data=data, method="tabulate", show_progress=False)
    _, words = caught(lambda: explainer.attribute(x))
    assert len(words) == 1 and "of 3 rows, in columns 3)" in words[0] and "up to 1 " in words[0], words
    result, words = caught(lambda: tx.explain_after_fit(bits_model, data, x, tx.fourier.Tabulate(), n_background=20))
    assert not words and result.explainer.fit_report.method == "tabulate", (words, result.reason)
    want = interventional_shap(bits_model, x, result.explainer.background.double())
    torch.testing.assert_close(result.attributions.double(), want, rtol=0, atol=1e-9)


@result_case(FS, "a saved continuous explainer keeps its range: it warns after load (effect measured with the model)")
def _():
    import os
    import tempfile

    data = quarters(300, 4, 6)
    explainer = tx.FourierShap(smooth, data[:16], data=data, method="fit", show_progress=False, **QUICK)
    far = data[:4] * 3
    with tempfile.TemporaryDirectory() as folder:
        path = explainer.save(os.path.join(folder, "fs.pt"))
        bare, with_model = tx.FourierShap.load(path), tx.FourierShap.load(path, forward_func=smooth)
    assert torch.equal(bare.encoder.domain, explainer.encoder.domain)
    _, words = caught(lambda: bare.attribute(far))
    assert len(words) == 1 and "not measured" in words[0], words
    _, before = caught(lambda: explainer.attribute(far))
    _, after = caught(lambda: with_model.attribute(far))
    assert after == before, (before, after)


# --- a saved continuous explainer whose encoder was edited: refused at load, the field named --------------------
def continuous_explainer() -> Any:
    data = quarters(300, 3, 7)
    model = lambda x: torch.tanh(x.double()).sum(1)  # noqa: E731
    return tx.FourierShap(model, data[:8], data=data, method="fit", show_progress=False)


def load_edited(config: Callable[[dict], None] | None = None, state: Callable[[dict], None] | None = None) -> Any:
    """Save a continuous explainer, edit its config (``config(cfg)``) or tensors (``state(tensors)``), load it."""
    return load_crafted(continuous_explainer(), config=config, state=state)


def thresholds(change: Callable[[torch.Tensor], None]) -> Callable[[dict], None]:
    def apply(tensors: dict) -> None:
        values = tensors["encoder.threshold_bits"].view(torch.float64).clone()
        change(values)
        tensors["encoder.threshold_bits"] = values.view(torch.int64)

    return apply


def swap(values: torch.Tensor) -> None:
    values[[0, 1]] = values[[1, 0]]


def repeat(values: torch.Tensor) -> None:
    values[1] = values[0]


def nudge(values: torch.Tensor) -> None:
    values[0] -= 1e-9  # still sorted, no row crosses it: only the checksum sees it


def flag_on(key: str) -> Callable[[dict], None]:
    def apply(tensors: dict) -> None:
        tensors[key] = torch.ones_like(tensors[key])

    return apply


SAVED_EDITS: dict[str, tuple[Callable[[], Any], str]] = {
    "two thresholds swapped (values off by 0.027)": (
        lambda: load_edited(state=thresholds(swap)),
        r"'encoder.threshold_bits' is not sorted by feature and threshold \(entries 0 and 1",
    ),
    "a duplicated threshold": (lambda: load_edited(state=thresholds(repeat)), r"threshold_bits' repeats a split"),
    "strict flipped": (
        lambda: load_edited(config=lambda c: c["encoder"].update(strict=True)),
        r"encoder\['strict'\] is true, but a continuous black-box fit compares x > threshold",
    ),
    "zero_is_missing set (values off by 0.43)": (
        lambda: load_edited(state=flag_on("encoder.zero_is_missing")),
        r"'encoder.zero_is_missing' is set, but a continuous fit routes no NaN",
    ),
    "finite: false (a NaN row was then explained)": (
        lambda: load_edited(config=lambda c: c["encoder"].update(finite=False)),
        r"encoder\['finite'\] is false, but a continuous black-box fit takes finite rows only",
    ),
    "input_dtype float64 -> float32": (
        lambda: load_edited(config=lambda c: c["encoder"].update(input_dtype="float32")),
        r"checksum does not match",
    ),
    "a threshold moved within its slot order": (lambda: load_edited(state=thresholds(nudge)), r"checksum does not"),
    "an amplitude changed": (
        lambda: load_edited(state=lambda t: t.update({"surrogate.amplitudes": t["surrogate.amplitudes"] * 1.01})),
        r"the saved fields differ from those the file was saved with",
    ),
    "the fit report's route changed to tabulate": (
        lambda: load_edited(config=lambda c: c["fit_report"].update(method="tabulate")),
        r"encoder\['finite'\] is true, but only a continuous black-box fit",
    ),
    "the domain dropped from the config": (
        lambda: load_edited(config=lambda c: c["encoder"].update(domain=False)),
        r"does not match its class's state",
    ),
}
for _what, (_load, _match) in SAVED_EDITS.items():
    case(FS, f"load: a continuous explainer with {_what}", ValueError, _match)(_load)


@result_case(FS, "a continuous explainer saved and loaded unedited: the same values, domain and report")
def _():
    import os
    import tempfile

    explainer = continuous_explainer()
    x = quarters(5, 3, 8)
    with tempfile.TemporaryDirectory() as folder:
        back = tx.FourierShap.load(explainer.save(os.path.join(folder, "fs.pt")))
    assert torch.equal(back.attribute(x), explainer.attribute(x)) and back.fit_report == explainer.fit_report
    assert torch.equal(back.encoder.domain, explainer.encoder.domain)

"""Sources of a spectrum and the router: every knob belongs to a source, the route is priced in seconds, the
constructor walks explainer → router → source → engine, and one result object serves every view."""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np
import pytest
import torch
from sklearn.tree import DecisionTreeRegressor
from torch import nn

import torchxplain as tx
from tests.fourier import brute_force
from torchxplain.fourier.sources import SOURCES, _route, black_box_problem, route
from torchxplain.fourier.sources._route import EXACT_PREMIUM, Candidate

BLACK_BOX = {
    "enumerate": tx.fourier.Enumerate,
    "tabulate": tx.fourier.Tabulate,
    "correct": tx.fourier.Correct,
    "fit": tx.fourier.Fit,
    "hashing": tx.fourier.CubeFit,
}


def _bits(rows: int, n: int, seed: int) -> torch.Tensor:
    return torch.as_tensor(np.random.default_rng(seed).integers(0, 2, (rows, n)), dtype=torch.float64)


def _model(x: torch.Tensor) -> torch.Tensor:
    return x[:, 0] * x[:, 1] - x[:, 2] + 0.5 * x[:, 3]


def _knobs() -> set[str]:
    return {knob for source in SOURCES for knob in source.knobs()}


def _entry(source: type, knob: str) -> Any:
    """Call the entry point of ``source`` with ``knob`` (a knob of another source)."""
    bits = _bits(8, 4, 0)
    value = 1  # refused before it is looked at
    if source is tx.fourier.Trees:
        tree = DecisionTreeRegressor(max_depth=2, random_state=0).fit(bits.numpy(), _model(bits).numpy())
        return tx.FourierShap.from_trees(tree, bits, **{knob: value})
    if source is tx.fourier.KnownSpectrum:
        spectrum = tx.FourierSpectrum(torch.eye(4, dtype=torch.bool), torch.ones(4, dtype=torch.float64))
        return tx.FourierShap.from_spectrum(spectrum, bits, **{knob: value})
    method = next(name for name, s in BLACK_BOX.items() if s is source)
    return tx.FourierShap(_model, bits, method=method, show_progress=False, **{knob: value})


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.__name__)
def test_a_knob_of_another_source_is_refused_naming_the_source_it_belongs_to(source):
    foreign = sorted(_knobs() - set(source.knobs()))
    assert foreign, f"{source.__name__} takes every knob"
    for knob in foreign:
        owners = [s for s in SOURCES if knob in s.knobs()]
        with pytest.raises(TypeError) as info:
            _entry(source, knob)
        message = str(info.value)
        assert f"{knob}= is a knob of" in message and source.title in message, message
        assert all(owner.title in message for owner in owners), (knob, message)


def test_the_issue_example_of_ignored_knobs_is_refused():
    bits = _bits(8, 4, 0)
    with pytest.raises(TypeError, match=r"k= is a knob of .*Tabulate.*Fit.*CubeFit.*n_bits= is a knob of .*CubeFit"):
        tx.FourierShap(_model, bits, method="enumerate", k=5, n_queries=10, max_degree=1, time_budget=3.0, n_bits=3)


def test_auto_is_narrowed_by_its_knobs_and_refuses_knobs_no_candidate_takes():
    bits = _bits(40, 4, 1)
    explainer = tx.FourierShap(_model, bits, k=8, show_progress=False)  # k: Tabulate or Fit, not Enumerate
    assert {c["method"] for c in explainer.fit_report.route} == {"tabulate", "fit"}
    with pytest.raises(TypeError, match=r"method='auto' chooses among.*n_bits= is a knob of .*CubeFit"):
        tx.FourierShap(_model, bits, n_bits=3)
    with pytest.raises(TypeError, match="pass its knobs inside it"):
        tx.FourierShap(_model, bits, method=tx.fourier.Enumerate(), batch_size=8)


def test_a_source_object_carries_its_knobs_and_checks_them_when_made():
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        tx.fourier.Enumerate(batch_size=0)
    with pytest.raises(ValueError, match="target_r2 must be a number <= 1"):
        tx.fourier.Fit(target_r2=2)
    with pytest.raises(ValueError, match="kind must be 'exact', 'hashing' or 'regression'"):
        tx.fourier.CubeFit(kind="fft")
    with pytest.raises(ValueError, match="contradicts"):
        tx.FourierShap(_model, _bits(8, 4, 0), method="exact", kind="hashing")
    bits = _bits(30, 4, 2)
    explainer = tx.FourierShap(_model, bits, method=tx.fourier.Tabulate(n_queries=64), show_progress=False)
    assert explainer.fit_report.method == "tabulate" and explainer.fit_report.reason.startswith("requested")


def _problem(model: Any, background: torch.Tensor, rows: torch.Tensor | None = None) -> Any:
    return black_box_problem(model, background, None, None, target=None, seed=0, device=None, rows_to_explain=rows)


def _mlp(p: int) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(p, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1)).double().eval()


def test_the_route_is_priced_in_seconds_not_queries():
    """Ten continuous features, 40 background rows, 50 known rows: enumeration needs ~2 M model rows, the
    correction (its rows priced by its pilot) a quarter of that; the route is the one with the lower price in
    seconds (an exact one within EXACT_PREMIUM times the correction's), whatever the rows say. A slow model (here 30 µs
    per row) makes those rows the price: the correction wins; a knob only the fit takes makes it the fit."""
    x = torch.randn(90, 10, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    fast = route(_problem(_mlp(10), x[:40], x[40:]), "auto", {})
    enumerate_, correct = (next(c for c in fast.candidates if c.method == m) for m in ("enumerate", "correct"))
    assert enumerate_.model_rows > 2 * correct.model_rows and "predicted" in fast.reason
    exact_wins = enumerate_.seconds <= EXACT_PREMIUM * correct.seconds
    assert isinstance(fast.source, tx.fourier.Enumerate if exact_wins else tx.fourier.Correct)
    assert "fit" not in {c.method for c in fast.candidates}  # a fit only where the knobs rule the correction out

    def slow(z: torch.Tensor) -> torch.Tensor:
        time.sleep(3e-5 * z.shape[0])
        return z.sum(1)

    priced = route(_problem(slow, x[:10], x[40:]), "auto", {})  # 10 background rows: a short pilot
    assert isinstance(priced.source, tx.fourier.Correct) and priced.seconds_per_row > 2e-5 and priced.slowdown > 0
    assert "cheaper than every exact route" in priced.reason
    fitted = route(_problem(slow, x[:10], x[40:]), "auto", {"n_queries": 4096})  # a knob of the fit only
    assert isinstance(fitted.source, tx.fourier.Fit)


@pytest.mark.parametrize(("ratio", "exact_wins"), [(0.95 * EXACT_PREMIUM, True), (1.05 * EXACT_PREMIUM, False)])
def test_an_exact_route_wins_within_the_premium_over_the_correction(monkeypatch, ratio: float, exact_wins: bool):
    """Planted prices: enumeration at ``ratio`` times the correction's predicted seconds wins up to EXACT_PREMIUM
    (the forecasts' error), and the correction beyond it; the reason says why, and both candidates are listed."""
    monkeypatch.setattr(_route, "probe", lambda problem: (1e-7, 1.0))
    monkeypatch.setattr(_route, "_enumerate", lambda *a: Candidate("enumerate", True, ratio, 1_000, "planted"))
    monkeypatch.setattr(_route, "_correct", lambda *a: Candidate("correct", False, 1.0, 100, "planted"))
    x = torch.randn(50, 10, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    chosen = route(_problem(_mlp(10), x[:40], x[40:]), "auto", {})
    assert isinstance(chosen.source, tx.fourier.Enumerate if exact_wins else tx.fourier.Correct)
    assert ("the cheapest exact route" if exact_wins else "cheaper than every exact route") in chosen.reason
    assert {c.method for c in chosen.candidates} == {"tabulate", "enumerate", "correct"}


def test_explain_after_fit_takes_the_exact_route_when_cheapest_and_says_why():
    x = torch.randn(70, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    net = _mlp(8)
    result = tx.explain_after_fit(net, x[:60], x[60:], n_background=12)
    assert result.explainer.fit_report.method == "enumerate"
    for method in ("enumerate", "correct"):
        assert f"{method}: " in result.reason and "s predicted" in result.reason
    background = result.explainer.background.numpy()
    truth = brute_force.model_shapley(
        lambda z: net(torch.as_tensor(z)).detach().numpy()[:, 0], x[60:].numpy(), background, range(8)
    )
    np.testing.assert_allclose(result.attributions.numpy(), truth, atol=1e-10, rtol=0)


def _traced(build: Any) -> list[tuple[str, str, str]]:
    """``(event, module, function)`` of every Python call and return inside ``torchxplain.fourier`` while
    ``build()`` runs."""
    events: list[tuple[str, str, str]] = []

    def tracer(frame: Any, event: str, arg: Any) -> None:
        module = frame.f_globals.get("__name__", "")
        if event in ("call", "return") and module.startswith("torchxplain.fourier"):
            events.append((event, module, frame.f_code.co_name))

    sys.setprofile(tracer)
    try:
        build()
    finally:
        sys.setprofile(None)
    return events


def test_the_constructor_walks_explainer_router_source_engine_and_finds_the_players_once():
    x = torch.randn(300, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    net = _mlp(6)
    events = _traced(lambda: tx.FourierShap(net, x[:20], data=x, groups="auto", show_progress=False))
    calls = [(module.split(".")[2], function) for event, module, function in events if event == "call"]
    layers = [layer for layer, _ in calls]
    assert layers[0] == "explainer"
    first_source = layers.index("sources")
    build = calls.index(next(c for c in calls if c == ("sources", "build")))
    built = next(i for i, (event, module, function) in enumerate(events) if event == "return" and function == "build")
    inside = [module.split(".")[2] for event, module, _ in events[: built + 1] if event == "call"][first_source:]
    assert "explainer" not in inside, "the walk returned to explainer/ before the source was built"
    assert "fit" in layers[build:], "the source calls an engine (fit/)"
    assert [function for _, function in calls].count("route") == 1
    assert sum(function in ("auto_players", "find_one_hot_blocks") for _, function in calls) == 1


def test_one_result_object_and_its_views_compute_nothing_again():
    bits = _bits(200, 6, 3)
    groups = torch.tensor([0, 0, 1, 2, 3, 3])

    calls = {"rows": 0}

    def model(z: torch.Tensor) -> torch.Tensor:
        calls["rows"] += z.shape[0]
        return z[:, 0] - z[:, 2] * z[:, 3] + z[:, 4] * z[:, 5]

    explainer = tx.FourierShap(model, bits[:10], data=bits, groups=groups, method="enumerate")
    x = bits[100:104]
    explanation = explainer.explain(x)
    after = calls["rows"]
    truth = brute_force.model_shapley(lambda z: model(torch.as_tensor(z)).numpy(), x.numpy(), bits[:10].numpy(), groups)
    calls["rows"] = after
    np.testing.assert_allclose(explanation.values.numpy(), truth, atol=1e-12, rtol=0)
    assert explanation.stderr is None and explanation.route == "enumerate"
    assert explainer.route is not None and explanation.route_reason == explainer.route.reason
    assert explanation.route_reason.startswith("requested: tx.fourier.Enumerate (method='enumerate')")
    np.testing.assert_allclose(
        explanation.values.sum(1).numpy(), (model(x) - model(bits[:10]).mean()).numpy(), atol=1e-12, rtol=0
    )
    calls["rows"] = after
    assert torch.equal(explainer.attribute(x), explanation.attribution())  # a view: the model is not asked again
    assert torch.equal(explainer.player_values(x).values, explanation.values)
    assert calls["rows"] == after
    assert explanation.player_names == ("player 0", "player 1", "player 2", "player 3")
    frame = explanation.to_frame()
    assert list(frame.columns) == [*explanation.player_names, "base_value"] and frame.shape == (4, 5)
    x[0, 0] = 1 - x[0, 0]  # the user's tensor changed in place: computed again, not a stale reuse
    assert not torch.equal(explainer.attribute(x)[0], explanation.attribution()[0])


def test_show_progress_false_silences_the_models_queries_at_value_time_too(monkeypatch, capsys):
    import importlib

    from torchxplain._core import settings

    monkeypatch.setattr(importlib.import_module("torchxplain._core.progress"), "DELAY", 0.0)
    x = torch.randn(12, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(4))

    def bars(show: bool) -> str:
        with settings.show_progress(True):
            explainer = tx.FourierShap(lambda z: z.sum(1), x[:6], method="enumerate", show_progress=show, batch_size=64)
            explainer.attribute(x[6:])
        return capsys.readouterr().err

    assert "querying the model" in bars(True)  # many batches: a bar, unless the constructor said no
    assert bars(False) == ""

"""Players as users think of them: one-hot blocks found in arrays and DataFrames (groups="auto"), declared
one-hot players checked, and the explainer that enumerates coalitions through the model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import torchxplain as tx
from tests.fourier import brute_force
from torchxplain.fourier.fit._one_hot import find_one_hot_blocks


def blocks_case(seed: int = 0, rows: int = 120):
    """Columns: a one-hot block of 3, a free bit, a one-hot block of 4, two free bits."""
    rng = np.random.default_rng(seed)
    a = np.eye(3)[rng.integers(0, 3, rows)]
    b = rng.integers(0, 2, (rows, 1))
    c = np.eye(4)[rng.integers(0, 4, rows)]
    d = rng.integers(0, 2, (rows, 2))
    return np.concatenate((a, b, c, d), axis=1).astype(float)


def test_one_hot_blocks_of_an_array_are_found_and_described():
    x = blocks_case()
    found = find_one_hot_blocks(torch.as_tensor(x))
    assert found.ids.tolist() == [0, 0, 0, 1, 2, 2, 2, 2, 3, 4]
    assert [(a, b) for a, b, _ in found.blocks] == [(0, 3), (4, 8)]
    assert "found 2 one-hot blocks" in found.description and "(columns 4-7, 4 levels)" in found.description
    assert "3 single columns: 5 players" in found.description


def test_a_block_needs_exactly_one_one_in_every_row():
    x = blocks_case()
    x[5, 4:8] = 0.0  # one row without its 1: columns 4-7 are no longer a block
    found = find_one_hot_blocks(torch.as_tensor(x))
    assert [(a, b) for a, b, _ in found.blocks] == [(0, 3)]
    assert found.n_players == 8


def test_dataframe_prefixes_name_the_blocks_drop_first_included():
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"site3": rng.choice(list("ACDE"), 200), "site4": rng.choice(list("KLM"), 200)})
    frame["flag"] = rng.integers(0, 2, 200)
    dummies = pd.get_dummies(frame, columns=["site3", "site4"], drop_first=True, dtype=float)
    found = find_one_hot_blocks(torch.as_tensor(dummies.to_numpy()), tuple(dummies.columns))
    names = {name: (a, b) for a, b, name in found.blocks}
    assert set(names) == {"site3", "site4"} and found.n_players == 3
    assert "'site3' (columns 1-3, 3 levels)" in found.description


def test_the_explainer_finds_the_blocks_and_explains_per_player():
    x = blocks_case(2, 300)
    weights = np.random.default_rng(3).normal(size=x.shape[1])

    def model(z: torch.Tensor) -> torch.Tensor:
        return torch.tanh(z.double() @ torch.as_tensor(weights)) + z[:, 0].double() * z[:, 5].double()

    explainer = tx.FourierShap(model, x[:12], data=x, groups="auto")
    report = explainer.fit_report
    assert report.players is not None and "found 2 one-hot blocks" in report.players
    assert report.method == "tabulate" and report.n_players == 5
    assert "groups='auto' found" in str(report)
    ids = explainer.groups.numpy()
    truth = brute_force.model_shapley(lambda z: model(torch.as_tensor(z)).numpy(), x[200:204], x[:12], ids)
    first = [int(np.nonzero(ids == g)[0][0]) for g in range(5)]
    np.testing.assert_allclose(explainer.attribute(torch.as_tensor(x[200:204])).numpy()[:, first], truth, atol=1e-10)


def test_groups_must_be_ids_or_auto():
    x = torch.as_tensor(blocks_case())
    with pytest.raises(ValueError, match="groups must be an integer id per feature, 'auto' or None"):
        tx.FourierShap(lambda z: z.sum(1), x[:5], groups="one-hot")


def test_declared_one_hot_players_that_are_not_one_hot_are_refused():
    x = blocks_case()
    x[7, 0:3] = [1.0, 1.0, 0.0]
    groups = torch.tensor([0, 0, 0, 1, 2, 2, 2, 2, 3, 4])
    with pytest.raises(ValueError, match=r"data row 7 has 2 ones in player 0 \(features \[0, 1, 2\]\).*groups='auto'"):
        tx.FourierShap(lambda z: z.sum(1), x[:5], data=x, groups=groups, one_hot=True)


def test_enumeration_is_exact_for_shapley_banzhaf_and_interactions():
    x = blocks_case(4, 40)
    weights = np.random.default_rng(5).normal(size=(x.shape[1], 3))

    def model(z: torch.Tensor) -> torch.Tensor:
        return torch.tanh(z.double() @ torch.as_tensor(weights)).prod(1)

    explainer = tx.FourierShap(model, x[:7], groups="auto", method="enumerate")
    assert explainer.fit_report.method == "enumerate" and "2^d model queries" in str(explainer.fit_report)
    ids = explainer.groups.numpy()
    first = [int(np.nonzero(ids == g)[0][0]) for g in range(int(ids.max()) + 1)]
    rows = torch.as_tensor(x[20:23])
    predict = lambda z: model(torch.as_tensor(z)).numpy()  # noqa: E731
    truth = brute_force.model_shapley(predict, x[20:23], x[:7], ids)
    np.testing.assert_allclose(explainer.attribute(rows).numpy()[:, first], truth, atol=1e-12)
    spectrum = tx.FourierShap(model, x[:7], data=x, groups="auto").spectrum  # the tabulated (exact) spectrum
    freq, amp = spectrum.frequencies.numpy(), spectrum.amplitudes.numpy()
    np.testing.assert_allclose(
        explainer.banzhaf(rows).numpy()[:, first], brute_force.banzhaf(freq, amp, x[20:23], x[:7], ids), atol=1e-10
    )
    np.testing.assert_allclose(
        explainer.interactions(rows).numpy(), brute_force.interactions(freq, amp, x[20:23], x[:7], ids), atol=1e-10
    )
    torch.testing.assert_close(explainer.expected_value(), model(torch.as_tensor(x[:7])).mean())
    with pytest.raises(ValueError, match="holds no spectrum"):
        _ = explainer.spectrum
    with pytest.raises(ValueError, match="holds no spectrum to save"):
        explainer.save("unused.pt")

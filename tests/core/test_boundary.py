"""The one public boundary: the same player-id contract and the same rejection on every path."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from sklearn.tree import DecisionTreeRegressor

import torchxplain as tx


def _case():
    gen = torch.Generator().manual_seed(0)
    freq = torch.rand(10, 4, generator=gen) < 0.5
    spec = tx.FourierSpectrum(freq, torch.randn(10, generator=gen, dtype=torch.float64)).coalesce()
    background = (torch.rand(6, 4, generator=gen) < 0.5).double()
    x = (torch.rand(5, 4, generator=gen) < 0.5).double()
    return spec, background, x


def _model(z: torch.Tensor) -> torch.Tensor:
    return z[:, 0] - 2.0 * z[:, 1] * z[:, 2] + z[:, 3]


def _paths():
    """Every public entry point that takes players, as ``name -> call(ids)``; the argument each one names."""
    spec, background, x = _case()
    explainer = tx.FourierShap.from_spectrum(spec, background)
    forest = DecisionTreeRegressor(max_depth=3, random_state=0).fit(background.numpy(), _model(background).numpy())
    return {
        "shapley_values": (lambda ids: tx.fourier.shapley_values(spec, x, background, groups=ids), "groups"),
        "banzhaf_values": (lambda ids: tx.fourier.banzhaf_values(spec, x, background, groups=ids), "groups"),
        "shapley_interactions": (
            lambda ids: tx.fourier.shapley_interactions(spec, x, background, groups=ids),
            "groups",
        ),
        "interaction_values": (lambda ids: tx.fourier.interaction_values(spec, x, background, groups=ids), "groups"),
        "from_spectrum": (lambda ids: tx.FourierShap.from_spectrum(spec, background, groups=ids), "groups"),
        "black box": (lambda ids: tx.FourierShap(_model, background, method="exact", groups=ids), "groups"),
        "fit_sparse_fourier": (
            lambda ids: tx.fit_sparse_fourier(_model, 4, method="exact", background=background, groups=ids),
            "groups",
        ),
        "attribute(feature_mask=)": (lambda ids: explainer.attribute(x, feature_mask=ids), "feature_mask"),
        "from_trees(feature_groups=)": (
            lambda ids: tx.FourierShap.from_trees(forest, background, feature_groups=ids),
            "feature_groups",
        ),
    }


BAD = {
    "float ids": (torch.tensor([0.0, 0.0, 1.0, 1.0]), TypeError, "must hold integer player ids, got dtype torch.float"),
    "bool ids": (
        torch.tensor([True, False, True, False]),
        TypeError,
        "must hold integer player ids, got dtype torch.bo",
    ),
    "negative ids": (torch.tensor([0, 0, -1, 1]), ValueError, "must hold non-negative player ids, found -1"),
    "wrong length": (torch.tensor([0, 1, 2]), ValueError, r"player id per input feature: expected shape \(4,\)"),
    "strings": (np.array(["a", "a", "b", "b"]), TypeError, "must hold numbers"),
}


@pytest.mark.parametrize("bad", list(BAD), ids=list(BAD))
def test_the_same_bad_players_get_the_same_error_on_every_path(bad):
    ids, error, pattern = BAD[bad]
    messages = {}
    for path, (call, argument) in _paths().items():
        if bad == "wrong length" and argument == "feature_mask":
            continue  # Captum's masks broadcast to the input: their own message, tested below
        with pytest.raises(error) as info:
            call(ids)
        message = str(info.value)
        assert re.search(pattern, message), f"{path}: {message!r}"
        messages[path] = message.replace(argument, "<ids>")
    assert len(set(messages.values())) == 1, messages  # one check, one wording, only the argument's name differs


def test_players_are_the_distinct_ids_in_increasing_order_on_every_path():
    """``[5, 5, 9, 9]`` is the same two players as ``[0, 0, 1, 1]`` (gaps allowed, ordered by id)."""
    spec, background, x = _case()
    dense, gapped = torch.tensor([0, 0, 1, 1]), torch.tensor([5, 5, 9, 9])
    for f in (tx.fourier.shapley_values, tx.fourier.banzhaf_values, tx.fourier.shapley_interactions):
        torch.testing.assert_close(f(spec, x, background, groups=gapped), f(spec, x, background, groups=dense))
    explainer = tx.FourierShap.from_spectrum(spec, background)
    torch.testing.assert_close(explainer.attribute(x, feature_mask=gapped), explainer.attribute(x, feature_mask=dense))
    reversed_ids = torch.tensor([9, 9, 5, 5])  # the player of features 2-3 now has the smaller id: it comes first
    torch.testing.assert_close(
        tx.fourier.shapley_values(spec, x, background, groups=reversed_ids),
        tx.fourier.shapley_values(spec, x, background, groups=dense).flip(1),
    )


def test_a_feature_mask_that_does_not_broadcast_says_so():
    spec, background, x = _case()
    explainer = tx.FourierShap.from_spectrum(spec, background)
    with pytest.raises(ValueError, match=r"feature_mask\[0\] has shape \(3,\), which does not broadcast to the input"):
        explainer.attribute(x, feature_mask=torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="feature_mask has 2 masks for 1 inputs"):
        explainer.attribute(x, feature_mask=(torch.zeros(1, 4, dtype=torch.long),) * 2)

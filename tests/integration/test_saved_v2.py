"""Files saved in persistence format 2 (commit 679e752) still load and give the same numbers.

The fixtures were written by ``tests/fixtures/saved_v2/generate.py`` run on that commit; each ``*.expected.pt``
holds the inputs and the values that code computed, so this checks the numbers, not only that loading works.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import torchxplain as tx
from torchxplain import idx

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "saved_v2"


def _expected(name: str) -> dict[str, torch.Tensor]:
    return torch.load(FIXTURES / f"{name}.expected.pt", weights_only=True)


@pytest.mark.parametrize(
    "name", ["fourier_spectrum", "fourier_black_box", "trees_binary", "trees_thresholds_multiclass"]
)
def test_fourier_files_of_format_2_load_with_the_same_values(name):
    explainer = tx.FourierShap.load(FIXTURES / f"{name}.pt")
    expected = _expected(name)
    torch.testing.assert_close(explainer.attribute(expected["x"]), expected["values"], rtol=0, atol=1e-12)


def test_goals_gp_file_of_format_2_loads_with_the_same_scores():
    goals = tx.Goals.load(FIXTURES / "goals_gp.pt")
    expected = _expected("goals_gp")
    torch.testing.assert_close(goals.attribute(expected["x"]), expected["values"], rtol=0, atol=1e-12)


def test_goals_bnn_file_of_format_2_loads_with_the_same_scores():
    from torchxplain.goals import LastLayerBNN

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    bnn = LastLayerBNN.from_sequential(net)
    bnn.features.load_state_dict(torch.load(FIXTURES / "goals_bnn.features.pt", weights_only=True))
    goals = tx.Goals.load(FIXTURES / "goals_bnn.pt", forward_func=bnn)
    expected = _expected("goals_bnn")
    torch.testing.assert_close(goals.attribute(expected["x"]), expected["values"], rtol=0, atol=1e-6)


def test_idx_classifier_file_of_format_2_explains_like_the_paper_example():
    loaded = idx.BayesianClassifier.load(FIXTURES / "idx_play_outside.json")
    reference = idx.datasets.play_outside()  # built from the paper's Table 1 CPTs, not from the file
    rows = idx.datasets.play_outside_data()[["w", "t", "p"]]
    for kit in ("md", "sd", "cf"):
        got = [e.relations for e in idx.explain(loaded, rows, kit=kit)]
        want = [e.relations for e in idx.explain(reference, rows, kit=kit)]
        assert got == want

"""Files saved by round 3's main (commit bbdfccb) still load and give the same numbers.

The fixtures were written by ``tests/fixtures/saved_v3/generate.py`` run on that commit (tabulated, hybrid and
continuous black boxes, grouped trees); each ``*.expected.pt`` holds the inputs and the values that code computed,
so this checks the numbers, not only that loading works.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import torchxplain as tx

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "saved_v3"


@pytest.mark.parametrize("name", ["fourier_tabulated", "fourier_hybrid", "fourier_continuous", "trees_grouped"])
def test_fourier_files_of_round_3_load_with_the_same_values(name):
    explainer = tx.FourierShap.load(FIXTURES / f"{name}.pt")
    expected = torch.load(FIXTURES / f"{name}.expected.pt", weights_only=True)
    torch.testing.assert_close(explainer.attribute(expected["x"]), expected["values"], rtol=0, atol=1e-12)
    assert explainer.fit_report is None or explainer.fit_report.route == ()  # saved before the router's records


@pytest.mark.parametrize("name", ["fourier_tabulated", "fourier_hybrid", "fourier_continuous"])
def test_black_boxes_of_round_3_load_without_a_domain_or_a_checksum(name):
    """Saved before the fit's domain and the file checksum: loaded with the field checks alone, no range warning."""
    explainer = tx.FourierShap.load(FIXTURES / f"{name}.pt")
    assert explainer.encoder.domain is None

"""The dtype policy on the public value functions and ``evaluate``: half-precision spectra compute in
float32, ``dtype_policy("float32")`` is honoured on float64 spectra; each against a float64 reference."""

from __future__ import annotations

import pytest
import torch

import torchxplain as tx
from tests.fourier.cases import random_case
from torchxplain.fourier import interaction_values, precompute_background, shapley_values


@pytest.mark.parametrize("half", [torch.float16, torch.bfloat16])
def test_half_precision_spectra_compute_in_float32(half):
    spec, _, _, xq, bg = random_case(0, 10, 60, 20, 8)
    low = tx.FourierSpectrum(spec.frequencies, spec.amplitudes.to(half))
    # the reference: the same (rounded) amplitudes, computed in float64
    exact = tx.FourierSpectrum(spec.frequencies, low.amplitudes.double())
    for compute, reference in (
        (lambda s: shapley_values(s, xq, bg), lambda: shapley_values(exact, xq, bg)),
        (
            lambda s: interaction_values(s, xq, bg, "STII", 2)[2],
            lambda: interaction_values(exact, xq, bg, "STII", 2)[2],
        ),
        (lambda s: s.evaluate(xq), lambda: exact.evaluate(xq)),
    ):
        got, want = compute(low), reference()
        assert got.dtype == torch.float32
        scale = float(want.abs().max())
        # float32 rounding of the sums, not half precision's (~1e-3 relative)
        assert float((got.double() - want).abs().max()) <= 1e-5 * scale


def test_dtype_policy_float32_is_honoured_by_the_value_functions():
    spec, _, _, xq, bg = random_case(1, 8, 40, 10, 5)
    want_phi, want_iv = shapley_values(spec, xq, bg), interaction_values(spec, xq, bg, "k-SII", 2)
    assert want_phi.dtype == torch.float64
    with tx.settings.dtype_policy("float32"):
        phi = shapley_values(spec, xq, bg)
        iv = interaction_values(spec, xq, bg, "k-SII", 2)
        term = precompute_background(spec, bg)
        via_term = shapley_values(spec, xq, term)
    assert phi.dtype == iv[2].dtype == via_term.dtype == torch.float32
    torch.testing.assert_close(phi.double(), want_phi, rtol=0, atol=1e-5 * float(want_phi.abs().max()))
    torch.testing.assert_close(iv[2].double(), want_iv[2], rtol=0, atol=1e-5 * float(want_iv[2].abs().max()))
    torch.testing.assert_close(via_term, phi)
    # a term made under float32, used under the default policy: recast, float64 values again
    torch.testing.assert_close(shapley_values(spec, xq, term), want_phi)


def test_a_background_term_of_another_spectrum_is_refused():
    spec, _, _, xq, bg = random_case(2, 6, 20, 5, 3)
    other = tx.FourierSpectrum(spec.frequencies, 3.0 * spec.amplitudes)
    term = precompute_background(spec, bg)
    with pytest.raises(ValueError, match="precomputed background term was made for another spectrum"):
        shapley_values(other, xq, term)
    same = tx.FourierSpectrum(spec.frequencies.clone(), spec.amplitudes.clone())  # equal content: the same function
    torch.testing.assert_close(shapley_values(same, xq, term), shapley_values(spec, xq, bg))

"""SparseFourierSurrogate: equals the spectrum on the cube, exact gradients, state_dict round trip."""

from __future__ import annotations

import numpy as np
import torch

from tests.fourier import brute_force
from tests.fourier.cases import random_case
from torchxplain import FourierSpectrum, SparseFourierSurrogate
from torchxplain.testing import tiny_memory_budget


def test_forward_equals_spectrum_on_cube_and_multilinear_extension_off_it():
    spec, freq, amp, xq, bg = random_case(0, 9, 50, 20, 30)
    sur = SparseFourierSurrogate(spec)
    torch.testing.assert_close(sur(xq), spec.evaluate(xq), atol=1e-12, rtol=0)
    cube = torch.tensor(np.array(np.meshgrid(*[[0, 1]] * 9)).reshape(9, -1).T, dtype=torch.float64)
    torch.testing.assert_close(sur(cube), torch.tensor(brute_force.evaluate(freq, amp, cube.numpy())))
    z = torch.rand(7, 9, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(sur(z), torch.tensor(brute_force.evaluate(freq, amp, z.numpy())))


def test_chunking_does_not_change_the_output():
    spec, *_ = random_case(1, 12, 80, 5, 5)
    x = torch.rand(33, 12, dtype=torch.float64)
    with tiny_memory_budget(256):
        tiny = SparseFourierSurrogate(spec)(x)
    torch.testing.assert_close(tiny, SparseFourierSurrogate(spec)(x))


def test_gradients_match_finite_differences():
    spec, *_ = random_case(2, 6, 30, 5, 5)
    sur = SparseFourierSurrogate(spec)
    x = torch.rand(4, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    x[0, 2] = 0.5  # a zero factor: the product rule must still give the right gradient
    assert torch.autograd.gradcheck(lambda z: sur(z), (x.clone().requires_grad_(True),))
    amp = sur.amplitudes
    (grad,) = torch.autograd.grad(sur(x).sum(), amp)
    eps = 1e-6
    for f in range(3):
        bumped = amp.detach().clone()
        bumped[f] += eps
        fd = (SparseFourierSurrogate(FourierSpectrum(spec.frequencies, bumped))(x).sum() - sur(x).sum()) / eps
        assert abs(float(fd) - float(grad[f])) < 1e-5


def test_state_dict_round_trip_including_other_sizes():
    spec, *_ = random_case(4, 8, 20, 5, 5)
    other, *_ = random_case(5, 8, 35, 5, 5)
    sur = SparseFourierSurrogate(spec)
    loaded = SparseFourierSurrogate(other)
    loaded.load_state_dict(sur.state_dict())
    x = torch.randint(0, 2, (10, 8)).double()
    torch.testing.assert_close(loaded(x), sur(x))
    assert set(sur.state_dict()) == {"amplitudes", "frequencies"}


def test_spectrum_dict_round_trip_and_prune():
    spec, *_ = random_case(6, 10, 60, 5, 5)
    again = FourierSpectrum.from_dict(spec.to_dict())
    assert torch.equal(again.frequencies, spec.frequencies) and torch.equal(again.amplitudes, spec.amplitudes)
    pruned = spec.prune(energy=0.9)
    kept = (pruned.amplitudes**2).sum() / spec.energy
    assert kept >= 0.9
    # the smallest such set: dropping its weakest frequency falls below the target
    assert (pruned.amplitudes[:-1] ** 2).sum() / spec.energy < 0.9
    assert len(spec.prune(k=7)) == 7
    assert bool((spec.prune(threshold=1.0).amplitudes.abs() >= 1.0).all())

"""FourierShap explainer: the testing mixin, feature_mask groups, Banzhaf/interactions, errors."""

from __future__ import annotations

import pytest
import torch

from tests.fourier import brute_force
from tests.fourier.test_values import random_case
from torchxplain.fourier import FourierShap, shapley_values
from torchxplain.testing import ExplainerTestCase


class TestFourierShapContract(ExplainerTestCase):
    atol = 1e-10

    def make_explainer(self, dtype):
        spec, *_, bg = random_case(0, 8, 40, 6, 1)
        # relaxed: NoiseTunnel and sensitivity_max feed continuous noise
        return FourierShap.from_spectrum(spec.to(dtype), bg.to(dtype), relaxed=True)

    def make_inputs(self, dtype):
        return torch.randint(0, 2, (5, 8), generator=torch.Generator().manual_seed(1)).to(dtype)


class TestBlackBoxFourierShapContract(ExplainerTestCase):
    """The user's MLP is the forward_func: it must never enter the explainer's state or be moved by it."""

    atol = 1e-10

    def make_explainer(self, dtype):
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1), torch.nn.Flatten(0)
        ).to(dtype)
        background = torch.randint(0, 2, (6, 8), generator=torch.Generator().manual_seed(2)).to(dtype)
        return FourierShap(model, background, k=256, method="exact", relaxed=True)

    def make_inputs(self, dtype):
        return torch.randint(0, 2, (5, 8), generator=torch.Generator().manual_seed(1)).to(dtype)


def test_attribute_equals_brute_force_and_feature_mask_broadcasts_group_values():
    spec, freq, amp, xq, bg = random_case(3, 7, 30, 5, 4)
    ex = FourierShap.from_spectrum(spec, bg)
    torch.testing.assert_close(ex.attribute(xq), torch.tensor(brute_force.shapley(freq, amp, xq.numpy(), bg.numpy())))
    mask = torch.tensor([[5, 5, 9, 9, 9, 2, 5]])  # Captum-style ids, not contiguous
    groups = torch.tensor([1, 1, 2, 2, 2, 0, 1])
    per_group = torch.tensor(brute_force.shapley(freq, amp, xq.numpy(), bg.numpy(), groups.numpy()))
    got = ex.attribute(xq, feature_mask=mask)
    torch.testing.assert_close(got, per_group[:, groups])
    beta = torch.tensor(brute_force.banzhaf(freq, amp, xq.numpy(), bg.numpy(), groups.numpy()))
    torch.testing.assert_close(ex.banzhaf(xq, feature_mask=mask), beta[:, groups])
    sii = torch.tensor(brute_force.interactions(freq, amp, xq.numpy(), bg.numpy(), groups.numpy()))
    torch.testing.assert_close(ex.interactions(xq, feature_mask=mask), sii)


def test_tuple_inputs_split_features_and_default_groups():
    spec, freq, amp, xq, bg = random_case(4, 6, 20, 4, 3)
    ex = FourierShap.from_spectrum(spec, bg, groups=torch.tensor([0, 0, 1, 1, 2, 2]))
    a, b = ex.attribute((xq[:, :2], xq[:, 2:].reshape(3, 2, 2)))
    assert a.shape == (3, 2) and b.shape == (3, 2, 2)
    expected = torch.tensor(brute_force.shapley(freq, amp, xq.numpy(), bg.numpy(), [0, 0, 1, 1, 2, 2]))
    torch.testing.assert_close(a[:, 0], expected[:, 0])
    torch.testing.assert_close(b.reshape(3, 4)[:, 3], expected[:, 2])


def test_baselines_replace_the_background():
    spec, _, _, xq, bg = random_case(5, 6, 20, 6, 3)
    ex = FourierShap.from_spectrum(spec, bg)
    torch.testing.assert_close(ex.attribute(xq, baselines=bg[:2]), shapley_values(spec, xq, bg[:2]))


def test_explainer_moves_and_round_trips_state_dict():
    spec, _, _, xq, bg = random_case(6, 6, 20, 4, 3)
    ex = FourierShap.from_spectrum(spec.to(torch.float32), bg.float())
    ex64 = ex.to(torch.float64)
    assert ex64.background.dtype == torch.float64
    other, *_ = random_case(7, 6, 33, 4, 3)
    fresh = FourierShap.from_spectrum(other, bg)
    fresh.load_state_dict(ex.state_dict())
    torch.testing.assert_close(fresh.attribute(xq), ex.attribute(xq))


def test_errors_are_clear():
    spec, _, _, xq, bg = random_case(8, 6, 20, 4, 3)
    ex = FourierShap.from_spectrum(spec, bg)
    with pytest.raises(ValueError, match="relaxed=True"):
        ex.attribute(xq + 0.1)
    with pytest.raises(ValueError, match="features"):
        ex.attribute(xq[:, :5])
    with pytest.raises(ValueError, match="same for every row"):
        ex.attribute(xq, feature_mask=torch.arange(18).reshape(3, 6))
    with pytest.raises(ValueError, match="target"):
        ex.attribute(xq, target=2)
    with pytest.raises(ValueError, match="background"):
        FourierShap.from_spectrum(spec, bg[:, :3])


def test_values_carry_no_graph_unless_differentiable():
    spec, freq, amp, xq, bg = random_case(9, 6, 20, 4, 3)
    plain = FourierShap.from_spectrum(spec, bg)
    assert not plain.attribute(xq).requires_grad
    diff = FourierShap.from_spectrum(spec, bg, differentiable=True)
    phi = diff.attribute(xq)
    (grad,) = torch.autograd.grad(phi[0, 0], diff.surrogate.amplitudes)
    # the values are linear in the amplitudes: the gradient is the value of each single-frequency spectrum
    one = torch.zeros_like(spec.amplitudes)
    one[0] = 1.0
    single = shapley_values(type(spec)(spec.frequencies, one), xq, bg)[0, 0]
    torch.testing.assert_close(grad[0], single)

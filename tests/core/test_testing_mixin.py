"""The shipped ExplainerTestCase catches broken explainers (it is not a check that cannot fail)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torchxplain._core import ExplainerBase
from torchxplain.testing import (
    ExplainerTestCase,
    check_batch_invariance,
    check_captum_contract,
    check_shape_and_structure,
    check_state_dict_is_own,
    check_user_model_untouched,
)


class GradientTimesInput(ExplainerBase):
    """A correct toy explainer: attribution = x * d model / dx."""

    def _attribute(self, inputs, *, baselines, target, additional_forward_args, feature_mask, show_progress, **kwargs):
        out = []
        for x in inputs:
            x = x.detach().requires_grad_(True)
            (grad,) = torch.autograd.grad(self.forward_func(x).sum(), x)
            out.append(grad * x.detach())
        return tuple(out)


class WrongShape(GradientTimesInput):
    def _attribute(self, inputs, **kwargs):
        return tuple(a.sum(1) for a in super()._attribute(inputs, **kwargs))


class BatchDependent(GradientTimesInput):
    def _attribute(self, inputs, **kwargs):
        return tuple(a - a.mean(0, keepdim=True) for a in super()._attribute(inputs, **kwargs))


class RegistersModel(GradientTimesInput):
    def __init__(self, model):
        super().__init__(model)
        self.model = model  # registers the user's model: its weights leak into state_dict and .to()


class NotDecorated:
    forward_func = None

    def attribute(self, inputs):
        return inputs


def model(dtype=torch.float32):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1), nn.Flatten(0)).to(dtype)


class TestGradientTimesInputPassesTheMixin(ExplainerTestCase):
    def make_explainer(self, dtype):
        return GradientTimesInput(model(dtype))

    def make_inputs(self, dtype):
        return torch.randn(5, 4, dtype=dtype, generator=torch.Generator().manual_seed(0))


def test_mixin_catches_a_wrong_output_shape():
    with pytest.raises(AssertionError, match="shape"):
        check_shape_and_structure(WrongShape(model()), torch.randn(5, 4))


def test_mixin_catches_batch_dependence():
    x = torch.randn(5, 4, dtype=torch.float64)
    with pytest.raises(AssertionError, match="row-by-row"):
        check_batch_invariance(BatchDependent(model(torch.float64)), x, atol=1e-8)


def test_mixin_catches_a_registered_user_model():
    with pytest.raises(AssertionError, match="user's model"):
        check_state_dict_is_own(RegistersModel(model()))
    with pytest.raises(AssertionError, match="user's"):
        check_user_model_untouched(RegistersModel(model()))


def test_mixin_catches_a_non_captum_explainer():
    with pytest.raises(AssertionError, match="captum Attribution"):
        check_captum_contract(NotDecorated())

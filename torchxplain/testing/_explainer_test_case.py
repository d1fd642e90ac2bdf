"""A reusable pytest mixin that checks an explainer against the Captum contract and torchxplain's invariants.

Usage::

    class TestMyExplainer(ExplainerTestCase):
        def make_explainer(self, dtype):
            return MyExplainer(model.to(dtype), ...)

        def make_inputs(self, dtype):
            return torch.rand(6, 4, dtype=dtype)

Each ``check_*`` function is also usable on its own and raises ``AssertionError`` with a message
saying which contract was broken.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from captum.attr import Attribution, NoiseTunnel
from captum.metrics import infidelity, sensitivity_max
from torch import Tensor, nn

from torchxplain._core import ExplainerBase


def _require_explainer(explainer: Any, check: str) -> None:
    assert isinstance(explainer, Attribution), (
        f"{check}: {type(explainer).__name__} is not an explainer (a captum Attribution with .attribute)"
    )


def check_captum_contract(explainer: Any) -> None:
    """The explainer is a Captum ``Attribution`` whose ``attribute`` NoiseTunnel can unwrap."""
    _require_explainer(explainer, "check_captum_contract")
    assert hasattr(explainer, "forward_func"), "explainer has no forward_func (NoiseTunnel reads it)"
    assert hasattr(explainer.attribute, "__wrapped__"), (
        "attribute is not decorated with captum.log.log_usage() (NoiseTunnel calls attribute.__wrapped__)"
    )


def check_shape_and_structure(explainer: Any, inputs: Tensor, **kwargs: Any) -> Tensor:
    """A tensor gives a tensor of the input's shape, dtype and device; a tuple gives a tuple of those."""
    _require_explainer(explainer, "check_shape_and_structure")
    attr = explainer.attribute(inputs, **kwargs)
    assert isinstance(attr, Tensor), f"tensor input gave {type(attr).__name__}, expected a Tensor"
    assert attr.shape == inputs.shape, f"attribution shape {tuple(attr.shape)} != input shape {tuple(inputs.shape)}"
    assert attr.dtype == inputs.dtype, f"attribution dtype {attr.dtype} != input dtype {inputs.dtype}"
    assert attr.device == inputs.device, f"attribution device {attr.device} != input device {inputs.device}"
    assert bool(torch.isfinite(attr).all()), "attributions contain NaN or inf"
    attr_t = explainer.attribute((inputs,), **kwargs)
    assert isinstance(attr_t, tuple) and len(attr_t) == 1, "tuple input must give a 1-tuple of attributions"
    torch.testing.assert_close(attr_t[0], attr, msg="tuple input gave other values than tensor input")
    return attr


def check_batch_invariance(explainer: Any, inputs: Tensor, atol: float, **kwargs: Any) -> None:
    """Explaining a batch equals explaining its rows one by one."""
    _require_explainer(explainer, "check_batch_invariance")
    batch = explainer.attribute(inputs, **kwargs)
    rows = torch.cat([explainer.attribute(inputs[i : i + 1], **kwargs) for i in range(inputs.shape[0])])
    torch.testing.assert_close(batch, rows, atol=atol, rtol=0, msg="batch attribution != row-by-row attribution")


def check_noise_tunnel(explainer: Any, inputs: Tensor, **kwargs: Any) -> None:
    """``NoiseTunnel(explainer)`` runs (under its ``no_grad``) and returns input-shaped attributions."""
    _require_explainer(explainer, "check_noise_tunnel")
    nt = NoiseTunnel(explainer)
    attr = nt.attribute(inputs, nt_samples=2, stdevs=0.01, **kwargs)
    assert attr.shape == inputs.shape, f"NoiseTunnel attribution shape {tuple(attr.shape)} != {tuple(inputs.shape)}"
    assert bool(torch.isfinite(attr).all()), "NoiseTunnel attributions contain NaN or inf"


def check_captum_metrics(explainer: Any, inputs: Tensor, forward_func: Any, **kwargs: Any) -> None:
    """``captum.metrics.infidelity`` and ``sensitivity_max`` accept the attributions."""
    _require_explainer(explainer, "check_captum_metrics")
    attr = explainer.attribute(inputs, **kwargs)

    def perturb(x: Tensor) -> tuple[Tensor, Tensor]:
        noise = 0.01 * torch.randn_like(x)
        return noise, x - noise

    score = infidelity(forward_func, perturb, inputs, attr, **kwargs)
    assert score.shape == (inputs.shape[0],) and bool(torch.isfinite(score).all()), "infidelity failed"
    sens = sensitivity_max(explainer.attribute, inputs, perturb_radius=0.01, n_perturb_samples=2, **kwargs)
    assert sens.shape == (inputs.shape[0],) and bool(torch.isfinite(sens).all()), "sensitivity_max failed"


def _user_models(explainer: Any) -> list[nn.Module]:
    """The user's modules an explainer holds: ``forward_func`` (unless it is the explainer's own) and ``model``."""
    found = []
    if not getattr(explainer, "owns_forward_func", False):
        found.append(explainer.forward_func)
    found.append(vars(explainer).get("model"))
    return [m for m in found if isinstance(m, nn.Module)]


def check_user_model_untouched(explainer: Any) -> None:
    """``.to(float64)``, ``.train()`` and ``state_dict`` leave the user's model alone."""
    _require_explainer(explainer, "check_user_model_untouched")
    for model in _user_models(explainer):
        _check_untouched(explainer, model)


def _check_untouched(explainer: Any, model: nn.Module) -> None:
    before = {k: (v.dtype, v.clone()) for k, v in model.state_dict().items()}
    mode = model.training
    moved = copy.copy(explainer)
    moved.to(torch.float64).train()
    after = model.state_dict()
    for key, (dtype, value) in before.items():
        assert after[key].dtype == dtype, f"explainer.to() changed the user's model parameter {key}"
        torch.testing.assert_close(after[key], value, msg=f"explainer changed the user's parameter {key}")
    assert model.training == mode, "explainer.train() changed the user's model mode"


def check_state_dict_is_own(explainer: Any) -> None:
    """The explainer's ``state_dict`` holds none of the user's model weights."""
    _require_explainer(explainer, "check_state_dict_is_own")
    if not isinstance(explainer, nn.Module):
        return
    state = explainer.state_dict(keep_vars=True)
    for model in _user_models(explainer):
        user = {id(t) for t in model.state_dict(keep_vars=True).values()}
        leaked = [k for k, v in state.items() if id(v) in user]
        assert not leaked, f"explainer state_dict holds the user's model weights: {leaked}"
    assert all(not k.startswith("forward_func.") for k in state), "forward_func was registered as a submodule"


class ExplainerTestCase:
    """Mixin for pytest classes: subclass it and implement ``make_explainer`` and ``make_inputs``.

    Class attributes tune it: ``atol`` (batch invariance tolerance in float64), ``attribute_kwargs``
    (extra arguments of every ``attribute`` call), ``noise_tunnel`` and ``captum_metrics`` (set False
    only for explainers whose inputs cannot take continuous noise, with the reason in a comment).

    Example:
        >>> import torch
        >>> import torchxplain as tx
        >>> from torchxplain.testing import check_batch_invariance, check_captum_contract
        >>> spec = tx.FourierSpectrum(torch.tensor([[0, 0], [1, 1]], dtype=torch.bool), torch.tensor([1.0, 0.5]))
        >>> explainer = tx.FourierShap.from_spectrum(spec, torch.zeros(1, 2))
        >>> check_captum_contract(explainer)  # each check raises AssertionError naming the broken contract
        >>> check_batch_invariance(explainer, torch.tensor([[1.0, 0.0], [1.0, 1.0]]), atol=1e-6)
    """

    atol: float = 1e-8
    attribute_kwargs: dict[str, Any] = {}
    noise_tunnel: bool = True
    captum_metrics: bool = True

    def make_explainer(self, dtype: torch.dtype) -> ExplainerBase:
        """The explainer under test, in ``dtype`` (subclasses implement it)."""
        raise NotImplementedError(f"{type(self).__name__} must implement make_explainer(dtype)")

    def make_inputs(self, dtype: torch.dtype) -> Tensor:
        """``(N, ...)`` inputs to explain, in ``dtype`` (subclasses implement it)."""
        raise NotImplementedError(f"{type(self).__name__} must implement make_inputs(dtype)")

    def test_captum_contract(self) -> None:
        check_captum_contract(self.make_explainer(torch.float32))

    def test_shape_and_structure_float32(self) -> None:
        check_shape_and_structure(
            self.make_explainer(torch.float32), self.make_inputs(torch.float32), **self.attribute_kwargs
        )

    def test_shape_and_structure_float64(self) -> None:
        check_shape_and_structure(
            self.make_explainer(torch.float64), self.make_inputs(torch.float64), **self.attribute_kwargs
        )

    def test_float32_close_to_float64(self) -> None:
        x64 = self.make_inputs(torch.float64)
        a32 = self.make_explainer(torch.float32).attribute(x64.float(), **self.attribute_kwargs).detach()
        a64 = self.make_explainer(torch.float64).attribute(x64, **self.attribute_kwargs).detach()
        scale = float(a64.abs().max().clamp_min(1e-12))
        err = float((a32.double() - a64).abs().max())
        assert err <= 1e-3 * scale, f"float32 differs from float64 by {err:.3g} (scale {scale:.3g})"

    def test_batch_invariance(self) -> None:
        check_batch_invariance(
            self.make_explainer(torch.float64), self.make_inputs(torch.float64), self.atol, **self.attribute_kwargs
        )

    def test_noise_tunnel(self) -> None:
        _skip_unless(self.noise_tunnel, f"{type(self).__name__}.noise_tunnel is False")
        check_noise_tunnel(self.make_explainer(torch.float64), self.make_inputs(torch.float64), **self.attribute_kwargs)

    def test_captum_metrics(self) -> None:
        _skip_unless(self.captum_metrics, f"{type(self).__name__}.captum_metrics is False")
        explainer = self.make_explainer(torch.float64)
        check_captum_metrics(
            explainer, self.make_inputs(torch.float64), explainer.forward_func, **self.attribute_kwargs
        )

    def test_user_model_untouched(self) -> None:
        explainer = self.make_explainer(torch.float32)
        _skip_unless(bool(_user_models(explainer)), "the explainer holds no user nn.Module to leave untouched")
        check_user_model_untouched(explainer)

    def test_state_dict_is_own(self) -> None:
        explainer = self.make_explainer(torch.float32)
        _skip_unless(isinstance(explainer, nn.Module), "the explainer is not an nn.Module: it has no state_dict")
        check_state_dict_is_own(explainer)


def _skip_unless(condition: bool, reason: str) -> None:
    """Skip the running test (pytest's skip, so a switched-off check reports as skipped, never as passed)."""
    if not condition:
        import pytest  # the mixin runs under pytest; the check_* functions do not need it

        pytest.skip(reason)

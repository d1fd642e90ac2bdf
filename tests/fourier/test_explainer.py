"""FourierShap explainer: the testing mixin, feature_mask groups, Banzhaf/interactions, errors."""

from __future__ import annotations

import pytest
import torch

from tests.fourier import brute_force
from tests.fourier.cases import random_case
from torchxplain import FourierShap
from torchxplain.fourier import shapley_values
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


def test_background_replaces_the_background_and_baselines_of_another_row_count_are_refused():
    spec, _, _, xq, bg = random_case(5, 6, 20, 6, 3)
    ex = FourierShap.from_spectrum(spec, bg)
    torch.testing.assert_close(ex.attribute(xq, background=bg[:2]), shapley_values(spec, xq, bg[:2]))
    with pytest.raises(ValueError, match=r"baselines has shape \(2, 6\).*one reference per input row.*background="):
        ex.attribute(xq, baselines=bg[:2])


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


def test_numpy_lists_and_dataframes_are_accepted_and_names_checked():
    pd = pytest.importorskip("pandas")
    spec, freq, amp, xq, bg = random_case(10, 5, 20, 4, 3)
    names = [f"site{i}" for i in range(5)]
    ex = FourierShap.from_spectrum(spec, pd.DataFrame(bg.numpy(), columns=names))
    assert ex.feature_names == tuple(names)
    want = torch.tensor(brute_force.shapley(freq, amp, xq.numpy(), bg.numpy()))
    for given in (xq, xq.numpy(), xq.tolist(), pd.DataFrame(xq.numpy(), columns=names)):
        torch.testing.assert_close(ex.attribute(given), want)
    with pytest.raises(ValueError, match=r"missing \['site4'\], unexpected \['other'\]"):
        ex.attribute(pd.DataFrame(xq.numpy(), columns=[*names[:4], "other"]))
    with pytest.raises(TypeError, match="column 'site0'.*encode"):
        ex.attribute(pd.DataFrame({n: ["a"] * 3 for n in names}))


def test_bad_groups_and_masks_are_refused_not_coerced():
    spec, _, _, xq, bg = random_case(11, 6, 20, 4, 3)
    with pytest.raises(TypeError, match="integer player ids"):
        FourierShap.from_spectrum(spec, bg, groups=torch.tensor([0.0, 0, 1, 1, 2, 2]))
    with pytest.raises(TypeError, match="integer player ids"):
        FourierShap.from_spectrum(spec, bg, groups=torch.ones(6, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"expected shape \(6,\), got \(5,\)"):
        FourierShap.from_spectrum(spec, bg, groups=torch.arange(5))
    ex = FourierShap.from_spectrum(spec, bg)
    with pytest.raises(ValueError, match="does not broadcast"):
        ex.attribute(xq, feature_mask=torch.arange(4)[None])
    with pytest.raises(ValueError, match="1 MiB"):
        FourierShap.from_spectrum(spec, bg, max_memory=1)
    with pytest.raises(TypeError, match="bool"):
        FourierShap.from_spectrum(spec, bg, max_memory=True)


def test_empty_batch_gives_empty_values():
    spec, _, _, xq, bg = random_case(12, 6, 20, 4, 3)
    ex = FourierShap.from_spectrum(spec, bg)
    assert ex.attribute(xq[:0]).shape == (0, 6)
    assert ex.interactions(xq[:0]).shape == (0, 6, 6)


def test_plans_are_cached_per_players_and_dropped_when_the_state_changes():
    spec, freq, amp, xq, bg = random_case(13, 6, 20, 4, 3)
    ex = FourierShap.from_spectrum(spec, bg)
    ex.attribute(xq)
    plan = ex._plan(ex._players(None, [xq.shape]), None, 0)
    assert ex._plan(ex._players(None, [xq.shape]), None, 0) is plan
    with torch.no_grad():
        ex.surrogate.amplitudes.mul_(2.0)  # an in-place update (an optimiser step) must not use the stale plan
    doubled = torch.tensor(brute_force.shapley(freq, 2.0 * amp, xq.numpy(), bg.numpy()))
    torch.testing.assert_close(ex.attribute(xq), doubled)


def test_spectrum_from_dict_refuses_non_binary_frequencies():
    with pytest.raises(ValueError, match="binary"):
        type(random_case(0, 3, 2, 1, 1)[0]).from_dict({"frequencies": [[2, 0, 1]], "amplitudes": [1.0]})
    with pytest.raises(ValueError, match="binary"):
        type(random_case(0, 3, 2, 1, 1)[0]).from_dict({"frequencies": [[-1, 0, 1]], "amplitudes": [1.0]})
    with pytest.raises(ValueError, match="n_features is 4"):
        type(random_case(0, 3, 2, 1, 1)[0]).from_dict(
            {"frequencies": [[1, 0, 1]], "amplitudes": [1.0], "n_features": 4}
        )


def test_seeds_are_not_coerced():
    from torchxplain._core import make_generator

    with pytest.raises(TypeError, match="float"):
        make_generator(1.7)
    with pytest.raises(ValueError, match="non-negative"):
        make_generator(-3)
    assert torch.equal(torch.rand(3, generator=make_generator(5)), torch.rand(3, generator=make_generator(5)))


@pytest.mark.parametrize("index", ["k-SII", "STII", "FSII", "Moebius", "SV"])
def test_interaction_values_per_player_equal_the_functional_form(index):
    from torchxplain.fourier import interaction_values

    spec, _, _, xq, bg = random_case(14, 7, 30, 5, 4, max_degree=3)
    ex = FourierShap.from_spectrum(spec, bg)
    order = 1 if index == "SV" else 3
    ours = ex.interaction_values(xq, index=index, max_order=order, feature_mask=torch.tensor([[3, 3, 8, 8, 1, 5, 5]]))
    ref = interaction_values(spec, xq, bg, index=index, max_order=order, groups=torch.tensor([1, 1, 3, 3, 0, 2, 2]))
    assert set(ours) == set(ref)
    for t in ref:
        torch.testing.assert_close(ours[t], ref[t], atol=1e-12, rtol=0)


def test_relaxed_explainers_refuse_banzhaf_and_interactions_on_real_inputs():
    spec, _, _, xq, bg = random_case(15, 6, 20, 4, 3)
    ex = FourierShap.from_spectrum(spec, bg, relaxed=True)
    assert ex.attribute(xq * 0.5).shape == (3, 6)
    for call in (ex.banzhaf, ex.interactions, ex.interaction_values):
        with pytest.raises(ValueError, match="need binary inputs"):
            call(xq * 0.5)
    torch.testing.assert_close(ex.banzhaf(xq), FourierShap.from_spectrum(spec, bg).banzhaf(xq))


def test_half_precision_inputs_are_computed_in_float32_not_bfloat16():
    spec, freq, amp, xq, bg = random_case(16, 6, 20, 4, 3)
    ex = FourierShap.from_spectrum(spec.to(torch.float32), bg.to(torch.bfloat16))
    assert ex.dtype == torch.float32
    phi = ex.attribute(xq.to(torch.bfloat16))
    assert phi.dtype == torch.float32  # low-precision inputs get the computation's dtype back
    want = torch.tensor(brute_force.shapley(freq, amp, xq.numpy(), bg.numpy()), dtype=torch.float32)
    torch.testing.assert_close(phi, want, atol=1e-5, rtol=1e-5)
    import torchxplain as tx

    with tx.settings.dtype_policy("float64"):
        ex64 = FourierShap.from_spectrum(spec.to(torch.float32), bg.to(torch.float32))
    assert ex64.dtype == torch.float64


def test_auto_kernel_values_do_not_depend_on_batching_beyond_rounding():
    """The auto kernel may switch from the dense to the small-support kernel as batches stream in (its ski-rental
    rule); both are exact, so the values of a row agree to rounding however the rows are batched."""
    spec, freq, amp, xq, bg = random_case(17, 10, 40, 16, 300, max_degree=4)
    whole = FourierShap.from_spectrum(spec, bg).attribute(xq)
    batched = FourierShap.from_spectrum(spec, bg)
    parts = torch.cat([batched.attribute(xq[i : i + 16]) for i in range(0, 300, 16)])
    torch.testing.assert_close(parts, whole, atol=1e-13, rtol=0)
    expected = torch.tensor(brute_force.shapley(freq, amp, xq[:5].numpy(), bg.numpy()))
    torch.testing.assert_close(whole[:5], expected, atol=1e-12, rtol=0)

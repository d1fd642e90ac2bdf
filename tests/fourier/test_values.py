"""Closed-form Shapley/Banzhaf/interaction values against brute-force enumeration of coalitions."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fourier import brute_force
from tests.fourier.cases import random_case, random_groups
from torchxplain import FourierSpectrum
from torchxplain.fourier import (
    BackgroundTerm,
    banzhaf_values,
    precompute_background,
    shapley_interactions,
    shapley_values,
)
from torchxplain.testing import tiny_memory_budget

CASES = [(0, 6, 20, 5, 3), (1, 8, 64, 8, 4), (2, 10, 40, 7, 2), (3, 4, 16, 1, 5), (4, 9, 64, 8, 3)]


@pytest.mark.parametrize("seed,n,k,n_bg,n_q", CASES)
def test_shapley_matches_brute_force(seed, n, k, n_bg, n_q):
    spec, freq, amp, xq, bg = random_case(seed, n, k, n_bg, n_q)
    expected = brute_force.shapley(freq, amp, xq.numpy(), bg.numpy())
    got = shapley_values(spec, xq, bg)
    np.testing.assert_allclose(got.numpy(), expected, atol=1e-10, rtol=0)


@pytest.mark.parametrize("seed,n,k,n_bg,n_q", CASES)
def test_grouped_shapley_banzhaf_interactions_match_brute_force(seed, n, k, n_bg, n_q):
    spec, freq, amp, xq, bg = random_case(seed, n, k, n_bg, n_q)
    groups = random_groups(seed + 100, n)
    g = torch.tensor(groups)
    for ours, ref in [
        (shapley_values(spec, xq, bg, groups=g), brute_force.shapley(freq, amp, xq.numpy(), bg.numpy(), groups)),
        (banzhaf_values(spec, xq, bg, groups=g), brute_force.banzhaf(freq, amp, xq.numpy(), bg.numpy(), groups)),
        (
            shapley_interactions(spec, xq, bg, groups=g),
            brute_force.interactions(freq, amp, xq.numpy(), bg.numpy(), groups),
        ),
    ]:
        np.testing.assert_allclose(ours.numpy(), ref, atol=1e-10, rtol=0)


@pytest.mark.parametrize("seed,n,k,n_bg,n_q", CASES[:3])
def test_singleton_banzhaf_and_interactions_match_brute_force(seed, n, k, n_bg, n_q):
    spec, freq, amp, xq, bg = random_case(seed, n, k, n_bg, n_q)
    np.testing.assert_allclose(
        banzhaf_values(spec, xq, bg).numpy(), brute_force.banzhaf(freq, amp, xq.numpy(), bg.numpy()), atol=1e-10, rtol=0
    )
    np.testing.assert_allclose(
        shapley_interactions(spec, xq, bg).numpy(),
        brute_force.interactions(freq, amp, xq.numpy(), bg.numpy()),
        atol=1e-10,
        rtol=0,
    )


def test_relaxed_queries_match_brute_force_on_multilinear_extension():
    spec, freq, amp, _, bg = random_case(7, 7, 40, 6, 3)
    xq = torch.tensor(np.random.default_rng(8).uniform(-0.3, 1.3, size=(4, 7)))
    expected = brute_force.shapley(freq, amp, xq.numpy(), bg.numpy())
    got = shapley_values(spec, xq, bg, relaxed=True)
    np.testing.assert_allclose(got.numpy(), expected, atol=1e-10, rtol=0)


def test_relaxed_values_under_a_tiny_budget_build_only_the_background_rows_of_each_block(monkeypatch):
    spec, freq, amp, _, bg = random_case(11, 7, 50, 6, 40)
    xq = torch.tensor(np.random.default_rng(12).uniform(-0.3, 1.3, size=(5, 7)))
    built = []
    compute = BackgroundTerm._compute

    def recording(self, f0, f1, rows=None):
        out = compute(self, f0, f1, rows)
        built.append(out.shape)
        return out

    monkeypatch.setattr(BackgroundTerm, "_compute", recording)
    with tiny_memory_budget(2048):
        got = shapley_values(spec, xq, bg, relaxed=True)
    np.testing.assert_allclose(got.numpy(), brute_force.shapley(freq, amp, xq.numpy(), bg.numpy()), atol=1e-10)
    assert built and max(rows for rows, _ in built) < bg.shape[0]  # never the whole (|D|, k) matrix
    assert sum(rows for rows, _ in built) <= xq.shape[0] * bg.shape[0]  # each row once per query block


def test_relaxed_equals_exact_on_binary_queries():
    spec, _, _, xq, bg = random_case(9, 8, 50, 5, 6)
    np.testing.assert_allclose(
        shapley_values(spec, xq, bg, relaxed=True).numpy(), shapley_values(spec, xq, bg).numpy(), atol=1e-12
    )


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 12), k=st.integers(1, 40), n_bg=st.integers(1, 6))
def test_efficiency_dummy_and_chunk_invariance(seed, n, k, n_bg):
    spec, freq, amp, xq, bg = random_case(seed, n, k, n_bg, 4)
    phi = shapley_values(spec, xq, bg)
    gap = spec.evaluate(xq) - spec.evaluate(bg).mean()
    torch.testing.assert_close(phi.sum(1), gap, atol=1e-10, rtol=0)
    dummy = ~spec.frequencies.any(0)
    assert torch.all(phi[:, dummy] == 0)
    with tiny_memory_budget(64):
        tiny = shapley_values(spec, xq, bg)
    torch.testing.assert_close(tiny, phi, atol=1e-12, rtol=0)
    groups = torch.tensor(random_groups(seed, n))
    with tiny_memory_budget(64):
        tiny_grouped = shapley_values(spec, xq, bg, groups=groups)
    torch.testing.assert_close(tiny_grouped, shapley_values(spec, xq, bg, groups=groups), atol=1e-12, rtol=0)
    torch.testing.assert_close(shapley_values(spec, xq, bg, groups=groups).sum(1), gap, atol=1e-10, rtol=0)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_symmetry_of_exchangeable_players(seed):
    rng = np.random.default_rng(seed)
    n = 6
    # a function symmetric in features 0 and 1: every frequency's mirror image has the same amplitude
    base = rng.integers(0, 2, size=(12, n)).astype(bool)
    mirror = base.copy()
    mirror[:, [0, 1]] = base[:, [1, 0]]
    amp = rng.normal(size=12)
    freq = np.concatenate([base, mirror])
    spec = FourierSpectrum(torch.tensor(freq), torch.tensor(np.concatenate([amp, amp]))).coalesce()
    xq = torch.tensor(rng.integers(0, 2, size=(5, n)).astype(float))
    xq[:, 1] = xq[:, 0]
    bg = torch.tensor(rng.integers(0, 2, size=(4, n)).astype(float))
    bg = torch.cat([bg, bg[:, [1, 0, 2, 3, 4, 5]]])  # background symmetric under the swap
    phi = shapley_values(spec, xq, bg)
    torch.testing.assert_close(phi[:, 0], phi[:, 1], atol=1e-10, rtol=0)


def test_float32_close_to_float64():
    spec, _, _, xq, bg = random_case(11, 30, 300, 20, 10, max_degree=4)
    phi64 = shapley_values(spec, xq, bg)
    phi32 = shapley_values(spec.to(torch.float32), xq.float(), bg.float())
    assert phi32.dtype == torch.float32
    scale = phi64.abs().max()
    assert float((phi32.double() - phi64).abs().max() / scale) < 1e-4


def test_precomputed_background_is_reusable():
    spec, _, _, xq, bg = random_case(12, 10, 30, 6, 8)
    term = precompute_background(spec, bg)
    torch.testing.assert_close(shapley_values(spec, xq[:4], term), shapley_values(spec, xq[:4], bg))
    torch.testing.assert_close(shapley_values(spec, xq[4:], term), shapley_values(spec, xq[4:], bg))


def test_values_are_differentiable_in_amplitudes():
    spec, freq, amp, xq, bg = random_case(13, 6, 10, 4, 2)
    a = spec.amplitudes.clone().requires_grad_(True)
    phi = shapley_values(FourierSpectrum(spec.frequencies, a), xq, bg)
    (grad,) = torch.autograd.grad(phi[0, 0], a)
    # φ is linear in a: the gradient is the value of each single-frequency spectrum
    for f in range(3):
        one = torch.zeros_like(spec.amplitudes)
        one[f] = 1.0
        single = shapley_values(FourierSpectrum(spec.frequencies, one), xq, bg)[0, 0]
        torch.testing.assert_close(grad[f], single)


@pytest.mark.parametrize(
    "bad,match",
    [
        (lambda xq, bg: (xq * 2, bg), "column"),
        (lambda xq, bg: (xq[:, :-1], bg), "features"),
        (lambda xq, bg: (xq, bg[:0]), "empty"),
        (lambda xq, bg: (xq.masked_fill(torch.ones_like(xq, dtype=torch.bool), float("nan")), bg), "NaN"),
        (lambda xq, bg: (xq, bg + 0.5), "background"),
    ],
)
def test_bad_inputs_raise_clear_errors(bad, match):
    spec, _, _, xq, bg = random_case(14, 5, 8, 3, 2)
    x, b = bad(xq, bg)
    with pytest.raises(ValueError, match=match):
        shapley_values(spec, x, b)


def test_bad_groups_raise_clear_errors():
    spec, _, _, xq, bg = random_case(15, 5, 8, 3, 2)
    with pytest.raises(ValueError, match="one player id per input feature"):
        shapley_values(spec, xq, bg, groups=torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="non-negative player ids"):
        shapley_values(spec, xq, bg, groups=torch.tensor([0, 0, -2, 2, 3]))
    with pytest.raises(TypeError, match="integer"):
        shapley_values(spec, xq, bg, groups=torch.zeros(5))


def record_float_frequencies(monkeypatch, n: int) -> list[int]:
    """Record the rows of every bool ``(rows, n)`` tensor made floating (frequency blocks as floats)."""
    converted: list[int] = []
    to = torch.Tensor.to

    def recording(self, *args, **kwargs):
        out = to(self, *args, **kwargs)
        if self.dtype == torch.bool and out.is_floating_point() and self.ndim == 2 and self.shape[1] == n:
            converted.append(self.shape[0])
        return out

    monkeypatch.setattr(torch.Tensor, "to", recording)
    return converted


@pytest.mark.parametrize("grouped", [False, True])
def test_dense_kernels_take_the_frequencies_as_floats_one_chunk_at_a_time(monkeypatch, grouped):
    """The (k, n) bool frequencies were converted to floats whole (1 GiB for a continuous fit of k ≈ n ≈ 11,000)
    before the chunked loops; under a tiny budget only chunks of them are, and the values are unchanged."""
    spec, freq, amp, xq, bg = random_case(21, 9, 64, 6, 4)
    groups = torch.tensor([0, 0, 1, 2, 2, 3, 4, 4, 5]) if grouped else None
    converted = record_float_frequencies(monkeypatch, 9)
    with tiny_memory_budget(2048):
        got = shapley_values(spec, xq, BackgroundTerm(spec, bg.double()), groups=groups, kernel="gemm")
        signed = BackgroundTerm(spec, bg.double()).signed_amplitudes
    monkeypatch.undo()
    want = brute_force.shapley(freq, amp, xq.numpy(), bg.numpy(), None if groups is None else groups.numpy())
    np.testing.assert_allclose(got.numpy(), want, atol=1e-10, rtol=0)
    np.testing.assert_allclose(signed.numpy(), (1 - 2 * np.remainder(bg.numpy() @ freq.T, 2)) * amp, atol=0, rtol=0)
    assert converted and max(converted) < len(spec), f"all {len(spec)} frequencies as floats at once: {converted}"


def test_paired_values_take_the_frequencies_as_floats_one_chunk_at_a_time(monkeypatch):
    """Captum's per-row baselines (the paired kernel) had the same whole conversion; values against brute force
    with each row's own baseline as its one background row."""
    import torchxplain as tx

    spec, freq, amp, xq, bg = random_case(22, 9, 64, 4, 4)
    explainer = tx.FourierShap.from_spectrum(spec, bg.double())
    converted = record_float_frequencies(monkeypatch, 9)
    with tiny_memory_budget(2048):
        got = explainer.attribute(xq.double(), baselines=bg.double())
    monkeypatch.undo()
    want = np.concatenate(
        [brute_force.shapley(freq, amp, xq[i : i + 1].numpy(), bg[i : i + 1].numpy()) for i in range(4)]
    )
    np.testing.assert_allclose(got.numpy(), want, atol=1e-10, rtol=0)
    assert converted and max(converted) < len(spec), f"all {len(spec)} frequencies as floats at once: {converted}"

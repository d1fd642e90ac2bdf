"""The small-support kernel equals the dense kernel and brute force over coalitions (all kinds, all players)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fourier import brute_force
from tests.fourier.cases import random_groups, small_support_case
from torchxplain import FourierSpectrum
from torchxplain.fourier import banzhaf_values, shapley_interactions, shapley_values
from torchxplain.fourier.values._families import support_families
from torchxplain.fourier.values._support import butterfly, walsh
from torchxplain.fourier.values._weights import SPECS, index_spec, walsh_weights
from torchxplain.testing import tiny_memory_budget

VALUES = {"shapley": shapley_values, "banzhaf": banzhaf_values, "interactions": shapley_interactions}
REFERENCE = {"shapley": brute_force.shapley, "banzhaf": brute_force.banzhaf, "interactions": brute_force.interactions}


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 100_000),
    n=st.integers(1, 14),
    n_families=st.integers(1, 6),
    width=st.integers(1, 6),
    n_bg=st.integers(1, 6),
    grouped=st.booleans(),
)
def test_small_support_equals_gemm(seed, n, n_families, width, n_bg, grouped):
    spec, _, _, xq, bg = small_support_case(seed, n, n_families, width, n_bg, 4)
    groups = torch.tensor(random_groups(seed, n)) if grouped else None
    for kind, fn in VALUES.items():
        dense = fn(spec, xq, bg, groups=groups, kernel="gemm")
        tables = fn(spec, xq, bg, groups=groups, kernel="small_support")
        scale = max(1.0, float(dense.abs().max()))
        torch.testing.assert_close(tables, dense, atol=1e-12 * scale, rtol=0, msg=kind)


@pytest.mark.parametrize("seed,n,grouped", [(0, 6, False), (1, 8, True), (2, 10, False), (3, 9, True), (4, 7, True)])
def test_small_support_equals_brute_force(seed, n, grouped):
    spec, freq, amp, xq, bg = small_support_case(seed, n, 3, 4, 5, 3)
    groups = random_groups(seed + 7, n) if grouped else None
    g = None if groups is None else torch.tensor(groups)
    for kind, fn in VALUES.items():
        expected = REFERENCE[kind](freq, amp, xq.numpy(), bg.numpy(), groups)
        got = fn(spec, xq, bg, groups=g, kernel="small_support")
        np.testing.assert_allclose(got.numpy(), expected, atol=1e-10, rtol=0, err_msg=kind)


def test_dense_random_spectrum_through_tables_matches_brute_force():
    """Full-degree random frequencies (one family per maximal support, many overlapping families)."""
    rng = np.random.default_rng(5)
    n = 9
    freq = np.unique(rng.random((40, n)) < 0.4, axis=0)
    amp = rng.normal(size=len(freq))
    spec = FourierSpectrum(torch.tensor(freq), torch.tensor(amp))
    bg = torch.tensor(rng.integers(0, 2, (6, n)).astype(float))
    xq = torch.tensor(rng.integers(0, 2, (3, n)).astype(float))
    got = shapley_values(spec, xq, bg, kernel="small_support")
    np.testing.assert_allclose(got.numpy(), brute_force.shapley(freq, amp, xq.numpy(), bg.numpy()), atol=1e-10)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), grouped=st.booleans())
def test_tiny_budget_chunks_give_the_same_tables(seed, grouped):
    spec, _, _, xq, bg = small_support_case(seed, 9, 4, 5, 5, 6)
    groups = torch.tensor(random_groups(seed, 9)) if grouped else None
    for fn in VALUES.values():
        whole = fn(spec, xq, bg, groups=groups, kernel="small_support")
        with tiny_memory_budget(64):
            tiny = fn(spec, xq, bg, groups=groups, kernel="small_support")
        torch.testing.assert_close(tiny, whole, atol=1e-12, rtol=0)


def test_efficiency_and_float32():
    spec, _, _, xq, bg = small_support_case(11, 30, 12, 6, 20, 10)
    phi = shapley_values(spec, xq, bg, kernel="small_support")
    gap = spec.evaluate(xq) - spec.evaluate(bg).mean()
    torch.testing.assert_close(phi.sum(1), gap, atol=1e-10, rtol=0)
    phi32 = shapley_values(spec.to(torch.float32), xq.float(), bg.float(), kernel="small_support")
    assert phi32.dtype == torch.float32
    assert float((phi32.double() - phi).abs().max() / phi.abs().max()) < 1e-5


def test_small_support_is_differentiable_in_the_amplitudes():
    spec, _, _, xq, bg = small_support_case(13, 7, 3, 4, 4, 2)
    a = spec.amplitudes.clone().requires_grad_(True)
    phi = shapley_values(FourierSpectrum(spec.frequencies, a), xq, bg, kernel="small_support")
    (grad,) = torch.autograd.grad(phi[0].sum(), a)
    dense = shapley_values(FourierSpectrum(spec.frequencies, a), xq, bg, kernel="gemm")
    (expected,) = torch.autograd.grad(dense[0].sum(), a)
    torch.testing.assert_close(grad, expected, atol=1e-12, rtol=0)


def test_constant_spectrum_gives_zeros():
    spec = FourierSpectrum(torch.zeros(1, 4, dtype=torch.bool), torch.tensor([3.0], dtype=torch.float64))
    x = torch.ones(2, 4, dtype=torch.float64)
    for fn in VALUES.values():
        assert torch.all(fn(spec, x, x[:1] * 0, kernel="small_support") == 0)


# --- the pieces -------------------------------------------------------------------------------------
def _direct_weight(kind: str, c: int) -> float:
    """The closed forms' per-term weights, written out (as on the design page), to check the tables' derivation."""
    if kind == "shapley":
        return 1.0 / c if c % 2 else 0.0
    if kind == "banzhaf":
        return float(c == 1)
    return 1.0 / (c - 1) if c >= 2 and c % 2 == 0 else 0.0


@pytest.mark.parametrize(
    "kind",
    ["shapley", "banzhaf", "interactions", ("k-SII", 0, 2), ("k-SII", 1, 2), ("FSII", 2, 2), ("BII", 1, 1)],
)
@pytest.mark.parametrize("d", [1, 2, 3, 5, 6])
def test_walsh_weights_equal_direct_enumeration(kind, d):
    """F̂(S) = Σ_A F(A) (-1)^{|A∩S|} by enumerating every A ⊆ [d] (players 0..r-1 are the fixed ones)."""
    spec = index_spec(*kind) if isinstance(kind, tuple) else SPECS[kind]
    r = spec.order
    if d < r:
        return
    table = walsh_weights(spec, d, torch.float64, torch.device("cpu"))
    for s_mask in range(2**d):
        s = {j for j in range(d) if s_mask >> j & 1}
        direct = 0.0
        for a_size in range(d + 1):
            for a in itertools.combinations(range(d), a_size):
                if set(range(r)) <= set(a):
                    w = float(spec.weights[len(a)]) if isinstance(kind, tuple) else _direct_weight(kind, len(a))
                    direct += w * (-1) ** len(s & set(a))
        assert abs(float(table[len(s), len(s & set(range(r)))]) - direct) < 1e-12


def _check_families(freq: torch.Tensor) -> None:
    fam = support_families(freq)
    members = [set(row[row >= 0].tolist()) for row in fam.members]
    for row, f in zip(freq, fam.family.tolist()):
        support = set(torch.nonzero(row).flatten().tolist())
        assert (f == -1) == (not support)
        if support:
            assert support <= members[f]
    supports = {frozenset(torch.nonzero(r).flatten().tolist()) for r in freq}
    assert all(frozenset(m) in supports for m in members)  # every family is a support of the spectrum
    for a, b in itertools.permutations(range(len(members)), 2):
        assert not members[a] <= members[b]  # maximal: no family inside another
    assert fam.sizes.tolist() == sorted(len(m) for m in members)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 140))
def test_families_are_the_maximal_supports(seed, n):
    rng = np.random.default_rng(seed)
    freq = np.unique(rng.random((int(rng.integers(1, 40)), n)) < rng.uniform(0.02, 0.3), axis=0)
    _check_families(torch.tensor(freq[freq.sum(1) <= 12]))


def test_family_search_refuses_large_supports():
    with pytest.raises(ValueError, match="at most 16 features"):
        support_families(torch.ones(2, 17, dtype=torch.bool))


def test_families_of_a_wide_spectrum():
    """n in the thousands (a tree's thresholds): supports packed into several words, matched exactly."""
    rng = np.random.default_rng(3)
    base = [rng.choice(2500, size=12, replace=False) for _ in range(6)]
    rows = []
    for support in base:
        for _ in range(8):
            keep = support[rng.random(12) < 0.6]
            row = np.zeros(2500, dtype=bool)
            row[keep] = True
            rows.append(row)
        full = np.zeros(2500, dtype=bool)
        full[support] = True
        rows.append(full)
    _check_families(torch.tensor(np.unique(np.array(rows), axis=0)))


def test_the_cuda_transform_equals_the_cpu_one():
    """The butterfly passes used on CUDA (exact additions) against the Kronecker products used on a CPU."""
    x = torch.randn(7, 3, 2**5, dtype=torch.float64)
    expected = walsh(x, -1)
    torch.testing.assert_close(butterfly(x.reshape(-1, 2**5)).view_as(x), expected, atol=1e-12, rtol=0)
    direct = torch.tensor(
        [[(-1.0) ** bin(s & t).count("1") for t in range(32)] for s in range(32)], dtype=torch.float64
    )
    torch.testing.assert_close(expected, x @ direct, atol=1e-12, rtol=0)

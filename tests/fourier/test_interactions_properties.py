"""Exactness properties of the interaction family under hypothesis: efficiency, Möbius/co-Möbius reconstruction,
the relations between indices, agreement with the existing closed forms, dummy, symmetry and linearity."""

from __future__ import annotations

import itertools
from math import factorial

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fourier import brute_force
from tests.fourier.cases import random_case, random_groups
from tests.fourier.interaction_reference import coalitions, game_table, ours_at, spectrum_game
from torchxplain import FourierSpectrum
from torchxplain.fourier import banzhaf_values, interaction_values, shapley_interactions, shapley_values
from torchxplain.fourier.values._players import player_map

ATOL = 1e-10


@st.composite
def games(draw, max_features=6):
    """A random spectrum, queries, background and (sometimes) grouped players."""
    seed = draw(st.integers(0, 10**6))
    n = draw(st.integers(2, max_features))
    spec, freq, amp, xq, bg = random_case(seed, n, draw(st.integers(1, 24)), draw(st.integers(1, 4)), 2)
    groups = random_groups(seed + 1, n) if draw(st.booleans()) else np.arange(n)
    return spec, freq, amp, xq, bg, groups


def _players(groups):
    return int(groups.max()) + 1, (None if np.array_equal(groups, np.arange(len(groups))) else torch.tensor(groups))


def _set_sum(tensor: torch.Tensor, order: int) -> torch.Tensor:
    """``Σ_{|T| = order} I(T)`` per row from a dense symmetric tensor with zeros on repeated players."""
    return tensor.reshape(tensor.shape[0], -1).sum(1) / factorial(order)


@settings(max_examples=30, deadline=None)
@given(games(), st.integers(1, 3), st.sampled_from(["SV", "k-SII", "STII", "FSII"]))
def test_efficiency(case, order, index):
    spec, freq, amp, xq, bg, groups = case
    m, ids = _players(groups)
    order = 1 if index == "SV" else min(order, m)
    result = interaction_values(spec, xq, bg, index=index, max_order=order, groups=ids)
    prediction = torch.tensor(brute_force.evaluate(freq, amp, xq.numpy()))
    baseline = torch.tensor(brute_force.evaluate(freq, amp, bg.numpy()).mean()).expand(xq.shape[0])
    total = sum(_set_sum(result[t], t) for t in range(1, order + 1))
    torch.testing.assert_close(total, prediction - baseline, rtol=0, atol=ATOL)
    torch.testing.assert_close(result[0], baseline, rtol=0, atol=ATOL)  # shapiq: the empty set is v(∅)


@settings(max_examples=20, deadline=None)
@given(games(max_features=5))
def test_moebius_and_co_moebius_reconstruct_the_game_and_full_order_indices_are_moebius(case):
    spec, freq, amp, xq, bg, groups = case
    m, ids = _players(groups)
    moebius = interaction_values(spec, xq, bg, index="Moebius", max_order=m, groups=ids)
    co = interaction_values(spec, xq, bg, index="Co-Moebius", max_order=m, groups=ids)
    full = tuple(range(m))
    for q in range(xq.shape[0]):
        v = game_table(spectrum_game(freq, amp, xq[q].numpy(), bg.numpy(), groups), m)
        assert abs(ours_at(co, q, ()) - v[()]) < ATOL  # shapiq stores the baseline, not co(∅) = v(N)
        for subset in v:
            rebuilt = sum(ours_at(moebius, q, tuple(subset[i] for i in t)) for t in coalitions(len(subset), m))
            assert abs(rebuilt - v[subset]) < ATOL
            # v(N∖S) = Σ_{T ⊆ S} (-1)^{|T|} co(T), with co(∅) = v(N)
            inner = [tuple(subset[i] for i in t) for t in coalitions(len(subset), m) if t]
            co_sum = v[full] + sum((-1) ** len(t) * ours_at(co, q, t) for t in inner)
            assert abs(co_sum - v[tuple(p for p in full if p not in subset)]) < ATOL
    # at full order every faithful or efficient index is the Möbius transform
    for index in ("k-SII", "STII", "FSII", "FBII"):
        result = interaction_values(spec, xq, bg, index=index, max_order=m, groups=ids)
        for t in range(m + 1):
            torch.testing.assert_close(result[t], moebius[t], rtol=0, atol=ATOL, msg=f"{index} order {t}")


@settings(max_examples=25, deadline=None)
@given(games(), st.integers(2, 3))
def test_relations_between_indices_and_the_existing_closed_forms(case, order):
    spec, freq, amp, xq, bg, groups = case
    m, ids = _players(groups)
    order = min(order, m)
    sv = interaction_values(spec, xq, bg, index="SV", groups=ids)
    bv = interaction_values(spec, xq, bg, index="BV", groups=ids)
    sii = interaction_values(spec, xq, bg, index="SII", max_order=order, groups=ids)
    bii = interaction_values(spec, xq, bg, index="BII", max_order=order, groups=ids)
    ksii = interaction_values(spec, xq, bg, index="k-SII", max_order=order, groups=ids)
    stii = interaction_values(spec, xq, bg, index="STII", max_order=order, groups=ids)
    close = lambda a, b: torch.testing.assert_close(a, b, rtol=0, atol=ATOL)  # noqa: E731
    close(sv[1], shapley_values(spec, xq, bg, groups=ids))
    close(bv[1], banzhaf_values(spec, xq, bg, groups=ids))
    close(sii[1], sv[1])
    close(bii[1], bv[1])
    close(bv[0], bii[0])  # shapiq's BV keeps BII's empty value Σ_S v(S) / 2^m
    close(ksii[order], sii[order])  # k-SII's top order is SII
    close(stii[order - 1], interaction_values(spec, xq, bg, index="Moebius", max_order=order, groups=ids)[order - 1])
    if order >= 2:
        close(sii[2], shapley_interactions(spec, xq, bg, groups=ids))
    g = np.asarray(groups)
    np.testing.assert_allclose(bv[1].numpy(), brute_force.banzhaf(freq, amp, xq.numpy(), bg.numpy(), g), atol=ATOL)
    values = [game_table(spectrum_game(freq, amp, row, bg.numpy(), g), m) for row in xq.numpy()]
    np.testing.assert_allclose(bii[0].numpy(), [np.mean(list(v.values())) for v in values], atol=ATOL)


@settings(max_examples=20, deadline=None)
@given(games(), st.sampled_from(["k-SII", "STII", "FSII", "FBII", "BII", "SII", "Moebius", "Co-Moebius"]))
def test_dummy_player_gets_zero_and_permuting_players_permutes_the_result(case, index):
    spec, _, _, xq, bg, _ = case
    n = spec.n_features
    dummy = n  # a feature outside every frequency
    wide = FourierSpectrum(
        torch.cat([spec.frequencies, torch.zeros(len(spec), 1, dtype=torch.bool)], 1), spec.amplitudes
    )
    # the dummy's query bit differs from every background bit, so only its absence from f makes it a dummy
    xw, bw = torch.cat([xq, torch.ones(xq.shape[0], 1)], 1), torch.cat([bg, torch.zeros(bg.shape[0], 1)], 1)
    order = min(3, n + 1)
    result = interaction_values(wide, xw, bw, index=index, max_order=order)
    for t in range(1, order + 1):
        assert torch.all(result[t].select(1, dummy) == 0), f"{index}: dummy has order-{t} entries"
    # leaving the dummy out of the kernel and spreading back (what the explainer does) changes nothing
    without = interaction_values(spec, xq, bg, index=index, max_order=min(order, n))
    players = player_map(torch.arange(n), n + 1, None)  # the explainer's map: input n owns no binary feature
    assert players.m == n + 1 and players.m_active == n
    for t in without:
        torch.testing.assert_close(players.expand(without[t], t), result[t], rtol=0, atol=ATOL)
    perm = torch.randperm(n + 1, generator=torch.Generator().manual_seed(n))
    permuted = FourierSpectrum(wide.frequencies[:, perm], wide.amplitudes)
    moved = interaction_values(permuted, xw[:, perm], bw[:, perm], index=index, max_order=order)
    for t in range(order + 1):
        expected = result[t][(slice(None), *np.ix_(*[perm.numpy()] * t))] if t else result[0]
        torch.testing.assert_close(moved[t], expected, rtol=0, atol=ATOL)


@settings(max_examples=15, deadline=None)
@given(games(), games(), st.sampled_from(["k-SII", "FSII", "STII", "FBII"]))
def test_linear_in_the_spectrum(first, second, index):
    spec, _, _, xq, bg, groups = first
    other = second[0]
    n = spec.n_features
    if other.n_features != n:  # pad or cut the second spectrum to n features
        cols = other.frequencies[:, :n]
        pad = torch.zeros(len(other), max(0, n - cols.shape[1]), dtype=torch.bool)
        other = FourierSpectrum(torch.cat([cols, pad], 1), other.amplitudes)
    both = FourierSpectrum(
        torch.cat([spec.frequencies, other.frequencies]), torch.cat([spec.amplitudes, other.amplitudes])
    )
    m, ids = _players(groups)
    order = min(2, m)
    parts = [interaction_values(s, xq, bg, index=index, max_order=order, groups=ids) for s in (spec, other, both)]
    for t in range(1, order + 1):
        torch.testing.assert_close(parts[2][t], parts[0][t] + parts[1][t], rtol=0, atol=ATOL)


def test_every_pair_and_triple_is_covered_by_the_dense_layout():
    """Each unordered subset appears once per ordering with the same value (what the converter reads)."""
    spec, _, _, xq, bg = random_case(21, 5, 30, 3, 1)
    result = interaction_values(spec, xq, bg, index="STII", max_order=3)
    for subset in itertools.combinations(range(5), 3):
        values = {float(result[3][(0, *p)]) for p in itertools.permutations(subset)}
        assert len(values) == 1

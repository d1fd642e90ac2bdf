"""Relation properties on random naive and chain classifiers, against a pure-Python oracle."""

from __future__ import annotations

import random

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import RefBC, random_bc

from torchxplain.idx import BayesianClassifier, relation_tensors
from torchxplain.testing import tiny_memory_budget

KITS = {"md": ("attack", "support"), "sd": ("attack", "support"), "cf": ("critical", "potential")}


def _pair(seed: int, naive: bool, dtype=torch.float64, class_card=None):
    rng = random.Random(seed)
    n_obs = rng.randint(1, 4)
    values, structure, prior, cpt = random_bc(rng, naive, n_obs, rng.randint(1, 3), class_card=class_card)
    bc = BayesianClassifier(values, structure, prior, cpt, dtype=dtype)
    return bc, RefBC(values, structure, prior, cpt)


def _sets(bc, rel, b):
    return {
        k: {n: {p for p, hit in zip(bc.influences, rel[k][n][b].tolist()) if hit} for n in names}
        for k, names in KITS.items()
    }


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), naive=st.booleans())
def test_relations_equal_the_oracle(seed, naive):
    bc, ref = _pair(seed, naive)
    inputs = ref.all_inputs()
    sigma, rel = relation_tensors(bc, torch.tensor(inputs), ("md", "sd", "cf"))
    for b, obs in enumerate(inputs):
        a, expected = ref.relations(obs)
        assert sigma[b].tolist() == [a[v] for v in bc.variables]
        assert _sets(bc, rel, b) == expected, (b, obs)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), naive=st.booleans(), dtype=st.sampled_from([torch.float32, torch.float64]))
def test_md_within_sd_and_equal_for_binary_influencers(seed, naive, dtype):
    bc, ref = _pair(seed, naive, dtype)
    _, rel = relation_tensors(bc, torch.tensor(ref.all_inputs()), ("md", "sd"))
    for name in ("attack", "support"):
        md, sd = rel["md"][name], rel["sd"][name]
        assert not (md & ~sd).any()  # Prop. 2
        binary = (bc.cardinality[bc.source] == 2)[None, :]
        assert torch.equal(md & binary, sd & binary)  # Prop. 3


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_critical_within_monotonic_support_on_binary_naive_bcs(seed):
    bc, ref = _pair(seed, naive=True, class_card=2)
    assert bc.is_naive
    _, rel = relation_tensors(bc, torch.tensor(ref.all_inputs()), ("md", "sd", "cf"))
    crit = rel["cf"]["critical"]
    assert not (crit & ~rel["md"]["support"]).any()  # Prop. 5 (NBC only)
    assert not (crit & ~rel["sd"]["support"]).any()
    assert not (crit & rel["cf"]["potential"]).any()


def test_prop5_fails_on_a_three_class_naive_bc():
    """Critical need not mean support when the class has 3 values: another class can overtake."""
    values = {"x": ["0", "1"], "c": ["a", "b", "d"]}
    cpts = {("c", "x"): [[0.5, 0.5], [0.45, 0.55], [0.95, 0.05]]}
    bc = BayesianClassifier(values, {"c": ["x"]}, {"c": [0.4, 0.4, 0.2]}, cpts)
    # x=0: scores a .20, b .18, d .19 -> a with P = .20/.57; x=1: a .20, b .22, d .01 -> b, P(a) = .20/.43
    assert bc.decide(torch.tensor([[0], [1]]))[:, 1].tolist() == [0, 1]
    _, rel = relation_tensors(bc, torch.tensor([[0]]))
    assert rel["cf"]["critical"][0, 0] and rel["md"]["attack"][0, 0] and not rel["md"]["support"][0, 0]


def test_prop5_fails_on_the_chain_example():
    """The erratum: on play-outside, (t, o) is critical but a stochastic attacker in rows (m,l,h), (h,l,h)."""
    from torchxplain.idx import datasets

    bc = datasets.play_outside()
    _, rel = relation_tensors(bc, [{"w": "m", "t": "l", "p": "h"}, {"w": "h", "t": "l", "p": "h"}])
    e = bc.influences.index(("t", "o"))
    assert rel["cf"]["critical"][:, e].all() and rel["sd"]["attack"][:, e].all()


def test_chunking_does_not_change_results():
    bc, ref = _pair(7, naive=False)
    inputs = torch.tensor(ref.all_inputs())
    full = relation_tensors(bc, inputs)
    with tiny_memory_budget(1):
        tiny = relation_tensors(bc, inputs)
    assert torch.equal(full[0], tiny[0])
    for k in full[1]:
        for n in full[1][k]:
            assert torch.equal(full[1][k][n], tiny[1][k][n])


def test_zero_probabilities_are_safe():
    """Deterministic CPT entries (log 0 = -inf) give finite posteriors and no NaN."""
    values = {"x": ["0", "1"], "z": ["0", "1"], "c": ["0", "1"]}
    cpts = {("c", "x"): [[1.0, 0.0], [0.0, 1.0]], ("c", "z"): [[0.5, 0.5], [0.9, 0.1]]}
    bc = BayesianClassifier(values, {"c": ["x", "z"]}, {"c": [0.5, 0.5]}, cpts)
    proba = bc.predict_proba(torch.tensor([[0, 0], [1, 1]]))
    assert torch.isfinite(proba).all()
    assert proba[0, 2].tolist()[:2] == [1.0, 0.0] and proba[1, 2].tolist()[:2] == [0.0, 1.0]
    _, rel = relation_tensors(bc, torch.tensor([[0, 0], [1, 1]]))
    e = bc.influences.index(("x", "c"))
    assert rel["md"]["support"][:, e].all() and rel["cf"]["critical"][:, e].all()
    # both classes impossible: 0/0 posterior falls back to uniform, first value decided
    cpts0 = {("c", "x"): [[1.0, 0.0], [1.0, 0.0]], ("c", "z"): [[0.5, 0.5], [0.9, 0.1]]}
    bc0 = BayesianClassifier(values, {"c": ["x", "z"]}, {"c": [0.5, 0.5]}, cpts0)
    p0 = bc0.predict_proba(torch.tensor([[1, 0]]))
    assert p0[0, 2].tolist()[:2] == [0.5, 0.5] and bc0.decide(torch.tensor([[1, 0]]))[0, 2] == 0

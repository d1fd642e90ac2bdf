"""The bulk path (explain_batch: family tables, one pass, tensors) against per-input explanations and the oracle."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import RefBC, random_bc

from torchxplain.idx import BayesianClassifier, datasets, explain, explain_batch, relation_tensors
from torchxplain.idx import _tables as tables
from torchxplain.idx.stats import relation_shares
from torchxplain.testing import tiny_memory_budget

KITS = ("md", "sd", "cf")


def _sets(batch, kit, b):
    pairs = batch.pairs(kit)
    return {name: {pairs[p] for p in m[b].nonzero().flatten().tolist()} for name, m in batch.relations(kit).items()}


def _check_bulk_equals_per_input(bc, inputs, kits, rows, explanandum=None):
    """Every row of the bulk result equals the explanation of that input explained on its own."""
    batch = explain_batch(bc, inputs, kits, explanandum)
    for kit in kits:
        for b in rows:
            (alone,) = explain(bc, inputs[b : b + 1], kit, explanandum)
            assert {k: set(v) for k, v in alone.relations.items()} == _sets(batch, kit, b), (kit, b)
            assert alone.assignment == bc.decode(batch.sigma[b : b + 1])[0]
            assert alone.relevant == {bc.variables[v] for v in batch.relevant(kit)[b].nonzero().flatten().tolist()}
            probs = bc.predict_proba(inputs[b : b + 1])[0]
            for c, p in alone.probabilities.items():
                i = bc.index_of(c)
                assert p == pytest.approx(probs[i, batch.sigma[b, i]].item(), rel=1e-12)
    return batch


def test_child_bulk_equals_per_input(child):
    x = datasets.all_inputs(child)
    rows = torch.linspace(0, len(x) - 1, 40).long().tolist()
    batch = _check_bulk_equals_per_input(child, x, KITS, rows)
    _check_bulk_equals_per_input(child, x, KITS, rows[:10], explanandum="Disease")
    sigma, rel = relation_tensors(child, x)
    assert torch.equal(batch.sigma, sigma) and torch.equal(sigma, child.decide(x))
    for kit in KITS:
        for name, mask in rel[kit].items():
            assert torch.equal(batch.relations(kit)[name], mask)


@pytest.mark.slow
def test_votes_and_car_bulk_equal_per_input():
    from sklearn.naive_bayes import CategoricalNB

    df = datasets.votes("mode")
    feats = [c for c in df.columns if c != "party"]
    codes = np.stack([[["n", "y"].index(v) for v in df[c]] for c in feats], axis=1)
    nb = CategoricalNB(alpha=1.0).fit(codes, df["party"])
    votes = BayesianClassifier.from_sklearn(nb, feats, class_name="party", value_names={f: ["n", "y"] for f in feats})
    _check_bulk_equals_per_input(votes, torch.as_tensor(codes), KITS, list(range(0, 435, 29)))
    car_df = datasets.car()
    car = BayesianClassifier.fit(car_df, "class", values=datasets.CAR_VALUES)
    _check_bulk_equals_per_input(car, car.encode(car_df), KITS, list(range(0, 1728, 97)))


def _direct(monkeypatch):
    """Evaluate every family on the rows (no family tables)."""
    monkeypatch.setattr(tables, "MAX_FAMILY_TABLE", 0)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), naive=st.booleans())
def test_tables_equal_rows_and_the_oracle_on_random_classifiers(seed, naive):
    rng = random.Random(seed)
    values, structure, prior, cpt = random_bc(rng, naive, rng.randint(1, 4), rng.randint(1, 3))
    bc = BayesianClassifier(values, structure, prior, cpt)
    ref = RefBC(values, structure, prior, cpt)
    inputs = torch.tensor(ref.all_inputs())
    batch = explain_batch(bc, inputs, KITS)
    with pytest.MonkeyPatch.context() as mp:
        _direct(mp)
        fresh = BayesianClassifier(values, structure, prior, cpt)  # no cached tables
        rows = explain_batch(fresh, inputs, KITS)
    assert torch.equal(batch.sigma, rows.sigma) and torch.equal(batch.log_prob, rows.log_prob)
    for b, obs in enumerate(ref.all_inputs()):
        _, expected = ref.relations(obs)
        for kit in KITS:
            assert _sets(batch, kit, b) == expected[kit] == _sets(rows, kit, b), (kit, obs)


def test_child_tables_equal_rows(child, monkeypatch):
    x = datasets.all_inputs(child)
    batch = explain_batch(child, x, ("md", "sd"))
    _direct(monkeypatch)
    rows = explain_batch(BayesianClassifier.from_spec(child.spec), x, ("md", "sd"))  # a copy without cached tables
    assert torch.equal(batch.sigma, rows.sigma)
    for kit in ("md", "sd"):
        for name, mask in batch.relations(kit).items():
            assert torch.equal(mask, rows.relations(kit)[name])


def test_input_forms_give_the_same_batch(child):
    x = datasets.all_inputs(child)[::7]
    records = [{o: r[o] for o in child.observations} for r in child.decode(child.decide(x))]
    frame = pd.DataFrame(records)
    by_codes = explain_batch(child, x)
    for form in (records, frame, x.numpy(), tuple(records)):
        other = explain_batch(child, form)
        assert torch.equal(other.sigma, by_codes.sigma)
        for kit in KITS:
            for name, mask in by_codes.relations(kit).items():
                assert torch.equal(other.relations(kit)[name], mask)


def test_frames_agree_with_the_explanations(child):
    x = datasets.all_inputs(child)[:50]
    batch = explain_batch(child, x, ("md", "cf"))
    wide = batch.to_frame()
    long = batch.to_frame(layout="long")
    assert len(wide) == 50 and list(wide.columns[: len(child.variables)]) == list(child.variables)
    for kit in ("md", "cf"):
        for b, ex in enumerate(batch.explanations(kit)):
            for name, pairs in ex.relations.items():
                for x_, y in pairs:
                    assert wide.loc[b, f"{kit}: {x_}->{y}"] == name
            got = long[(long["input"] == b) & (long["kit"] == kit)]
            assert sum(map(len, ex.relations.values())) == len(got)
            assert {(r.relation, (r.influencer, r.influencee)) for r in got.itertuples()} == {
                (name, p) for name, pairs in ex.relations.items() for p in pairs
            }
            assert ex.assignment == {v: wide.loc[b, v] for v in child.variables}
    frame = explain(child, x, "sd", as_frame=True)
    assert frame.shape[0] == 50
    assert {c for c in frame.columns if c.startswith("sd: ")} == {f"sd: {a}->{b}" for a, b in child.influences}


def test_shares_on_the_bulk_path_equal_the_mask_means(child):
    x = datasets.all_inputs(child)
    shares = relation_shares(child, x)
    batch = explain_batch(child, x)
    assert shares["MD+"] == pytest.approx(100 * batch.relations("md")["support"].double().mean().item())
    assert shares["CF*"] == pytest.approx(100 * batch.relations("cf")["potential"].double().mean().item())


def test_chunks_and_empty_batches(child):
    x = datasets.all_inputs(child)[:300]
    full = explain_batch(child, x)
    with tiny_memory_budget(4096):
        tiny = explain_batch(child, x)
    assert torch.equal(full.sigma, tiny.sigma)
    for kit in KITS:
        for name, mask in full.relations(kit).items():
            assert torch.equal(mask, tiny.relations(kit)[name])
    empty = explain_batch(child, x[:0])
    assert len(empty) == 0 and empty.relations("md")["attack"].shape == (0, len(child.influences))
    assert explain(child, [], "md") == [] and len(explain(child, [], "cf", as_frame=True)) == 0


def test_attribution_kits_share_the_batch():
    bc = datasets.play_outside()
    x = datasets.all_inputs(bc)
    batch = explain_batch(bc, x, ("md", "shap"), background=x)
    assert batch.pairs("shap") == tuple((o, y) for y in bc.classifications for o in bc.observations)
    alone = explain(bc, x, "shap", background=x)
    for b, ex in enumerate(batch.explanations("shap")):
        assert ex.relations == alone[b].relations and ex.scores == alone[b].scores
    with pytest.raises(ValueError, match="pass kit="):
        batch.explanations()


def test_each_classifications_posterior_is_computed_once_per_joint_value(monkeypatch):
    """The dialectical tables' posteriors also fill the decision tables: one family_logits pass per family."""
    calls = []
    family_logits = BayesianClassifier.family_logits

    def counted(self, y, values):
        calls.append((y, values.shape[0]))
        return family_logits(self, y, values)

    fresh, reference = datasets.play_outside(), datasets.play_outside()
    inputs = datasets.all_inputs(fresh)
    monkeypatch.setattr(BayesianClassifier, "family_logits", counted)
    first = explain_batch(fresh, inputs, ("md", "sd"))
    assert sorted(y for y, _ in calls) == sorted(f.y for f in tables.families(fresh))  # once per family
    calls.clear()
    again = explain_batch(fresh, inputs, ("md", "sd"))
    assert not calls  # warm: everything from the cached tables
    assert torch.equal(first.sigma, again.sigma)
    for f in tables.families(fresh):  # the seeded decision table equals one built on its own
        seeded, built = tables.decision_table(fresh, f), tables.decision_table(reference, f)
        assert torch.equal(seeded[0], built[0]) and torch.equal(seeded[1], built[1])
    assert torch.equal(first.sigma, fresh(fresh.encode(inputs))[1])  # the forward pass decides the same

"""pgmpy networks (Asia: Table 4 exactly; Child: all 1,080 inputs), sklearn and data-frame construction."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from table2 import table2

from torchxplain.idx import BayesianClassifier, datasets, explain, relation_tensors
from torchxplain.idx.stats import relation_shares

pytest.importorskip("pgmpy")

# Table 4 of the paper, percentages
ASIA_TABLE4 = {"SD+": 87.5, "SD-": 12.5, "MD+": 87.5, "MD-": 12.5, "CF!": 46.9, "CF*": 9.4, "R^C": 62.5}
CHILD_TABLE4 = {"SD+": 77.5, "SD-": 22.5, "MD+": 65.4, "MD-": 15.1, "CF!": 34.6, "CF*": 27.6, "R^C": 64.0}


def test_asia_structure_and_table4_row():
    bc = datasets.asia()
    assert set(bc.observations) == {"xray", "dysp"} and len(bc.classifications) == 6
    assert len(bc.influences) == 8
    inputs = datasets.all_inputs(bc)
    assert inputs.shape == (4, 2)
    shares = relation_shares(bc, inputs)
    for key, paper in ASIA_TABLE4.items():
        assert round(shares[key], 1) == paper, key


def test_asia_conditionals_match_pgmpy_inference():
    """P(x | c) of each NBC equals a direct pgmpy VE query, and the marginals sum to 1."""
    from pgmpy.inference import VariableElimination

    net = datasets.pgmpy_network("asia")
    bc = BayesianClassifier.from_pgmpy(net)
    ve = VariableElimination(net)
    q = ve.query(["xray"], evidence={"either": "yes"}, show_progress=False)
    e = bc.influences.index(("xray", "either"))
    row = bc.value_names["either"].index("yes")
    got = bc.log_cpt[e, row, : len(bc.value_names["xray"])].exp().numpy()
    want = [q.values[q.state_names["xray"].index(v)] for v in bc.value_names["xray"]]
    np.testing.assert_allclose(got, want, rtol=1e-10)
    q2 = ve.query(["dysp"], evidence={"bronc": "no"}, show_progress=False)  # dysp has 2 parents: marginalised
    e2 = bc.influences.index(("dysp", "bronc"))
    got2 = bc.log_cpt[e2, bc.value_names["bronc"].index("no"), :2].exp().numpy()
    np.testing.assert_allclose(
        got2, [q2.values[q2.state_names["dysp"].index(v)] for v in bc.value_names["dysp"]], rtol=1e-10
    )


def test_child_all_inputs_shares_near_the_paper(child):
    inputs = datasets.all_inputs(child)
    assert inputs.shape == (1080, 7) and len(child.influences) == 25
    shares = relation_shares(child, inputs)
    assert shares["R^C"] == 64.0
    for key, paper in CHILD_TABLE4.items():
        assert abs(shares[key] - paper) < 3.0, (key, shares[key], paper)
    # Prop. 2 / Prop. 3 hold on Child; every input gets an explanation
    _, rel = relation_tensors(child, inputs, ("md", "sd"))
    assert not (rel["md"]["support"] & ~rel["sd"]["support"]).any()
    assert not (rel["md"]["attack"] & ~rel["sd"]["attack"]).any()


def test_child_explanandum_disease(child):
    ex = explain(child, datasets.all_inputs(child)[:5], "md", explanandum="Disease")
    for e in ex:
        assert "Disease" in e.relevant
        for rel in e.relations.values():
            for x, y in rel:
                assert x in e.relevant and y in e.relevant


def test_from_pgmpy_rejects_non_leaf_observations():
    with pytest.raises(ValueError, match="must be the network's leaves"):
        BayesianClassifier.from_pgmpy(datasets.pgmpy_network("asia"), observations=["xray"])
    with pytest.raises(ValueError, match="no network"):
        datasets.pgmpy_network("nonexistent")


def test_fit_reproduces_table1_and_sklearn():
    from sklearn.naive_bayes import CategoricalNB

    data = datasets.play_outside_data()
    order = {"w": ["l", "m", "h"], "t": ["l", "m", "h"], "p": ["l", "h"], "r": ["+", "-"], "o": ["+", "-"]}
    bc = BayesianClassifier.fit(data, {"r": ["t", "p"], "o": ["w", "t", "r"]}, alpha=0.1, values=order)
    table1 = datasets.play_outside()
    # Table 1 is this refit rounded to 2 decimals (3 entries nudged by < .01 so rows sum to 1)
    assert torch.allclose(bc.log_cpt.exp(), table1.log_cpt.exp(), atol=0.0125)
    assert torch.allclose(bc.log_prior.exp(), table1.log_prior.exp(), atol=0.005)
    # the refit gives the same Table 2 relations
    rows = table2()
    for kit in ("md", "sd", "cf"):
        for row, ex in zip(rows, explain(bc, [r["input"] for r in rows], kit)):
            assert {k: set(v) for k, v in ex.relations.items()} == row[kit]
    # each NBC equals sklearn's CategoricalNB(alpha=0.1)
    codes = np.stack([[order[c].index(v) for v in data[c]] for c in ("w", "t", "r")], axis=1)
    nb = CategoricalNB(alpha=0.1).fit(codes, [order["o"].index(v) for v in data["o"]])
    for j, x in enumerate(("w", "t", "r")):
        e = bc.influences.index((x, "o"))
        np.testing.assert_allclose(bc.log_cpt[e, :2, : len(order[x])].numpy(), nb.feature_log_prob_[j], rtol=1e-12)
    np.testing.assert_allclose(bc.log_prior[bc.index_of("o"), :2].numpy(), nb.class_log_prior_, rtol=1e-12)


def test_from_sklearn_votes_matches_sklearn_predictions():
    from sklearn.naive_bayes import CategoricalNB

    df = datasets.votes()
    assert df.shape == (435, 17) and (df["party"] == "democrat").sum() == 267
    feats = [c for c in df.columns if c != "party"]
    cats = ["n", "y", "?"]
    codes = np.stack([[cats.index(v) for v in df[c]] for c in feats], axis=1)
    nb = CategoricalNB(alpha=1.0).fit(codes, df["party"])
    bc = BayesianClassifier.from_sklearn(nb, feats, class_name="party", value_names={f: cats for f in feats})
    proba = bc.predict_proba(torch.as_tensor(codes))[:, bc.index_of("party"), :2]
    np.testing.assert_allclose(proba.numpy(), nb.predict_proba(codes), rtol=1e-9, atol=1e-12)
    assert bc.decode(bc.decide(torch.as_tensor(codes)))[0]["party"] == nb.predict(codes[:1])[0]
    # SD weights are data frequencies
    w = bc.sd_weight[bc.index_of(feats[0]), :3].numpy()
    np.testing.assert_allclose(w, [np.mean(codes[:, 0] == k) for k in range(3)])


def test_from_sklearn_names_values_from_the_encoder_or_the_frame_categories():
    """CategoricalNB sees codes: the names come from the OrdinalEncoder that made them, or from a categorical
    training frame passed as feature_names (category order), and explanations then speak those names."""
    from sklearn.naive_bayes import CategoricalNB
    from sklearn.preprocessing import OrdinalEncoder

    df = datasets.votes()
    feats = [c for c in df.columns if c != "party"][:4]
    encoder = OrdinalEncoder().fit(df[feats])
    nb = CategoricalNB().fit(encoder.transform(df[feats]), df["party"])
    by_encoder = BayesianClassifier.from_sklearn(nb, feats, "party", value_names=encoder)
    frame = df[feats].astype("category")
    by_frame = BayesianClassifier.from_sklearn(nb, frame, "party")
    for f, categories in zip(feats, encoder.categories_):
        assert by_encoder.value_names[f] == by_frame.value_names[f] == tuple(categories)  # sorted, as the encoder
    row = df[feats].iloc[[0]]
    assert explain(by_encoder, row, kit="md")[0].assignment == explain(by_frame, row, kit="md")[0].assignment
    with pytest.raises(ValueError, match="encoder of 3 columns"):
        BayesianClassifier.from_sklearn(nb, feats, "party", value_names=OrdinalEncoder().fit(df[feats[:3]]))


def test_fit_discretises_numeric_columns():
    import pandas as pd

    rng = np.random.default_rng(0)
    x = rng.normal(size=200)
    df = pd.DataFrame({"x": x, "z": rng.choice(["a", "b"], 200), "c": np.where(x > 0, "pos", "neg")})
    bc = BayesianClassifier.fit(df, "c", alpha=1.0, bins={"x": 4}, method="same_size")
    assert bc.value_names["x"] == ("b0", "b1", "b2", "b3")
    counts = torch.bincount(bc.encode(df[["x", "z"]])[:, bc.observations.index("x")], minlength=4)
    assert counts.tolist() == [50, 50, 50, 50]
    acc = (bc.decide(df)[:, bc.index_of("c")] == torch.as_tensor(x > 0).long()).double()
    assert acc.mean() > 0.9  # classes ordered neg < pos
    same_len = BayesianClassifier.fit(df, "c", bins=3, method="same_length")
    assert len(same_len.value_names["x"]) == 3
    with pytest.raises(ValueError, match="method"):
        BayesianClassifier.fit(df, "c", bins=3, method="quantile")


def test_car_loader():
    df = datasets.car()
    assert df.shape == (1728, 7)
    assert df["class"].value_counts().to_dict() == {"unacc": 1210, "acc": 384, "good": 69, "vgood": 65}
    bc = BayesianClassifier.fit(df, "class", alpha=1.0, values=datasets.CAR_VALUES)
    _, rel = relation_tensors(bc, df)
    assert rel["cf"]["critical"].shape == (1728, 6)


def test_votes_binary_variant():
    df = datasets.votes("mode")
    assert not (df == "?").any().any()
    assert set(df["crime"]) == {"y", "n"}
    raw = datasets.votes()
    assert ((raw["crime"] == df["crime"]) | (raw["crime"] == "?")).all()
    with pytest.raises(ValueError, match="missing"):
        datasets.votes("drop")


def _naive_network():
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    net = DiscreteBayesianNetwork([("c", "x"), ("c", "z")])
    net.add_cpds(
        TabularCPD("c", 2, [[0.3], [0.7]]),
        TabularCPD("x", 3, [[0.2, 0.5], [0.3, 0.4], [0.5, 0.1]], evidence=["c"], evidence_card=[2]),
        TabularCPD("z", 2, [[0.9, 0.4], [0.1, 0.6]], evidence=["c"], evidence_card=[2]),
    )
    return net


def test_from_pgmpy_is_exact_and_silent_on_a_naive_network():
    from pgmpy.inference import VariableElimination

    from torchxplain.idx import ChainApproximationWarning

    net = _naive_network()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ChainApproximationWarning)
        bc = BayesianClassifier.from_pgmpy(net)
    ve = VariableElimination(net)
    for x in range(3):
        for z in range(2):
            q = ve.query(["c"], evidence={"x": x, "z": z}, show_progress=False)
            got = bc.predict_proba(torch.tensor([[x, z]]))[0, bc.index_of("c"), :2].numpy()
            np.testing.assert_allclose(got, q.values, rtol=1e-12)


def test_from_pgmpy_warns_that_a_general_network_becomes_a_chain():
    from pgmpy.inference import VariableElimination

    from torchxplain.idx import ChainApproximationWarning

    net = datasets.pgmpy_network("asia")
    with pytest.warns(ChainApproximationWarning, match=r"chain of naive Bayes.*2 nodes have several parents"):
        bc = BayesianClassifier.from_pgmpy(net)
    # the warning is true: the chain's posterior of a classification differs from the network's own inference
    ve = VariableElimination(net)
    worst = 0.0
    for xray, dysp in datasets.all_inputs(bc).tolist():
        evidence = {"xray": bc.value_names["xray"][xray], "dysp": bc.value_names["dysp"][dysp]}
        q = ve.query(["smoke"], evidence=evidence, show_progress=False)
        chain = bc.predict_proba(torch.tensor([[xray, dysp]]))[0, bc.index_of("smoke")]
        for k, name in enumerate(bc.value_names["smoke"]):
            worst = max(worst, abs(chain[k].item() - q.values[q.state_names["smoke"].index(name)]))
    assert worst > 0.05

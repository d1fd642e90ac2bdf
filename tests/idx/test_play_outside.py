"""The paper's running example: every decision and relation set of Table 2, posteriors, Def. 5, errors."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from table2 import table2

import torchxplain as tx
from torchxplain.idx import BayesianClassifier, datasets, explain

ROWS = table2()
INPUTS = [r["input"] for r in ROWS]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("kit", ["md", "sd", "cf"])
def test_table2_every_cell(kit, dtype):
    bc = datasets.play_outside(dtype=dtype)
    explanations = explain(bc, INPUTS, kit=kit)
    assert len(explanations) == 18
    for row, ex in zip(ROWS, explanations):
        assert {y: ex.assignment[y] for y in "ro"} == row["sigma"], row["input"]
        assert {k: ex.assignment[k] for k in "wtp"} == row["input"]
        for name, expected in row[kit].items():
            assert set(ex.relations[name]) == expected, (row["input"], kit, name)


def test_posteriors_match_hand_computation():
    bc = datasets.play_outside()
    # P(r+ | t_m, p_l) and P(o- | w_l, t_m, r+) from Table 1 by Bayes' rule, written out
    r_plus = 0.67 * 0.25 * 0.75 / (0.67 * 0.25 * 0.75 + 0.33 * 0.49 * 0.02)
    o_minus = 0.78 * 0.28 * 0.22 * 0.85 / (0.78 * 0.28 * 0.22 * 0.85 + 0.22 * 0.48 * 0.72 * 0.02)
    proba = bc.predict_proba({"w": "l", "t": "m", "p": "l"})
    assert proba.shape == (1, 5, 3)
    assert proba[0, bc.index_of("r"), 0].item() == pytest.approx(r_plus, rel=1e-12)
    assert proba[0, bc.index_of("o"), 1].item() == pytest.approx(o_minus, rel=1e-12)
    assert proba[0, bc.index_of("r"), 2].item() == 0.0  # padding
    assert torch.allclose(proba.sum(-1), torch.ones(1, 5, dtype=proba.dtype))


def test_input_forms_agree():
    bc = datasets.play_outside()
    df = pd.DataFrame(INPUTS)
    codes = bc.encode(df)
    assert torch.equal(codes, bc.encode(INPUTS))
    assert torch.equal(bc.encode(INPUTS[3]), codes[3:4])
    assert [e.relations for e in explain(bc, codes, "sd")] == [e.relations for e in explain(bc, df, "sd")]
    # numpy codes, a tuple of dicts and a categorical DataFrame are the same inputs; the public namespace is one
    assert torch.equal(bc.encode(codes.numpy()), codes) and torch.equal(bc.encode(tuple(INPUTS)), codes)
    assert torch.equal(bc.encode(df.astype("category")), codes)
    assert tx.idx.explain is explain and tx.idx.BayesianClassifier is BayesianClassifier


def test_explanandum_is_connected_def5():
    bc = datasets.play_outside()
    # Figure 1 (ii)-(iv): input w_l, t_m, p_l
    a = {"w": "l", "t": "m", "p": "l"}
    (md,) = explain(bc, a, "md", explanandum="o")
    assert md.relevant == {"o", "r", "w", "t", "p"}
    assert md.relations == {"attack": {("w", "o"), ("t", "o")}, "support": {("r", "o"), ("p", "r")}}
    (sd,) = explain(bc, a, "sd", explanandum="o")
    assert sd.relations["attack"] == {("w", "o"), ("t", "o"), ("t", "r")}
    (cf,) = explain(bc, a, "cf", explanandum="o")
    assert cf.relations == {"critical": {("r", "o"), ("p", "r")}, "potential": set()}
    # row (m, l, h): r is in no CF relation with o, so Algorithm 1's (p, r) and (t, r) must not appear
    (cf2,) = explain(bc, {"w": "m", "t": "l", "p": "h"}, "cf", explanandum="o")
    assert cf2.relations == {"critical": {("t", "o")}, "potential": {("w", "o")}}
    assert cf2.relevant == {"o", "t", "w"}
    # row (m, l, l): only r supports o under MD, and p supports r
    (only,) = explain(bc, {"w": "m", "t": "l", "p": "l"}, "md", explanandum="o")
    assert only.relevant == {"o", "r", "p"}


def test_bad_inputs_are_named():
    bc = datasets.play_outside()
    with pytest.raises(ValueError, match="'x'"):
        bc.encode({"w": "l", "t": "l", "p": "l", "x": "l"})
    with pytest.raises(ValueError, match="not a value of 'p'"):
        bc.encode({"w": "l", "t": "l", "p": "m"})
    with pytest.raises(ValueError, match="lacks a value for observation 'p'"):
        bc.encode({"w": "l", "t": "l"})
    with pytest.raises(ValueError, match="out of range for observation 'p'"):
        bc.encode(torch.tensor([[0, 0, 2]]))
    with pytest.raises(ValueError, match=r"shape \(B, 3\)"):
        bc.encode(torch.tensor([0, 0, 1]))
    with pytest.raises(TypeError, match="integer dtype"):
        bc.encode(torch.tensor([[0.0, 0.0, 1.0]]))
    with pytest.raises(ValueError, match="unknown kit"):
        explain(bc, INPUTS, kit="xx")
    with pytest.raises(ValueError, match="explanandum must be a classification"):
        explain(bc, INPUTS, kit="md", explanandum="w")


def _parts():
    values = {"a": ["0", "1"], "b": ["0", "1"], "c": ["0", "1"]}
    priors = {"b": [0.5, 0.5], "c": [0.5, 0.5]}
    cpts = {("b", "a"): [[0.5, 0.5], [0.2, 0.8]], ("c", "b"): [[0.3, 0.7], [0.6, 0.4]]}
    return values, priors, cpts


def test_bad_classifiers_are_named():
    values, priors, cpts = _parts()
    BayesianClassifier(values, {"b": ["a"], "c": ["b"]}, priors, cpts)
    bad = dict(cpts)
    bad[("c", "b")] = [[0.3, 0.6], [0.6, 0.4]]
    with pytest.raises(ValueError, match=r"cpts\[\('c', 'b'\)\].*row '0' sums to 0.9"):
        BayesianClassifier(values, {"b": ["a"], "c": ["b"]}, priors, bad)
    cyc = dict(cpts)
    cyc[("b", "c")] = [[0.5, 0.5], [0.5, 0.5]]
    with pytest.raises(ValueError, match="cycle"):
        BayesianClassifier(values, {"b": ["a", "c"], "c": ["b"]}, priors, cyc)
    with pytest.raises(ValueError, match="unknown variable 'z'"):
        BayesianClassifier(values, {"b": ["z"], "c": ["b"]}, priors, cpts)
    with pytest.raises(ValueError, match=r"missing the table P\(a \| b\)"):
        BayesianClassifier(values, {"b": ["a"], "c": ["b"]}, priors, {("c", "b"): cpts[("c", "b")]})
    with pytest.raises(ValueError, match="shape"):
        BayesianClassifier(values, {"b": ["a"], "c": ["b"]}, priors, {**cpts, ("b", "a"): [[1.0], [1.0]]})
    with pytest.raises(ValueError, match=r"priors\['b'\] sums to 1.2"):
        BayesianClassifier(values, {"b": ["a"], "c": ["b"]}, {**priors, "b": [0.6, 0.6]}, cpts)


def test_cf_refuses_above_the_limit():
    bc = datasets.play_outside()
    with pytest.raises(ValueError, match=r"all 18 .*max_cf_assignments=10; raise max_cf_assignments"):
        explain(bc, INPUTS, "cf", max_cf_assignments=10)


def test_module_moves_dtype_and_results_do_not_change():
    bc = datasets.play_outside()
    bc32 = datasets.play_outside().to(torch.float32)
    assert bc32.log_cpt.dtype == torch.float32
    assert torch.equal(bc.decide(INPUTS), bc32.decide(INPUTS))


def test_with_sd_weights_changes_only_sd():
    bc = datasets.play_outside()
    uniform = bc.with_sd_weights("uniform")
    assert torch.allclose(uniform.sd_weight[bc.index_of("r"), :2], torch.tensor([0.5, 0.5], dtype=torch.float64))
    assert torch.equal(bc.sd_weight[bc.index_of("r"), :2], torch.tensor([0.67, 0.33], dtype=torch.float64))
    # weights on t's first value only: the SD test of (t, y) compares with P(sigma(a, y) | t = l) alone
    from reference import RefBC

    from torchxplain.idx.datasets import _PLAY_OUTSIDE_CPTS

    skewed = bc.with_sd_weights({"t": [1.0, 0.0, 0.0]})
    values = {v: list(bc.value_names[v]) for v in bc.variables}
    prior = {v: bc.log_prior[bc.index_of(v), : len(values[v])].exp().tolist() for v in bc.variables}
    weights = {**prior, "t": [1.0, 0.0, 0.0]}
    ref = RefBC(values, dict(bc.structure), prior, _PLAY_OUTSIDE_CPTS, weights)
    codes = [list(r) for r in datasets.all_inputs(bc).tolist()]
    for ex, obs in zip(explain(skewed, torch.tensor(codes), "sd"), codes):
        _, want = ref.relations(obs)
        assert {k: set(v) for k, v in ex.relations.items()} == want["sd"], obs
    with pytest.raises(ValueError, match=r"weights\['t'\] must have shape \(3,\)"):
        bc.with_sd_weights({"t": [0.5, 0.5]})
    with pytest.raises(ValueError, match="unknown variable"):
        bc.with_sd_weights({"zz": [1.0]})

"""Bad inputs for the IDX entry points (torchxplain.idx): each a clear early error naming the argument.

Every row is ``(what, callable, args, kwargs, error, pattern)``; the pattern names the argument and what it should
be (or the fix). The rows register as harness cases under the callable's public name.
"""

from __future__ import annotations

import json
import os
import tempfile

import torch

from tests.robustness.harness import case, exempt, result_case
from torchxplain import idx
from torchxplain._core.saved_fields import SavedFieldError
from torchxplain.idx import BayesianClassifier, datasets

X = "torchxplain.idx."
exempt(
    "a result container or table built by the library (its fields are the library's outputs)",
    *(
        X + n
        for n in ("Explanation", "ExplanationBatch", "CounterfactualTables", "ModifiedPosteriors", "ClassifierSpec")
    ),
)
exempt("a warning category", X + "ChainApproximationWarning")
exempt("a module namespace (its names have their own cases below)", X + "datasets", X + "stats")
exempt(
    "kernel functions on the library's own validated tensors (codes from encode, masks from relation_tensors, "
    "ModifiedPosteriors, CounterfactualTables); documented as such",
    *(X + n for n in ("connected", "md_relations", "sd_relations", "cf_relations", "modified_posteriors")),
)
exempt("takes validated codes; its options are those of shap_values/lime_values (covered)", X + "attribution_relations")

BC = datasets.play_outside()
A = {"w": "l", "t": "m", "p": "l"}
VALUES = {"a": ["0", "1"], "b": ["0", "1"], "c": ["0", "1"]}
PRIORS = {"b": [0.5, 0.5], "c": [0.5, 0.5]}
CPTS = {("b", "a"): [[0.5, 0.5], [0.2, 0.8]], ("c", "b"): [[0.3, 0.7], [0.6, 0.4]]}
STRUCTURE = {"b": ["a"], "c": ["b"]}


def _build(**changes):
    parts = {"values": VALUES, "structure": STRUCTURE, "priors": PRIORS, "cpts": CPTS, **changes}
    return BayesianClassifier(**parts)


CASES = {
    # explain / explain_batch
    "kit as a list": (
        idx.explain,
        (BC, A),
        {"kit": ["md", "sd"]},
        ValueError,
        r"kit must be one kit name.*explain_batch",
    ),
    "an attribution kit among relation kits (named the private idx._explain)": (
        idx.relation_tensors,
        (BC, A),
        {"kits": ["shap"]},
        ValueError,
        r"kit 'shap' is attribution-based; use torchxplain\.idx\.explain\(bc, inputs, kit='shap'\)",
    ),
    "unknown kit": (idx.explain, (BC, A), {"kit": "xx"}, ValueError, r"unknown kit 'xx'; expected one of"),
    "string input": (idx.explain, (BC, "w=l,t=m,p=l"), {}, TypeError, r"inputs must be a dict .*got the string"),
    "tuple of names": (idx.explain, (BC, ("l", "m", "l")), {}, TypeError, r"inputs must be a dict .*got tuple"),
    "unknown value": (idx.explain, (BC, {"w": "l", "t": "m", "p": "x"}), {}, ValueError, r"'x' is not a value of 'p'"),
    "unknown variable": (
        idx.explain,
        (BC, {**A, "q": "l"}),
        {},
        ValueError,
        r"inputs\[0\] names unknown variables \['q'\]",
    ),
    "missing observation": (idx.explain, (BC, {"w": "l", "t": "m"}), {}, ValueError, r"lacks a value for .*'p'"),
    "float codes": (idx.explain, (BC, torch.zeros(1, 3)), {}, TypeError, r"integer dtype.*\.long\(\)"),
    "1-D codes": (
        idx.explain,
        (BC, torch.zeros(3, dtype=torch.long)),
        {},
        ValueError,
        r"shape \(B, 3\).*codes\[None\]",
    ),
    "codes out of range": (idx.explain, (BC, torch.tensor([[0, 0, 5]])), {}, ValueError, r"out of range .*'p'"),
    "frame lacks columns": (
        idx.explain,
        (BC, datasets.play_outside_data()[["w", "t"]]),
        {},
        ValueError,
        r"lacks .*\['p'\]",
    ),
    "negative rtol": (idx.explain, (BC, A), {"rtol": -1}, ValueError, r"rtol must be a finite number >= 0.*-1"),
    "nan rtol": (idx.explain, (BC, A), {"rtol": float("nan")}, ValueError, r"rtol must be a finite number"),
    "zero cf budget": (
        idx.explain,
        (BC, A, "cf"),
        {"max_cf_assignments": 0},
        ValueError,
        r"max_cf_assignments must be >= 1, got 0",
    ),
    "cf budget too small": (
        idx.explain,
        (BC, A, "cf"),
        {"max_cf_assignments": 10},
        ValueError,
        r"raise max_cf_assignments",
    ),
    "explanandum": (idx.explain, (BC, A), {"explanandum": "w"}, ValueError, r"explanandum must be a classification"),
    "unknown option": (idx.explain, (BC, A), {"threshold": -1}, TypeError, r"unexpected options \['threshold'\]"),
    "as_frame given as a string": (
        idx.explain,
        (BC, A),
        {"as_frame": "no"},
        TypeError,
        r"as_frame must be True or False, got str 'no'",
    ),
    "batch kits empty": (
        idx.explain_batch,
        (BC, A),
        {"kits": []},
        ValueError,
        r"kits must be a kit name or a non-empty",
    ),
    "bad memory budget": (idx.explain, (BC, A), {"max_memory": 1}, ValueError, r"max_memory must be at least 1 MiB"),
    # attribution kits
    "shap background_size=0": (
        idx.shap_values,
        (BC, A),
        {"background_size": 0},
        ValueError,
        r"background_size must be >= 1, got 0",
    ),
    "shap empty background": (
        idx.shap_values,
        (BC, A),
        {"background": []},
        ValueError,
        r"background must hold at least one",
    ),
    "shap seed float": (idx.shap_values, (BC, A), {"seed": 1.7}, TypeError, r"seed must be a non-negative int.*1\.7"),
    "shap method": (idx.shap_values, (BC, A), {"method": "kernel"}, ValueError, r"method must be one of"),
    "shap outputs": (idx.shap_values, (BC, A), {"outputs": ["w"]}, ValueError, r"outputs must name classifications"),
    "lime kernel_width=0": (
        idx.lime_values,
        (BC, A),
        {"kernel_width": 0},
        ValueError,
        r"kernel_width must be a finite number > 0",
    ),
    "lime num_samples=0": (
        idx.lime_values,
        (BC, A),
        {"num_samples": 0},
        ValueError,
        r"num_samples must be >= 2, got 0",
    ),
    "lime alpha": (idx.lime_values, (BC, A), {"alpha": -1.0}, ValueError, r"alpha must be a finite number > 0"),
    "lime kernel_width as a string": (
        idx.lime_values,
        (BC, A),
        {"kernel_width": "wide"},
        TypeError,
        r"kernel_width must be a finite number > 0, got str",
    ),
    "shap max_players as a float": (
        idx.shap_values,
        (BC, A),
        {"max_players": 4.0},
        TypeError,
        r"max_players must be an int, got float",
    ),
    "rtol as a string": (idx.explain, (BC, A), {"rtol": "0"}, TypeError, r"rtol must be a finite number >= 0, got str"),
    "lime sampling": (
        idx.lime_values,
        (BC, A),
        {"sampling": torch.zeros(3, 3)},
        ValueError,
        r"sampling probabilities of .*'w'",
    ),
    "lime option via explain": (idx.explain, (BC, A, "lime"), {"background": []}, TypeError, r"unexpected options"),
    # classifiers
    "cpt not summing": (
        _build,
        (),
        {"cpts": {**CPTS, ("c", "b"): [[0.3, 0.6], [0.6, 0.4]]}},
        ValueError,
        r"row '0' sums to 0\.9.*normalise",
    ),
    "cyclic graph": (
        _build,
        (),
        {"structure": {"b": ["a", "c"], "c": ["b"]}, "cpts": {**CPTS, ("b", "c"): [[0.5, 0.5], [0.5, 0.5]]}},
        ValueError,
        r"structure has a cycle .*remove an edge",
    ),
    "negative probability": (
        _build,
        (),
        {"priors": {**PRIORS, "b": [1.5, -0.5]}},
        ValueError,
        r"priors\['b'\] must hold .*>= 0",
    ),
    "unknown child": (_build, (), {"structure": {"b": ["z"], "c": ["b"]}}, ValueError, r"unknown variable 'z'.*add it"),
    "values as a string": (_build, (), {"values": {**VALUES, "a": "01"}}, TypeError, r"values\['a'\] must be a list"),
    "integer dtype": (_build, (), {"dtype": torch.int64}, TypeError, r"dtype must be a floating torch dtype"),
    "NaN bin edges": (
        _build,
        (),
        {"bin_edges": {"a": [0.0, float("nan")]}},
        ValueError,
        r"bin_edges\['a'\] must hold at least two finite, strictly increasing edges",
    ),
    "bin edges of a classification": (
        _build,
        (),
        {"bin_edges": {"b": [0.0, 1.0, 2.0]}},
        ValueError,
        r"bin_edges names 'b', which is not an observation",
    ),
    "sd weights unknown": (BC.with_sd_weights, ({"zz": [1.0]},), {}, ValueError, r"unknown variable"),
    "fit alpha": (
        BayesianClassifier.fit,
        (datasets.play_outside_data(), "o"),
        {"alpha": 0},
        ValueError,
        r"alpha must be",
    ),
    "fit NaN alpha": (
        BayesianClassifier.fit,
        (datasets.play_outside_data(), "o"),
        {"alpha": float("nan")},
        ValueError,
        r"alpha must be a finite number > 0, got nan",
    ),
    "fit frame": (BayesianClassifier.fit, ([{"o": "+"}], "o"), {}, TypeError, r"frame must be a pandas DataFrame"),
    "relation_tensors lime": (idx.relation_tensors, (BC, A, "lime"), {}, ValueError, r"attribution-based.*explain"),
    "shares kits": (idx.stats.relation_shares, (BC, A), {"kits": ["zz"]}, ValueError, r"unknown kit 'zz'"),
}


def _register(what: str, fn, args, kwargs, error, pattern) -> None:
    target = X + ("BayesianClassifier" if fn in (_build, BC.with_sd_weights, BayesianClassifier.fit) else fn.__name__)
    case(target, what, error, pattern)(lambda: fn(*args, **kwargs))


for _what, (_fn, _args, _kwargs, _error, _pattern) in CASES.items():
    _register(_what, _fn, _args, _kwargs, _error, _pattern)


@case(X + "counterfactual_tables", "a zero budget", ValueError, r"max_cf_assignments must be >= 1, got 0")
def _():
    idx.counterfactual_tables(BC, 0)


# ---------------------------------------------------------------- crafted or damaged classifier files
def _load_edited(edit) -> None:
    """Save the play-outside classifier, apply ``edit(data)`` to its JSON, write it back and load it."""
    data = json.loads(json.dumps(BC.to_dict()))
    edit(data)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bc.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f)
        BayesianClassifier.load(path)


def _put(*keys_and_value):
    *keys, value = keys_and_value

    def edit(data):
        node = data
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value

    return edit


def _many_values(data):
    """Observation 'w' with 20,000 values (consistent tables): the padded (E, V, V) tables would take 36 GiB."""
    k = 20_000
    data["values"]["w"] = [f"v{i}" for i in range(k)]
    data["priors"]["w"] = data["sd_weights"]["w"] = [1.0 / k] * k
    data["cpts"][2][2] = [[1.0 / k] * k, [1.0 / k] * k]


CRAFTED = {
    "a dtype no torch has": (_put("dtype", "no_such_dtype"), r"'dtype' must name a dtype from \['bfloat16'"),
    "an integer dtype": (_put("dtype", "int64"), r"'dtype' must name a dtype"),
    "value names that are numbers": (_put("values", "p", [0, 1]), r"values\['p'\] must be a list of strings"),
    "a NaN prior": (_put("priors", "r", [float("nan"), 0.33]), r"priors\['r'\] holds NaN"),
    "priors given as bools": (_put("priors", "p", [True, False]), r"priors\['p'\] must be numbers"),
    "a ragged table": (_put("cpts", 0, 2, [[0.25, 0.75], [0.5]]), r"cpts\[0\]\['table'\] is a ragged"),
    "cpts as a mapping": (_put("cpts", {"r": {}}), r"'cpts' must be a list of \[classification, child, table\]"),
    "a table for an unknown child": (_put("cpts", 0, 1, "zz"), r"cpts\[0\]\['child'\] must be one of"),
    "a row that does not sum to 1": (_put("cpts", 1, 2, [[0.5, 0.6], [0.02, 0.98]]), r"sums to 1\.1, expected 1"),
    "structure as a string": (_put("structure", "r", "tp"), r"structure\['r'\] must be a list of strings"),
    "NaN bin edges": (_put("bin_edges", {"w": [0.0, float("nan"), 2.0]}), r"bin_edges\['w'\] holds NaN"),
    "unsorted bin edges": (_put("bin_edges", {"w": [0.0, 2.0, 1.0]}), r"strictly increasing edges"),
    "bin edges of a classification": (_put("bin_edges", {"o": [0.0, 1.0, 2.0]}), r"names 'o', which is not an obs"),
    "bin edges given as a string": (_put("bin_edges", {"w": "0,1,2"}), r"bin_edges\['w'\] must be numbers"),
    "bins that are no value names": (_put("bin_edges", {"w": [0.0, 1.0, 2.0]}), r"defines bins \['b0', 'b1'\]"),
    "20,000 values of one variable (36 GiB of padded tables)": (_many_values, r"padded tables need 36621 MiB"),
}

for _what, (_edit, _match) in CRAFTED.items():
    case(X + "BayesianClassifier", f"load: {_what}", SavedFieldError, r"bc\.json': .*" + _match)(
        lambda edit=_edit: _load_edited(edit)
    )


@case(X + "BayesianClassifier", "load: a file that is not UTF-8", ValueError, r"not a saved Bayesian classifier")
def _():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bc.json")
        with open(path, "wb") as f:
            f.write(b"\xff\xfe\x00garbage")
        BayesianClassifier.load(path)


# ---------------------------------------------------------------- inputs, data frames, networks and statistics
FRAME = datasets.play_outside_data()


def _nan_frame():
    frame = FRAME.copy()
    frame.loc[2, "t"] = None
    return frame


def _float_frame():
    return FRAME.assign(t=[0.05 * i for i in range(len(FRAME))])


def _empty_network():
    from pgmpy.models import DiscreteBayesianNetwork

    return DiscreteBayesianNetwork([("a", "b"), ("a", "c")])


def _masks(width: int) -> dict:
    return {name: torch.zeros(2, width, dtype=torch.bool) for name in ("attack", "support")}


MORE = {
    "a value for a classification": (
        idx.explain,
        (BC, {**A, "r": "-"}),
        {},
        ValueError,
        r"inputs\[0\] gives values for the classifications \['r'\], which the classifier decides",
    ),
    "a frame column naming no variable": (
        idx.explain,
        (BC, FRAME[["w", "t", "p"]].assign(zz=1)),
        {},
        ValueError,
        r"columns \['zz'\] that name no variable",
    ),
    "a frame with NaN": (
        idx.explain,
        (BC, _nan_frame()[["w", "t", "p"]]),
        {},
        ValueError,
        r"missing value \(NaN/None\) in column 't', row 2",
    ),
    "shap on one input without background": (
        idx.explain,
        (BC, A, "shap"),
        {},
        ValueError,
        r"the shap kit needs a background.*every Shapley value would be 0.*background=",
    ),
    "shap_values on one input without background": (
        idx.shap_values,
        (BC, [A, A]),
        {},
        ValueError,
        r"hold one distinct assignment",
    ),
}
for _what, (_fn, _args, _kwargs, _error, _pattern) in MORE.items():
    _register(_what, _fn, _args, _kwargs, _error, _pattern)


@case(X + "BayesianClassifier", "fit: a frame with NaN", ValueError, r"column 't' holds a missing value.*row 2")
def _():
    BayesianClassifier.fit(_nan_frame(), "o")


@case(
    X + "BayesianClassifier", "fit: a float column (18 categories)", ValueError, r"'t' is floating point with 18 dist"
)
def _():
    BayesianClassifier.fit(_float_frame(), "o")


@case(X + "BayesianClassifier", "from_pgmpy: a network without CPDs", ValueError, r"no CPD for the nodes \['a', 'b'")
def _():
    BayesianClassifier.from_pgmpy(_empty_network())


@case(X + "stats", "agreement of masks over other pairs", ValueError, r"must have one shape \(B, P\)")
def _():
    idx.stats.agreement(_masks(3), _masks(4))


@case(X + "stats", "agreement without a support mask", ValueError, r"second must map 'attack' and 'support'")
def _():
    idx.stats.agreement(_masks(3), {"attack": _masks(3)["attack"]})


@case(X + "stats", "violations of float masks", ValueError, r"relations\['attack'\] must be a 2-D bool tensor")
def _():
    idx.stats.monotonicity_violations({k: v.float() for k, v in _masks(3).items()}, _masks(3))


def _relations(bc: BayesianClassifier, kits: tuple) -> tuple:
    batch = idx.explain_batch(
        bc, datasets.all_inputs(datasets.play_outside()), kits, background=datasets.all_inputs(bc)
    )
    return batch.sigma, {k: batch.relations(k) for k in kits}


@result_case(X + "BayesianClassifier", "float16 and bfloat16 classifiers explain the 18 inputs as float64 does")
def _():
    kits = ("md", "sd", "cf", "shap", "lime")
    sigma, reference = _relations(datasets.play_outside(torch.float64), kits)
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        bc = datasets.play_outside(dtype)
        assert bc.dtype == dtype and bc.predict_proba(A).dtype == (
            torch.float64 if dtype == torch.float64 else torch.float32
        )
        got_sigma, got = _relations(bc, kits)
        assert torch.equal(got_sigma, sigma), dtype
        for kit in kits:
            for name, mask in reference[kit].items():
                assert torch.equal(got[kit][name], mask), (dtype, kit, name)


@result_case(X + "shap_values", "one input against every assignment: exact Shapley values by subsets")
def _():
    import itertools
    import math

    bc = datasets.play_outside()
    background = datasets.all_inputs(bc)
    a = bc.encode(A)[0]
    phi = idx.shap_values(bc, A, background=background)[0]  # (|O|, |C|)
    m = len(bc.observations)
    sigma = bc.decide(A)[0]

    def value(coalition: set, y: int) -> float:
        rows = torch.where(torch.tensor([j in coalition for j in range(m)]), a, background)
        return float(bc.predict_proba(rows)[:, y, sigma[y]].mean())

    for k, c in enumerate(bc.classifications):
        y = bc.index_of(c)
        for j in range(m):
            others = [i for i in range(m) if i != j]
            want = sum(
                math.factorial(len(s))
                * math.factorial(m - len(s) - 1)
                / math.factorial(m)
                * (value(set(s) | {j}, y) - value(set(s), y))
                for r in range(m)
                for s in itertools.combinations(others, r)
            )
            assert abs(float(phi[j, k]) - want) < 1e-12, (c, j)
    (explanation,) = idx.explain(bc, A, "shap", background=background)
    assert explanation.relations["support"] or explanation.relations["attack"]  # no longer empty


DS = "torchxplain.idx.datasets."
ST = "torchxplain.idx.stats."
exempt("a constant (column names and value labels of a shipped data set)", DS + "CAR_COLUMNS", DS + "CAR_VALUES")
exempt("a constant (the votes data set's column names)", DS + "VOTES_COLUMNS")
exempt("a constant (Table 4's column label of each relation)", ST + "SHARE_COLUMNS")
exempt("takes no argument (the paper's 18 inputs as a DataFrame)", DS + "play_outside_data")
exempt("takes no argument (the shipped UCI car data as a DataFrame)", DS + "car")


@case(DS + "play_outside", "an integer dtype", TypeError, r"dtype must be a floating torch dtype")
def _():
    idx.datasets.play_outside(torch.int64)


@case(DS + "votes", "an unknown missing-value rule", ValueError, r"missing must be 'keep' or 'mode', got 'drop'")
def _():
    idx.datasets.votes(missing="drop")


@case(DS + "pgmpy_network", "a network pgmpy does not bundle", ValueError, r"pgmpy bundles no network 'nope'")
def _():
    idx.datasets.pgmpy_network("nope")


@case(DS + "chain_from_network", "a network pgmpy does not bundle", ValueError, r"pgmpy bundles no network")
def _():
    idx.datasets.chain_from_network("nope")


@case(DS + "asia", "a dtype given as a string", TypeError, r"dtype must be a floating torch dtype.*'float64'")
def _():
    idx.datasets.asia("float64")


@case(DS + "child", "an integer dtype", TypeError, r"dtype must be a floating torch dtype")
def _():
    idx.datasets.child(torch.int32)


@case(DS + "alarm", "an integer dtype", TypeError, r"dtype must be a floating torch dtype")
def _():
    idx.datasets.alarm(torch.int32)


@case(DS + "all_inputs", "a string instead of a classifier", TypeError, r"bc must be an idx.BayesianClassifier")
def _():
    idx.datasets.all_inputs("play_outside")


@case(ST + "structural_share", "a number instead of a classifier", TypeError, r"bc must be an idx.BayesianClass")
def _():
    idx.stats.structural_share(3)


@case(ST + "shares_from_relations", "a list instead of relation tensors", TypeError, r"relation_tensors' output")
def _():
    idx.stats.shares_from_relations([1])


@case(ST + "relation_shares", "a string instead of inputs", TypeError, r"inputs must be a dict")
def _():
    idx.stats.relation_shares(idx.datasets.play_outside(), "rows")


@case(ST + "agreement", "masks of different widths", ValueError, r"first must map 'attack' and 'support'")
def _():
    idx.stats.agreement({"a": torch.zeros(2, 3, dtype=torch.bool)}, {"a": torch.zeros(2, 4, dtype=torch.bool)})


@case(ST + "monotonicity_violations", "dicts without the relation names", ValueError, r"must map 'attack'")
def _():
    idx.stats.monotonicity_violations({"a": torch.zeros(2)}, {"b": torch.zeros(2)})


@case(X + "explain", "a string instead of a classifier", TypeError, r"bc must be an idx.BayesianClassifier")
def _():
    idx.explain("play_outside", {"w": "l"})

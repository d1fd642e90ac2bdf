"""Extraction internals: packed support keys, repeated features, the bounded term buffer and support families."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import torchxplain as tx
from tests.fourier.tree_cases import binary_data, diabetes, fit, make_model
from torchxplain.fourier import TreeEnsemble
from torchxplain.fourier.trees._extraction import extract, spectrum_of_ensemble
from torchxplain.fourier.trees._terms import TermBuffer
from torchxplain.fourier.trees.adapters._base import concat_trees
from torchxplain.fourier.trees.adapters._dispatch import parse_model_outputs
from torchxplain.fourier.values._keys import KeyLayout, canonical
from torchxplain.testing import tiny_memory_budget


def _cube(n: int) -> np.ndarray:
    return np.array([[(s >> i) & 1 for i in range(n)] for s in range(2**n)], dtype=np.float64)


def _dense_spectrum(table: np.ndarray, n: int) -> np.ndarray:
    """Walsh–Hadamard amplitudes of a function tabulated on the cube (frequencies enumerated like inputs)."""
    cube = _cube(n)
    return (1.0 - 2.0 * ((cube @ cube.T) % 2)) @ table / 2**n


def _as_dense(spec: tx.FourierSpectrum) -> np.ndarray:
    n = spec.n_features
    out = np.zeros(2**n)
    out[(spec.frequencies.long() * (2 ** torch.arange(n))).sum(1).numpy()] = spec.amplitudes.numpy()
    return out


def _walk(tree: dict, row: np.ndarray) -> float:
    node = 0
    while tree["left"][node] >= 0:
        node = tree["right"][node] if row[tree["feature"][node]] > 0.5 else tree["left"][node]
    return float(tree["value"][node])


@st.composite
def random_tree(draw, n: int) -> dict:
    """A random binary tree on ``n`` binary features; a feature may repeat along a path (its second split is then
    degenerate, which the expansion must still get exactly right)."""
    left, right, feature, value = [], [], [], []
    frontier = [0]
    left.append(-1), right.append(-1), feature.append(-1), value.append(0.0)
    while frontier and len(left) < 25:
        node = frontier.pop(0)
        if draw(st.booleans()) or node == 0:
            feature[node] = draw(st.integers(0, n - 1))
            for side in (left, right):
                side[node] = len(left)
                left.append(-1), right.append(-1), feature.append(-1)
                value.append(draw(st.floats(-4, 4, allow_nan=False)))
                frontier.append(side[node])
    thr = [0.5] * len(left)
    zeros = [False] * len(left)
    return {"left": left, "right": right, "feature": feature, "threshold": thr, "nan_right": zeros,
            "zero_is_missing": zeros, "value": value}  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(st.lists(random_tree(6), min_size=1, max_size=3), st.floats(-2, 2, allow_nan=False))
def test_random_trees_equal_the_transform_of_their_table(trees: list[dict], offset: float) -> None:
    n = 6
    ensemble = concat_trees(
        trees, [1.0] * len(trees), offset=offset, n_features=n, strict=False,
        input_dtype=np.dtype(np.float64), description="random trees",
    )  # fmt: skip
    cube = _cube(n)
    table = np.array([offset + sum(_walk(t, row) for t in trees) for row in cube])
    spec, families = extract(ensemble)
    _check_cover(spec, families)
    np.testing.assert_allclose(_as_dense(spec), _dense_spectrum(table, n), atol=1e-12, rtol=0)
    with tiny_memory_budget(2048):
        small = spectrum_of_ensemble(ensemble)
    assert torch.equal(small.frequencies, spec.frequencies)


def test_canonical_rows() -> None:
    empty = 9
    rows = torch.tensor([[3, 1, 3, 9], [2, 2, 2, 5], [4, 4, 4, 4], [9, 9, 9, 9], [7, 0, 9, 8]])
    parity = [[1, 9, 9, 9], [2, 5, 9, 9], [9, 9, 9, 9], [9, 9, 9, 9], [0, 7, 8, 9]]
    union = [[1, 3, 9, 9], [2, 5, 9, 9], [4, 9, 9, 9], [9, 9, 9, 9], [0, 7, 8, 9]]
    assert canonical(rows.clone(), empty, parity=True).tolist() == parity
    assert canonical(rows.clone(), empty, parity=False).tolist() == union


@pytest.mark.parametrize("n,width", [(1, 1), (13, 8), (80, 8), (3476, 9), (10**6, 12)])
def test_keys_round_trip(n: int, width: int) -> None:
    layout = KeyLayout.create(n, width)
    rng = np.random.default_rng(n)
    rows = np.sort(np.where(rng.random((500, width)) < 0.6, rng.integers(0, n, (500, width)), n), axis=1)
    rows = canonical(torch.from_numpy(rows), n, parity=False)
    back = layout.unpack(layout.pack(rows))
    assert torch.equal(back, torch.where(rows < n, rows, -1))
    assert int(layout.pack(torch.full((1, width), n)).abs().sum()) == 0  # the constant has the all-zero key


def test_buffer_merges_and_stays_within_its_capacity() -> None:
    buffer = TermBuffer(n_words=1, capacity=64, device=torch.device("cpu"))
    keys = torch.arange(10).repeat(30)[:, None]  # 10 distinct keys, 300 rows
    for part in keys.split(25):
        buffer.add(part, torch.ones(len(part)), torch.ones(len(part)), part[:, 0] % 3)
    words, amp, _, family = buffer.result()
    assert buffer.capacity == 64 and buffer.merges > 1
    assert words[:, 0].tolist() == list(range(10)) and amp.tolist() == [30.0] * 10
    assert family is not None and family.tolist() == [k % 3 for k in range(10)]


def test_extraction_under_the_smallest_public_budget() -> None:
    """max_memory='1MB' (the floor) bounds every intermediate; the spectrum is the same as under the default."""
    x, y = diabetes()
    model = make_model("rf_reg", 8).set_params(n_estimators=12).fit(x, y)
    exact = tx.tree_spectrum(model)
    small = tx.tree_spectrum(model, max_memory="1MB")
    assert len(exact) > 20_000 and torch.equal(small.frequencies, exact.frequencies)
    torch.testing.assert_close(small.amplitudes, exact.amplitudes, atol=1e-12, rtol=0)
    with pytest.raises(ValueError, match="max_memory must be at least 1 MiB"):
        tx.tree_spectrum(model, max_memory=1000)


def _check_cover(spec: tx.FourierSpectrum, families) -> None:
    """Every frequency of degree > 0 lies inside its family's members; the constant has none; the recorded
    features are the frequencies' own."""
    features = [frozenset(torch.nonzero(row).flatten().tolist()) for row in spec.frequencies]
    members = [frozenset(row[row >= 0].tolist()) for row in families.members]
    assert families.family.shape == (len(spec),)
    for f, fam in zip(features, families.family.tolist()):
        assert (fam == -1) if not f else f <= members[fam]
    recorded = [frozenset(r[r < spec.n_features].tolist()) for r in families.features]
    assert recorded == features
    assert families.sizes.tolist() == [len(m) for m in members] == sorted(families.sizes.tolist())


@pytest.mark.parametrize("kind", ["rf_reg", "xgb_clf", "lgb_reg", "cat_reg"])
@pytest.mark.parametrize("binary", [True, False])
def test_families_are_maximal_and_hold_each_frequency(kind: str, binary: bool) -> None:
    """Binary inputs: the families are root-to-leaf path sets, none nested in another (the tree-structural merge
    is maximal). Continuous inputs: the maximal supports of the spectrum, each inside a path set."""
    x, y = binary_data(10, seed=3) if binary or kind == "cat_reg" else diabetes()
    model = fit(kind, 4, x, y)
    spec, families = tx.tree_spectrum(model, return_families=True)
    _check_cover(spec, families)
    supports = [frozenset(row[row >= 0].tolist()) for row in families.members]
    assert len(set(supports)) == len(supports) and all(supports)
    assert not any(a < b for a, b in itertools.permutations(supports, 2))  # none nested in another
    paths = _path_sets(parse_model_outputs(model)[0], model, encoded=not binary and kind != "cat_reg")
    assert all(any(s <= p for p in paths) for s in supports)  # each family lies on a root-to-leaf path
    if binary or kind == "cat_reg":
        assert set(supports) <= paths  # and is one
    else:
        frequencies = {frozenset(torch.nonzero(row).flatten().tolist()) for row in spec.frequencies}
        assert set(supports) <= frequencies  # a maximal support of the spectrum


def _path_sets(ensemble: TreeEnsemble, model, encoded: bool) -> set[frozenset[int]]:
    """Root-to-leaf sets of binary features (split indices of the model's encoding, or its inputs)."""
    index = {tuple(row): i for i, row in enumerate(tx.fourier.TreeEncoding.from_model(model).split_table())}
    splits = ensemble.split_table()
    node_split = np.cumsum(~ensemble.is_leaf) - 1
    out: set[frozenset[int]] = set()

    def feature(row: np.ndarray) -> int:
        return index[tuple(row)] if encoded else int(row[0])

    for block_start, block in zip(ensemble.split_offsets()[1:], ensemble.oblivious):
        for t in range(block.n_trees):
            rows = splits[block_start + t * block.depth : block_start + (t + 1) * block.depth]
            out.add(frozenset(feature(r) for r in rows))
    stack = [(int(r), frozenset()) for r in ensemble.roots]
    while stack:
        node, path = stack.pop()
        if ensemble.left[node] < 0:
            out.add(path)
            continue
        step = path | {feature(splits[node_split[node]])}
        stack += [(int(ensemble.left[node]), step), (int(ensemble.right[node]), step)]
    return out


@st.composite
def continuous_tree(draw, p: int) -> dict:
    """A random tree on ``p`` continuous features with few thresholds, random NaN sides and zero-as-missing."""
    tree = draw(random_tree(p))
    size = len(tree["left"])
    tree["threshold"] = [draw(st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.0])) for _ in range(size)]
    tree["nan_right"] = [draw(st.booleans()) for _ in range(size)]
    tree["zero_is_missing"] = [draw(st.booleans()) and draw(st.booleans()) for _ in range(size)]
    return tree


@settings(max_examples=60, deadline=None)
@given(st.lists(continuous_tree(2), min_size=1, max_size=3))
def test_interval_form_equals_the_trees_on_every_input(trees: list[dict]) -> None:
    """Continuous inputs (with NaN and zero-as-missing routing): the interval form is exact on every encoded row."""
    ensemble = concat_trees(
        trees, [1.0] * len(trees), offset=0.5, n_features=2, strict=False,
        input_dtype=np.dtype(np.float64), description="random continuous trees",
    )  # fmt: skip
    encoding = tx.fourier.TreeEncoding.from_ensemble(ensemble)
    grid = np.array([-2.0, -1.0, -0.5, 0.0, 1e-40, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, np.nan])
    x = np.array(list(itertools.product(grid, grid)))
    expected = np.full(len(x), 0.5)
    internal_split = np.cumsum(~ensemble.is_leaf) - 1
    for root in ensemble.roots:
        node = np.full(len(x), root)
        for _ in range(30):
            inner = ensemble.left[node] >= 0
            if not inner.any():
                break
            split = internal_split[node[inner]]
            right = ensemble.goes_right(x[inner, ensemble.feature[node[inner]]], split)
            node[inner] = np.where(right, ensemble.right[node[inner]], ensemble.left[node[inner]])
        expected += ensemble.value[node]
    spec = spectrum_of_ensemble(ensemble, encoding)
    np.testing.assert_allclose(spec.evaluate(encoding.transform(x)).numpy(), expected, atol=1e-12, rtol=0)


def test_thresholds_of_one_feature_collapse_to_an_interval() -> None:
    """Three nested splits on one feature: degree 1 (not 3), four terms plus the constant."""
    tree = {
        "left": [1, -1, 3, 5, -1, -1, -1], "right": [2, -1, 4, 6, -1, -1, -1],
        "feature": [0, -1, 0, 0, -1, -1, -1], "threshold": [1.0, 0, 3.0, 2.0, 0, 0, 0],
        "nan_right": [False] * 7, "zero_is_missing": [False] * 7, "value": [0, 1.0, 0, 0, 4.0, 2.0, 3.0],
    }  # fmt: skip
    ensemble = concat_trees(
        [tree], [1.0], offset=0.0, n_features=1, strict=False, input_dtype=np.dtype(np.float64), description="t"
    )
    encoding = tx.fourier.TreeEncoding.from_ensemble(ensemble)
    spec = spectrum_of_ensemble(ensemble, encoding)
    assert encoding.n_binary == 3 and spec.degree == 1 and len(spec) == 4
    x = np.array([[0.5], [1.5], [2.5], [3.5], [np.nan]])
    np.testing.assert_allclose(spec.evaluate(encoding.transform(x)).numpy(), [1, 2, 3, 4, 1], atol=1e-15, rtol=0)


@pytest.mark.parametrize("encoding", ["auto", "binary"])
def test_single_leaf_trees_give_the_constant(encoding: str) -> None:
    x = np.random.default_rng(0).normal(size=(50, 3))
    model = make_model("gbm_reg", 3).fit(x, np.full(50, 2.5))  # every tree is one leaf
    spec, families = tx.tree_spectrum(model, encoding=encoding, return_families=True)
    assert len(spec) == 1 and spec.degree == 0 and float(spec.amplitudes[0]) == pytest.approx(2.5, abs=1e-12)
    assert len(families) == 0 and families.family.tolist() == [-1]


@st.composite
def random_continuous_tree(draw) -> dict:
    """A random tree on 2 continuous features whose thresholds come from three values, so a split repeats along a
    path (the interval of a leaf then has a repeated endpoint) and NaN goes either way."""
    left, right, feature, threshold, nan_right, value = [-1], [-1], [-1], [0.0], [False], [0.0]
    frontier = [0]
    while frontier and len(left) < 31:
        node = frontier.pop(0)
        if draw(st.booleans()) or node == 0:
            feature[node] = draw(st.integers(0, 1))
            threshold[node] = draw(st.sampled_from([-0.5, 0.0, 0.5]))
            nan_right[node] = draw(st.booleans())
            for side in (left, right):
                side[node] = len(left)
                left.append(-1), right.append(-1), feature.append(-1), threshold.append(0.0), nan_right.append(False)
                value.append(draw(st.floats(-4, 4, allow_nan=False)))
                frontier.append(side[node])
    zeros = [False] * len(left)
    return {"left": left, "right": right, "feature": feature, "threshold": threshold, "nan_right": nan_right,
            "zero_is_missing": zeros, "value": value}  # fmt: skip


def _walk_continuous(tree: dict, row: np.ndarray) -> float:
    node = 0
    while tree["left"][node] >= 0:
        v = row[tree["feature"][node]]
        right = tree["nan_right"][node] if np.isnan(v) else v > tree["threshold"][node]
        node = tree["right"][node] if right else tree["left"][node]
    return float(tree["value"][node])


@settings(max_examples=40, deadline=None)
@given(st.lists(random_continuous_tree(), min_size=1, max_size=3))
def test_interval_expansion_of_repeated_splits_equals_the_trees(trees: list[dict]) -> None:
    """Leaf by leaf (thresholds), with repeated and redundant splits on a path: the spectrum on the encoded rows is
    the trees' own output, rows with NaN included."""
    ensemble = concat_trees(
        trees, [1.0] * len(trees), offset=0.25, n_features=2, strict=False,
        input_dtype=np.dtype(np.float64), description="random trees",
    )  # fmt: skip
    encoding = tx.fourier.TreeEncoding.from_ensemble(ensemble)
    rng = np.random.default_rng(0)
    x = rng.choice([-1.0, -0.5, -0.2, 0.0, 0.3, 0.5, 1.0, np.nan], size=(64, 2))
    spec, families = extract(ensemble, encoding)
    _check_cover(spec, families)
    expected = np.array([0.25 + sum(_walk_continuous(t, row) for t in trees) for row in x])
    np.testing.assert_allclose(spec.evaluate(encoding.transform(x)).numpy(), expected, atol=1e-12, rtol=0)

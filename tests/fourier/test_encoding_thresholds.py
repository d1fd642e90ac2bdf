"""``ThresholdEncoding.from_data``: thresholds that follow the data's values.

References are independent of the implementation: numpy sorting for the slots, a per-quantile search for the
capped rule, and brute-force Shapley values over raw features (``tree_cases``) for a model that is piecewise
constant on the encoding's bins, whose spectrum is the Walsh–Hadamard transform of its table on every code.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import torchxplain as tx
from tests.fourier.tree_cases import brute_force_values, coalition_values
from torchxplain._core.saved_fields import SavedFields
from torchxplain.fourier.encoding._encoders import ThresholdEncoder, encoder_from_fields

ThresholdEncoding = tx.fourier.ThresholdEncoding


def _data(seed: int = 0, rows: int = 60) -> np.ndarray:
    """Continuous, repeated (rounded), binary and constant columns."""
    rng = np.random.default_rng(seed)
    return np.stack(
        [
            rng.normal(size=rows),
            rng.normal(size=rows).round(1),
            rng.integers(0, 2, size=rows).astype(float),
            np.full(rows, 3.0),
        ],
        axis=1,
    )


def _slot(encoding: ThresholdEncoding, x: np.ndarray) -> np.ndarray:
    """``(N, p)`` slot index of every value: how many of its feature's thresholds it lies right of."""
    codes = encoding.transform(torch.as_tensor(x)).numpy()
    feature = encoding.feature.numpy()
    return np.stack([codes[:, feature == j].sum(1) for j in range(encoding.n_features)], axis=1).astype(int)


def test_every_value_of_the_data_gets_its_own_slot_in_order():
    data = _data()
    background = _data(seed=1, rows=10)
    encoding = ThresholdEncoding.from_data(data, background=background)
    pooled = np.concatenate((data, background))
    slots = _slot(encoding, pooled)
    for j in range(pooled.shape[1]):
        distinct = np.unique(pooled[:, j])
        assert int((encoding.feature == j).sum()) == len(distinct) - 1
        np.testing.assert_array_equal(slots[:, j], np.searchsorted(distinct, pooled[:, j]))  # rank of the value
    assert encoding.n_features == 4 and encoding.input_dtype == torch.float64
    assert encoding.feature.tolist() == sorted(encoding.feature.tolist())
    assert not bool(encoding.nan_right.any()) and not encoding.strict


def test_a_hybrid_of_rows_has_the_hybrid_of_their_codes():
    data = _data()
    encoding = ThresholdEncoding.from_data(data)
    rng = np.random.default_rng(3)
    x, b = data[rng.integers(0, 60, 50)], data[rng.integers(0, 60, 50)]
    take = rng.random((50, 4)) < 0.5
    hybrid = np.where(take, x, b)
    codes = lambda rows: encoding.transform(torch.as_tensor(rows))  # noqa: E731
    bit_take = torch.as_tensor(take)[:, encoding.feature]
    assert torch.equal(codes(hybrid), torch.where(bit_take, codes(x), codes(b)))


def test_unseen_values_fall_into_the_nearest_slot():
    data = _data()
    encoding = ThresholdEncoding.from_data(data)
    rng = np.random.default_rng(4)
    unseen = rng.normal(scale=2.0, size=(200, 4))
    slots = _slot(encoding, unseen)
    for j in range(3):
        distinct = np.unique(data[:, j])
        distance = np.abs(unseen[:, j, None] - distinct[None])
        nearest = distance.argmin(1)  # the first of two equally near values: the lower one
        np.testing.assert_array_equal(slots[:, j], nearest)
    assert (slots[:, 3] == 0).all()  # a constant feature has one slot


def test_adjacent_floats_stay_apart():
    a = np.array([1.0, np.nextafter(1.0, 2.0), 2.0, np.nextafter(2.0, 1.0)])[:, None]
    encoding = ThresholdEncoding.from_data(a)
    assert len(set(_slot(encoding, a)[:, 0].tolist())) == 4


def test_float32_data_compares_in_float32():
    data32 = _data().astype(np.float32)
    encoding = ThresholdEncoding.from_data(torch.as_tensor(data32))
    assert encoding.input_dtype == torch.float32
    # float64 copies of the float32 values land where the values do
    codes32 = encoding.transform(torch.as_tensor(data32))
    codes64 = encoding.transform(torch.as_tensor(data32.astype(np.float64)))
    assert torch.equal(codes32.double(), codes64)


def _capped_reference(values: np.ndarray, cap: int) -> np.ndarray:
    """The documented capped rule, one quantile at a time: for each q/(cap + 1), the first gap between distinct
    sorted values at which at least that share of the rows lies to the left."""
    ordered = np.sort(values)
    n = len(ordered)
    gaps = [i for i in range(n - 1) if ordered[i + 1] > ordered[i]]
    mids = [ordered[i] + (ordered[i + 1] - ordered[i]) / 2 for i in gaps]
    if len(gaps) <= cap:
        return np.array(mids)
    chosen = []
    for q in range(1, cap + 1):
        past = [g for g, i in enumerate(gaps) if (i + 1) / n >= q / (cap + 1) - 1e-12]
        if past and past[0] not in chosen:
            chosen.append(past[0])
    return np.array([mids[g] for g in sorted(chosen)])


@pytest.mark.parametrize("cap", [1, 3, 8, 40])
def test_max_thresholds_keeps_equal_count_bins(cap):
    rng = np.random.default_rng(5)
    data = np.stack([rng.normal(size=300), rng.exponential(size=300).round(1), rng.integers(0, 3, 300)], 1)
    encoding = ThresholdEncoding.from_data(data, max_thresholds=cap)
    for j in range(3):
        kept = encoding.threshold[encoding.feature == j].numpy()
        assert len(kept) <= cap
        np.testing.assert_array_equal(kept, _capped_reference(data[:, j], cap))
    # a repeated value is never split, and the three-valued column keeps both of its thresholds once cap >= 2
    slots = _slot(encoding, data)
    for value in np.unique(data[:, 1]):
        assert len(set(slots[data[:, 1] == value, 1].tolist())) == 1
    assert int((encoding.feature == 2).sum()) == min(2, cap)
    if cap == 40:  # equal-count bins: no bin of the continuous column holds much more than 300 / 41 rows
        assert np.bincount(slots[:, 0]).max() <= 2 * 300 / (cap + 1)


def test_dataframe_names_flow_and_mismatches_are_refused():
    data = pd.DataFrame(_data(), columns=["age", "bmi", "sex", "const"])
    encoding = ThresholdEncoding.from_data(data, background=data.iloc[:5])
    assert encoding.feature_names == ("age", "bmi", "sex", "const")
    with pytest.raises(ValueError, match="columns"):
        encoding.transform(data[["bmi", "age", "sex", "const"]])
    with pytest.raises(ValueError, match="background"):
        ThresholdEncoding.from_data(data, background=data.rename(columns={"age": "AGE"}))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"data": np.array([[0.0, np.nan]])}, ValueError, "data contains NaN or infinite"),
        ({"data": np.ones((3, 2)), "background": np.array([[np.inf, 0.0]])}, ValueError, "background contains NaN"),
        ({"data": np.ones((3, 2)), "background": np.ones((3, 3))}, ValueError, "background has 3 features"),
        ({"data": np.ones((3, 2)), "max_thresholds": 0}, ValueError, "max_thresholds"),
        ({"data": np.ones((0, 2))}, ValueError, "data is empty"),
        ({"data": np.array([["a"]])}, TypeError, "must hold numbers"),
    ],
)
def test_bad_input_is_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        ThresholdEncoding.from_data(**kwargs)


def test_the_encoder_round_trips_the_thresholds_bit_for_bit():
    rng = np.random.default_rng(6)
    data = rng.normal(size=(40, 3)) * 1e-7 + 1.0  # thresholds that differ in their last bits
    encoding = ThresholdEncoding.from_data(data)
    encoder = ThresholdEncoder(encoding)
    prefix = "encoder."
    state = {prefix + k: v for k, v in encoder.state_dict().items()}
    fields = SavedFields({"encoder": encoder.config()}, state, dims={"n_binary": encoder.n_binary, "n_inputs": 3})
    back = encoder_from_fields(fields).encoding
    assert torch.equal(back.threshold, encoding.threshold) and torch.equal(back.feature, encoding.feature)
    x = torch.as_tensor(rng.normal(size=(30, 3)) * 1e-7 + 1.0)
    assert torch.equal(back.transform(x), encoding.transform(x))


def _walsh(table: np.ndarray) -> np.ndarray:
    """Walsh–Hadamard amplitudes ``a_f = 2^-n Σ_z h(z) (-1)^{<f,z>}`` of a table over ``{0,1}^n`` (bit i of the index
    is feature i)."""
    a = table.astype(np.float64).copy()
    h = 1
    while h < a.size:
        a = a.reshape(-1, 2, h)
        a = np.stack((a[:, 0] + a[:, 1], a[:, 0] - a[:, 1]), axis=1).reshape(-1)
        h *= 2
    return a / table.size


def test_a_model_piecewise_constant_on_the_bins_has_exact_values():
    """A model that is a table over the bins (main effects, a pair and a triple interaction) is a spectrum on the
    codes: the WHT of its table on every code, with a slot read as the number of its feature's bits that are on.
    Its grouped closed-form values per original feature equal brute-force Shapley values of the raw model, for
    rows of the data and for unseen rows."""
    rng = np.random.default_rng(7)
    data = np.stack([rng.normal(size=50).round(1), rng.integers(0, 3, 50).astype(float), rng.normal(size=50)], 1)
    encoding = ThresholdEncoding.from_data(data, max_thresholds=4)
    n = encoding.n_binary
    sizes = [int((encoding.feature == j).sum()) + 1 for j in range(3)]
    main = [rng.normal(size=s) for s in sizes]
    pair = rng.normal(size=(sizes[0], sizes[1]))
    triple = rng.normal(size=sizes)

    def table_model(slots: np.ndarray) -> np.ndarray:
        s0, s1, s2 = slots.T
        return main[0][s0] + main[1][s1] + main[2][s2] + pair[s0, s1] + 0.5 * triple[s0, s1, s2]

    codes = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1).astype(float)
    feature = encoding.feature.numpy()
    slots = np.stack([codes[:, feature == j].sum(1) for j in range(3)], 1).astype(int)
    amplitudes = _walsh(table_model(slots))
    spectrum = tx.FourierSpectrum(torch.tensor(codes, dtype=torch.bool), torch.tensor(amplitudes)).prune(
        threshold=1e-12
    )
    background = data[:8]
    rows = np.concatenate((data[10:16], rng.normal(scale=1.5, size=(6, 3))))
    phi = tx.fourier.shapley_values(
        spectrum, encoding.transform(rows), encoding.transform(background), groups=encoding.groups
    )
    raw_model = lambda x: table_model(_slot(encoding, x))  # noqa: E731
    expected = brute_force_values(coalition_values(raw_model, rows, background))
    np.testing.assert_allclose(phi.numpy(), expected, atol=1e-9, rtol=0)

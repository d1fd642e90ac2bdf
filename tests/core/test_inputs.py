"""The public-boundary conversion layer: tensors, numpy, lists and pandas in; clear errors for the rest."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from torchxplain._core.inputs import check_feature_names, to_tensor


def test_tensor_is_kept_as_is():
    x = torch.rand(3, 2, dtype=torch.float64)
    out = to_tensor(x, "x")
    assert out.tensor is x and out.feature_names is None


def test_numpy_and_lists_keep_their_values_and_dtype():
    a = np.arange(6, dtype=np.float64).reshape(3, 2)
    out = to_tensor(a, "x")
    assert out.tensor.dtype == torch.float64 and torch.equal(out.tensor, torch.from_numpy(a))
    ints = to_tensor([[0, 1], [1, 0]], "x").tensor
    assert ints.dtype == torch.int64 and ints.tolist() == [[0, 1], [1, 0]]
    view = to_tensor(a[:, ::-1], "x").tensor  # a non-contiguous view converts too
    assert view.tolist() == a[:, ::-1].tolist()


def test_dataframe_keeps_column_names_and_values():
    frame = pd.DataFrame({"age": [1.5, 2.0], "smoker": [True, False], "n": [3, 4]})
    out = to_tensor(frame, "x")
    assert out.feature_names == ("age", "smoker", "n")
    assert out.tensor.tolist() == [[1.5, 1.0, 3.0], [2.0, 0.0, 4.0]]


def test_nullable_columns_become_nan():
    frame = pd.DataFrame({"a": pd.array([1, None], dtype="Int64"), "b": [0.5, 1.0]})
    t = to_tensor(frame, "x").tensor
    assert t.dtype == torch.float64 and torch.isnan(t[1, 0]) and t[0].tolist() == [1.0, 0.5]


def test_series_converts_to_one_dimension():
    out = to_tensor(pd.Series([0, 1, 1], name="y"), "y", ndim=1)
    assert out.tensor.tolist() == [0, 1, 1]


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        (pd.DataFrame({"colour": ["red", "blue"]}), TypeError, "column 'colour'.*encode"),
        (pd.DataFrame({"c": pd.Categorical(["a", "b"])}), TypeError, "column 'c'"),
        (np.array(["a", "b"]), TypeError, "must hold numbers"),
        ([[1, 2], [3]], ValueError, "ragged"),
        ("x", TypeError, "got str"),
        (3.0, TypeError, "got float"),
        (torch.zeros(2, dtype=torch.complex64), TypeError, "real-valued"),
    ],
)
def test_bad_inputs_name_the_argument_and_the_fix(value, error, match):
    with pytest.raises(error, match=match):
        to_tensor(value, "x")


def test_dimension_check():
    with pytest.raises(ValueError, match="x must be 2-D, got a 1-D input of shape"):
        to_tensor(np.zeros(3), "x", ndim=2)


def test_feature_names_checked_against_fit_time():
    check_feature_names(("a", "b"), ("a", "b"), "inputs")
    check_feature_names(None, ("a", "b"), "inputs")
    with pytest.raises(ValueError, match=r"missing \['b'\], unexpected \['c'\]"):
        check_feature_names(("a", "b"), ("a", "c"), "inputs")
    with pytest.raises(ValueError, match="another order"):
        check_feature_names(("a", "b"), ("b", "a"), "inputs")


def test_read_only_arrays_convert_without_a_warning():
    import warnings

    a = np.arange(4.0).reshape(2, 2)
    a.setflags(write=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = to_tensor(a, "x").tensor
    assert t.tolist() == [[0.0, 1.0], [2.0, 3.0]]

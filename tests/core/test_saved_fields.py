"""SavedFields, the validated reader every loader uses: each reader refuses what the constructors refuse."""

from __future__ import annotations

import pytest
import torch

from torchxplain._core.saved_fields import SavedFieldError, SavedFields


def test_config_readers_refuse_what_would_be_coerced():
    fields = SavedFields(
        {"relaxed": "no", "ok": False, "n": 2.0, "k": 3, "x": float("nan"), "dtype": "no_such_dtype", "kind": "rbf"}
    )
    with pytest.raises(SavedFieldError, match=r"saved field 'relaxed' must be true or false, got str 'no'"):
        fields.flag("relaxed")
    assert fields.flag("ok") is False and fields.flag("absent", optional=True) is None
    with pytest.raises(SavedFieldError, match=r"'n' must be an int, got float '2.0'"):
        fields.integer("n", minimum=1)
    with pytest.raises(SavedFieldError, match=r"'k' must be >= 0 and <= 2, got 3"):
        fields.integer("k", 0, 2)  # a crafted size is bounded before anything is allocated
    with pytest.raises(SavedFieldError, match=r"'x' must be a finite number > 0, got nan"):
        fields.number("x", greater_than=0)
    with pytest.raises(SavedFieldError, match=r"'dtype' must name a dtype from \['bfloat16', 'float16'"):
        fields.dtype("dtype")
    assert fields.dtype("absent", default="float32") == torch.float32
    assert fields.choice("kind", ("rbf", "linear")) == "rbf"
    with pytest.raises(SavedFieldError, match=r"'missing' is missing; the file is damaged or was edited: re-save"):
        fields.value("missing")


def test_tensors_are_checked_against_bound_dimensions_and_values():
    state = {
        "x": torch.zeros(4, 3),
        "xi": torch.tensor([1.0, 0.0, 2.0]),
        "w": torch.zeros(5),
        "codes": torch.tensor([0, 2, 1]),
        "bits": torch.tensor([0.0, 1.0, 0.5]),
    }
    fields = SavedFields({"names": ["a", "b"]}, state)
    assert fields.tensor("x", ("N", "J")).shape == (4, 3) and fields.dim("J") == 3
    with pytest.raises(SavedFieldError, match=r"'w' has J = 5, but an earlier field has J = 3"):
        fields.tensor("w", ("J",))
    with pytest.raises(SavedFieldError, match=r"'xi' must hold nonzero values \(first offending entry at index \(1,\)"):
        fields.tensor("xi", ("J",), nonzero=True)
    with pytest.raises(SavedFieldError, match=r"'codes' must be a floating tensor, got dtype torch.int64"):
        fields.tensor("codes")
    assert fields.tensor("codes", ("J",), kind="int", minimum=0, maximum=2).tolist() == [0, 2, 1]
    with pytest.raises(SavedFieldError, match=r"'bits' must hold only 0 and 1"):
        fields.tensor("bits", binary=True)
    with pytest.raises(SavedFieldError, match=r"'names' has 2 names, expected 3 \(one per feature\)"):
        fields.names("names", "J")
    fields.require(True, "x", "never raised")
    with pytest.raises(SavedFieldError, match=r"saved field 'x' disagrees"):
        fields.require(False, "x", "disagrees")


def test_expanded_views_are_refused_and_others_come_back_dense():
    huge = torch.zeros(1, 8).expand(2**28, 8)  # a few bytes on disk, 8 GiB once materialised
    strided = torch.arange(12.0).reshape(3, 4).T  # non-contiguous but dense: returned contiguous
    fields = SavedFields({}, {"background": huge, "t": strided})
    with pytest.raises(SavedFieldError, match=r"'background' is an expanded \(stride-0\) view: shape \(268435456, 8\)"):
        fields.tensor("background")
    out = fields.tensor("t")
    assert out.is_contiguous() and torch.equal(out, strided)


def test_nested_json_sections_name_their_fields():
    fields = SavedFields({"priors": {"r": [0.5, True], "o": [[0.2, 0.8], [0.1]], "p": [0.25, 0.75]}})
    priors = fields.section("priors")
    with pytest.raises(SavedFieldError, match=r"saved field priors\['r'\] must be numbers"):
        priors.numbers("r")
    with pytest.raises(SavedFieldError, match=r"priors\['o'\] is a ragged nested list"):
        priors.numbers("o")
    assert priors.numbers("p", (2,)).dtype == torch.float64
    with pytest.raises(SavedFieldError, match=r"saved field priors must be a mapping"):
        SavedFields({"priors": [1]}).section("priors")
    custom = SavedFields({}, {}, fix="resume with the run that wrote it")
    with pytest.raises(SavedFieldError, match=r"'x' is missing from the state; resume with the run that wrote it$"):
        custom.tensor("x")

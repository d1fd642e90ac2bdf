"""Aggregate statistics (Tables 4-6) against counts made directly from the transcribed Table 2."""

from __future__ import annotations

import pytest
import torch
from table2 import table2

from torchxplain.idx import datasets, relation_tensors
from torchxplain.idx.stats import agreement, monotonicity_violations, relation_shares, structural_share

ROWS = table2()


def _count(kit, name):
    return sum(len(r[kit][name]) for r in ROWS)


def test_play_outside_shares_equal_table2_counts():
    bc = datasets.play_outside()
    shares = relation_shares(bc, [r["input"] for r in ROWS])
    cells = 18 * 5
    assert shares["SD+"] == pytest.approx(100 * _count("sd", "support") / cells)
    assert shares["MD-"] == pytest.approx(100 * _count("md", "attack") / cells)
    assert shares["CF*"] == pytest.approx(100 * _count("cf", "potential") / cells)
    assert shares["R^C"] == structural_share(bc) == 20.0  # (r, o) is the one classification pair of five


def test_violations_and_agreement_from_table2():
    bc = datasets.play_outside()
    _, rel = relation_tensors(bc, [r["input"] for r in ROWS])
    assert monotonicity_violations(rel["md"], rel["md"]) == 0.0
    sd_total = _count("sd", "attack") + _count("sd", "support")
    md_total = _count("md", "attack") + _count("md", "support")
    # MD within SD (Prop. 2), so the SD relations that break monotonicity are exactly the non-bold ones
    assert monotonicity_violations(rel["sd"], rel["md"]) == pytest.approx(100 * (sd_total - md_total) / sd_total)
    assert agreement(rel["md"], rel["sd"]) == pytest.approx(100 * md_total / (18 * 5))
    columns = torch.tensor([bc.influences.index(("t", "r")), bc.influences.index(("p", "r"))])
    want = sum(
        len(r["md"]["attack"] & {("t", "r"), ("p", "r")}) + len(r["md"]["support"] & {("t", "r"), ("p", "r")})
        for r in ROWS
    )
    assert agreement(rel["md"], rel["sd"], columns) == pytest.approx(100 * want / (18 * 2))

"""Packed bit rows: each word is the binary number its columns spell (independent reference: Python integers)."""

from __future__ import annotations

import pytest
import torch

from torchxplain.fourier.spectrum._bitrows import WORD_BITS, pack_rows, unique_rows


@pytest.mark.parametrize("n", [1, 20, 52, 53, 62, 63, 130])
def test_each_word_is_the_number_its_bits_spell(n):
    x = torch.rand(40, n, generator=torch.Generator().manual_seed(n)) < 0.5
    x[0] = True  # the largest word of each width
    expected = [
        [sum(1 << j for j in range(min(WORD_BITS, n - start)) if row[start + j]) for start in range(0, n, WORD_BITS)]
        for row in x.tolist()
    ]
    assert pack_rows(x).tolist() == expected


def test_unique_rows_are_the_distinct_rows_with_counts():
    x = torch.tensor([[1, 0, 1], [0, 0, 0], [1, 0, 1], [0, 1, 0]], dtype=torch.bool)
    rows, inverse, counts = unique_rows(x)
    assert sorted(map(tuple, rows.int().tolist())) == [(0, 0, 0), (0, 1, 0), (1, 0, 1)]
    assert torch.equal(rows[inverse], x)
    assert dict(zip(map(tuple, rows.int().tolist()), counts.tolist()))[(1, 0, 1)] == 2

"""Built-in classifiers and data: the paper's play-outside example, UCI votes and car, pgmpy networks."""

from __future__ import annotations

from typing import Any

import torch

from torchxplain.idx.classifier import BayesianClassifier

_THIRD = 1.0 / 3.0

# Table 1 of Rago et al. (2021), as printed (observation priors .33 stored as 1/3).
_PLAY_OUTSIDE_CPTS = {
    ("r", "t"): [[0.25, 0.25, 0.50], [0.49, 0.49, 0.02]],
    ("r", "p"): [[0.75, 0.25], [0.02, 0.98]],
    ("o", "w"): [[0.48, 0.26, 0.26], [0.28, 0.36, 0.36]],
    ("o", "t"): [[0.26, 0.72, 0.02], [0.36, 0.22, 0.42]],
    ("o", "r"): [[0.02, 0.98], [0.85, 0.15]],
}

# The 18 rows of Table 2 (inputs w, t, p and the decisions r, o) in the paper's printed order.
_PLAY_OUTSIDE_ROWS = """
l l l + -
m l l + -
l m l + -
m m l + -
h l l + -
l h l + -
h m l + -
m h l + -
h h l + -
l l h - +
m l h - -
l m h - +
m m h - +
h l h - -
l h h + -
h m h - +
m h h + -
h h h + -
"""


def play_outside(dtype: torch.dtype = torch.float64) -> BayesianClassifier:
    """The play-outside chain classifier of the paper's Figure 1 with the parameters of Table 1.

    Observations ``w`` (wind), ``t`` (temperature) with values ``l, m, h`` and ``p`` (pressure) with
    ``l, h``; classifications ``r`` (raining: an NBC over ``t, p``) and ``o`` (play outside: an NBC over
    ``w, t, r``), both with values ``+, -``.
    """
    values = {"w": ["l", "m", "h"], "t": ["l", "m", "h"], "p": ["l", "h"], "r": ["+", "-"], "o": ["+", "-"]}
    priors = {"w": [_THIRD] * 3, "t": [_THIRD] * 3, "p": [0.5, 0.5], "r": [0.67, 0.33], "o": [0.22, 0.78]}
    return BayesianClassifier(
        values, {"r": ["t", "p"], "o": ["w", "t", "r"]}, priors, _PLAY_OUTSIDE_CPTS, dtype=dtype
    )


def play_outside_data() -> Any:
    """Table 2's 18 rows as a DataFrame with columns ``w, t, p, r, o`` (Table 1's training data)."""
    import pandas as pd

    rows = [line.split() for line in _PLAY_OUTSIDE_ROWS.strip().splitlines()]
    return pd.DataFrame(rows, columns=["w", "t", "p", "r", "o"])

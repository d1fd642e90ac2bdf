"""Built-in classifiers and data: the paper's play-outside example, UCI votes and car, pgmpy networks."""

from __future__ import annotations

import gzip
import importlib.resources
import io
import warnings
from collections.abc import Sequence
from typing import Any

import torch

from torchxplain.idx._classifier import BayesianClassifier, check_classifier

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

    Example:
        >>> from torchxplain import idx
        >>> bc = idx.datasets.play_outside()
        >>> bc.observations, bc.classifications
        (('w', 't', 'p'), ('r', 'o'))
    """
    values = {"w": ["l", "m", "h"], "t": ["l", "m", "h"], "p": ["l", "h"], "r": ["+", "-"], "o": ["+", "-"]}
    priors = {"w": [_THIRD] * 3, "t": [_THIRD] * 3, "p": [0.5, 0.5], "r": [0.67, 0.33], "o": [0.22, 0.78]}
    return BayesianClassifier(values, {"r": ["t", "p"], "o": ["w", "t", "r"]}, priors, _PLAY_OUTSIDE_CPTS, dtype=dtype)


def play_outside_data() -> Any:
    """Table 2's 18 rows as a DataFrame with columns ``w, t, p, r, o`` (Table 1's training data)."""
    import pandas as pd

    rows = [line.split() for line in _PLAY_OUTSIDE_ROWS.strip().splitlines()]
    return pd.DataFrame(rows, columns=["w", "t", "p", "r", "o"])


#: The columns of :func:`votes`: the class (``party``) and the 16 votes, in the UCI file's order.
VOTES_COLUMNS = (
    "party",
    "handicapped-infants",
    "water-project-cost-sharing",
    "adoption-of-the-budget-resolution",
    "physician-fee-freeze",
    "el-salvador-aid",
    "religious-groups-in-schools",
    "anti-satellite-test-ban",
    "aid-to-nicaraguan-contras",
    "mx-missile",
    "immigration",
    "synfuels-corporation-cutback",
    "education-spending",
    "superfund-right-to-sue",
    "crime",
    "duty-free-exports",
    "export-administration-act-south-africa",
)
#: The columns of :func:`car`: six attributes and the class, in the UCI file's order.
CAR_COLUMNS = ("buying", "maint", "doors", "persons", "lug_boot", "safety", "class")
#: Each column of :func:`car` -> its values, in their natural order (the class last).
CAR_VALUES = {
    "buying": ("vhigh", "high", "med", "low"),
    "maint": ("vhigh", "high", "med", "low"),
    "doors": ("2", "3", "4", "5more"),
    "persons": ("2", "4", "more"),
    "lug_boot": ("small", "med", "big"),
    "safety": ("low", "med", "high"),
    "class": ("unacc", "acc", "good", "vgood"),
}


def _read_shipped(name: str, columns: Sequence[str]) -> Any:
    import pandas as pd

    raw = (importlib.resources.files("torchxplain") / "data" / name).read_bytes()
    return pd.read_csv(io.BytesIO(gzip.decompress(raw)), header=None, names=list(columns), dtype=str)


def votes(missing: str = "keep") -> Any:
    """UCI Congressional Voting Records 1984: 435 rows, ``party`` and 16 votes (CC BY 4.0).

    ``missing="keep"`` keeps ``?`` (neither yea nor nay) as a third value; ``"mode"`` replaces it by the
    column's most frequent vote, giving binary observations as in the paper's Table 3.
    """
    frame = _read_shipped("votes_house_84.data.gz", VOTES_COLUMNS)
    if missing == "mode":
        for col in VOTES_COLUMNS[1:]:
            frame[col] = frame[col].replace("?", frame.loc[frame[col] != "?", col].mode()[0])
    elif missing != "keep":
        raise ValueError(f"missing must be 'keep' or 'mode', got {missing!r}")
    return frame


def car() -> Any:
    """UCI Car Evaluation: 1,728 rows, 6 categorical attributes and ``class`` (CC BY 4.0)."""
    return _read_shipped("car_evaluation.data.gz", CAR_COLUMNS)


def pgmpy_network(name: str) -> Any:
    """A discrete Bayesian network bundled with pgmpy (``"asia"``, ``"child"``, ``"alarm"``, ...), read offline.

    Reads ``pgmpy/utils/example_models/<name>.bif.gz`` from the installed wheel (never the network).
    """
    from pgmpy.readwrite import BIFReader

    path = importlib.resources.files("pgmpy") / "utils" / "example_models" / f"{name}.bif.gz"
    if not path.is_file():
        raise ValueError(f"pgmpy bundles no network {name!r} (looked for {path})")
    return BIFReader(string=gzip.decompress(path.read_bytes()).decode()).get_model()


def chain_from_network(name: str, dtype: torch.dtype = torch.float64) -> BayesianClassifier:
    """A bundled pgmpy network as a chain of naive Bayes classifiers (``BayesianClassifier.from_pgmpy``).

    Every non-leaf node is decided from its children's values, with ``P(child | node)`` from the network (other
    parents marginalised out): the IDX paper's reading of a network, whose posteriors can differ from the
    network's own inference. The :class:`~torchxplain.idx._io.ChainApproximationWarning` that says so is silenced
    here, since these classifiers are documented as chains.
    """
    from torchxplain.idx._io import ChainApproximationWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ChainApproximationWarning)
        return BayesianClassifier.from_pgmpy(pgmpy_network(name), dtype=dtype)


def asia(dtype: torch.dtype = torch.float64) -> BayesianClassifier:
    """The Asia network as a chain classifier (observations ``xray``, ``dysp``; 6 classifications, 8 influences)."""
    return chain_from_network("asia", dtype)


def child(dtype: torch.dtype = torch.float64) -> BayesianClassifier:
    """The Child network as a chain classifier (7 observations, 13 classifications, 25 influences)."""
    return chain_from_network("child", dtype)


def alarm(dtype: torch.dtype = torch.float64) -> BayesianClassifier:
    """The Alarm network as a chain classifier (11 observations, 26 classifications, 46 influences).

    Built by variable elimination (a few seconds). Its chain posteriors differ from the network's own inference by up
    to 0.99 (over 20 inputs sampled from the network; 48 of their 520 decisions differ), see :func:`chain_from_network`.
    """
    return chain_from_network("alarm", dtype)


def all_inputs(bc: BayesianClassifier) -> torch.Tensor:
    """Every assignment of the observations as codes ``(prod |V(o)|, |O|)`` (row-major)."""
    bc = check_classifier(bc)
    cards = [len(bc.value_names[o]) for o in bc.observations]
    grids = torch.meshgrid(*[torch.arange(k) for k in cards], indexing="ij")
    return torch.stack([g.reshape(-1) for g in grids], dim=1).to(bc.cardinality.device)


__all__ = [
    "CAR_COLUMNS",
    "CAR_VALUES",
    "VOTES_COLUMNS",
    "alarm",
    "all_inputs",
    "asia",
    "car",
    "chain_from_network",
    "child",
    "pgmpy_network",
    "play_outside",
    "play_outside_data",
    "votes",
]

"""Built-in binary fitness landscapes (shipped, compressed, with attribution in ``ATTRIBUTION.md``)."""

from __future__ import annotations

from importlib import resources

import pandas as pd
import torch
from torch import Tensor

_ENTACMAEA_TARGETS = ("brightness_red", "brightness_blue", "brightness_combined")


def load_entacmaea(target: str = "brightness_red", dtype: torch.dtype = torch.float32) -> tuple[Tensor, Tensor]:
    """The complete Entacmaea fluorescent-protein landscape (Poelwijk et al. 2019, CC BY 4.0).

    All ``2^13 = 8,192`` genotypes between mTagBFP2 (all 0) and mKate2 (all 1).

    Args:
        target: ``"brightness_red"``, ``"brightness_blue"`` or ``"brightness_combined"``.
        dtype: floating dtype of the returned tensors.

    Returns:
        ``X`` of shape ``(8192, 13)`` with entries in {0, 1} (site ``j`` is 1 for the mKate2 residue)
        and ``y`` of shape ``(8192,)`` (brightness score, arbitrary units).
    """
    if target not in _ENTACMAEA_TARGETS:
        raise ValueError(f"target must be one of {_ENTACMAEA_TARGETS}, got {target!r}")
    path = resources.files("torchxplain.data") / "entacmaea_poelwijk2019.csv.gz"
    with resources.as_file(path) as file:
        frame = pd.read_csv(file, dtype={"genotype": str})
    bits = frame["genotype"].str.split("", expand=True).iloc[:, 1:-1].astype(int).to_numpy()
    return torch.tensor(bits, dtype=dtype), torch.tensor(frame[target].to_numpy(), dtype=dtype)

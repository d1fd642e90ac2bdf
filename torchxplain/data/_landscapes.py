"""Built-in binary fitness landscapes (shipped, compressed, with attribution in ``ATTRIBUTION.md``)."""

from __future__ import annotations

from importlib import resources

import pandas as pd
import torch
from torch import Tensor

from torchxplain._core import check_flag, check_float_dtype

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

    Example:
        >>> from torchxplain.data import load_entacmaea
        >>> x, y = load_entacmaea()  # every genotype of 13 sites, and its red brightness
        >>> x.shape, y.shape
        (torch.Size([8192, 13]), torch.Size([8192]))
    """
    if target not in _ENTACMAEA_TARGETS:
        raise ValueError(f"target must be one of {_ENTACMAEA_TARGETS}, got {target!r}")
    check_float_dtype(dtype)
    path = resources.files("torchxplain.data") / "entacmaea_poelwijk2019.csv.gz"
    with resources.as_file(path) as file:
        frame = pd.read_csv(file, dtype={"genotype": str})
    bits = frame["genotype"].str.split("", expand=True).iloc[:, 1:-1].astype(int).to_numpy()
    return torch.tensor(bits, dtype=dtype), torch.tensor(frame[target].to_numpy(), dtype=dtype)


#: The four mutated sites of the GB1 landscape (wild-type residue and position), in the column order of
#: :func:`load_gb1`.
GB1_SITES = ("V39", "D40", "G41", "V54")
#: The 20 amino acids in the order of each site's one-hot block in :func:`load_gb1`.
GB1_RESIDUES = "ACDEFGHIKLMNPQRSTVWY"


def load_gb1(measured_only: bool = False, dtype: torch.dtype = torch.float32) -> tuple[Tensor, Tensor, Tensor]:
    """The GB1 four-site landscape (Wu et al. 2016, CC BY 4.0), one-hot encoded.

    All ``20^4 = 160,000`` variants at sites V39, D40, G41, V54 (10,639 fitness values imputed by the authors).

    Args:
        measured_only: drop the imputed variants.
        dtype: floating dtype of ``X`` and ``y``.

    Returns:
        ``X`` ``(N, 80)`` one-hot (site-major, residues in ``GB1_RESIDUES`` order), ``y`` ``(N,)`` binding fitness
        relative to the wild type VDGV, and ``groups`` ``(80,)`` the site (0..3) of each column — pass it as
        ``feature_mask`` to get one SHAP value per site.

    Example:
        >>> from torchxplain.data import load_gb1
        >>> x, y, groups = load_gb1()  # 20^4 variants, one-hot per site
        >>> x.shape, groups.unique().tolist()
        (torch.Size([160000, 80]), [0, 1, 2, 3])
    """
    check_flag(measured_only, "measured_only")
    check_float_dtype(dtype)
    path = resources.files("torchxplain.data") / "gb1_wu2016.csv.gz"
    with resources.as_file(path) as file:
        frame = pd.read_csv(file)
    if measured_only:
        frame = frame[frame["imputed"] == 0]
    letters = torch.tensor([[GB1_RESIDUES.index(c) for c in v] for v in frame["variant"]])
    x = torch.nn.functional.one_hot(letters, len(GB1_RESIDUES)).reshape(len(frame), -1).to(dtype)
    groups = torch.arange(len(GB1_SITES)).repeat_interleave(len(GB1_RESIDUES))
    return x, torch.tensor(frame["fitness"].to_numpy(), dtype=dtype), groups

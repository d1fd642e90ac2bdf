"""Binary / one-hot benchmark datasets of the FourierSHAP paper (Entacmaea n=13, SGEMM n=40, GB1 n=80).

Entacmaea ships with the package; GB1 and SGEMM are read from ``../shared/data`` (relative to the repository)
or ``$TORCHXPLAIN_DATA`` and a missing file raises :class:`DatasetMissing` so that callers can skip cleanly.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from torchxplain.data import load_entacmaea

DATA_ROOT = Path(os.environ.get("TORCHXPLAIN_DATA", Path(__file__).resolve().parents[1] / ".." / "shared" / "data"))
SGEMM_PARAMS = (
    "MWG",
    "NWG",
    "KWG",
    "MDIMC",
    "NDIMC",
    "MDIMA",
    "NDIMB",
    "KWI",
    "VWM",
    "VWN",
    "STRM",
    "STRN",
    "SA",
    "SB",
)


class DatasetMissing(FileNotFoundError):
    """A benchmark dataset is not present under :data:`DATA_ROOT`."""


@dataclass(frozen=True)
class Dataset:
    """``x``: ``(N, n)`` float {0,1}; ``y``: ``(N,)`` standardised target; ``groups``: one-hot block per column."""

    name: str
    x: Tensor
    y: Tensor
    groups: Tensor
    note: str


def _standardise(y: np.ndarray) -> Tensor:
    return torch.tensor((y - y.mean()) / y.std(), dtype=torch.float32)


def _one_hot(frame: pd.DataFrame) -> tuple[Tensor, Tensor]:
    blocks, groups = [], []
    for g, column in enumerate(frame.columns):
        levels = sorted(frame[column].unique())
        blocks.append(np.stack([(frame[column] == level).to_numpy() for level in levels], axis=1))
        groups += [g] * len(levels)
    return torch.tensor(np.concatenate(blocks, axis=1), dtype=torch.float32), torch.tensor(groups)


def _path(*parts: str) -> Path:
    path = DATA_ROOT.joinpath(*parts)
    if not path.exists():
        raise DatasetMissing(f"{path} not found (set TORCHXPLAIN_DATA to the shared data folder)")
    return path


def entacmaea() -> Dataset:
    """All 2^13 Entacmaea genotypes (Poelwijk et al. 2019), red brightness."""
    x, y = load_entacmaea("brightness_red")
    return Dataset(
        "Entacmaea", x, _standardise(y.double().numpy()), torch.arange(13), "all 8,192 genotypes, brightness_red"
    )


def sgemm() -> Dataset:
    """SGEMM GPU kernel (Nugteren & Codreanu 2015), 20k-row subsample, 14 parameters one-hot = 40 bits."""
    frame = pd.read_csv(_path("sgemm_gpu_subsample", "sgemm_subsample_20k.csv"))
    x, groups = _one_hot(frame[list(SGEMM_PARAMS)])
    return Dataset(
        "SGEMM",
        x,
        _standardise(np.log(frame["run_mean_ms"].to_numpy())),
        groups,
        "20,000-row subsample, log mean run time",
    )


def gb1() -> Dataset:
    """GB1 four-site landscape (Wu et al. 2016), 20 residues per site one-hot = 80 bits."""
    frame = pd.read_csv(_path("gb1_wu2016", "gb1_wu2016.csv.gz"))
    sites = frame["variant"].str.split("", expand=True).iloc[:, 1:5]
    sites.columns = ["39", "40", "41", "54"]
    x, groups = _one_hot(sites)
    return Dataset(
        "GB1", x, _standardise(frame["fitness"].to_numpy()), groups, "160,000 variants (measured + imputed), fitness"
    )


def avgfp() -> Dataset:
    """avGFP (Sarkisyan et al. 2016): presence of a substitution at each of sites 1..236 (the paper's n = 236).

    Genotypes with a stop codon are dropped; genotypes with the same mutated sites are merged (mean brightness).
    """
    frame = pd.read_csv(_path("avgfp_sarkisyan2016", "avgfp_sarkisyan2016_aa.csv.gz"))
    frame = frame[~frame["aa_genotype_native"].str.contains("*", regex=False)]
    muts = frame["aa_genotype_native"].where(frame["aa_genotype_native"] != "wt", "").str.split(":")
    x = np.zeros((len(frame), 236), dtype=np.float32)
    for row, tokens in enumerate(muts):
        sites = [int(t[1:-1]) - 1 for t in tokens if t]
        x[row, sites] = 1.0
    codes, inverse = np.unique(x, axis=0, return_inverse=True)
    y = np.bincount(inverse.ravel(), weights=frame["log_brightness"].to_numpy()) / np.bincount(inverse.ravel())
    return Dataset(
        "avGFP",
        torch.tensor(codes),
        _standardise(y),
        torch.arange(236),
        f"{len(codes):,} distinct mutated-site patterns (stop codons dropped), log brightness",
    )


def protein6(seed: int = 0) -> Dataset:
    """A generated 6-site x 20-residue landscape (5,000 random sequences, one-hot = 120 bits): additive effects,
    pairwise Potts couplings and three third-order terms through a sigmoid (global epistasis), standardised."""
    sites, levels, count = 6, 20, 5000
    gen = torch.Generator().manual_seed(seed)
    additive = torch.randn(sites, levels, generator=gen)
    pairs = torch.randn(sites, sites, levels, levels, generator=gen) * 0.5
    triples = [(0, 1, 2), (2, 3, 4), (1, 4, 5)]
    third = torch.randn(len(triples), levels, levels, levels, generator=gen) * 0.5
    seq = torch.randint(0, levels, (count, sites), generator=torch.Generator().manual_seed(seed + 1))
    energy = additive[torch.arange(sites), seq].sum(1)
    for i in range(sites):
        for j in range(i + 1, sites):
            energy = energy + pairs[i, j, seq[:, i], seq[:, j]]
    for t, (i, j, k) in enumerate(triples):
        energy = energy + third[t, seq[:, i], seq[:, j], seq[:, k]]
    y = torch.sigmoid(energy / 3.0).double().numpy()
    x = torch.nn.functional.one_hot(seq, levels).reshape(count, -1).float()
    groups = torch.arange(sites).repeat_interleave(levels)
    return Dataset("protein6", x, _standardise(y), groups, "5,000 random sequences of a generated 6-site landscape")

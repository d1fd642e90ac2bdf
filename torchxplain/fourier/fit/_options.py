"""Validation of ``fit_sparse_fourier``'s arguments at the public boundary (integers, binary rows, player ids)."""

from __future__ import annotations

import torch
from torch import Tensor

from torchxplain._core.inputs import dense_players, player_ids, rows


def binary_rows(x: object, name: str, n: int, device: torch.device) -> Tensor:
    """A binary ``(rows, n)`` input (tensor, numpy, list, DataFrame) as a bool tensor on ``device``."""
    return rows(x, name, n_features=n, device=device, values="binary").tensor.to(device=device).bool()


def players(groups: object, n: int, device: torch.device) -> tuple[Tensor, int]:
    """``(player index 0..m-1 per feature, m)`` from ``groups`` under the one player-id contract (singletons
    when ``None``); players are the distinct ids in increasing order."""
    ids = player_ids(groups, n, "groups", device)
    if ids is None:
        return torch.arange(n, device=device), n
    index, _, m = dense_players(ids)
    return index, m


def validation_seed(seed: int | torch.Generator) -> int:
    """A seed for the held-out inputs, independent of the fit's draws (and reproducible)."""
    base = seed.initial_seed() if isinstance(seed, torch.Generator) else int(seed)
    return (base * 1_000_003 + 12_345) % 2**62

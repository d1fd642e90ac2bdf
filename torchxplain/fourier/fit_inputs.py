"""Validation of ``fit_sparse_fourier``'s arguments at the public boundary (integers, binary rows, player ids)."""

from __future__ import annotations

import torch
from torch import Tensor

from torchxplain._core import check_binary, check_matrix
from torchxplain._core.inputs import to_tensor


def as_int(value: object, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def as_opt_int(value: object, name: str, minimum: int) -> int | None:
    return None if value is None else as_int(value, name, minimum)


def binary_rows(x: object, name: str, n: int, device: torch.device) -> Tensor:
    """A binary ``(rows, n)`` input (tensor, numpy, list, DataFrame) as a bool tensor on ``device``."""
    t = to_tensor(x, name, device=device, ndim=2).tensor
    check_matrix(t, name, n)
    check_binary(t, name)
    return t.to(device=device).bool()


def player_ids(groups: object, n: int, device: torch.device) -> tuple[Tensor, int]:
    """``(player id 0..m-1 per feature, m)`` from any integer ids (renumbered in sorted order)."""
    if groups is None:
        return torch.arange(n, device=device), n
    t = to_tensor(groups, "groups", device=device, ndim=1).tensor
    if t.is_floating_point() or t.dtype == torch.bool or t.shape != (n,):
        raise ValueError(
            f"groups must be an integer player id per feature, shape ({n},); got dtype {t.dtype}, shape "
            f"{tuple(t.shape)}. Pass e.g. torch.arange({n}) for singletons, or the one-hot block of each column"
        )
    ids, inverse = torch.unique(t.to(device), return_inverse=True)
    return inverse.long(), int(ids.numel())


def validation_seed(seed: int | torch.Generator) -> int:
    """A seed for the held-out inputs, independent of the fit's draws (and reproducible)."""
    base = seed.initial_seed() if isinstance(seed, torch.Generator) else int(seed)
    return (base * 1_000_003 + 12_345) % 2**62

"""Seeding: every random step takes a ``seed`` or a ``torch.Generator``; same seed, same result."""

from __future__ import annotations

import random

import numpy as np
import torch

from torchxplain._core.devices import check_device

SeedLike = int | torch.Generator | None


def check_seed(seed: object, name: str = "seed") -> int:
    """``seed`` as an int, refusing what would be silently coerced (``1.7``, ``True``, strings, negatives).

    Raises:
        TypeError: not an integer (numpy integers are accepted).
        ValueError: negative.
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise TypeError(f"{name} must be a non-negative int or a torch.Generator, got {type(seed).__name__} {seed!r}")
    if seed < 0:
        raise ValueError(f"{name} must be a non-negative int, got {seed}")
    return int(seed)


def make_generator(seed: SeedLike = None, device: torch.device | str = "cpu") -> torch.Generator:
    """A ``torch.Generator`` on ``device`` seeded by ``seed`` (a generator is returned as is; ``None`` seeds 0)."""
    if isinstance(seed, torch.Generator):
        return seed
    gen = torch.Generator(device=check_device(device))
    gen.manual_seed(0 if seed is None else check_seed(seed))
    return gen


def seed_everything(seed: int) -> None:
    """Seed Python's, numpy's and torch's global generators (for scripts, tutorials and the demo)."""
    seed = check_seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)

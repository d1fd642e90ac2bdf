"""Seeding: every random step takes a ``seed`` or a ``torch.Generator``; same seed, same result."""

from __future__ import annotations

import random

import numpy as np
import torch

SeedLike = int | torch.Generator | None


def make_generator(seed: SeedLike = None, device: torch.device | str = "cpu") -> torch.Generator:
    """A ``torch.Generator`` on ``device`` seeded by ``seed`` (a generator is returned as is; ``None`` seeds 0)."""
    if isinstance(seed, torch.Generator):
        return seed
    gen = torch.Generator(device=device)
    gen.manual_seed(0 if seed is None else int(seed))
    return gen


def seed_everything(seed: int) -> None:
    """Seed Python's, numpy's and torch's global generators (for scripts, tutorials and the demo)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)

"""Hybrid points: where interventional SHAP evaluates a model, so where a surrogate must be right.

The interventional value of a coalition ``S`` of players for a row ``x`` is ``mean_b f(x_S, b_{~S})`` over the
background ``b``; every evaluation is at a *hybrid* ``z = where(S, x, b)``. The sampler draws ``x`` from rows
like the ones to be explained (the user's data, else the background), ``b`` from the background and ``S`` at
the player level, its size from a mixture of the Shapley kernel's size weights (many small and large
coalitions: KernelSHAP's design) and the uniform size law of the permutation form (each size carries the same
weight in the Shapley value).
"""

from __future__ import annotations

import torch
from torch import Tensor

KERNEL_SHARE = 0.5
"""Share of coalition sizes drawn from the Shapley kernel's size weights ``∝ 1/(s(m-s))``; the rest uniform."""


def coalition_size_weights(n_players: int) -> Tensor:
    """``(m + 1,)`` probabilities of the coalition sizes ``0..m`` (float64, sums to one).

    ``KERNEL_SHARE`` of the mass follows the Shapley kernel over the proper sizes ``1..m-1``; the rest is
    uniform over ``0..m`` (which also puts mass on the empty and the full coalition, ``f(b)`` and ``f(x)``).
    """
    m = n_players
    sizes = torch.arange(m + 1, dtype=torch.float64)
    uniform = torch.full((m + 1,), 1.0 / (m + 1), dtype=torch.float64)
    if m < 2:
        return uniform
    kernel = torch.zeros(m + 1, dtype=torch.float64)
    kernel[1:m] = 1.0 / (sizes[1:m] * (m - sizes[1:m]))
    return KERNEL_SHARE * kernel / kernel.sum() + (1 - KERNEL_SHARE) * uniform


class HybridSampler:
    """Draws hybrid points ``where(S, x, b)`` (bool ``(count, n)``) for a fit or a held-out check.

    Args:
        rows: ``(R, n)`` bool rows like the ones to be explained (``x``).
        background: ``(D, n)`` bool background rows (``b``).
        groups: ``(n,)`` int64 player id of each feature, ids ``0..m-1``.
        n_players: ``m``.
    """

    def __init__(self, rows: Tensor, background: Tensor, groups: Tensor, n_players: int) -> None:
        self.rows, self.background, self.groups, self.n_players = rows, background, groups, n_players
        self.size_weights = coalition_size_weights(n_players).to(rows.device)

    def coalitions(self, count: int, generator: torch.Generator) -> Tensor:
        """``(count, m)`` bool coalitions: a size from :func:`coalition_size_weights`, then uniform members."""
        device = self.rows.device
        sizes = torch.multinomial(self.size_weights, count, replacement=True, generator=generator)
        keys = torch.rand(count, self.n_players, generator=generator, device=device)
        ranks = keys.argsort(dim=1).argsort(dim=1)
        return ranks < sizes[:, None]

    def sample(self, count: int, generator: torch.Generator) -> Tensor:
        """``(count, n)`` bool hybrid points (seeded by ``generator``)."""
        device = self.rows.device
        xi = torch.randint(0, self.rows.shape[0], (count,), generator=generator, device=device)
        bi = torch.randint(0, self.background.shape[0], (count,), generator=generator, device=device)
        take = self.coalitions(count, generator)[:, self.groups]
        return torch.where(take, self.rows[xi], self.background[bi])

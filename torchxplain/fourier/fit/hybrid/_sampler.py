"""Hybrid points: where interventional SHAP evaluates a model, so where a surrogate must be right.

The interventional value of a coalition ``S`` of players for a row ``x`` is ``mean_b f(x_S, b_{~S})`` over the
background ``b``; every evaluation is at a *hybrid* ``z = where(S, x, b)``. Only the players on which ``x`` and
``b`` differ change ``z``, so the sampler draws ``x`` from rows like the ones to be explained (the user's data,
else the background), ``b`` from the background, and a coalition of the ``d`` differing players whose size
follows a mixture of the Shapley kernel's size weights ``∝ 1/(t(d-t))`` (KernelSHAP's design: many small and
large coalitions) and the uniform size law of the permutation form (each size weighs the same in the Shapley
value; it also reaches the endpoints ``f(b)`` and ``f(x)``).
"""

from __future__ import annotations

import torch
from torch import Tensor

KERNEL_SHARE = 0.5
"""Share of coalition sizes drawn from the Shapley kernel's size weights; the rest uniform over ``0..d``."""


def size_table(n_players: int, device: torch.device) -> Tensor:
    """``(m + 1, m + 1)`` float64 cumulative size probabilities: row ``d`` is the mixture law of ``t in 0..d``."""
    d = torch.arange(n_players + 1, dtype=torch.float64, device=device)[:, None]
    t = torch.arange(n_players + 1, dtype=torch.float64, device=device)[None, :]
    inside = (t >= 1) & (t <= d - 1)
    kernel = torch.where(inside, 1.0 / (t * (d - t)).clamp_min(1.0), 0.0)
    kernel_sum = kernel.sum(1, keepdim=True)
    uniform = (t <= d).to(torch.float64) / (d + 1)
    law = torch.where(
        kernel_sum > 0, KERNEL_SHARE * kernel / kernel_sum.clamp_min(1e-300) + (1 - KERNEL_SHARE) * uniform, uniform
    )
    return law.cumsum(1)


class HybridSampler:
    """Draws hybrid points ``where(S, x, b)`` for a fit.

    Args:
        rows: ``(R, n)`` bool rows like the ones to be explained (``x``).
        background: ``(D, n)`` bool background rows (``b``).
        groups: ``(n,)`` int64 player id of each feature, ids ``0..m-1``.
        n_players: ``m``.
    """

    def __init__(self, rows: Tensor, background: Tensor, groups: Tensor, n_players: int) -> None:
        self.rows, self.background, self.groups, self.n_players = rows, background, groups, n_players
        self.sizes = size_table(n_players, rows.device)
        self._owner = torch.nn.functional.one_hot(groups, n_players).to(torch.float32)

    def _pairs(self, count: int, generator: torch.Generator) -> tuple[Tensor, Tensor, Tensor]:
        """``count`` random ``(x, b)`` pairs and ``(count, m)`` bool: the players on which they differ."""
        device = self.rows.device
        x = self.rows[torch.randint(0, self.rows.shape[0], (count,), generator=generator, device=device)]
        b = self.background[torch.randint(0, self.background.shape[0], (count,), generator=generator, device=device)]
        return x, b, ((x != b).to(torch.float32) @ self._owner) > 0

    def _order(self, differ: Tensor, generator: torch.Generator) -> Tensor:
        """``(count, m)`` int64 random permutations with the differing players first."""
        keys = torch.rand(differ.shape, generator=generator, device=differ.device) + (~differ).to(torch.float32)
        return keys.argsort(dim=1)

    def sample(self, count: int, generator: torch.Generator) -> Tensor:
        """``(count, n)`` bool hybrid points (seeded by ``generator``)."""
        x, b, differ = self._pairs(count, generator)
        d = differ.sum(1)
        u = torch.rand(count, 1, generator=generator, device=x.device, dtype=torch.float64)
        t = torch.searchsorted(self.sizes[d], u, right=True)[:, 0].clamp(max=self.n_players)
        order = self._order(differ, generator)
        ranks = torch.empty_like(order).scatter_(
            1, order, torch.arange(order.shape[1], device=x.device).expand_as(order)
        )
        take = (ranks < t[:, None])[:, self.groups]
        return torch.where(take, x, b)

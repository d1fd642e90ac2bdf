"""Player maps: which binary features of a spectrum each player owns, and how values go back to raw inputs.

Players are groups of raw input features (Captum's ``feature_mask`` ids, one-hot blocks, or one player per
feature). A raw feature owns binary features through its encoder (itself, or the splits of a tree feature), so
a player owns the binary features of all its raw features. Players that own no binary feature (a feature no
tree splits on) are dummies: their value is 0 and they are left out of the kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class PlayerMap:
    """The players of one call, resolved against an encoder.

    Attributes:
        ids: ``(m,)`` the players' own ids, sorted (the user's group ids, or ``0..n_inputs-1``).
        of_input: ``(n_inputs,)`` int64 player index ``0..m-1`` of each raw input feature.
        binary_groups: ``(n_binary,)`` int64 active-player index of each binary feature, or ``None`` when every
            raw input is its own player and owns exactly its own binary feature (the singleton kernels).
        active: ``(m_active,)`` int64 player index of each active player (one owning a binary feature).
    """

    ids: Tensor
    of_input: Tensor
    binary_groups: Tensor | None
    active: Tensor

    @property
    def m(self) -> int:
        """Number of players (dummies included)."""
        return int(self.ids.shape[0])

    @property
    def m_active(self) -> int:
        """Number of players the kernels see."""
        return int(self.active.shape[0])

    @property
    def key(self) -> tuple[int, ...]:
        """A hashable key of the grouping (for caching the kernels' background work)."""
        return tuple(self.of_input.tolist()) + (-1,) + tuple(self.ids.tolist())

    def to_inputs(self, values: Tensor) -> Tensor:
        """``(Q, m_active)`` kernel values -> ``(Q, n_inputs)``: each raw input gets its player's value."""
        return self.expand(values, 1)[:, self.of_input]

    def expand(self, values: Tensor, order: int) -> Tensor:
        """``(Q, m_active, ..., m_active)`` order-``t`` values -> ``(Q, m, ..., m)`` per players (0 for dummies)."""
        if order == 0:
            return values
        out = values.new_zeros((values.shape[0],) + (self.m,) * order)
        rows = torch.arange(values.shape[0], device=values.device).reshape((-1,) + (1,) * order)
        index = [self.active.reshape((1,) * (i + 1) + (-1,) + (1,) * (order - 1 - i)) for i in range(order)]
        out[tuple([rows, *index])] = values
        return out


def player_map(owner: Tensor, n_inputs: int, input_ids: Tensor | None) -> PlayerMap:
    """Resolve players against an encoder.

    Args:
        owner: ``(n_binary,)`` raw input owning each binary feature (an encoder's ``owner``).
        n_inputs: number of raw input features.
        input_ids: ``(n_inputs,)`` validated integer player id of each raw feature, or ``None`` (one player each).

    Returns:
        The :class:`PlayerMap`; on ``owner``'s device.
    """
    device = owner.device
    singleton = input_ids is None
    if input_ids is None:
        input_ids = torch.arange(n_inputs, device=device)
    ids, of_input = torch.unique(input_ids.to(device), return_inverse=True)
    binary_player = of_input[owner]
    used = torch.zeros(ids.shape[0], dtype=torch.bool, device=device)
    used[binary_player] = True
    active = torch.nonzero(used).flatten()
    if singleton and owner.shape[0] == n_inputs and bool((owner == torch.arange(n_inputs, device=device)).all()):
        return PlayerMap(ids, of_input, None, active)
    slot = torch.full((ids.shape[0],), -1, dtype=torch.long, device=device)
    slot[active] = torch.arange(active.shape[0], device=device)
    return PlayerMap(ids, of_input, slot[binary_player], active)

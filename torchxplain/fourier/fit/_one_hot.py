"""Players as users think of them: one-hot blocks found in the data (``groups="auto"``), and the check of
declared one-hot players.

A *block* is a run of two or more contiguous columns in which every row holds exactly one 1: a categorical
variable encoded one-hot. DataFrame columns named like pandas' ``get_dummies`` (``site3_A``, ``site3_C``: a common
prefix before the last ``_`` or ``=``) form a block when every row holds at most one 1 in them (``drop_first``
encodings leave the reference level all-zero). Every other column is a player of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

_SEPARATORS = ("=", "_")


@dataclass(frozen=True)
class FoundPlayers:
    """Players detected in rows: ``ids`` ``(n,)`` int64 player per column (``0..m-1`` in column order), the
    multi-column ``blocks`` as ``(start, stop, name)`` (``name`` from the columns' prefix, else ``None``), and a
    sentence saying what was found."""

    ids: Tensor
    blocks: tuple[tuple[int, int, str | None], ...]
    description: str

    @property
    def n_players(self) -> int:
        return int(self.ids.max()) + 1 if self.ids.numel() else 0


def find_one_hot_blocks(rows: Tensor, names: tuple[str, ...] | None = None) -> FoundPlayers:
    """Detect one-hot blocks (module docstring).

    Args:
        rows: ``(R, n)`` binary rows (bool or 0/1), e.g. the data and the background together.
        names: the columns' names (a DataFrame's), or ``None``.
    """
    bits = rows.bool()
    n = bits.shape[1]
    blocks: list[tuple[int, int, str | None]] = []
    start = 0
    for a, b, name in _name_blocks(bits, names):
        blocks += _data_blocks(bits, start, a)
        blocks.append((a, b, name))
        start = b
    blocks += _data_blocks(bits, start, n)
    ids = torch.zeros(n, dtype=torch.long, device=rows.device)
    player, column = 0, 0
    for a, b, _ in blocks:
        for j in range(column, a):
            ids[j] = player
            player += 1
        ids[a:b] = player
        player, column = player + 1, b
    for j in range(column, n):
        ids[j] = player
        player += 1
    return FoundPlayers(ids, tuple(blocks), _describe(blocks, n, player))


def _name_blocks(bits: Tensor, names: tuple[str, ...] | None) -> list[tuple[int, int, str]]:
    """Contiguous runs of a shared name prefix whose rows hold at most one 1."""
    if not names:
        return []
    prefixes = [_prefix(str(name)) for name in names]
    found = []
    a = 0
    while a < len(prefixes):
        b = a + 1
        while b < len(prefixes) and prefixes[a] is not None and prefixes[b] == prefixes[a]:
            b += 1
        if b - a >= 2 and bool((bits[:, a:b].sum(1) <= 1).all()):
            found.append((a, b, str(prefixes[a])))
        a = b
    return found


def _prefix(name: str) -> str | None:
    for separator in _SEPARATORS:
        if separator in name:
            head = name.rsplit(separator, 1)[0]
            return head or None
    return None


def _data_blocks(bits: Tensor, lo: int, hi: int) -> list[tuple[int, int, None]]:
    """Greedy left-to-right blocks in columns ``lo..hi-1``: from each column, the shortest run that puts exactly
    one 1 in every row (runs of one column, and columns after which some row has no 1, are single players)."""
    if hi - lo < 2:
        return []
    part = bits[:, lo:hi]
    width = hi - lo
    position = torch.arange(width, device=bits.device).expand_as(part)
    marked = torch.where(part, position, torch.full_like(position, width))
    next_one = torch.flip(torch.cummin(torch.flip(marked, [1]), 1).values, [1])  # first 1 at or after each column
    stop = next_one.max(0).values + 1  # (width,) the shortest run from each column covering every row
    prefix = torch.cat((torch.zeros(part.shape[0], 1, dtype=torch.long, device=bits.device), part.long().cumsum(1)), 1)
    reach = stop.clamp(max=width)
    exact = ((prefix[:, reach] - prefix[:, :width]) == 1).all(0) & (stop <= width)
    found, a = [], 0
    stop_list, exact_list = stop.tolist(), exact.tolist()
    while a < width:
        if exact_list[a] and stop_list[a] - a >= 2:
            found.append((lo + a, lo + stop_list[a], None))
            a = stop_list[a]
        else:
            a += 1
    return found


def _describe(blocks: list[tuple[int, int, str | None]], n: int, m: int) -> str:
    if not blocks:
        return f"groups='auto' found no one-hot block in the {n} columns: {m} single-column players"
    shown = [(f"{name!r} " if name else "") + f"(columns {a}-{b - 1}, {b - a} levels)" for a, b, name in blocks[:6]]
    more = f" and {len(blocks) - 6} more" if len(blocks) > 6 else ""
    singles = n - sum(b - a for a, b, _ in blocks)
    return (
        f"groups='auto' found {len(blocks)} one-hot block{'s' if len(blocks) != 1 else ''}: "
        f"{', '.join(shown)}{more}; {singles} single column{'s' if singles != 1 else ''}: {m} players"
    )


def check_one_hot(rows: Tensor, players: Tensor, m: int, name: str) -> None:
    """Raise ``ValueError`` naming the first row and player of ``rows`` that is not one-hot.

    Every player of more than one feature must have exactly one feature on in every row.
    """
    sizes = torch.bincount(players, minlength=m)
    ones = torch.zeros(rows.shape[0], m, dtype=torch.long, device=rows.device)
    ones.index_add_(1, players, rows.long())
    bad = (ones != 1) & (sizes[None] > 1)
    if bool(bad.any()):
        row, player = (int(i) for i in bad.nonzero()[0])
        features = (players == player).nonzero()[:, 0].tolist()
        shown = features if len(features) <= 12 else [*features[:12], "..."]
        raise ValueError(
            f"{name} row {row} has {int(ones[row, player])} ones in player {player} (features {shown}), but "
            "one_hot=True declares every multi-feature player one-hot (exactly one 1 per row). Fix the encoding of "
            "that row, pass groups='auto' to find the one-hot blocks, or one_hot=False to code each player by the "
            "patterns it takes"
        )

"""What every black-box source is built from: the user's inputs validated once, and the players found once.

:func:`black_box_problem` converts and checks the background and ``data`` (once, at the boundary), says whether
the rows are binary or continuous (any entry not 0/1 makes them continuous; :func:`non_binary` names the first such
column), resolves the players — ``groups="auto"`` finds one-hot blocks (:func:`auto_players` on mixed rows) — and
places the model's queries (device and dtype policy of :mod:`~torchxplain.fourier.fit`). The router and every
source read the resulting :class:`Problem`; none of them converts, checks or detects again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from torchxplain._core.devices import check_device
from torchxplain._core.inputs import FeatureNames, check_feature_names, dense_players, player_ids, rows
from torchxplain._core.validation import check_finite
from torchxplain.fourier.fit import (
    FoundPlayers,
    HybridRows,
    find_one_hot_blocks,
    fitted_range,
    hybrid_rows,
    model_placement,
)


@dataclass(frozen=True)
class Players:
    """The players of a black box's columns.

    Attributes:
        ids: ``(p,)`` the player id of each column as the explainer keeps it (``None``: one player per column).
        index: ``(p,)`` int64 dense player index ``0..m-1`` per column; m: the number of players.
        found: what ``groups="auto"`` found (``None`` when the players were given).
    """

    ids: Tensor | None
    index: Tensor
    m: int
    found: FoundPlayers | None

    @property
    def description(self) -> str | None:
        """What ``groups="auto"`` found, in a sentence (``None`` when the players were given)."""
        return None if self.found is None else self.found.description


@dataclass(frozen=True)
class Problem:
    """A black box to explain, its rows validated once.

    Attributes:
        model: the model with its extra arguments bound, ``(B, p)`` float rows -> ``(B,)`` or ``(B, C)``.
        background: ``(D, p)`` validated background rows; data: ``(R, p)`` rows like the explained ones, or
            ``None``; names: a DataFrame's column names.
        why_continuous: why the rows are continuous (the first non-0/1 column, named), ``None`` when every entry
            of the background and ``data`` is 0 or 1.
        players: the players (found once).
        target: the model's output column (``None``: its only output).
        seed: seed of every random draw of the sources.
        device, dtype: where and in which dtype the model is queried.
        rows: ``(Q, p)`` the rows that will be explained, when known (``explain_after_fit``), else ``None``.
    """

    model: Callable[[Tensor], Tensor]
    background: Tensor
    data: Tensor | None
    names: FeatureNames | None
    why_continuous: str | None
    players: Players
    target: int | None
    seed: int
    device: torch.device
    dtype: torch.dtype
    rows: Tensor | None = None

    @property
    def continuous(self) -> bool:
        """Whether some entry of the background or ``data`` is not 0/1."""
        return self.why_continuous is not None

    @property
    def n_features(self) -> int:
        return int(self.background.shape[1])

    def hybrid_rows(self, one_hot: bool | None) -> HybridRows:
        """The binary hybrid regime's rows and levels (made once per ``one_hot`` and kept)."""
        cache: dict[bool | None, HybridRows] = self.__dict__.setdefault("_hybrid_rows", {})
        if one_hot not in cache:
            players = self.players
            cache[one_hot] = hybrid_rows(
                self.background.bool(), self.binary(self.data), players.index, players.m, one_hot
            )
        return cache[one_hot]

    def kept(self, key: Any, make: Callable[[], Any]) -> Any:
        """``make()``, made once per ``key`` for this problem and kept (what the router built to price a route,
        the route's source reuses)."""
        cache: dict[Any, Any] = self.__dict__.setdefault("_kept", {})
        if key not in cache:
            cache[key] = make()
        return cache[key]

    def binary(self, table: Tensor | None) -> Tensor | None:
        """A table of these binary rows as bool (``None`` stays ``None``)."""
        return None if table is None else table.bool()


def black_box_problem(
    model: Callable[[Tensor], Tensor],
    background: Any,
    data: Any,
    groups: Any,
    *,
    target: int | None,
    seed: int,
    device: torch.device | str | None,
    dtype: torch.dtype | None = None,
    rows_to_explain: Any = None,
) -> Problem:
    """Validate a black box's inputs once and find its players (module docstring).

    Args:
        model: the model with its extra arguments bound.
        background: ``(D, p)`` rows (tensor, array, DataFrame); data: ``(R, p)`` rows like the explained ones or
            ``None`` (a DataFrame must have the background's columns).
        groups: ``(p,)`` integer player ids, ``"auto"`` (one-hot blocks found in ``data`` and ``background``) or
            ``None`` (one player per column).
        target, seed: as :class:`Problem`'s.
        device: where the model is queried: the background's device (a background elsewhere is refused, not
            moved); ``None``: the background's. dtype: the query dtype (``None``: the model's policy).
        rows_to_explain: ``(Q, p)`` the rows that will be explained, when known.

    Raises:
        ValueError / TypeError: rows of the wrong shape, non-finite continuous rows, a background on another device
            than ``device``, unknown ``groups``.
    """
    place = None if device is None else check_device(device)
    converted = rows(background, "background", device=place)
    raw, names = converted.tensor, converted.feature_names
    if place is not None and raw.device != place:
        raise ValueError(
            f"background is on {raw.device} but device={str(device)!r}; the explainer lives on its background's "
            f"device: pass background.to({str(place)!r})"
        )
    given = None if data is None else rows(data, "data", n_features=raw.shape[1], device=raw.device)
    if given is not None:
        check_feature_names(names, given.feature_names, "data")  # a frame's columns, as the background's
    data_rows = None if given is None else given.tensor.to(raw.device)
    explained = None
    if rows_to_explain is not None:
        explained = rows(rows_to_explain, "rows to explain", n_features=raw.shape[1], device=raw.device).tensor
    why = non_binary(raw, data_rows, names)
    if why is not None:
        for table, label in ((raw, "background"), (data_rows, "data"), (explained, "rows to explain")):
            if table is not None:
                check_rows(table, label)
    data_rows = covering_rows(data_rows, raw, explained)
    query_device, query_dtype = model_placement(model, raw.device, dtype, raw)
    players = resolve_players(groups, raw, data_rows, names, continuous=why is not None)
    return Problem(model, raw, data_rows, names, why, players, target, seed, query_device, query_dtype, explained)


def covering_rows(data: Tensor | None, background: Tensor, explained: Tensor | None) -> Tensor | None:
    """``data`` with the rows to explain that hold a value outside its range (and the background's) in some
    column appended: a fit is held to hybrids of ``data``, so those rows' values get codes of their own instead of
    the nearest end of the range (a column constant in ``data`` would explain every change there as zero).
    ``data`` itself when they all lie within it, or when either is ``None``."""
    if data is None or explained is None or explained.shape[0] == 0:
        return data
    span = fitted_range(torch.float64, data, background)
    beyond = ((explained.double() < span[0]) | (explained.double() > span[1])).any(1)
    if not bool(beyond.any()):
        return data
    dtype = torch.promote_types(data.dtype, explained.dtype)
    return torch.cat((data.to(dtype), explained[beyond].to(dtype)))


def resolve_players(
    groups: Any, background: Tensor, data: Tensor | None, names: FeatureNames | None, continuous: bool
) -> Players:
    """The players of ``groups`` (given ids, ``"auto"`` or ``None``) over these rows — the one place where
    ``groups="auto"`` is resolved."""
    p = background.shape[1]
    if isinstance(groups, str):
        if groups != "auto":
            raise ValueError(f"groups must be an integer id per feature, 'auto' or None, got {groups[:40]!r}")
        table = background if data is None else torch.cat((data, background))
        found = auto_players(table, names) if continuous else find_one_hot_blocks(table.bool(), names)
        return Players(found.ids, found.ids, found.n_players, found)
    ids = player_ids(groups, p, "groups", background.device)
    if ids is None:
        return Players(None, torch.arange(p, device=background.device), p, None)
    index, _, m = dense_players(ids)
    return Players(ids, index, m, None)


def non_binary(background: Tensor, data: Tensor | None, names: FeatureNames | None) -> str | None:
    """Why the rows are continuous (the first non-0/1 column, named), or ``None`` when every entry is 0 or 1."""
    for table, label in ((background, "background"), (data, "data")):
        if table is None:
            continue
        bad = ~((table == 0) | (table == 1))
        if bool(bad.any()):
            column = int(bad.any(0).nonzero()[0])
            count = int(bad.any(0).sum())
            name = repr(names[column]) if names is not None else str(column)
            return f"{count} of the {table.shape[1]} columns of {label} are not 0/1 (first: column {name})"
    return None


def check_rows(x: Tensor, name: str) -> None:
    """Continuous rows must be finite (a threshold code needs ordered values)."""
    try:
        check_finite(x, name)
    except ValueError as err:
        raise ValueError(
            f"{err}; continuous inputs must be finite (impute missing values first, as for training)"
        ) from None


def auto_players(table: Tensor, names: FeatureNames | None) -> FoundPlayers:
    """``groups="auto"`` on mixed rows: one-hot blocks among runs of 0/1 columns; every other column a player."""
    binary = ((table == 0) | (table == 1)).all(0).tolist()
    ids = torch.zeros(table.shape[1], dtype=torch.long, device=table.device)
    blocks: list[tuple[int, int, str | None]] = []
    player, start = 0, 0
    while start < table.shape[1]:
        stop = start + 1
        while stop < table.shape[1] and binary[stop] == binary[start]:
            stop += 1
        if binary[start]:
            found = find_one_hot_blocks(table[:, start:stop], None if names is None else tuple(names[start:stop]))
            ids[start:stop] = found.ids + player
            player += found.n_players
            blocks += [(a + start, b + start, name) for a, b, name in found.blocks]
        else:
            ids[start:stop] = torch.arange(player, player + stop - start, device=table.device)
            player += stop - start
        start = stop
    named = [f"{name or 'columns'} {a}..{b - 1}" for a, b, name in blocks]
    description = (
        f"{len(blocks)} one-hot block(s) ({', '.join(named)}) and {player - len(blocks)} single columns: "
        f"{player} players"
        if blocks
        else f"no one-hot blocks: {player} players, one per column"
    )
    return FoundPlayers(ids, tuple(blocks), description)

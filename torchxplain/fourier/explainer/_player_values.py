"""Players as users think of them: one value per player, the players' names, and a value per row to plot them by.

A grouped explainer's players are sets of input features (a categorical variable's one-hot block, a site's bits):
:class:`PlayerValues` holds one value per player with the players' names; :func:`player_data` gives each player one
representative value per row, so shap's grouped beeswarm is coloured by it.

Names (:func:`player_names`): the given ``player_names``; else a one-feature player takes its column's name, and a
player of several columns their common prefix up to a separator (``site3_A``, ``site3_C`` -> ``site3``; separators
``_ - . : = /`` and space); else ``"player <id>"``.

Representative values (:func:`player_data`): a one-feature player's own value; for a player of several features,
the level of a one-hot block — ``j`` when its ``j``-th feature (1-based, in column order) is the one that is on,
``0`` when none is (a dropped reference level) — and NaN for a row where several are on or a value is not 0/1
(no single level describes it). With column names, :func:`player_labels` says what each level is: its column's
name without the block's stem (``A`` for ``site3_A``), ``"none"`` for 0 and ``"several"`` for NaN.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

SEPARATORS = "_-.:=/ "


@dataclass(frozen=True)
class PlayerValues:
    """One value per player.

    Attributes:
        values: ``(Q, m)`` values, or ``(Q, m, C)`` for ``C`` outputs; players are ordered by id.
        names: the ``m`` players' names.
        ids: ``(m,)`` the players' ids (the ``feature_mask`` / ``groups`` ids, sorted; ``0..n-1`` without groups).
        base_values: the reference's output, ``()``/``(C,)`` for a background set or ``(Q,)``/``(Q, C)`` for per-row
            baselines: Shapley values sum with it to the explained output at each row (efficiency).
    """

    values: Tensor
    names: tuple[str, ...]
    ids: Tensor
    base_values: Tensor


def _members(of_input: Tensor, m: int) -> list[list[int]]:
    """Each player's input features, in column order."""
    members: list[list[int]] = [[] for _ in range(m)]
    for feature, player in enumerate(of_input.tolist()):
        members[player].append(feature)
    return members


def player_names(given: object, ids: Tensor, of_input: Tensor, feature_names: Sequence[str] | None) -> tuple[str, ...]:
    """The ``m`` players' names (module docstring).

    Args:
        given: the user's ``player_names`` (``None``: derived).
        ids: ``(m,)`` the players' sorted ids.
        of_input: ``(n_inputs,)`` player index of each input feature.
        feature_names: the inputs' column names, if known.

    Raises:
        TypeError / ValueError: ``given`` is not a sequence of ``m`` strings.
    """
    m = int(ids.shape[0])
    if given is not None:
        if isinstance(given, str) or not isinstance(given, Sequence) or not all(isinstance(s, str) for s in given):
            raise TypeError(f"player_names must be a list of {m} strings, got {type(given).__name__} {given!r:.60}")
        if len(given) != m:
            raise ValueError(f"player_names must name the {m} players (ordered by id), got {len(given)} names")
        return tuple(given)
    names = []
    for player, features in enumerate(_members(of_input, m)):
        name = None
        if feature_names is not None and features:
            columns = [str(feature_names[f]) for f in features]
            name = columns[0] if len(columns) == 1 else _common_stem(columns)
        names.append(name or f"player {int(ids[player])}")
    return tuple(names)


def _common_stem(columns: list[str]) -> str | None:
    """The columns' common prefix up to its last separator, without the separator (``None`` when there is none)."""
    prefix = columns[0]
    for column in columns[1:]:
        while not column.startswith(prefix):
            prefix = prefix[:-1]
    cut = max(prefix.rfind(s) for s in SEPARATORS)
    stem = prefix[:cut].rstrip(SEPARATORS) if cut > 0 else ""
    return stem or None


def player_labels(data: Tensor, of_input: Tensor, feature_names: Sequence[str] | None) -> np.ndarray | None:
    """``(Q, m)`` object array naming each :func:`player_data` value (module docstring); ``None`` without names.

    A one-feature player's entries are its values; a block's are its levels' names (shap's waterfall shows them as
    ``"A = site3"``).
    """
    if feature_names is None:
        return None
    values = data.detach().cpu().numpy()
    out = values.astype(object)
    for player, features in enumerate(_members(of_input, values.shape[1])):
        if len(features) < 2:
            continue
        columns = [str(feature_names[f]) for f in features]
        stem = _common_stem(columns)
        levels = [(c[len(stem) :].lstrip(SEPARATORS) or c) if stem else c for c in columns]
        table = np.array(["none", *levels, "several"], dtype=object)
        level = np.nan_to_num(values[:, player], nan=len(levels) + 1).astype(np.int64)
        out[:, player] = table[level]
    return out


def player_data(x: Tensor, of_input: Tensor, m: int) -> Tensor:
    """``(Q, m)`` float64 representative value of each player per row (module docstring).

    Args:
        x: ``(Q, n_inputs)`` the rows explained (raw inputs).
        of_input: ``(n_inputs,)`` player index of each input feature.
        m: the number of players.
    """
    x = x.detach().to(torch.float64)
    q, device = x.shape[0], x.device
    index = of_input.to(device)
    sizes = torch.bincount(index, minlength=m)
    order = torch.argsort(index, stable=True)
    position = torch.empty_like(index)
    position[order] = torch.arange(index.shape[0], device=device) - (torch.cumsum(sizes, 0) - sizes)[index[order]]
    on = (x == 1).to(torch.float64)
    not_binary = ((x != 0) & (x != 1)).to(torch.float64)
    hot = x.new_zeros(q, m).index_add_(1, index, on)
    level = x.new_zeros(q, m).index_add_(1, index, on * (position + 1).to(torch.float64))
    bad = x.new_zeros(q, m).index_add_(1, index, not_binary)
    single = x.new_zeros(q, m).index_add_(1, index, x)
    one_hot = torch.where((bad == 0) & (hot <= 1), level, torch.nan)
    return torch.where(sizes[None] == 1, single, one_hot)

"""``FourierShap(model, background, data=...)`` on continuous or mixed rows: the route and its players.

Rows with a column that is not 0/1 (in the background or ``data``) take this route; binary rows keep the binary
routes unchanged. ``method="auto"`` fits a spectrum on threshold codes of the columns
(:func:`~torchxplain.fourier.fit.continuous._api.fit_continuous`), explained per original column (a one-hot block
of ``groups="auto"`` is one player); ``method="enumerate"`` fits nothing and enumerates each (row, background row)
pair's coalitions of players through the model at raw hybrids (exact: each column of a hybrid comes whole from
the row or the background row).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from torchxplain._core.inputs import FeatureNames, dense_players, player_ids
from torchxplain._core.validation import check_finite
from torchxplain.fourier.encoding._encoders import InputEncoder, RawEncoder, ThresholdEncoder
from torchxplain.fourier.fit._one_hot import FoundPlayers, find_one_hot_blocks
from torchxplain.fourier.fit._options import FitOptions
from torchxplain.fourier.fit._oracle import Oracle, model_placement
from torchxplain.fourier.fit._report import FitReport, enumeration_report
from torchxplain.fourier.fit.continuous._api import fit_continuous
from torchxplain.fourier.spectrum._spectrum import FourierSpectrum

METHODS = ("auto", "enumerate")


@dataclass(frozen=True)
class ContinuousSource:
    """What the explainer holds: the spectrum on the encoder's codes (empty for enumeration), the encoder, the
    background's codes, the players' ids per column (``None``: singletons), the report, and the enumerating
    oracle (``None`` for a fit)."""

    spectrum: FourierSpectrum
    encoder: InputEncoder
    bits: Tensor
    ids: Tensor | None
    report: FitReport
    enumerator: Oracle | None


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


def continuous_source(
    model: Callable[[Tensor], Tensor],
    background: Tensor,
    data: Tensor | None,
    names: FeatureNames | None,
    groups: Any,
    *,
    method: str,
    k: int | None,
    max_degree: int | None,
    n_queries: int | None,
    target: int | None,
    seed: int,
    target_r2: float | None,
    options: FitOptions,
    relaxed: bool,
    why: str,
) -> ContinuousSource:
    """The fit (or enumeration) of a black box on continuous rows (module docstring); arguments as
    ``FourierShap``'s, validated: ``background``/``data`` finite raw rows on the query device.

    Raises:
        ValueError: ``relaxed``, ``k``, ``time_budget`` or a binary-only ``method``, which have no meaning here.
    """
    if method not in METHODS:
        raise ValueError(
            f"method={method!r} fits binary inputs, but {why}: continuous inputs take method='auto' (a fit on "
            "threshold codes of the columns) or method='enumerate' (exact values through the model)"
        )
    if relaxed:
        raise ValueError(f"relaxed=True extends a spectrum of binary inputs to real values, but {why}; drop it")
    if k is not None:
        raise ValueError(
            f"k caps the Walsh terms of a binary fit, but {why}: the continuous fit's size follows its blocks; "
            "leave k=None"
        )
    if options.time_budget is not None:
        raise ValueError("the continuous fit's budget counts queries (n_queries=), not seconds: drop time_budget")
    check_rows(background, "background")
    if data is not None:
        check_rows(data, "data")
    p = background.shape[1]
    found = None
    if isinstance(groups, str):
        if groups != "auto":
            raise ValueError(f"groups must be an integer id per feature, 'auto' or None, got {groups[:40]!r}")
        found = auto_players(background if data is None else torch.cat((data, background)), names)
        ids: Tensor | None = found.ids
        index, m = found.ids, found.n_players
    else:
        ids = player_ids(groups, p, "groups", background.device)
        index, m = (torch.arange(p, device=background.device), p) if ids is None else dense_players(ids)[::2]
    if method == "enumerate":
        device, dtype = model_placement(model, options.device, options.dtype, background)
        oracle = Oracle(model, p, device, dtype, options.batch_size, target)
        oracle.phase = "enumeration"  # what its progress bar and errors say
        spectrum = FourierSpectrum.trusted(torch.zeros(0, p, dtype=torch.bool), torch.zeros(0, dtype=torch.float64))
        reason = (
            f"requested: {why}, so exact values by enumerating, for each (row, background row) pair, every "
            "coalition of the players they differ in, the model queried at the raw hybrids (2^d queries per pair, "
            "made when values are asked for)"
        )
        report = enumeration_report(p, m, None if found is None else found.description, reason)
        return ContinuousSource(spectrum, RawEncoder(p), background, ids, report, oracle)
    encoding, spectrum, report = fit_continuous(
        model,
        background,
        data,
        index,
        m,
        max_thresholds=options.max_thresholds,
        max_degree=max_degree,
        n_queries=n_queries,
        seed=seed,
        target=target,
        target_r2=target_r2,
        options=options,
        found=found,
        why=why,
    )
    encoder = ThresholdEncoder(encoding, finite=True).to(background.device)
    return ContinuousSource(spectrum, encoder, encoder.encode(background, torch.float32).bool(), ids, report, None)

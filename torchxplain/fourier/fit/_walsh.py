"""Products of level indicators in Walsh terms: the exact spectrum of a fitted (or tabulated) sum of terms.

A unit (one player's level indicator) expands into the Walsh characters of its player's bits
(:meth:`~torchxplain.fourier.fit._levels.PlayerLevels.walsh`). A term multiplies units of distinct players, so each
of its Walsh frequencies is one frequency per player of the term: a *frequency unit* (player, non-empty local
frequency) per player, or none. Frequencies are therefore keyed like terms (:class:`~._keys.TermKeys` over the
players' local frequencies) and merged by a 1-D ``unique`` of int64 keys, never by comparing ``n``-bit rows.
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, rows_per_chunk
from torchxplain.fourier.fit._keys import TermKeys
from torchxplain.fourier.fit._levels import PlayerLevels
from torchxplain.fourier.spectrum import FourierSpectrum


class UnitWalsh:
    """Every unit's Walsh expansion as frequency units: ``entries (M + 1, P)`` int64 frequency-unit ids (``Φ``:
    the empty frequency, and padding) and ``amplitudes (M + 1, P)`` (unit ``M`` is the constant 1); ``bits``
    ``(Φ, n)`` the frequency units' features; ``codec`` keys their sets."""

    def __init__(self, lv: PlayerLevels) -> None:
        device = lv.device
        per_unit: list[tuple[Tensor, Tensor]] = []
        bits: list[Tensor] = []
        sizes: list[int] = []
        for g in range(lv.m):
            walsh = lv.walsh(g)
            empty = ~walsh.frequencies.any(1)
            local = torch.cumsum((~empty).long(), 0) - 1  # frequency-unit index within the player (-1: empty)
            offset = sum(size - 1 for size in sizes)
            ids = torch.where(empty, -1, offset + local)
            bits.append(walsh.frequencies[~empty])
            sizes.append(int((~empty).sum()) + 1)
            for level in range(1, int(lv.n_levels[g])):
                keep = walsh.amplitudes[:, level].abs() > 1e-13
                per_unit.append((ids[keep], walsh.amplitudes[keep, level]))
        self.codec = TermKeys(sizes, device)
        n_freq = self.codec.n_units
        self.bits = torch.cat(bits) if bits else torch.zeros(0, lv.n_features, dtype=torch.bool, device=device)
        width = max([ids.numel() for ids, _ in per_unit] + [1])
        self.entries = torch.full((lv.n_units + 1, width), n_freq, dtype=torch.long, device=device)
        self.amplitudes = torch.zeros(lv.n_units + 1, width, dtype=torch.float64, device=device)
        for u, (ids, amp) in enumerate(per_unit):
            self.entries[u, : ids.numel()] = torch.where(ids < 0, n_freq, ids)
            self.amplitudes[u, : amp.numel()] = amp
        self.amplitudes[lv.n_units, 0] = 1.0
        self.n_features = lv.n_features

    @property
    def n_units(self) -> int:
        return int(self.entries.shape[0]) - 1

    def frequencies(self, keys: Tensor, degree: int) -> Tensor:
        """``(F, n)`` bool frequencies of keys of at most ``degree`` frequency units."""
        pad = self.codec.n_units
        units = self.codec.decode(keys, max(degree, 1))
        table = torch.cat((self.bits, self.bits.new_zeros(1, self.bits.shape[1])))
        out = torch.zeros(keys.numel(), self.n_features, dtype=torch.bool, device=keys.device)
        for col in range(units.shape[1]):
            out |= table[torch.where(units[:, col] < pad, units[:, col], pad)]
        return out


def expand_terms(walsh: UnitWalsh, terms: Tensor, coefficients: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Every Walsh frequency of every term ``Π_{u∈t} unit_u`` scaled by its coefficient, unmerged.

    Args:
        walsh: the units' expansions.
        terms: ``(T, d)`` int64 unit ids of each term, padded with ``M``.
        coefficients: ``(T,)`` float64.

    Returns:
        ``(frequency keys (F,), amplitudes (F,), owner (F,) the term of each)``.
    """
    n_units, width = walsh.n_units, walsh.entries.shape[1]
    device = coefficients.device
    degree = (terms < n_units).sum(1) if terms.numel() else terms.new_zeros(0)
    keys, amps, owners = [], [], []
    for d in torch.unique(degree).tolist():
        rows = (degree == d).nonzero()[:, 0]
        for a, b in chunk_bounds(rows.numel(), rows_per_chunk(width**d * 8 * (d + 3), rows.numel())):
            t, count = terms[rows[a:b], :d], b - a
            full = [count] + [width] * d
            axes, amp = [], coefficients[rows[a:b]].to(torch.float64).reshape([count] + [1] * d)
            for col in range(d):  # the cartesian product of the units' expansions, one axis per unit
                shape = [count] + [1] * d
                shape[1 + col] = width
                axes.append(walsh.entries[t[:, col]].reshape(shape).expand(full))
                amp = amp * walsh.amplitudes[t[:, col]].reshape(shape)
            ids = (
                torch.stack(axes, -1).reshape(count, -1, d)
                if d
                else torch.zeros(count, 1, 0, dtype=torch.long, device=device)
            )
            amp = amp.expand(full).reshape(count, -1)
            keep = amp != 0
            sorted_ids = torch.sort(ids[keep], dim=1).values  # frequency units ascending, empties (pad) last
            keys.append(walsh.codec.encode(sorted_ids))
            amps.append(amp[keep])
            owners.append(rows[a:b, None].expand_as(amp)[keep])
    if not keys:
        empty = torch.zeros(0, dtype=torch.long, device=device)
        return empty, empty.to(torch.float64), empty
    return torch.cat(keys), torch.cat(amps), torch.cat(owners)


def terms_to_walsh(walsh: UnitWalsh, terms: Tensor, coefficients: Tensor, constant: float) -> FourierSpectrum:
    """The exact Walsh spectrum of ``constant + Σ_t c_t Π_{u∈t} unit_u`` (duplicate frequencies merged).

    Args:
        walsh: the units' expansions.
        terms: ``(T, d)`` int64 unit ids of each term, padded with ``M``.
        coefficients: ``(T,)`` float64.
    """
    device = coefficients.device
    keys, amplitudes, _ = expand_terms(walsh, terms, coefficients)
    keys = torch.cat((torch.zeros(1, dtype=torch.long, device=device), keys))  # key 0: the empty frequency
    amplitudes = torch.cat((torch.tensor([float(constant)], dtype=torch.float64, device=device), amplitudes))
    unique, inverse = torch.unique(keys, return_inverse=True)
    total = torch.zeros(unique.numel(), dtype=torch.float64, device=device).index_add_(0, inverse, amplitudes)
    degree = int((terms < walsh.n_units).sum(1).max()) if terms.numel() else 0
    return FourierSpectrum.trusted(walsh.frequencies(unique, degree), total)

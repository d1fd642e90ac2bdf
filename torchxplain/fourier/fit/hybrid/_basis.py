"""An identifiable basis for functions of the players' observed levels, and its exact map to Walsh frequencies.

On one-hot data the Walsh columns of a group are linearly dependent (the group's bits sum to one), so
least-squares amplitudes are not identifiable and pruning them by magnitude keeps arbitrary representatives.
Here each multi-bit player is coded by its observed *levels* (the distinct patterns of its bits in the data and
background): a constant plus one monomial ``Π_{i∈T} z_i`` per non-reference level, chosen greedily by degree
so that together they are unisolvent on the levels (one-hot: the single bits of every level but the most
frequent one, i.e. reference coding; thermometer codes: the single threshold bits). Terms of the fit are
products of these *units* across distinct players; a term is the monomial of the union of its units' bits,
which expands exactly into Walsh terms by ``Π_{i∈T} z_i = 2^{-|T|} Σ_{U⊆T} (-1)^{|U|} (-1)^{<U,z>}``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain.fourier.spectrum._bitrows import unique_rows
from torchxplain.fourier.spectrum._spectrum import FourierSpectrum

LEVEL_CODING_MAX = 256
"""A multi-bit player with more observed levels than this is coded by its single bits (each its own slot)."""


@dataclass(frozen=True)
class PlayerBasis:
    """Units of the identifiable basis.

    Attributes:
        n_features: ``n``.
        unit_bits: ``(M, w)`` int64 bits of each unit's monomial, padded with ``n`` (an always-one column).
        unit_slot: ``(M,)`` int64; a term multiplies units of distinct slots only (a slot is a player, or a bit
            of a player coded by its bits).
        one_hot: per player, whether its observed levels are one-hot (then its units are reference coded).
        reference: per player, the feature index of the reference level's bit (one-hot players), else ``-1``.
    """

    n_features: int
    unit_bits: Tensor
    unit_slot: Tensor
    one_hot: tuple[bool, ...]
    reference: tuple[int, ...]

    @property
    def n_units(self) -> int:
        """``M``."""
        return int(self.unit_bits.shape[0])

    def unit_rows(self, z: Tensor) -> Tensor:
        """``(M + 1, N)`` bool unit values ``Π_{i∈T_u} z_i`` of bool points ``(N, n)``; the last row is all ones."""
        z_ext = torch.cat((z.T.bool(), torch.ones(1, z.shape[0], dtype=torch.bool, device=z.device)))
        out = z_ext[self.unit_bits[:, 0]]
        for col in range(1, self.unit_bits.shape[1]):
            out = out & z_ext[self.unit_bits[:, col]]
        return torch.cat((out, z_ext[-1:]))

    def evaluate(self, z: Tensor, terms: Tensor, coefficients: Tensor) -> Tensor:
        """``(N,)`` float64 values of ``Σ_t c_t Π_{u∈t} unit_u(z)`` for unit index tuples ``terms`` ``(T, d)``."""
        rows = self.unit_rows(z)
        out = rows[terms[:, 0]]
        for col in range(1, terms.shape[1]):
            out = out & rows[terms[:, col]]
        return coefficients @ out.to(coefficients.dtype)


def _greedy_unisolvent(values: Tensor, tol: float = 1e-9) -> list[int]:
    """Columns of ``values`` ``(levels, C)`` kept in order when they raise the rank (Gram–Schmidt)."""
    basis = torch.zeros(values.shape[0], 0, dtype=torch.float64, device=values.device)
    keep = []
    for c in range(values.shape[1]):
        v = values[:, c]
        resid = v - basis @ (basis.T @ v)
        norm = float(resid.norm())
        if norm > tol * max(float(v.norm()), 1.0):
            basis = torch.cat((basis, (resid / norm)[:, None]), dim=1)
            keep.append(c)
    return keep


def build_basis(rows: Tensor, groups: Tensor, n_players: int) -> PlayerBasis:
    """The identifiable basis of the players' levels observed in ``rows``.

    Args:
        rows: ``(R, n)`` bool rows (data and background): the levels each player takes.
        groups: ``(n,)`` int64 player id per feature, ids ``0..m-1``.
        n_players: ``m``.

    Returns:
        A :class:`PlayerBasis`. Features that never vary in ``rows`` get no unit (hybrids never vary them).
    """
    n = rows.shape[1]
    device = rows.device
    sizes = torch.bincount(groups, minlength=n_players)
    varies = rows.any(0) & ~rows.all(0)
    single_bits = ((sizes[groups] == 1) & varies).nonzero()[:, 0].tolist()  # singleton players, vectorised
    unit_sets: list[list[int]] = [[bit] for bit in single_bits]
    slots: list[int] = list(range(len(single_bits)))
    one_hot = [False] * n_players
    reference = [-1] * n_players
    for g in (sizes > 1).nonzero()[:, 0].tolist():
        bits = (groups == g).nonzero()[:, 0]
        levels, _, counts = unique_rows(rows[:, bits])
        if levels.shape[0] <= 1:
            continue
        one_hot[g] = bool((levels.sum(1) == 1).all())
        n_slots = len(set(slots))
        if levels.shape[0] - 1 > LEVEL_CODING_MAX:  # too many patterns to code: each bit its own slot
            varying = bits[varies[bits]].tolist()
            unit_sets += [[bit] for bit in varying]
            slots += range(n_slots, n_slots + len(varying))
            continue
        # candidates: single bits (rarest first, so the most frequent level is the reference), then the bit
        # sets of the levels (unisolvent together: their evaluation matrix is unitriangular by popcount)
        on = (levels.to(torch.float64) * counts[:, None]).sum(0)
        singles = [[int(bits[i])] for i in torch.argsort(on, stable=True).tolist() if on[i] > 0]
        by_weight = torch.argsort(levels.sum(1), stable=True).tolist()
        sets = singles + [bits[levels[p]].tolist() for p in by_weight if int(levels[p].sum()) > 1]
        local = {int(b): j for j, b in enumerate(bits.tolist())}
        evals = torch.ones(levels.shape[0], len(sets) + 1, dtype=torch.float64, device=device)
        for c, members in enumerate(sets):
            evals[:, c + 1] = levels[:, [local[b] for b in members]].all(1).to(torch.float64)
        chosen = [c - 1 for c in _greedy_unisolvent(evals) if c > 0]
        unit_sets += [sets[c] for c in chosen]
        slots += [n_slots] * len(chosen)
        dropped = [s[0] for s in singles if [s[0]] not in [sets[c] for c in chosen]]
        reference[g] = dropped[0] if one_hot[g] and dropped else -1
    width = max([len(s) for s in unit_sets], default=1)
    unit_bits = torch.full((len(unit_sets), width), n, dtype=torch.long, device=device)
    for u, members in enumerate(unit_sets):
        unit_bits[u, : len(members)] = torch.tensor(members, dtype=torch.long, device=device)
    return PlayerBasis(
        n, unit_bits, torch.tensor(slots, dtype=torch.long, device=device), tuple(one_hot), tuple(reference)
    )


def term_bits(basis: PlayerBasis, terms: Tensor) -> Tensor:
    """``(T, n)`` bool monomial bit sets of terms given as unit index tuples ``(T, d)`` padded with ``M``."""
    n = basis.n_features
    padded = torch.cat((basis.unit_bits, torch.full_like(basis.unit_bits[:1], n)))  # unit M: no bits
    bits = padded[terms].reshape(terms.shape[0], -1)  # (T, d * w)
    out = torch.zeros(terms.shape[0], n + 1, dtype=torch.bool, device=terms.device)
    out.scatter_(1, bits, True)
    return out[:, :n]


def expand_subsets(bits: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Every subset ``U`` of every monomial's bit set ``T``: ``(frequencies (F, n) bool, owner (F,), |U| (F,))``.

    ``F = Σ_t 2^{|T_t|}``; ``owner`` is the row of ``bits`` each subset comes from.
    """
    n = bits.shape[1]
    degree = bits.sum(1)
    freqs, owners, sizes = [], [], []
    for t in torch.unique(degree).tolist():
        rows = (degree == t).nonzero()[:, 0]
        members = bits[rows].nonzero()[:, 1].reshape(rows.numel(), t)  # (R, t) bit indices, ascending
        subsets = ((torch.arange(2**t, device=bits.device)[:, None] >> torch.arange(t, device=bits.device)) & 1).bool()
        f = torch.zeros(rows.numel(), 2**t, n + 1, dtype=torch.bool, device=bits.device)
        picked = torch.where(subsets[None], members[:, None, :], torch.full_like(members[:, None, :], n))
        f.scatter_(2, picked, True)
        freqs.append(f[:, :, :n].reshape(-1, n))
        owners.append(rows.repeat_interleave(2**t))
        sizes.append(subsets.sum(1).repeat(rows.numel()))
    if not freqs:
        empty = torch.zeros(0, dtype=torch.long, device=bits.device)
        return torch.zeros(0, n, dtype=torch.bool, device=bits.device), empty, empty
    return torch.cat(freqs), torch.cat(owners), torch.cat(sizes)


def monomials_to_walsh(bits: Tensor, coefficients: Tensor) -> FourierSpectrum:
    """The Walsh spectrum of ``Σ_t c_t Π_{i∈T_t} z_i`` (exact; duplicate frequencies merged).

    Args:
        bits: ``(T, n)`` bool monomial bit sets.
        coefficients: ``(T,)`` float coefficients.

    Returns:
        A :class:`FourierSpectrum` with one term per distinct frequency (zeros kept; prune afterwards).
    """
    freqs, owner, size = expand_subsets(bits)
    degree = bits.sum(1)[owner]
    sign = 1.0 - 2.0 * (size % 2).to(coefficients.dtype)
    amps = coefficients[owner] * sign * torch.pow(2.0, -degree.to(coefficients.dtype))
    uniq, inverse, _ = unique_rows(freqs)
    total = coefficients.new_zeros(uniq.shape[0]).index_add_(0, inverse, amps)
    return FourierSpectrum(uniq, total)


def check_one_hot(rows: Tensor, groups: Tensor, n_players: int, name: str) -> None:
    """Raise ``ValueError`` naming the first row and group of ``rows`` that is not one-hot.

    Every player of more than one feature must have exactly one feature on in every row.
    """
    sizes = torch.bincount(groups, minlength=n_players)
    ones = rows.to(torch.float64) @ torch.nn.functional.one_hot(groups, n_players).to(torch.float64)
    bad = (ones != 1) & (sizes[None] > 1)
    if bool(bad.any()):
        row, group = (int(i) for i in bad.nonzero()[0])
        features = (groups == group).nonzero()[:, 0].tolist()
        shown = features if len(features) <= 12 else [*features[:12], "..."]
        raise ValueError(
            f"{name} row {row} has {int(ones[row, group])} ones in group {group} (features {shown}), but "
            "one_hot=True declares every multi-feature group one-hot (exactly one 1 per row). Fix the encoding "
            "of that row, or pass one_hot=False to code each group by the patterns it takes"
        )

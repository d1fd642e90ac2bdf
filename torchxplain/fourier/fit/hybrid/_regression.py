"""Sparse regression on hybrid samples: stagewise orthogonal matching pursuit over the whole pool of terms.

Each round fits the selected terms by least squares, scores *every* pool term (:mod:`._terms`) by the
standardised correlation of its column with the residual, ``z_t = |φ_tᵀ r| / (σ_r ‖φ_t‖)`` (one scatter-add over
the pool's incidences), and adds those above a Bonferroni threshold over the pool, at most doubling the selection.
The design is never dense: the normal equations of the selection are accumulated by scatter-adds over the pairs
of terms each sample activates (``O(samples × active²)``) and solved by a Cholesky factor extended round by round,
up to a term budget (:func:`term_limit`).
Everything runs on the samples' device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain._core import parse_memory
from torchxplain.fourier.fit._keys import TermKeys
from torchxplain.fourier.fit._levels import PlayerLevels
from torchxplain.fourier.fit._walsh import UnitWalsh, expand_terms, terms_to_walsh
from torchxplain.fourier.fit.hybrid._terms import Incidence, PointDesign, TermPool, apply, incidence_of
from torchxplain.fourier.spectrum import FourierSpectrum

MAX_TERMS = 4096
"""Most terms of one fit (the term budget; the Cholesky factor is ``terms²`` float64)."""
FALSE_DISCOVERIES = 0.05
"""The pool-wide chance of admitting one term unrelated to the residual (the Bonferroni threshold's level)."""
RIDGE = 1e-12
"""Ridge weight per sample on the diagonal of the normal equations (numerical stability of collinear columns only)."""


@dataclass(frozen=True)
class TermFit:
    """A fitted sum of terms: sorted ``keys`` ``(T,)`` (:class:`~._terms.TermKeys`), ``degrees``,
    ``coefficients`` (float64) and the ``constant``."""

    keys: Tensor
    degrees: Tensor
    coefficients: Tensor
    constant: float
    codec: TermKeys

    @property
    def width(self) -> int:
        return max(int(self.degrees.max()) if self.degrees.numel() else 1, 1)

    def units(self) -> Tensor:
        """``(T, width)`` unit ids of the terms, padded with ``M``."""
        return self.codec.decode(self.keys, self.width)

    def predict(self, levels: PlayerLevels, points: Tensor) -> Tensor:
        """``(N,)`` float64 values on bool hybrid ``points``."""
        return self.predict_on(PointDesign(levels, self.codec, points))

    def predict_on(self, design: PointDesign) -> Tensor:
        """``(N,)`` float64 values on the points of a :class:`PointDesign`."""
        return apply(design.incidence(self.keys, self.width), self.coefficients, self.constant)

    def spectrum(self, walsh: UnitWalsh) -> FourierSpectrum:
        """The exact Walsh expansion (float64)."""
        return terms_to_walsh(walsh, self.units(), self.coefficients, self.constant)


def term_limit() -> int:
    """Most terms a selection holds: :data:`MAX_TERMS`, or fewer when three ``terms²`` float64 matrices (the
    factor and its extension) would exceed the memory budget in force."""
    return min(MAX_TERMS, int((parse_memory() / 24) ** 0.5))


def z_threshold(n_candidates: int) -> float:
    """Two-sided Bonferroni threshold of the standardised scores over ``n_candidates`` terms."""
    tail = torch.tensor(FALSE_DISCOVERIES / (2.0 * max(n_candidates, 1)), dtype=torch.float64)
    return float(-torch.special.ndtri(tail))


def _by_row(incidence: Incidence) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Incidences sorted by row: ``(rows, cols, start of each row, count of each row)``."""
    order = torch.argsort(incidence.rows, stable=True)
    rows, cols = incidence.rows[order], incidence.cols[order]
    count = torch.bincount(rows, minlength=incidence.n_rows)
    return rows, cols, torch.cumsum(count, 0) - count, count


def cross_gram(a: Incidence, b: Incidence) -> Tensor:
    """``(a.n_cols, b.n_cols)`` float64 ``Φ_aᵀ Φ_b`` of two designs on the same samples, by enumerating, per
    sample, the pairs of their active terms."""
    rows_a, cols_a, _, _ = _by_row(a)
    _, cols_b, start_b, count_b = _by_row(b)
    reps = count_b[rows_a]
    first = torch.repeat_interleave(torch.arange(rows_a.numel(), device=rows_a.device), reps)
    offset = torch.arange(first.numel(), device=rows_a.device) - torch.repeat_interleave(
        torch.cumsum(reps, 0) - reps, reps
    )
    partner = start_b[rows_a[first]] + offset
    flat = cols_a[first] * b.n_cols + cols_b[partner]
    return torch.bincount(flat, minlength=a.n_cols * b.n_cols).to(torch.float64).reshape(a.n_cols, b.n_cols)


class Selection:
    """The least-squares fit of a selection of pool terms (plus the constant), grown round by round.

    Unknowns are ordered constant first, then terms in the order they joined, so each round extends the Cholesky
    factor of the normal equations by the new terms' block only (the Gram rows of the new terms come from
    :func:`cross_gram`); the ridge is a fixed ``RIDGE · N`` on the diagonal, so the extended factor is that of the
    whole system.
    """

    def __init__(self, pool: TermPool, y: Tensor) -> None:
        self.pool, self.y = pool, y
        device = y.device
        self.index = torch.zeros(0, dtype=torch.long, device=device)
        self.ridge = RIDGE * max(int(y.numel()), 1)
        self.factor = torch.tensor([[(float(y.numel()) + self.ridge) ** 0.5]], dtype=torch.float64, device=device)
        self.rhs = y.sum().reshape(1).to(torch.float64)
        self.solution = torch.cholesky_solve(self.rhs[:, None], self.factor)[:, 0]
        self.member = torch.zeros(len(pool), dtype=torch.bool, device=device)
        empty = torch.zeros(0, dtype=torch.long, device=device)
        self.selected = Incidence(empty, empty, int(y.numel()), 0)

    @property
    def coefficients(self) -> Tensor:
        return self.solution[1:]

    @property
    def constant(self) -> float:
        return float(self.solution[0])

    def add(self, new: Tensor) -> None:
        """Add pool terms ``new`` and refit."""
        fresh = torch.zeros(len(self.pool), dtype=torch.bool, device=new.device)
        fresh[new] = True
        inc = self.pool.incidence
        hit = fresh[inc.cols]
        self.member |= fresh
        old = self.index.numel()
        self.index = torch.cat((self.index, new))
        remap = torch.zeros(len(self.pool), dtype=torch.long, device=new.device)
        remap[new] = torch.arange(new.numel(), device=new.device)
        design_new = Incidence(inc.rows[hit], remap[inc.cols[hit]], inc.n_rows, int(new.numel()))
        self.selected = Incidence(
            torch.cat((self.selected.rows, design_new.rows)),
            torch.cat((self.selected.cols, design_new.cols + old)),
            inc.n_rows,
            int(self.index.numel()),
        )
        rhs = torch.zeros(new.numel(), dtype=torch.float64, device=self.y.device)
        self.rhs = torch.cat((self.rhs, rhs.index_add_(0, design_new.cols, self.y[design_new.rows])))
        if not self._extend_factor(design_new):  # the new block is numerically dependent on the old: a bigger ridge
            self._refactor()
        self.solution = torch.cholesky_solve(self.rhs[:, None], self.factor)[:, 0]

    def _extend_factor(self, design_new: Incidence) -> bool:
        """Extend the Cholesky factor by the new terms' block; ``False`` if that block is not positive definite."""
        cross = cross_gram(design_new, self.selected)  # (new, old + new) over the terms
        counts = self.pool.counts[self.index[-design_new.n_cols :]]
        old = self.factor.shape[0]
        below = torch.cat((counts[:, None], cross[:, : old - 1]), 1)  # Gram rows of the new terms vs the old unknowns
        corner = cross[:, old - 1 :] + self.ridge * torch.eye(
            design_new.n_cols, dtype=torch.float64, device=cross.device
        )
        left = torch.linalg.solve_triangular(self.factor, below.T, upper=False).T  # L21 = G21 L11^{-T}
        block, info = torch.linalg.cholesky_ex(corner - left @ left.T)
        if int(info) != 0:
            return False
        size = old + design_new.n_cols
        factor = torch.zeros(size, size, dtype=torch.float64, device=cross.device)
        factor[:old, :old] = self.factor
        factor[old:, :old] = left
        factor[old:, old:] = block
        self.factor = factor
        return True

    def _refactor(self) -> None:
        """Factor the whole system afresh with a ridge raised until it is positive definite."""
        everything = cross_gram(self.selected, self.selected)
        size = self.index.numel() + 1
        gram = torch.zeros(size, size, dtype=torch.float64, device=self.y.device)
        gram[0, 0] = self.y.numel()
        gram[0, 1:] = gram[1:, 0] = self.pool.counts[self.index]
        gram[1:, 1:] = everything
        ridge = self.ridge
        while True:
            factor, info = torch.linalg.cholesky_ex(
                gram + ridge * torch.eye(size, dtype=gram.dtype, device=gram.device)
            )
            if int(info) == 0:
                self.factor, self.ridge = factor, ridge
                return
            ridge *= 100.0

    def residual(self) -> Tensor:
        """``y - Φ c`` on the samples."""
        return self.y - apply(self.selected, self.coefficients, self.constant)

    def fit(self) -> TermFit:
        """The current fit, its terms sorted by key."""
        order = torch.argsort(self.pool.keys[self.index])
        index = self.index[order]
        pool = self.pool
        return TermFit(pool.keys[index], pool.degrees[index], self.coefficients[order], self.constant, pool.codec)


def select_terms(pool: TermPool, y: Tensor, start: Tensor | None = None, max_terms: int | None = None) -> TermFit:
    """Stagewise orthogonal matching pursuit (module docstring).

    Args:
        pool: the candidate terms and their incidences on the samples.
        y: ``(N,)`` float64 model outputs at the samples.
        start: pool indices selected from the outset (default: every degree-one term), e.g. the previous stage's.
        max_terms: most terms to select (default: ``N / 4`` within :func:`term_limit`).

    Returns:
        The fit of the final selection.
    """
    n_samples = int(y.numel())
    cap = min(max_terms if max_terms is not None else max(n_samples // 4, 1), term_limit())
    selection = Selection(pool, y)
    first = (pool.degrees == 1).nonzero()[:, 0] if start is None else start
    selection.add(first[:cap])
    threshold = z_threshold(len(pool))
    while selection.index.numel() < cap:
        residual = selection.residual()
        sigma = math.sqrt(float(residual @ residual) / max(n_samples - selection.index.numel() - 1, 1))
        if sigma == 0.0:
            break
        inc = pool.incidence
        dot = torch.zeros(len(pool), dtype=torch.float64, device=y.device).index_add_(0, inc.cols, residual[inc.rows])
        score = torch.where(selection.member, 0.0, dot.abs() / (pool.counts.sqrt() * sigma))
        candidates = (score >= threshold).nonzero()[:, 0]
        if candidates.numel() == 0:
            break
        room = min(max(64, selection.index.numel()), cap - selection.index.numel())
        if candidates.numel() > room:
            candidates = candidates[torch.argsort(score[candidates], descending=True)[:room]]
        selection.add(candidates)
    return selection.fit()


def prune_terms(fit: TermFit, levels: PlayerLevels, points: Tensor, k: int) -> TermFit:
    """The most important terms of ``fit`` whose Walsh expansion has at most ``k`` frequencies.

    Importance is ``|c_t| · sqrt(share of points where t is active)`` on ``points`` (hybrids, e.g. the held-out
    check's); the kept terms keep their coefficients (a cut, not a refit).
    """
    inc = incidence_of(levels, fit.codec, points, fit.keys, fit.width)
    share = torch.bincount(inc.cols, minlength=fit.keys.numel()).to(torch.float64) / max(inc.n_rows, 1)
    order = torch.argsort(fit.coefficients.abs() * share.sqrt(), descending=True, stable=True)
    used = _first_use(UnitWalsh(levels), fit.units()[order])
    keep = torch.sort(order[: max(int((used <= k).sum()), 0)]).values
    return TermFit(fit.keys[keep], fit.degrees[keep], fit.coefficients[keep], fit.constant, fit.codec)


def _first_use(walsh: UnitWalsh, units: Tensor) -> Tensor:
    """``(T,)``: how many distinct Walsh frequencies the first ``t + 1`` terms (in order) use."""
    ones = torch.ones(units.shape[0], dtype=torch.float64, device=units.device)
    keys, _, owner = expand_terms(walsh, units, ones)
    _, inverse = torch.unique(keys, return_inverse=True)
    first = torch.full((int(inverse.max()) + 1 if inverse.numel() else 0,), units.shape[0], device=units.device)
    first.scatter_reduce_(0, inverse, owner, reduce="amin")
    return torch.cumsum(torch.bincount(first, minlength=units.shape[0])[: units.shape[0]], 0)

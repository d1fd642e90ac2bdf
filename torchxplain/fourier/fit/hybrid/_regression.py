"""Sparse regression on hybrid points in the identifiable player basis (support discovery + least squares).

A fit at degree ``d`` grows its support level by level (heredity): all units at degree one, then the products of
the most important degree-``r`` terms with every unit of another player that is active (non-zero on at least
:data:`MIN_ACTIVE` samples), all of them when they fit the column budget, else the best by standardised
correlation with the residual; least squares after each level, and :data:`MAX_PASSES` passes over the degrees
(a term masked by unfitted higher-degree structure shows up once that is fitted). The kept terms are then cut to
the Walsh budget ``k`` in order of importance (|coefficient| × column norm) and refitted.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, rows_per_chunk
from torchxplain.fourier.fit.hybrid._basis import PlayerBasis, expand_subsets, monomials_to_walsh, term_bits
from torchxplain.fourier.spectrum._bitrows import unique_rows
from torchxplain.fourier.spectrum._spectrum import FourierSpectrum

MIN_ACTIVE = 3
"""A term must be non-zero on at least this many fit samples to be a candidate."""
Z_MIN = 3.5
"""A candidate term joins the pool when its standardised correlation with the residual reaches this."""
MAX_PASSES = 3
"""Passes over the degrees when growing the support."""
RIDGE = 1e-9
"""Ridge weight relative to the mean diagonal of a singular Gram matrix (numerical stability only)."""


@dataclass(frozen=True)
class TermFit:
    """Terms (unit index tuples ``(T, d)`` padded with ``M``) and their coefficients ``(T,)`` float64."""

    terms: Tensor
    coefficients: Tensor

    def spectrum(self, basis: PlayerBasis) -> FourierSpectrum:
        """The exact Walsh expansion of the fitted function."""
        return monomials_to_walsh(term_bits(basis, self.terms), self.coefficients)


def design(unit_rows: Tensor, terms: Tensor) -> Tensor:
    """``(T, N)`` bool term rows: the AND of the unit rows ``(M + 1, N)`` each term multiplies."""
    out = unit_rows[terms[:, 0]]
    for col in range(1, terms.shape[1]):
        out = out & unit_rows[terms[:, col]]
    return out


class GramPool:
    """Normal equations of a growing pool of terms, ``G = ΦᵀΦ`` and ``r = Φᵀy``, built block-wise.

    Every least-squares fit on a subset of the pool is a solve with a sub-block of ``G``; adding terms only
    computes their new rows. ``G`` holds co-activity counts, accumulated exactly in float32 (entries stay below
    ``2**24`` samples); ``r`` is accumulated in float64. Designs are built in sample chunks under the budget.
    """

    def __init__(self, unit_rows: Tensor, y: Tensor, width: int) -> None:
        self.unit_rows, self.y = unit_rows, y
        self.n_samples = int(y.shape[0])
        self.terms = torch.zeros(0, width, dtype=torch.long, device=y.device)
        self.gram = torch.zeros(0, 0, dtype=torch.float64, device=y.device)
        self.rhs = torch.zeros(0, dtype=torch.float64, device=y.device)
        self.count_dtype = torch.float32 if self.n_samples < 2**24 else torch.float64

    def _chunks(self, rows: int) -> list[tuple[int, int]]:
        return chunk_bounds(self.n_samples, rows_per_chunk(13 * max(rows, 1), self.n_samples))

    def add(self, terms: Tensor) -> None:
        """Append ``terms`` ``(T, d)`` (the pool's width) and their rows of ``G``."""
        t_old, t_new = self.terms.shape[0], terms.shape[0]
        both = torch.cat((self.terms, terms))
        cross = torch.zeros(t_new, t_old + t_new, dtype=torch.float64, device=self.y.device)
        rhs = torch.zeros(t_new, dtype=torch.float64, device=self.y.device)
        for a, b in self._chunks(t_old + t_new):
            rows = design(self.unit_rows[:, a:b], both).to(self.count_dtype)
            cross += (rows[t_old:] @ rows.T).to(torch.float64)
            rhs += rows[t_old:].to(torch.float64) @ self.y[a:b]
        gram = torch.zeros(t_old + t_new, t_old + t_new, dtype=torch.float64, device=self.y.device)
        gram[:t_old, :t_old] = self.gram
        gram[t_old:] = cross
        gram[:t_old, t_old:] = cross[:, :t_old].T
        self.gram, self.rhs, self.terms = gram, torch.cat((self.rhs, rhs)), both

    def solve(self, index: Tensor) -> Tensor:
        """Least-squares coefficients of the pool terms ``index`` (a tiny ridge only if ``G`` is singular)."""
        gram = self.gram[index][:, index]
        rhs = self.rhs[index][:, None]
        chol, info = torch.linalg.cholesky_ex(gram)
        if int(info) != 0:
            scale = float(gram.diagonal().mean()) if index.numel() else 1.0
            gram = gram + RIDGE * scale * torch.eye(index.numel(), dtype=gram.dtype, device=gram.device)
            chol, info = torch.linalg.cholesky_ex(gram)
        if int(info) == 0:
            return torch.cholesky_solve(rhs, chol)[:, 0]
        return torch.linalg.lstsq(gram, rhs).solution[:, 0]

    def importance(self, index: Tensor, coefficients: Tensor) -> Tensor:
        """``|c_t| × ‖column_t‖ / sqrt(N)``: each term's contribution scale on the samples."""
        return coefficients.abs() * (self.gram.diagonal()[index] / self.n_samples).sqrt()

    def residual(self, index: Tensor, coefficients: Tensor) -> tuple[Tensor, float]:
        """``(r = y - Φ c, σ_r)`` for the pool terms ``index`` (``σ_r`` with ``N - T`` degrees of freedom)."""
        resid = self.y.clone()
        for a, b in self._chunks(index.numel()):
            resid[a:b] -= coefficients @ design(self.unit_rows[:, a:b], self.terms[index]).to(torch.float64)
        sse = float(resid @ resid)
        return resid, (sse / max(self.n_samples - index.numel(), 1)) ** 0.5


def _pad(terms: Tensor, width: int, fill: int) -> Tensor:
    """Pad unit index tuples ``(T, d)`` to ``width`` columns with ``fill`` (the constant unit)."""
    if terms.shape[1] >= width:
        return terms
    pad = torch.full((terms.shape[0], width - terms.shape[1]), fill, dtype=terms.dtype, device=terms.device)
    return torch.cat((terms, pad), dim=1)


def grow(
    unit_rows: Tensor, basis: PlayerBasis, parents: Tensor, resid: Tensor, sigma: float, room: int, pool: Tensor
) -> Tensor:
    """New terms: a parent ``(P, r)`` times a unit of another slot, active on :data:`MIN_ACTIVE` samples.

    When more candidates are active than there is ``room``, the best ``room`` of those whose standardised
    correlation ``|φᵀr| / (‖φ‖ σ_r)`` with the residual ``r`` reaches :data:`Z_MIN` are kept: under the null (a
    column unrelated to ``r``) the score is about standard normal, so few spurious terms pass while a real one
    grows with the samples. The counts ``‖φ‖²`` and products ``φᵀr`` of every parent-unit pair come from two
    matrix products.

    Args:
        pool: ``(T, w)`` terms already held (padded with ``M``); they are not proposed again.

    Returns:
        ``(C, r + 1)`` int64 unit index tuples, sorted within rows, distinct, best first.
    """
    m_units = basis.n_units
    n_samples = unit_rows.shape[1]
    count = torch.zeros(parents.shape[0], m_units, dtype=torch.float64, device=unit_rows.device)
    dot = torch.zeros_like(count)
    for a, b in chunk_bounds(n_samples, rows_per_chunk(8 * (parents.shape[0] + m_units), n_samples)):
        par = design(unit_rows[:, a:b], parents).to(torch.float64)
        units = unit_rows[:m_units, a:b].to(torch.float64).T
        count += par @ units
        dot += (par * resid[a:b]) @ units
    score = dot.abs() / (count.sqrt() * sigma).clamp_min(1e-300)
    slots_ext = torch.cat((basis.unit_slot, basis.unit_slot.new_full((1,), -1)))
    clash = (slots_ext[parents][:, :, None] == basis.unit_slot[None, None, :]).any(1)
    p_idx, u_idx = ((count >= MIN_ACTIVE) & ~clash).nonzero(as_tuple=True)
    order = torch.argsort(score[p_idx, u_idx], descending=True)
    p_idx, u_idx, best = p_idx[order], u_idx[order], score[p_idx[order], u_idx[order]]
    cand = torch.sort(torch.cat((parents[p_idx], u_idx[:, None]), dim=1), dim=1).values
    width = pool.shape[1]
    padded = torch.cat((cand, cand.new_full((cand.shape[0], width - cand.shape[1]), m_units)), dim=1)
    merged, first = _distinct_in_order(torch.cat((pool, padded)), m_units + 1)
    new = first >= pool.shape[0]
    cand, best = merged[new], best[first[new] - pool.shape[0]]
    if cand.shape[0] > room:
        cand = cand[best >= Z_MIN][:room]
    return cand


def _distinct_in_order(cand: Tensor, base: int) -> tuple[Tensor, Tensor]:
    """Rows of ``cand`` ``(C, d)`` (entries ``< base``) without repeats: ``(rows, their first positions)``, in
    order of first occurrence."""
    if cand.shape[0] == 0:
        return cand, torch.zeros(0, dtype=torch.long, device=cand.device)
    if cand.shape[1] * base.bit_length() > 62:
        _, inverse = torch.unique(cand, dim=0, return_inverse=True)
    else:
        _, inverse = torch.unique(
            (cand * base ** torch.arange(cand.shape[1], device=cand.device)).sum(1), return_inverse=True
        )
    first = torch.full((int(inverse.max()) + 1,), cand.shape[0], dtype=torch.long, device=cand.device)
    first.scatter_reduce_(0, inverse, torch.arange(cand.shape[0], device=cand.device), reduce="amin")
    first = torch.sort(first).values
    return cand[first], first


def fit_terms(unit_rows: Tensor, y: Tensor, basis: PlayerBasis, max_degree: int, max_columns: int, k: int) -> TermFit:
    """Grow and fit the support level by level up to ``max_degree``, then cut it to ``k`` Walsh terms.

    Args:
        unit_rows: ``(M + 1, N)`` bool unit values of the samples (:meth:`PlayerBasis.unit_rows`).
        y: ``(N,)`` float64 model outputs.
        basis: the player basis.
        max_degree: most units per term.
        max_columns: most terms in the pool (the least-squares size).
        k: most Walsh frequencies in the returned fit's expansion.
    """
    m_units = basis.n_units
    width = max(max_degree, 1)
    pool = GramPool(unit_rows, y, width)
    pool.add(_pad(torch.arange(m_units + 1, device=y.device)[:, None], width, m_units))  # units + constant
    index = torch.arange(pool.terms.shape[0], device=y.device)
    coef = pool.solve(index)
    for _ in range(MAX_PASSES):  # later passes find terms the unfitted higher degrees masked
        grown = False
        for degree in range(2, max_degree + 1):
            level = (pool.terms < m_units).sum(1) == degree - 1
            room = max_columns - pool.terms.shape[0]
            if not bool(level.any()) or room <= 0:
                break
            imp = pool.importance(index[level], coef[level])
            top = torch.argsort(imp, descending=True)[: max(32, 4 * max_columns // max(m_units, 1))]
            resid, sigma = pool.residual(index, coef)
            parents = pool.terms[level][top][:, : degree - 1]
            cand = grow(unit_rows, basis, parents, resid, sigma, room, pool.terms)
            if cand.shape[0] == 0:
                continue
            pool.add(cand)
            index = torch.arange(pool.terms.shape[0], device=y.device)
            coef = pool.solve(index)
            grown = True
        if not grown:
            break
    order = torch.argsort(pool.importance(index, coef), descending=True)
    used = _first_use(term_bits(basis, pool.terms[order]))
    keep = order[: max(int((used <= k).sum()), 1)]
    return TermFit(pool.terms[keep], pool.solve(keep))


def _first_use(bits: Tensor) -> Tensor:
    """``(T,)``: the number of distinct Walsh frequencies used by the first ``t + 1`` terms (in order)."""
    freqs, owner, _ = expand_subsets(bits)
    uniq, inverse, _ = unique_rows(freqs)
    first = torch.full((uniq.shape[0],), bits.shape[0], dtype=torch.long, device=bits.device)
    first.scatter_reduce_(0, inverse, owner, reduce="amin")
    return torch.cumsum(torch.bincount(first, minlength=bits.shape[0])[: bits.shape[0]], 0)

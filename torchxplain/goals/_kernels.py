"""Kernels with frozen hyperparameters and the shift queries GOALS asks of them (generic versions).

GOALS needs, for inputs shifted along one coordinate ``x + xi_j e_j``: the kernel part of the local scores,
the S4 gaps ``c_j = (K - B^(j)) 1`` over the training rows, local posterior variances and, for selected
pairs, ``1^T k(X + xi_j e_j, X + xi_l e_l) 1``. :class:`KernelOps` answers all of them exactly from
:meth:`KernelOps.cross` alone (chunked evaluations at shifted inputs); kernel families override them with
closed forms (:mod:`torchxplain.goals._rbf`, :mod:`torchxplain.goals._families`).

Shapes: ``x`` is the ``(N, J)`` training matrix, ``xq`` a ``(Q, J)`` query matrix, ``alpha`` the ``(N,)``
representer weights ``A^{-1}(y - mean)``, ``xi`` the ``(J,)`` per-feature shifts (float64).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from torchxplain._core import check_finite, chunk_bounds, progress, rows_per_chunk
from torchxplain._core.inputs import to_tensor
from torchxplain.goals._products import SqNorms, TrainingStats


@dataclass(frozen=True)
class TrainingRows:
    """The training side of a GP posterior, prepared once per compute dtype.

    Attributes:
        x: ``(N, J)`` training inputs in the compute dtype.
        alpha: ``(N,)`` representer weights (float64).
        gram: ``(N, N)`` kernel matrix ``K`` (float64).
        centred: ``(N, N)`` ``K - k0`` in the compute dtype (the products' left factor).
        k0: the centring constant (0 when products run in float64).
        krow: ``(N,)`` ``K 1``; ``m``: ``(N,)`` ``K alpha`` (float64).
        lo, hi: ``(J,)`` column minima and maxima of ``x`` (float64).
    """

    x: Tensor
    alpha: Tensor
    gram: Tensor
    centred: Tensor
    k0: float
    krow: Tensor
    m: Tensor
    lo: Tensor
    hi: Tensor


def shift_rows(xq: Tensor, cols: Tensor, xi_p: Tensor) -> Tensor:
    """``(P, J)`` copy of ``xq`` (``(P, J)``) with ``xi_p[p]`` added to column ``cols[p]`` of row ``p``."""
    out = xq.clone()
    rows = torch.arange(out.shape[0], device=out.device)
    out[rows, cols] += xi_p.to(out.dtype)
    return out


def feature_pairs(q: int, j: int, device: torch.device) -> tuple[Tensor, Tensor]:
    """Row and column indices of all ``q * j`` (row, feature) pairs, row-major."""
    q_idx = torch.arange(q, device=device).repeat_interleave(j)
    cols = torch.arange(j, device=device).repeat(q)
    return q_idx, cols


def median_lengthscale(x: Any) -> float:
    """GPyTorch lengthscale of the median heuristic ``theta = 1 / median_{i<i'} ||x_i - x_i'||^2``.

    Returns ``l = 1 / sqrt(2 theta)`` (GPyTorch's RBF is ``exp(-d^2 / (2 l^2))``) for ``x`` ``(N, J)`` (a
    tensor, array or DataFrame).

    Raises:
        ValueError: ``x`` is not 2-D, not finite, or has fewer than two distinct rows.
    """
    x = check_finite(to_tensor(x, "x", ndim=2).tensor, "x").double()
    d2 = torch.cdist(x, x).square()
    iu = torch.triu_indices(x.shape[0], x.shape[0], offset=1, device=x.device)
    med = d2[iu[0], iu[1]].median() if iu.shape[1] else torch.zeros((), dtype=torch.float64)
    if not bool(med > 0):
        raise ValueError(f"median squared distance of x ({tuple(x.shape)}) is zero: x needs at least two distinct rows")
    return float((med / 2.0).sqrt())


class KernelOps(nn.Module):
    """A kernel with frozen hyperparameters and the shift queries GOALS needs (exact generic versions).

    Subclasses implement :meth:`cross`; the other methods are built on it and may be overridden by closed
    forms. Every method is a private kernel: inputs are valid and on one device; results are in the dtype
    of the input rows unless stated.
    """

    def cross(self, x1: Tensor, x2: Tensor) -> Tensor:
        """``(..., n1, n2)`` kernel matrix between ``x1`` ``(..., n1, J)`` and ``x2`` ``(..., n2, J)``."""
        raise NotImplementedError

    def delta_cross(self, x: Tensor, xq: Tensor, cols: Tensor, xi_p: Tensor) -> Tensor:
        """``(N, P)``: ``k(X, xq_p) - k(X, xq_p + xi_p e_{cols_p})`` for pairs ``p``, ``xq`` ``(P, J)``."""
        return self.cross(x, xq) - self.cross(x, shift_rows(xq, cols, xi_p))

    def delta_prior_var(self, xq: Tensor, cols: Tensor, xi_p: Tensor) -> Tensor:
        """``(P,)`` prior variance of ``f(xq_p) - f(xq_p + xi_p e_{cols_p})``."""
        xs = shift_rows(xq, cols, xi_p)
        a, b = xq[:, None, :], xs[:, None, :]
        return (self.cross(a, a) + self.cross(b, b) - 2.0 * self.cross(a, b)).reshape(-1)

    def scores(self, xq: Tensor, train: TrainingRows, xi: Tensor) -> Tensor:
        """``(Q, J)`` kernel part of the local scores ``k(xq_q, X) alpha - k(xq_q + xi_j e_j, X) alpha``."""
        q, j = xq.shape
        n = train.x.shape[0]
        q_idx, cols = feature_pairs(q, j, xq.device)
        out = torch.empty(q * j, dtype=xq.dtype, device=xq.device)
        alpha = train.alpha.to(xq.dtype)
        for a, b in progress(chunk_bounds(q * j, rows_per_chunk(xq.element_size() * 4 * (n + j), q * j))):
            out[a:b] = self.delta_cross(train.x, xq[q_idx[a:b]], cols[a:b], xi[cols[a:b]]).T @ alpha
        return out.reshape(q, j)

    def gaps(self, train: TrainingRows, xi: Tensor, cols: Tensor) -> tuple[Tensor, Tensor]:
        """S4 gaps for the feature indices ``cols`` ``(S,)``, float64.

        Returns ``(c, extra)``: ``c`` ``(N, S)`` with ``c_s = (K - B^(j_s)) 1`` and ``extra`` ``(S,)``
        ``1^T k(X + xi_j e_j, X + xi_j e_j) 1 - 1^T K 1`` (zero for stationary kernels).
        """
        x = train.x.double()
        n = x.shape[0]
        c = torch.empty(n, cols.numel(), dtype=torch.float64, device=x.device)
        extra = torch.empty(cols.numel(), dtype=torch.float64, device=x.device)
        total = train.krow.sum()
        for a, b in chunk_bounds(cols.numel(), rows_per_chunk(3 * 8 * n * (n + x.shape[1]), cols.numel())):
            sel = cols[a:b]
            xs = x.unsqueeze(0).repeat(b - a, 1, 1)
            xs[torch.arange(b - a), :, sel] += xi[sel, None]
            c[:, a:b] = train.krow[:, None] - self.cross(x.unsqueeze(0), xs).sum(-1).T
            extra[a:b] = self.cross(xs, xs).sum((-1, -2)) - total
        return c, extra

    def training_stats(
        self, train: TrainingRows, xi: Tensor, local: TrainingStats | None, sqnorms: SqNorms | None
    ) -> TrainingStats:
        """Local scores and their means (reused from ``local``, an earlier result, when given), and S4 gap
        statistics when ``sqnorms`` (``c -> ||L^{-1} c||^2`` per column) is given, at the training rows."""
        x = train.x
        j = x.shape[1]
        if local is not None and sqnorms is None:
            return local
        scores = self.scores(x, train, xi) if local is None else local.local
        gap_sum = gap_sqnorm = extra = None
        if sqnorms is not None:
            gap_sum = torch.empty(j, dtype=torch.float64, device=x.device)
            gap_sqnorm, extra = torch.empty_like(gap_sum), torch.empty_like(gap_sum)
            step = rows_per_chunk(8 * 4 * x.shape[0], j)
            for a, b in progress(chunk_bounds(j, step), desc="GOALS S4 variances"):
                c, extra[a:b] = self.gaps(train, xi, torch.arange(a, b, device=x.device))
                gap_sum[a:b], gap_sqnorm[a:b] = c.sum(0), sqnorms(c)
        return TrainingStats(
            local=scores,
            mean=scores.mean(0, dtype=torch.float64),
            mean_abs=scores.abs().mean(0, dtype=torch.float64),
            gap_sum=gap_sum,
            gap_sqnorm=gap_sqnorm,
            extra_prior=extra,
        )

    def local_variance(self, xq: Tensor, train: TrainingRows, xi: Tensor, sqnorms: SqNorms) -> Tensor:
        """``(Q, J)`` posterior variances of the local scores at ``xq`` (float64 rows), one solve per pair."""
        q, j = xq.shape
        n = train.x.shape[0]
        q_idx, cols = feature_pairs(q, j, xq.device)
        out = torch.empty(q * j, dtype=torch.float64, device=xq.device)
        x = train.x.double()
        for a, b in progress(chunk_bounds(q * j, rows_per_chunk(8 * 4 * (n + j), q * j)), desc="GOALS local variances"):
            rows, c, xi_p = xq[q_idx[a:b]], cols[a:b], xi[cols[a:b]]
            out[a:b] = self.delta_prior_var(rows, c, xi_p) - sqnorms(self.delta_cross(x, rows, c, xi_p))
        return out.reshape(q, j)

    def group_shifted_means(self, xq: Tensor, x: Tensor, alpha: Tensor, shifts: Tensor) -> Tensor:
        """``(Q, G)`` kernel parts ``k(xq_q + shifts[:, g], X) alpha`` for joint shift vectors ``(J, G)``."""
        q, g = xq.shape[0], shifts.shape[1]
        q_idx, cols = feature_pairs(q, g, xq.device)
        out = torch.empty(q * g, dtype=xq.dtype, device=xq.device)
        sh = shifts.T.to(xq.dtype)
        for a, b in chunk_bounds(q * g, rows_per_chunk(16 * (x.shape[0] + x.shape[1]), q * g)):
            out[a:b] = self.cross(xq[q_idx[a:b]] + sh[cols[a:b]], x) @ alpha
        return out.reshape(q, g)

    def pair_shift_sum(self, x: Tensor, j: int, xi_j: Tensor, l_: int, xi_l: Tensor) -> Tensor:
        """Scalar ``1^T k(X + xi_j e_j, X + xi_l e_l) 1`` (``D^(j,l)`` summed)."""
        n = x.shape[0]
        cj = torch.full((n,), j, device=x.device)
        cl = torch.full((n,), l_, device=x.device)
        return self.cross(shift_rows(x, cj, xi_j.expand(n)), shift_rows(x, cl, xi_l.expand(n))).sum()

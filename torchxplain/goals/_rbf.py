"""(Scale)(ARD-)RBF kernels for GOALS: every shift query as blocked products (the factorised Eq. 13).

``k(x, x') = s exp(-sum_d theta_d (x_d - x'_d)^2)`` with ``theta = 1/(2 l^2)`` in GPyTorch's lengthscale
convention. A shift of coordinate j multiplies the kernel by ``e^{p_j} u_j(x') / u_j(x)`` with
``u_j(x) = exp(2 theta_j xi_j (x_j - c_j))``, so the J shifted means, S4 gaps and local variances are a few
``N x N x J`` products (:mod:`torchxplain.goals._products`). Columns are centred at the mid-range ``c_j`` of the
rows involved, and a column whose worst factor ``theta_j |xi_j| (2 range_j + |xi_j|)`` could overflow the
compute dtype falls back to exact per-column kernel evaluations (with a warning).
"""

from __future__ import annotations

import warnings

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, rows_per_chunk
from torchxplain.goals._kernels import KernelOps, TrainingRows
from torchxplain.goals._products import (
    ShiftFactors,
    SqNorms,
    TrainingStats,
    exponents,
    local_variance_pairs,
    query_scores,
    scores_from_products,
    training_pass,
)

# Largest allowed exponent theta_j |xi_j| (2 range_j + |xi_j|) of the factorised update, per dtype.
GUARD_LIMITS = {torch.float64: 600.0, torch.float32: 60.0, torch.bfloat16: 60.0, torch.float16: 6.0}


def _warn_fallback(what: str, cols: list[int], dtype: torch.dtype) -> None:
    warnings.warn(
        f"GOALS: the factorised RBF shift update could overflow in {dtype} for {what} {cols} "
        "(theta*|xi|*(2*range+|xi|) too large); using the exact cross-kernel there",
        RuntimeWarning,
        stacklevel=4,
    )


class RBFOps(KernelOps):
    """``k(x, x') = s exp(-sum_d theta_d (x_d - x'_d)^2)`` with per-feature ``theta`` ``(J,)`` (ARD/shared).

    Buffers are float64; computations run in the dtype of the rows they are given.
    """

    theta: Tensor
    outputscale: Tensor

    def __init__(self, theta: Tensor, outputscale: Tensor | float = 1.0) -> None:
        super().__init__()
        self.register_buffer("theta", theta.detach().double().reshape(-1).clone())
        self.register_buffer("outputscale", torch.as_tensor(outputscale).detach().double().reshape(()).clone())

    def _neg_sq_dist(self, x1: Tensor, x2: Tensor) -> Tensor:
        """``-sum_d theta_d (x1_d - x2_d)^2``, ``(..., n1, n2)``, centred on ``x2``'s mean."""
        r = self.theta.to(x1.dtype).sqrt()
        centre = x2.mean(-2, keepdim=True)
        z1, z2 = (x1 - centre) * r, (x2 - centre) * r
        d2 = z1.square().sum(-1)[..., :, None] + z2.square().sum(-1)[..., None, :] - 2.0 * z1 @ z2.transpose(-1, -2)
        return -d2.clamp_min(0.0)

    def cross(self, x1: Tensor, x2: Tensor) -> Tensor:
        return self.outputscale.to(x1.dtype) * self._neg_sq_dist(x1, x2).exp()

    def _layout(
        self, train: TrainingRows, xi: Tensor, dtype: torch.dtype, xq: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """Column centres ``(J,)`` (mid-range over the training rows and ``xq``) and the ``(J,)`` bool guard."""
        lo, hi = train.lo, train.hi
        if xq is not None:
            lo, hi = torch.minimum(lo, xq.min(0).values.double()), torch.maximum(hi, xq.max(0).values.double())
        bound = self.theta * xi.abs() * (2.0 * (hi - lo) + xi.abs())
        return (lo + hi) / 2.0, bound > GUARD_LIMITS.get(dtype, 60.0)

    def delta_cross(self, x: Tensor, xq: Tensor, cols: Tensor, xi_p: Tensor) -> Tensor:
        # s (e^L - e^{L+a}) with L = -theta d^2 <= 0 and L + a <= 0, via expm1: no cancellation or overflow.
        dt = xq.dtype
        log_k = self._neg_sq_dist(x, xq)
        theta_p, xi_p = self.theta.to(dt)[cols], xi_p.to(dt)
        a = -theta_p * (xi_p.square() + 2.0 * xi_p * (xq[torch.arange(xq.shape[0]), cols] - x[:, cols]))
        s = self.outputscale.to(dt)
        neg = -s * log_k.exp() * torch.expm1(a.clamp_max(0.0))
        pos = s * (log_k + a).exp() * torch.expm1(-a.clamp_min(0.0))
        return torch.where(a <= 0, neg, pos)

    def delta_prior_var(self, xq: Tensor, cols: Tensor, xi_p: Tensor) -> Tensor:
        dt = xq.dtype
        return -2.0 * self.outputscale.to(dt) * torch.expm1(-self.theta.to(dt)[cols] * xi_p.to(dt).square())

    def _exact_column(self, xq: Tensor, x: Tensor, col: int, xi: Tensor) -> Tensor:
        """``(N, Q)`` ``k(X, xq) - k(X, xq + xi_col e_col)`` for one feature."""
        q = xq.shape[0]
        cols = torch.full((q,), col, device=xq.device)
        return self.delta_cross(x, xq, cols, xi[col].expand(q))

    def scores(self, xq: Tensor, train: TrainingRows, xi: Tensor) -> Tensor:
        dt = xq.dtype
        x = train.x.to(dt)
        centre, bad = self._layout(train, xi, dt, xq)
        out = query_scores(
            lambda rows: self.cross(rows, x),
            train.k0,
            train.alpha,
            x,
            xq,
            self.theta,
            torch.where(bad, 0.0, xi),
            centre,
        )
        for col in bad.nonzero().reshape(-1).tolist():
            out[:, col] = self._exact_column(xq, x, col, xi).T @ train.alpha.to(dt)
        if bool(bad.any()):
            _warn_fallback("feature column(s)", bad.nonzero().reshape(-1).tolist(), dt)
        return out

    def gaps(self, train: TrainingRows, xi: Tensor, cols: Tensor) -> tuple[Tensor, Tensor]:
        x = train.x.double()
        centre, bad = self._layout(train, xi, torch.float64)
        f = ShiftFactors(x[:, cols], self.theta[cols], torch.where(bad, 0.0, xi)[cols], centre[cols])
        c = scores_from_products(train.krow, train.gram @ f.vt, f.up())
        for s, col in enumerate(cols.tolist()):
            if bool(bad[col]):
                c[:, s] = self._exact_column(x, x, col, xi).sum(1)
        return c, torch.zeros(cols.numel(), dtype=torch.float64, device=x.device)

    def training_stats(
        self, train: TrainingRows, xi: Tensor, local: TrainingStats | None, sqnorms: SqNorms | None
    ) -> TrainingStats:
        x = train.x
        centre, bad = self._layout(train, xi, x.dtype)
        stats = training_pass(
            train.centred,
            train.k0,
            train.krow,
            train.m,
            train.alpha,
            x,
            self.theta,
            torch.where(bad, 0.0, xi),
            centre,
            local=local,
            sqnorms=sqnorms,
        )
        cols = bad.nonzero().reshape(-1).tolist()
        for col in cols:
            exact = self._exact_column(x.double(), x.double(), col, xi)
            if local is None:
                scores = exact.T @ train.alpha
                stats.local[:, col] = scores.to(x.dtype)
                stats.mean[col], stats.mean_abs[col] = scores.mean(), scores.abs().mean()
            if sqnorms is not None and stats.gap_sum is not None and stats.gap_sqnorm is not None:
                gap = exact.sum(1, keepdim=True)
                stats.gap_sum[col], stats.gap_sqnorm[col] = gap.sum(), sqnorms(gap)[0]
        if cols:
            _warn_fallback("feature column(s)", cols, x.dtype)
        return stats

    def local_variance(self, xq: Tensor, train: TrainingRows, xi: Tensor, sqnorms: SqNorms) -> Tensor:
        x = train.x.double()
        centre, bad = self._layout(train, xi, torch.float64, xq)
        good_xi = torch.where(bad, 0.0, xi)
        ut = exponents(x, self.theta, good_xi, centre).expm1_()
        q = ShiftFactors(xq, self.theta, good_xi, centre).down()
        cols = torch.arange(xq.shape[1], device=xq.device)
        prior = self.delta_prior_var(xq[:1].expand(xq.shape[1], -1), cols, xi)
        out = torch.empty(xq.shape, dtype=torch.float64, device=xq.device)
        for rows, sl, var in local_variance_pairs(self.cross(xq, x), ut, q, prior, sqnorms):
            out[rows, sl] = var
        for col in bad.nonzero().reshape(-1).tolist():
            out[:, col] = prior[col] - sqnorms(self._exact_column(xq, x, col, xi))
        return out

    def group_shifted_means(self, xq: Tensor, x: Tensor, alpha: Tensor, shifts: Tensor) -> Tensor:
        # k(x + s, x_i) = k(x, x_i) exp(-theta.s^2 - 2(theta o (x - c)).s + 2(theta o (x_i - c)).s): one GEMM.
        dt = xq.dtype
        lo = torch.minimum(x.min(0).values, xq.min(0).values)
        hi = torch.maximum(x.max(0).values, xq.max(0).values)
        theta, sh = self.theta.to(dt), shifts.to(dt)
        bound = (
            self.theta[:, None] * shifts.double().abs() * (2.0 * (hi - lo).double()[:, None] + shifts.double().abs())
        ).sum(0)
        bad = bound > GUARD_LIMITS.get(dt, 60.0)
        centre = (lo + hi) / 2.0
        w = torch.exp(2.0 * (theta * (x - centre)) @ sh) * alpha[:, None]
        w[:, bad] = 0.0
        out = torch.empty(xq.shape[0], sh.shape[1], dtype=dt, device=xq.device)
        for a, b in chunk_bounds(
            xq.shape[0], rows_per_chunk(xq.element_size() * 3 * (x.shape[0] + x.shape[1]), xq.shape[0])
        ):
            factor = torch.exp(-(theta @ sh.square()) - 2.0 * (theta * (xq[a:b] - centre)) @ sh)
            out[a:b] = (self.cross(xq[a:b], x) @ w) * factor
        cols = bad.nonzero().reshape(-1).tolist()
        for c in cols:
            out[:, c] = self.cross(xq + sh[:, c], x) @ alpha
        if cols:
            _warn_fallback("feature group(s)", cols, dt)
        return out

    def pair_shift_sum(self, x: Tensor, j: int, xi_j: Tensor, l_: int, xi_l: Tensor) -> Tensor:
        if j == l_:
            return self.cross(x, x).sum()
        dt = x.dtype
        theta = self.theta.to(dt)
        dj = x[:, j, None] - x[None, :, j]
        dl = x[:, l_, None] - x[None, :, l_]
        xi_j, xi_l = xi_j.to(dt), xi_l.to(dt)
        # (x_i + xi_j e_j) - (x_i' + xi_l e_l) changes coordinate j by +xi_j and coordinate l by -xi_l.
        a = -theta[j] * (xi_j.square() + 2.0 * xi_j * dj) - theta[l_] * (xi_l.square() - 2.0 * xi_l * dl)
        return (self.outputscale.to(dt) * (self._neg_sq_dist(x, x) + a).exp()).sum()

"""Shift updates per kernel family for GOALS.

Every class here is a kernel with frozen hyperparameters that answers the few questions GOALS asks about
inputs shifted along one coordinate, ``x + xi_j e_j``:

* :class:`RBFOps` — (Scale)(ARD-)RBF ``k(x, x') = s exp(-sum_d theta_d (x_d - x'_d)^2)``, ``theta=1/(2l^2)``:
  all J shifted posterior means come from one matrix product (the factorised Eq. 13), with per-column centring
  and an overflow guard that falls back to the exact cross-kernel for the columns that trip it.
* :class:`LinearOps` — ``k(x, x') = v x^T x'``: shifts are rank-one updates.
* :class:`ModuleOps` — any other GPyTorch kernel: shifted inputs are evaluated directly, chunked.

Shapes: ``x`` is the ``(N, J)`` training matrix, ``xq`` a ``(Q, J)`` query matrix, ``alpha`` the ``(N,)``
representer weights ``A^{-1}(y - mean)``, ``xi`` the ``(J,)`` per-feature shifts.
"""

from __future__ import annotations

import copy
import warnings

import gpytorch
import torch
from torch import Tensor, nn

from torchxplain._core import chunk_bounds, progress, rows_per_chunk

# Largest allowed exponent theta_j |xi_j| (2 range_j + |xi_j|) of the factorised update, per dtype.
GUARD_LIMITS = {torch.float64: 600.0, torch.float32: 60.0, torch.bfloat16: 60.0, torch.float16: 6.0}


def shift_rows(xq: Tensor, cols: Tensor, xi_p: Tensor) -> Tensor:
    """``(P, J)`` copy of ``xq`` (``(P, J)``) with ``xi_p[p]`` added to column ``cols[p]`` of row ``p``."""
    out = xq.clone()
    rows = torch.arange(out.shape[0], device=out.device)
    out[rows, cols] += xi_p.to(out.dtype)
    return out


def median_lengthscale(x: Tensor) -> float:
    """GPyTorch lengthscale of the median heuristic ``theta = 1 / median_{i<i'} ||x_i - x_i'||^2``.

    Returns ``l = 1 / sqrt(2 theta)`` (GPyTorch's RBF is ``exp(-d^2 / (2 l^2))``) for ``x`` ``(N, J)``.
    """
    d2 = torch.cdist(x.double(), x.double()).square()
    iu = torch.triu_indices(x.shape[0], x.shape[0], offset=1, device=x.device)
    med = d2[iu[0], iu[1]].median()
    if not bool(med > 0):
        raise ValueError("median squared distance is zero: x has (almost) no distinct rows")
    return float((med / 2.0).sqrt())


class KernelOps(nn.Module):
    """A kernel with frozen hyperparameters and the shift queries GOALS needs (generic implementations).

    Subclasses implement :meth:`cross`; the other methods have exact generic versions built on it, which
    kernel families override with faster closed forms.
    """

    def cross(self, x1: Tensor, x2: Tensor) -> Tensor:
        """``(..., n1, n2)`` kernel matrix between ``x1`` ``(..., n1, J)`` and ``x2`` ``(..., n2, J)``."""
        raise NotImplementedError

    def shifted_means(
        self,
        xq: Tensor,
        x: Tensor,
        alpha: Tensor,
        xi: Tensor,
        kq: Tensor | None = None,
        max_memory: int | str | None = None,
        show_progress: bool = False,
    ) -> tuple[Tensor, Tensor]:
        """Kernel parts of the posterior mean at ``xq`` and at every shifted ``xq + xi_j e_j``.

        Returns ``(m0, ms)``: ``m0[q] = k(xq_q, X) alpha`` ``(Q,)``, ``ms[q,j] = k(xq_q + xi_j e_j, X) alpha``
        ``(Q, J)``, in ``xq``'s dtype. ``kq`` optionally gives ``k(xq, X)`` ``(Q, N)`` (ignored here).
        """
        n, j = x.shape
        m0 = torch.cat(
            [
                self.cross(xq[a:b], x) @ alpha
                for a, b in chunk_bounds(xq.shape[0], rows_per_chunk(8 * (n + j), xq.shape[0], max_memory))
            ]
        )
        q_idx, cols = feature_pairs(xq.shape[0], j, xq.device)
        out = torch.empty(q_idx.numel(), dtype=xq.dtype, device=xq.device)
        bounds = chunk_bounds(q_idx.numel(), rows_per_chunk(16 * (n + j), q_idx.numel(), max_memory))
        for a, b in progress(bounds, show_progress, desc="GOALS shifted means"):
            xs = shift_rows(xq[q_idx[a:b]], cols[a:b], xi[cols[a:b]])
            out[a:b] = self.cross(xs, x) @ alpha
        return m0, out.reshape(xq.shape[0], j)

    def group_shifted_means(
        self, xq: Tensor, x: Tensor, alpha: Tensor, shifts: Tensor, max_memory: int | str | None = None
    ) -> Tensor:
        """``(Q, G)`` kernel parts ``k(xq_q + shifts[:, g], X) alpha`` for joint shift vectors ``(J, G)``."""
        q, g = xq.shape[0], shifts.shape[1]
        q_idx, cols = feature_pairs(q, g, xq.device)
        out = torch.empty(q * g, dtype=xq.dtype, device=xq.device)
        sh = shifts.T.to(xq.dtype)
        for a, b in chunk_bounds(q * g, rows_per_chunk(16 * (x.shape[0] + x.shape[1]), q * g, max_memory)):
            out[a:b] = self.cross(xq[q_idx[a:b]] + sh[cols[a:b]], x) @ alpha
        return out.reshape(q, g)

    def delta_cross(self, x: Tensor, xq: Tensor, cols: Tensor, xi_p: Tensor) -> Tensor:
        """``(N, P)``: ``k(X, xq_p) - k(X, xq_p + xi_p e_{cols_p})`` for pairs ``p``, ``xq`` ``(P, J)``."""
        return self.cross(x, xq) - self.cross(x, shift_rows(xq, cols, xi_p))

    def delta_prior_var(self, xq: Tensor, cols: Tensor, xi_p: Tensor) -> Tensor:
        """``(P,)`` prior variance of ``f(xq_p) - f(xq_p + xi_p e_{cols_p})``."""
        xs = shift_rows(xq, cols, xi_p)
        a, b = xq[:, None, :], xs[:, None, :]
        return (self.cross(a, a) + self.cross(b, b) - 2.0 * self.cross(a, b)).reshape(-1)

    def shift_sums(
        self, x: Tensor, xi: Tensor, k: Tensor | None = None, max_memory: int | str | None = None
    ) -> tuple[Tensor, Tensor]:
        """Sums of shifted kernel blocks over the training rows.

        Returns ``(row_b, self_c)``: ``row_b[i, j] = sum_i' k(x_i, x_i' + xi_j e_j)`` ``(N, J)`` (``B^(j)1``),
        ``self_c[j] = 1^T k(X + xi_j e_j, X + xi_j e_j) 1`` ``(J,)``. ``k`` optionally gives ``K`` ``(N, N)``.
        """
        n, j = x.shape
        row_b = torch.empty(n, j, dtype=x.dtype, device=x.device)
        self_c = torch.empty(j, dtype=x.dtype, device=x.device)
        for a, b in chunk_bounds(j, rows_per_chunk(3 * 8 * n * (n + j), j, max_memory)):
            cols = torch.arange(a, b, device=x.device)
            xs = x.unsqueeze(0).repeat(b - a, 1, 1)
            xs[torch.arange(b - a), :, cols] += xi[cols, None].to(x.dtype)
            row_b[:, a:b] = self.cross(x.unsqueeze(0), xs).sum(-1).T
            self_c[a:b] = self.cross(xs, xs).sum((-1, -2))
        return row_b, self_c

    def pair_shift_sum(self, x: Tensor, j: int, xi_j: Tensor, l_: int, xi_l: Tensor) -> Tensor:
        """Scalar ``1^T k(X + xi_j e_j, X + xi_l e_l) 1`` (``D^(j,l)`` summed)."""
        n = x.shape[0]
        cj = torch.full((n,), j, device=x.device)
        cl = torch.full((n,), l_, device=x.device)
        return self.cross(shift_rows(x, cj, xi_j.expand(n)), shift_rows(x, cl, xi_l.expand(n))).sum()


def feature_pairs(q: int, j: int, device: torch.device) -> tuple[Tensor, Tensor]:
    """Row and column indices of all ``q * j`` (row, feature) pairs, row-major."""
    q_idx = torch.arange(q, device=device).repeat_interleave(j)
    cols = torch.arange(j, device=device).repeat(q)
    return q_idx, cols


class RBFOps(KernelOps):
    """``k(x, x') = s exp(-sum_d theta_d (x_d - x'_d)^2)`` with per-feature ``theta`` ``(J,)`` (ARD/shared).

    Buffers are float64; computations run in the inputs' dtype.
    """

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

    def guard(self, lo: Tensor, hi: Tensor, xi: Tensor, dtype: torch.dtype) -> Tensor:
        """``(J,)`` bool: columns whose factorised update may overflow in ``dtype``."""
        theta, xi64 = self.theta, xi.double()
        bound = theta * xi64.abs() * (2.0 * (hi.double() - lo.double()) + xi64.abs())
        return bound > GUARD_LIMITS.get(dtype, 60.0)

    def shifted_means(
        self,
        xq: Tensor,
        x: Tensor,
        alpha: Tensor,
        xi: Tensor,
        kq: Tensor | None = None,
        max_memory: int | str | None = None,
        show_progress: bool = False,
    ) -> tuple[Tensor, Tensor]:
        dt = xq.dtype
        n, j = x.shape
        lo = torch.minimum(x.min(0).values, xq.min(0).values)
        hi = torch.maximum(x.max(0).values, xq.max(0).values)
        bad = self.guard(lo, hi, xi, dt)
        centre = (lo + hi) / 2.0
        theta, xi_t = self.theta.to(dt), xi.to(dt)
        two_tx = 2.0 * theta * xi_t
        # W = alpha * exp(2 theta xi (x - c)); columns that trip the guard are zeroed and recomputed exactly.
        w = torch.exp(two_tx * (x - centre)) * alpha[:, None]
        w[:, bad] = 0.0
        m0 = torch.empty(xq.shape[0], dtype=dt, device=xq.device)
        ms = torch.empty(xq.shape[0], j, dtype=dt, device=xq.device)
        step = rows_per_chunk(xq.element_size() * 3 * (n + j), xq.shape[0], max_memory)
        for a, b in progress(chunk_bounds(xq.shape[0], step), show_progress, desc="GOALS local scores"):
            k_chunk = kq[a:b] if kq is not None else self.cross(xq[a:b], x)
            m0[a:b] = k_chunk @ alpha
            ms[a:b] = (k_chunk @ w) * torch.exp(-theta * xi_t.square() - two_tx * (xq[a:b] - centre))
        if bool(bad.any()):
            cols = bad.nonzero().reshape(-1)
            warnings.warn(
                f"GOALS: the factorised RBF shift update could overflow in {dt} for feature column(s) "
                f"{cols.tolist()} (theta*|xi|*(2*range+|xi|) too large); using the exact cross-kernel there",
                RuntimeWarning,
                stacklevel=3,
            )
            for c in cols.tolist():
                xs = xq.clone()
                xs[:, c] += xi_t[c]
                ms[:, c] = self.cross(xs, x) @ alpha
        return m0, ms

    def group_shifted_means(
        self, xq: Tensor, x: Tensor, alpha: Tensor, shifts: Tensor, max_memory: int | str | None = None
    ) -> Tensor:
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
        step = rows_per_chunk(xq.element_size() * 3 * (x.shape[0] + x.shape[1]), xq.shape[0], max_memory)
        for a, b in chunk_bounds(xq.shape[0], step):
            factor = torch.exp(-(theta @ sh.square()) - 2.0 * (theta * (xq[a:b] - centre)) @ sh)
            out[a:b] = (self.cross(xq[a:b], x) @ w) * factor
        if bool(bad.any()):
            cols = bad.nonzero().reshape(-1).tolist()
            warnings.warn(
                f"GOALS: the factorised RBF shift update could overflow in {dt} for feature group(s) {cols}; "
                "using the exact cross-kernel there",
                RuntimeWarning,
                stacklevel=3,
            )
            for c in cols:
                out[:, c] = self.cross(xq + sh[:, c], x) @ alpha
        return out

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

    def shift_sums(
        self, x: Tensor, xi: Tensor, k: Tensor | None = None, max_memory: int | str | None = None
    ) -> tuple[Tensor, Tensor]:
        dt = x.dtype
        k = self.cross(x, x) if k is None else k.to(dt)
        lo, hi = x.min(0).values, x.max(0).values
        bad = self.guard(lo, hi, xi, dt)
        theta, xi_t = self.theta.to(dt), xi.to(dt)
        u_log = 2.0 * theta * xi_t * (x - (lo + hi) / 2.0)
        # B^(j) = e^{-theta xi^2} diag(u) K diag(1/u), so B^(j) 1 = e^{-theta xi^2} u * (K u^{-1}).
        v = torch.exp(-u_log)
        v[:, bad] = 0.0
        row_b = torch.exp(u_log - theta * xi_t.square()) * (k @ v)
        for c in bad.nonzero().reshape(-1).tolist():
            xs = x.clone()
            xs[:, c] += xi_t[c]
            row_b[:, c] = self.cross(x, xs).sum(1)
        self_c = k.sum().expand(x.shape[1]).clone()
        return row_b, self_c

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


class LinearOps(KernelOps):
    """``k(x, x') = v x^T x'`` (``LinearKernel`` times any outputscale): rank-one shift updates."""

    def __init__(self, variance: Tensor | float) -> None:
        super().__init__()
        self.register_buffer("variance", torch.as_tensor(variance).detach().double().reshape(()).clone())

    def cross(self, x1: Tensor, x2: Tensor) -> Tensor:
        return self.variance.to(x1.dtype) * (x1 @ x2.transpose(-1, -2))

    def shifted_means(
        self,
        xq: Tensor,
        x: Tensor,
        alpha: Tensor,
        xi: Tensor,
        kq: Tensor | None = None,
        max_memory: int | str | None = None,
        show_progress: bool = False,
    ) -> tuple[Tensor, Tensor]:
        v = self.variance.to(xq.dtype)
        beta = v * (x.T @ alpha)  # (J,): the model is linear with weights beta
        m0 = xq @ beta
        return m0, m0[:, None] + (xi.to(xq.dtype) * beta)[None, :]

    def group_shifted_means(
        self, xq: Tensor, x: Tensor, alpha: Tensor, shifts: Tensor, max_memory: int | str | None = None
    ) -> Tensor:
        beta = self.variance.to(xq.dtype) * (x.T @ alpha)
        return (xq @ beta)[:, None] + (beta @ shifts.to(xq.dtype))[None, :]

    def delta_cross(self, x: Tensor, xq: Tensor, cols: Tensor, xi_p: Tensor) -> Tensor:
        return -self.variance.to(x.dtype) * xi_p.to(x.dtype)[None, :] * x[:, cols]

    def delta_prior_var(self, xq: Tensor, cols: Tensor, xi_p: Tensor) -> Tensor:
        return self.variance.to(xq.dtype) * xi_p.to(xq.dtype).square()

    def shift_sums(
        self, x: Tensor, xi: Tensor, k: Tensor | None = None, max_memory: int | str | None = None
    ) -> tuple[Tensor, Tensor]:
        v, n = self.variance.to(x.dtype), x.shape[0]
        s, xi_t = x.sum(0), xi.to(x.dtype)
        row_b = v * ((x @ s)[:, None] + n * xi_t[None, :] * x)
        self_c = v * (s @ s + 2.0 * n * xi_t * s + n * n * xi_t.square())
        return row_b, self_c

    def pair_shift_sum(self, x: Tensor, j: int, xi_j: Tensor, l_: int, xi_l: Tensor) -> Tensor:
        n = x.shape[0]
        sj, sl = x.sum(0), x.sum(0)
        sj[j] += n * xi_j.to(x.dtype)
        sl[l_] += n * xi_l.to(x.dtype)
        return self.variance.to(x.dtype) * (sj @ sl)


class ModuleOps(KernelOps):
    """Any GPyTorch kernel, through a private float64 copy in eval mode (the user's module is not touched)."""

    def __init__(self, kernel: gpytorch.kernels.Kernel) -> None:
        super().__init__()
        self.kernel = copy.deepcopy(kernel).double().eval().requires_grad_(False)

    def cross(self, x1: Tensor, x2: Tensor) -> Tensor:
        with torch.no_grad():
            out = self.kernel(x1.double(), x2.double()).to_dense()
        return out.to(x1.dtype)


def kernel_ops(kernel: gpytorch.kernels.Kernel, n_features: int) -> KernelOps:
    """The :class:`KernelOps` of a fitted GPyTorch kernel on ``n_features`` inputs: RBF and linear (optionally
    inside one ``ScaleKernel``, without ``active_dims``) get closed forms, other kernels the generic path."""
    scale = torch.ones((), dtype=torch.float64)
    base = kernel
    if isinstance(base, gpytorch.kernels.ScaleKernel) and base.active_dims is None:
        scale = base.outputscale.detach().double().reshape(())
        base = base.base_kernel
    if base.active_dims is None and base.batch_shape == torch.Size([]):
        if isinstance(base, gpytorch.kernels.RBFKernel):
            ls = base.lengthscale.detach().double().reshape(-1)
            if ls.numel() not in (1, n_features):
                raise ValueError(f"RBF kernel has {ls.numel()} lengthscales, expected 1 or {n_features} (ard_num_dims)")
            return RBFOps((1.0 / (2.0 * ls.square())).expand(n_features), scale)
        if isinstance(base, gpytorch.kernels.LinearKernel):
            return LinearOps(scale * base.variance.detach().double().reshape(()))
    return ModuleOps(kernel)

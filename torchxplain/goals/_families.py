"""Kernel families with closed-form shift updates, and :func:`kernel_ops` that picks one for a GPyTorch kernel.

* (Scale)(ARD-)RBF: :class:`~torchxplain.goals._rbf.RBFOps` (blocked products of the factorised Eq. 13).
* (Scale)Linear ``k(x, x') = v x^T x'``: :class:`LinearOps` (shifts are rank-one updates).
* Any other GPyTorch kernel: :class:`ModuleOps` (exact evaluations at shifted inputs, chunked).
"""

from __future__ import annotations

import copy

import gpytorch
import torch
from torch import Tensor

from torchxplain.goals._kernels import KernelOps, TrainingRows
from torchxplain.goals._rbf import RBFOps


class LinearOps(KernelOps):
    """``k(x, x') = v x^T x'`` (``LinearKernel`` times any outputscale): rank-one shift updates."""

    variance: Tensor

    def __init__(self, variance: Tensor | float) -> None:
        super().__init__()
        self.register_buffer("variance", torch.as_tensor(variance).detach().double().reshape(()).clone())

    def cross(self, x1: Tensor, x2: Tensor) -> Tensor:
        return self.variance.to(x1.dtype) * (x1 @ x2.transpose(-1, -2))

    def _beta(self, train: TrainingRows, dtype: torch.dtype) -> Tensor:
        """``(J,)`` weights of the posterior mean ``m(x) = x^T beta`` (kernel part)."""
        return (self.variance * (train.x.double().T @ train.alpha)).to(dtype)

    def scores(self, xq: Tensor, train: TrainingRows, xi: Tensor) -> Tensor:
        return (-xi.to(xq.dtype) * self._beta(train, xq.dtype)).expand(xq.shape[0], -1).clone()

    def gaps(self, train: TrainingRows, xi: Tensor, cols: Tensor) -> tuple[Tensor, Tensor]:
        x = train.x.double()
        n = x.shape[0]
        xi_s, col_sum = xi[cols], x.sum(0)[cols]
        c = -self.variance * n * xi_s[None, :] * x[:, cols]
        extra = self.variance * (2.0 * n * xi_s * col_sum + n * n * xi_s.square())
        return c, extra

    def delta_cross(self, x: Tensor, xq: Tensor, cols: Tensor, xi_p: Tensor) -> Tensor:
        return -self.variance.to(x.dtype) * xi_p.to(x.dtype)[None, :] * x[:, cols]

    def delta_prior_var(self, xq: Tensor, cols: Tensor, xi_p: Tensor) -> Tensor:
        return self.variance.to(xq.dtype) * xi_p.to(xq.dtype).square()

    def group_shifted_means(self, xq: Tensor, x: Tensor, alpha: Tensor, shifts: Tensor) -> Tensor:
        beta = self.variance.to(xq.dtype) * (x.T @ alpha)
        return (xq @ beta)[:, None] + (beta @ shifts.to(xq.dtype))[None, :]

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
    """The :class:`KernelOps` of a fitted GPyTorch kernel on ``n_features`` inputs.

    RBF and linear kernels (optionally inside one ``ScaleKernel``, without ``active_dims`` or batch shapes)
    get closed forms; every other kernel the generic exact path.

    Raises:
        ValueError: an RBF kernel whose number of lengthscales is neither 1 nor ``n_features``.
    """
    scale = torch.ones((), dtype=torch.float64)
    base = kernel
    if isinstance(base, gpytorch.kernels.ScaleKernel) and base.active_dims is None:
        scale = base.outputscale.detach().double().reshape(())
        base = base.base_kernel
    if base.active_dims is None and base.batch_shape == torch.Size([]):
        if isinstance(base, gpytorch.kernels.RBFKernel):
            ls = base.lengthscale.detach().double().reshape(-1)
            if ls.numel() not in (1, n_features):
                raise ValueError(
                    f"the RBF kernel has {ls.numel()} lengthscales, expected 1 or {n_features} "
                    f"(set ard_num_dims={n_features} or None)"
                )
            return RBFOps((1.0 / (2.0 * ls.square())).expand(n_features), scale)
        if isinstance(base, gpytorch.kernels.LinearKernel):
            return LinearOps(scale * base.variance.detach().double().reshape(()))
    return ModuleOps(kernel)

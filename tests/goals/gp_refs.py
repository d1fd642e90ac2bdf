"""GP builders and slow, independent float64 references for the GOALS tests (numpy / direct conditioning)."""

from __future__ import annotations

import gpytorch
import numpy as np
import torch


class ExactGPModel(gpytorch.models.ExactGP):
    def __init__(self, x, y, likelihood, kernel, mean=None):
        super().__init__(x, y, likelihood)
        self.mean_module = gpytorch.means.ConstantMean() if mean is None else mean
        self.covar_module = kernel

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


def make_gp(
    n=25,
    j=4,
    *,
    ard=True,
    outputscale=1.7,
    noise=0.05,
    const=0.3,
    offset=0.0,
    seed=0,
    dtype=torch.float64,
    kernel="rbf",
):
    """A GP with hand-set hyperparameters on y = sin(x0) + x1 x2 + noise."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, j, generator=g, dtype=torch.float64)
    y = torch.sin(x[:, 0]) + x[:, 1] * x[:, 2 % j] + 0.1 * torch.randn(n, generator=g, dtype=torch.float64)
    x = x + offset
    lik = gpytorch.likelihoods.GaussianLikelihood()
    lik.noise = noise
    if kernel == "rbf":
        base = gpytorch.kernels.RBFKernel(ard_num_dims=j if ard else None)
        base.lengthscale = torch.linspace(0.8, 2.0, j) if ard else torch.tensor(1.3)
    elif kernel == "linear":
        base = gpytorch.kernels.LinearKernel()
        base.variance = 1.0 / j
    elif kernel == "matern":
        base = gpytorch.kernels.MaternKernel(nu=2.5, ard_num_dims=j)
        base.lengthscale = torch.linspace(0.8, 2.0, j)
    else:
        raise ValueError(kernel)
    k = gpytorch.kernels.ScaleKernel(base)
    k.outputscale = outputscale
    model = ExactGPModel(x.to(dtype), y.to(dtype), lik, k)
    model.mean_module.constant.data.fill_(const)
    model = model.to(dtype)
    lik.to(dtype)
    return model


def hyper(model):
    """(X, y, theta (J,), s, sigma2, c) as float64 numpy."""
    x = model.train_inputs[0].detach().double().numpy()
    y = model.train_targets.detach().double().numpy()
    ls = model.covar_module.base_kernel.lengthscale.detach().double().numpy().reshape(-1)
    theta = np.broadcast_to(1.0 / (2.0 * ls**2), (x.shape[1],)).copy()
    s = float(model.covar_module.outputscale.detach())
    sigma2 = float(model.likelihood.noise.detach())
    c = float(model.mean_module.constant.detach())
    return x, y, theta, s, sigma2, c


def rbf_np(a, b, theta, s):
    """Direct s * exp(-sum_d theta_d (a_d - b_d)^2) by explicit differences (no expansion)."""
    d = a[:, None, :] - b[None, :, :]
    return s * np.exp(-(theta * d**2).sum(-1))


def explicit_b_scores(model, xi):
    """Training-row scores by the paper's Eq. 12-13, one explicit N x N matrix B^(j) per feature."""
    x, y, theta, s, sigma2, c = hyper(model)
    n, j = x.shape
    xi = np.broadcast_to(np.asarray(xi, dtype=float), (j,))
    k = rbf_np(x, x, theta, s)
    alpha = np.linalg.solve(k + sigma2 * np.eye(n), y - c)
    out = np.empty((n, j))
    for f in range(j):
        diff = x[:, f][:, None] - x[:, f][None, :]
        b = k * np.exp(-theta[f] * (xi[f] ** 2 - 2.0 * xi[f] * diff))
        out[:, f] = (k - b.T) @ alpha
    return out


def gpytorch_shift_scores(model, xq, xi):
    """Scores from GPyTorch's own predictive mean at x and x + xi_j e_j (exact solves forced)."""
    xq = xq.double()
    j = xq.shape[1]
    xi = torch.as_tensor(xi, dtype=torch.float64).expand(j)
    was = model.training
    model.eval()
    with torch.no_grad(), gpytorch.settings.max_cholesky_size(10**9), gpytorch.settings.fast_pred_var(False):
        f0 = model(xq).mean
        cols = [f0 - model(xq + xi[f] * torch.eye(j, dtype=torch.float64)[f]).mean for f in range(j)]
    model.train(was)
    return torch.stack(cols, 1)


def joint_conditioning(model, xq, xi):
    """Brute-force posterior of delta at rows xq: condition the joint Gaussian of
    [y; f(xq); f(xq + xi_1 e_1); ...; f(xq + xi_J e_J)] on y, with the kernel evaluated on the stacked points.

    Returns (mean (Q, J), cov (Q*J, Q*J) over delta ordered feature-major: index f*Q + q).
    """
    x, y, theta, s, sigma2, c = hyper(model)
    xq = np.asarray(xq, dtype=float)
    q, j = xq.shape
    xi = np.broadcast_to(np.asarray(xi, dtype=float), (j,))
    pts = [xq] + [xq + xi[f] * np.eye(j)[f] for f in range(j)]
    z = np.concatenate(pts)
    kzz = rbf_np(z, z, theta, s)
    kzx = rbf_np(z, x, theta, s)
    a = rbf_np(x, x, theta, s) + sigma2 * np.eye(len(x))
    mean = c + kzx @ np.linalg.solve(a, y - c)
    cov = kzz - kzx @ np.linalg.solve(a, kzx.T)
    t = np.zeros((q * j, q * (j + 1)))
    for f in range(j):
        for r in range(q):
            t[f * q + r, r] = 1.0
            t[f * q + r, (f + 1) * q + r] = -1.0
    dmean = (t @ mean).reshape(j, q).T
    return dmean, t @ cov @ t.T

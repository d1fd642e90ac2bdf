"""GOALS on a fitted GPyTorch ``ExactGP``: local and global scores with uncertainty (Eq. 11-13, S4).

Notation: training inputs ``X`` ``(N, J)``, targets ``y`` ``(N,)``, ``K = k(X, X)``, ``A = K + diag(noise)``,
``alpha = A^{-1}(y - mean(X))`` (float64 Cholesky, never GPyTorch's iterative solver). The GOALS operator is
``delta_j(x) = f(x) - f(x + xi_j e_j)``: its posterior mean is ``m(x) - m(x + xi_j e_j)`` (a positive effect
of feature j gives a *negative* score), in the units of ``y`` per shift ``xi_j``.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence

import gpytorch
import torch
from torch import Tensor, nn

from torchxplain._core import chunk_bounds, progress, rows_per_chunk
from torchxplain.goals.importance import REDUCTIONS, GlobalImportance
from torchxplain.goals.kernels import KernelOps, feature_pairs, kernel_ops, shift_rows

_SUPPORTED_LIKELIHOODS = (
    gpytorch.likelihoods.GaussianLikelihood,
    gpytorch.likelihoods.FixedNoiseGaussianLikelihood,
)


def check_xi(xi: float | Tensor, n_features: int) -> Tensor:
    """Return the shifts as a float64 ``(J,)`` tensor; ``xi`` is a scalar or ``(J,)``, finite and nonzero."""
    t = xi.detach().double() if isinstance(xi, Tensor) else torch.as_tensor(xi, dtype=torch.float64)
    if t.ndim == 0:
        t = t.expand(n_features).clone()
    if t.shape != (n_features,):
        raise ValueError(f"xi must be a scalar or have shape ({n_features},), got shape {tuple(t.shape)}")
    if not bool(torch.isfinite(t).all()):
        raise ValueError("xi must be finite")
    if bool((t == 0).any()):
        raise ValueError(
            f"xi must be nonzero (a zero shift explains nothing); zero at feature(s) "
            f"{(t == 0).nonzero().reshape(-1).tolist()}"
        )
    return t


def _looks_unfitted(model: gpytorch.models.ExactGP) -> bool:
    raw = [p for name, p in model.named_parameters() if name.rsplit(".", 1)[-1].startswith("raw_")]
    return bool(raw) and all(bool((p == 0).all()) for p in raw)


class GPBackend(nn.Module):
    """The GOALS math for a fitted ``gpytorch.models.ExactGP`` with a Gaussian likelihood.

    Hyperparameters are read once (constrained values), the user's model is never called, refitted or
    switched between train/eval. Buffers: ``x`` (training inputs, the model's dtype), ``alpha``, ``chol``
    (lower Cholesky factor of ``A``), ``gram`` (``K``), all float64 except ``x``.

    Args:
        model: fitted ``ExactGP`` with one ``(N, J)`` training input and ``(N,)`` targets.
        likelihood: ``GaussianLikelihood`` or ``FixedNoiseGaussianLikelihood`` (default ``model.likelihood``).
        xi: shift, a scalar or a ``(J,)`` tensor of nonzero values (negative allowed).
        max_memory: budget for chunked intermediates (bytes or a string such as ``"1GB"``).
        jitter: added to the diagonal of ``A`` before the Cholesky factorisation.
        show_progress: progress bars for the chunked computations (``TORCHXPLAIN_PROGRESS=0`` turns them off).
    """

    def __init__(
        self,
        model: gpytorch.models.ExactGP,
        likelihood: gpytorch.likelihoods.Likelihood | None = None,
        xi: float | Tensor = 1.0,
        *,
        max_memory: int | str | None = None,
        jitter: float = 0.0,
        show_progress: bool = False,
    ) -> None:
        super().__init__()
        if not isinstance(model, gpytorch.models.ExactGP):
            raise TypeError(f"model must be a fitted gpytorch.models.ExactGP, got {type(model).__name__}")
        if model.train_inputs is None or model.train_targets is None:
            raise ValueError(
                "model has no training data (train_inputs/train_targets are None); "
                "GOALS explains a GP conditioned on data: call model.set_train_data(...) and fit it"
            )
        if len(model.train_inputs) != 1:
            raise ValueError(f"model must have one training input tensor, got {len(model.train_inputs)}")
        x, y = model.train_inputs[0].detach(), model.train_targets.detach()
        if x.ndim != 2 or y.ndim != 1 or y.shape[0] != x.shape[0]:
            raise ValueError(
                f"model's training data must be X (N, J) and y (N,) (no batch or multitask GPs), "
                f"got X {tuple(x.shape)} and y {tuple(y.shape)}"
            )
        if not x.is_floating_point():
            raise TypeError(f"model's training inputs must be floating point, got {x.dtype}")
        for name, t in (("training inputs", x), ("training targets", y)):
            if not bool(torch.isfinite(t).all()):
                raise ValueError(f"model's {name} contain NaN or infinite values")
        likelihood = model.likelihood if likelihood is None else likelihood
        if not isinstance(likelihood, _SUPPORTED_LIKELIHOODS):
            raise TypeError(
                f"likelihood must be a GaussianLikelihood or FixedNoiseGaussianLikelihood "
                f"(GOALS needs the conjugate Gaussian posterior), got {type(likelihood).__name__}"
            )
        if _looks_unfitted(model):
            warnings.warn(
                "GOALS: every hyperparameter of the GP is at GPyTorch's initial value; was the model fitted?",
                UserWarning,
                stacklevel=3,
            )
        n, j = x.shape
        self.max_memory = max_memory
        self.show_progress = show_progress
        self.kernel: KernelOps = kernel_ops(model.covar_module, j).to(x.device)
        self.register_buffer("xi", check_xi(xi, j).to(x.device))
        self.register_buffer("x", x.clone())
        x64 = x.double()

        mean = model.mean_module
        self.mean_module: nn.Module | None = None
        if isinstance(mean, gpytorch.means.ZeroMean):
            const = torch.zeros((), dtype=torch.float64)
        elif isinstance(mean, gpytorch.means.ConstantMean):
            const = mean.constant.detach().double().reshape(())
        else:
            const = torch.zeros((), dtype=torch.float64)
            self.mean_module = copy.deepcopy(mean).double().eval().requires_grad_(False)
        self.register_buffer("mean_constant", const.to(x.device))
        prior_mean = self._mean(x64)

        noise = likelihood.noise.detach().double().reshape(-1)
        if noise.numel() not in (1, n):
            raise ValueError(f"likelihood noise has {noise.numel()} values, expected 1 or N={n}")
        gram = self.kernel.cross(x64, x64)
        a = gram + torch.diag_embed((noise + jitter).expand(n))
        chol, info = torch.linalg.cholesky_ex(a)
        if int(info) != 0:
            raise ValueError(
                "K + noise is not positive definite in float64; pass a small jitter=... (or check the likelihood noise)"
            )
        self.register_buffer("gram", gram)
        self.register_buffer("chol", chol)
        self.register_buffer("alpha", torch.cholesky_solve((y.double() - prior_mean)[:, None], chol)[:, 0])

    @property
    def train_inputs(self) -> Tensor:
        """``(N, J)`` training inputs."""
        return self.x

    def _mean(self, x: Tensor) -> Tensor:
        """``(..., n)`` prior mean at ``x`` ``(..., n, J)``, in ``x``'s dtype."""
        if self.mean_module is None:
            return self.mean_constant.to(x.dtype).expand(x.shape[:-1])
        with torch.no_grad():
            return self.mean_module(x.double()).to(x.dtype)

    def _is_training(self, xq: Tensor) -> bool:
        return xq.shape == self.x.shape and torch.equal(xq, self.x.to(xq.dtype))

    def local_scores(self, xq: Tensor) -> Tensor:
        """``(Q, J)`` posterior means ``E[f(x_q) - f(x_q + xi_j e_j) | y]`` at ``xq`` ``(Q, J)``."""
        dt = xq.dtype
        x, alpha = self.x.to(dt), self.alpha.to(dt)
        kq = self.gram.to(dt) if self._is_training(xq) else None
        m0, ms = self.kernel.shifted_means(
            xq, x, alpha, self.xi, kq=kq, max_memory=self.max_memory, show_progress=self.show_progress
        )
        delta = m0[:, None] - ms
        if self.mean_module is not None:
            delta += self._mean_shift_difference(xq)
        return delta

    def group_scores(self, xq: Tensor, groups: Tensor) -> Tensor:
        """``(Q, J)`` scores of joint shifts of groups of features.

        Feature j gets ``E[f(x_q) - f(x_q + sum_{l in g(j)} xi_l e_l) | y]`` where ``g(j)`` is its group
        (``groups`` ``(J,)`` integer ids, Captum's ``feature_mask``).
        """
        dt = xq.dtype
        _, inverse = torch.unique(groups, return_inverse=True)
        j = xq.shape[1]
        shifts = torch.zeros(j, int(inverse.max()) + 1, dtype=torch.float64, device=xq.device)
        shifts[torch.arange(j, device=xq.device), inverse] = self.xi
        shifted = self.kernel.group_shifted_means(
            xq, self.x.to(dt), self.alpha.to(dt), shifts, max_memory=self.max_memory
        )
        if self.mean_module is None:
            shifted = shifted + self.mean_constant.to(dt)
        else:
            shifted = shifted + self._mean(xq[None] + shifts.T.to(dt)[:, None, :]).T
        return (self.posterior_mean(xq)[:, None] - shifted)[:, inverse]

    def _mean_shift_difference(self, xq: Tensor) -> Tensor:
        """``(Q, J)`` prior-mean part ``mean(x_q) - mean(x_q + xi_j e_j)`` for non-constant mean modules."""
        q, j = xq.shape
        q_idx, cols = feature_pairs(q, j, xq.device)
        out = torch.empty(q * j, dtype=xq.dtype, device=xq.device)
        for a, b in chunk_bounds(q * j, rows_per_chunk(16 * j, q * j, self.max_memory)):
            out[a:b] = self._mean(shift_rows(xq[q_idx[a:b]], cols[a:b], self.xi[cols[a:b]]))
        return self._mean(xq)[:, None] - out.reshape(q, j)

    def local_variance(self, xq: Tensor) -> Tensor:
        """``(Q, J)`` posterior variances ``V[f(x_q) - f(x_q + xi_j e_j) | y]`` (computed in float64).

        Costs O(N^2 Q J) (one triangular solve per (query, feature) pair), chunked to ``max_memory``.
        """
        q, j = xq.shape
        n = self.x.shape[0]
        x64, xq64 = self.x.double(), xq.double()
        q_idx, cols = feature_pairs(q, j, xq.device)
        out = torch.empty(q * j, dtype=torch.float64, device=xq.device)
        step = rows_per_chunk(8 * 4 * (n + j), q * j, self.max_memory)
        for a, b in progress(chunk_bounds(q * j, step), self.show_progress, desc="GOALS local variances"):
            rows, c, xi_p = xq64[q_idx[a:b]], cols[a:b], self.xi[cols[a:b]]
            w = torch.linalg.solve_triangular(self.chol, self.kernel.delta_cross(x64, rows, c, xi_p), upper=False)
            out[a:b] = self.kernel.delta_prior_var(rows, c, xi_p) - w.square().sum(0)
        return out.clamp_min(0.0).reshape(q, j).to(xq.dtype)

    def global_importance(
        self,
        reduction: str = "mean",
        covariance_features: Sequence[int] | Tensor | None = None,
        feature_names: Sequence[str] | None = None,
    ) -> GlobalImportance:
        """Global scores over the training inputs with the S4 posterior moments of the signed mean.

        Args:
            reduction: ``"mean"`` (signed mean, the paper's Eq. 12), ``"abs_mean"`` (its magnitude) or
                ``"mean_abs"`` (mean magnitude of the local scores; a plug-in without its own variance).
            covariance_features: feature indices for which the ``(S, S)`` covariance of the signed means is
                returned (costs O(N^2 S^2); keep S small).
            feature_names: optional names of the J features.

        Returns:
            :class:`GlobalImportance` in the training inputs' dtype; variances computed in float64 as
            ``V[mean_j] = (1^T P_j 1 - c_j^T A^{-1} c_j) / N^2`` with ``c_j = (K - B^(j)) 1``.
        """
        if reduction not in REDUCTIONS:
            raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
        n, j = self.x.shape
        dt = self.x.dtype
        delta = self.local_scores(self.x)
        mean = delta.mean(0)
        score = {"mean": mean, "abs_mean": mean.abs(), "mean_abs": delta.abs().mean(0)}[reduction]

        x64 = self.x.double()
        row_b, self_c = self.kernel.shift_sums(x64, self.xi, k=self.gram, max_memory=self.max_memory)
        k_row = self.gram.sum(1)
        k_tot = k_row.sum()
        sum_b = row_b.sum(0)
        w = torch.linalg.solve_triangular(self.chol, k_row[:, None] - row_b, upper=False)
        variance = (k_tot + self_c - 2.0 * sum_b - w.square().sum(0)) / n**2

        cov, feats = None, None
        if covariance_features is not None:
            feats = torch.as_tensor(covariance_features, dtype=torch.long, device=self.x.device).reshape(-1)
            if feats.numel() == 0 or bool((feats < 0).any()) or bool((feats >= j).any()):
                raise ValueError(f"covariance_features must be indices in [0, {j}), got {feats.tolist()}")
            s = feats.numel()
            prior = torch.empty(s, s, dtype=torch.float64, device=self.x.device)
            for a in range(s):
                for b in range(a, s):
                    fa, fb = int(feats[a]), int(feats[b])
                    d_ab = self_c[fa] if fa == fb else self.kernel.pair_shift_sum(x64, fa, self.xi[fa], fb, self.xi[fb])
                    prior[a, b] = prior[b, a] = k_tot - sum_b[fa] - sum_b[fb] + d_ab
            ws = w[:, feats]
            cov = ((prior - ws.T @ ws) / n**2).to(dt)
        return GlobalImportance(
            mean=mean,
            score=score,
            variance=variance.to(dt),
            covariance=cov,
            covariance_features=feats,
            reduction=reduction,
            feature_names=feature_names,
        )

    def posterior_mean(self, xq: Tensor) -> Tensor:
        """``(Q,)`` posterior mean ``E[f(x_q) | y]`` at ``xq`` ``(Q, J)``, in its dtype (exact solve)."""
        dt = xq.dtype
        k = torch.cat(
            [
                self.kernel.cross(xq[a:b], self.x.to(dt))
                for a, b in chunk_bounds(xq.shape[0], rows_per_chunk(8 * self.x.shape[0], xq.shape[0], self.max_memory))
            ]
        )
        return k @ self.alpha.to(dt) + self._mean(xq)

    def latent_posterior(self) -> tuple[Tensor, Tensor]:
        """Posterior of ``f(X)`` at the training inputs: mean ``(N,)`` and covariance ``K - K A^{-1} K``
        ``(N, N)``, float64 (input to the RATE baseline)."""
        mean = self.gram @ self.alpha + self._mean(self.x.double())
        w = torch.linalg.solve_triangular(self.chol, self.gram, upper=False)
        return mean, self.gram - w.T @ w

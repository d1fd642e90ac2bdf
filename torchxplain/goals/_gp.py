"""GOALS on a fitted GPyTorch ``ExactGP``: local and global scores with uncertainty (Eq. 11-13, S4).

Notation: training inputs ``X`` ``(N, J)``, targets ``y`` ``(N,)``, ``K = k(X, X)``, ``A = K + diag(noise)``,
``alpha = A^{-1}(y - mean(X))`` (float64 Cholesky, never GPyTorch's iterative solver). The GOALS operator is
``delta_j(x) = f(x) - f(x + xi_j e_j)``: its posterior mean is ``m(x) - m(x + xi_j e_j)`` (a positive effect
of feature j gives a *negative* score), in the units of ``y`` per shift ``xi_j``.

Products run in ``tx.settings.dtype_policy``'s dtype for the rows involved (float32 for float32 models, see
:mod:`torchxplain.goals._products` for the error); the Cholesky factor, ``alpha`` and local variances are
float64. The local scores and S4 statistics at the training rows are computed once and cached (per dtype and
device; :meth:`GPBackend.clear_cache`), so global importance never redoes the local products.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import gpytorch
import torch
from torch import Tensor, nn

from torchxplain._core import chunk_bounds, rows_per_chunk, settings
from torchxplain.goals._families import kernel_ops
from torchxplain.goals._gp_checks import check_gp, check_xi, gp_modules
from torchxplain.goals._importance import (
    GlobalImportance,
    Reduction,
    check_covariance_features,
    check_reduction,
    select_score,
)
from torchxplain.goals._inputs import check_rows
from torchxplain.goals._kernels import KernelOps, TrainingRows, feature_pairs, shift_rows
from torchxplain.goals._products import SqNorms, TrainingStats, cholesky_sqnorms, inverse_factor_sqnorms


class GPBackend(nn.Module):
    """The GOALS math for a fitted ``gpytorch.models.ExactGP`` with a Gaussian likelihood (used by ``Goals``).

    Hyperparameters are read once (constrained values); the user's model is never called, refitted or
    switched between train/eval. Methods read the memory budget and progress setting in force
    (``tx.settings``) and accept tensors, arrays and DataFrames ``(Q, J)``.

    Args:
        model: fitted ``ExactGP`` with one ``(N, J)`` training input and ``(N,)`` targets, whose ``forward(x)``
            returns ``MultivariateNormal(mean(x), kernel(x))`` of one ``gpytorch.means.Mean`` and one
            ``gpytorch.kernels.Kernel`` module, under any attribute names.
        likelihood: ``GaussianLikelihood`` or ``FixedNoiseGaussianLikelihood`` (default ``model.likelihood``).
        xi: shift, a scalar or a ``(J,)`` tensor of nonzero values (negative allowed).
        jitter: added to the diagonal of ``A`` before the Cholesky factorisation (finite, ``>= 0``).
    """

    x: Tensor
    xi: Tensor
    mean_constant: Tensor
    gram: Tensor
    chol: Tensor
    alpha: Tensor
    #: GP training inputs carry no column names.
    feature_names: tuple[str, ...] | None = None

    def __init__(
        self,
        model: gpytorch.models.ExactGP,
        likelihood: gpytorch.likelihoods.Likelihood | None = None,
        xi: float | Tensor = 1.0,
        *,
        jitter: float = 0.0,
    ) -> None:
        super().__init__()
        x, y, noise = check_gp(model, likelihood, jitter)
        n, j = x.shape
        mean, covar = gp_modules(model, x)
        self.kernel: KernelOps = kernel_ops(covar, j).to(x.device)
        self.register_buffer("xi", check_xi(xi, j).to(x.device))
        self.register_buffer("x", x.clone())
        self.mean_module: nn.Module | None = None
        const = torch.zeros((), dtype=torch.float64)
        if isinstance(mean, gpytorch.means.ConstantMean):
            const = mean.constant.detach().double().reshape(())
        elif not isinstance(mean, gpytorch.means.ZeroMean):
            self.mean_module = copy.deepcopy(mean).double().eval().requires_grad_(False)
        self.register_buffer("mean_constant", const.to(x.device))
        x64 = x.double()
        gram = self.kernel.cross(x64, x64)
        chol, info = torch.linalg.cholesky_ex(gram + torch.diag_embed((noise + jitter).expand(n)))
        if int(info) != 0:
            raise ValueError(
                f"K + noise is not positive definite in float64 (noise min {float(noise.min()):.3g}, "
                f"jitter={jitter!r}); pass a small jitter, e.g. jitter=1e-6, or check the likelihood noise"
            )
        self.register_buffer("gram", gram)
        self.register_buffer("chol", chol)
        self.register_buffer("alpha", torch.cholesky_solve((y.double() - self._mean(x64))[:, None], chol)[:, 0])
        self._cache: dict[Any, Any] = {}

    @classmethod
    def from_state(cls, kernel: KernelOps, state: dict[str, Tensor]) -> GPBackend:
        """A backend rebuilt from checked saved buffers (``x``, ``xi``, ``mean_constant``, ``gram``, ``chol``,
        ``alpha``) and its kernel."""
        backend = cls.__new__(cls)
        nn.Module.__init__(backend)
        backend.kernel = kernel
        backend.mean_module = None
        for name in ("x", "xi", "mean_constant", "gram", "chol", "alpha"):
            backend.register_buffer(name, state[name])
        backend._cache = {}
        return backend

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> GPBackend:
        self._cache = {}
        super()._apply(fn, recurse)
        return self

    def clear_cache(self) -> None:
        """Drop the cached training-row scores, S4 statistics and derived factors (they are rebuilt on use)."""
        self._cache = {}

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

    def _cached(self, key: Any, make: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def _rows(self, dt: torch.dtype) -> TrainingRows:
        """The training side in compute dtype ``dt`` (the centred kernel is float32 only in float32)."""

        def make() -> TrainingRows:
            k0 = 0.0 if dt == torch.float64 else float(self.gram.mean())
            centred = self.gram if dt == torch.float64 else (self.gram - k0).to(dt)
            krow, m = self.gram.sum(1), self.gram @ self.alpha
            lo, hi = self.x.min(0).values.double(), self.x.max(0).values.double()
            return TrainingRows(self.x.to(dt), self.alpha, self.gram, centred, k0, krow, m, lo, hi)

        return self._cached(("rows", dt), make)

    def _sqnorms(self, dt: torch.dtype) -> SqNorms:
        """``c -> ||L^{-1} c||^2``: a float64 triangular solve, or float32 products with an explicit inverse."""
        if dt == torch.float64:
            return cholesky_sqnorms(self.chol)

        def make() -> Tensor:
            eye = torch.eye(self.chol.shape[0], dtype=torch.float64, device=self.chol.device)
            return torch.linalg.solve_triangular(self.chol, eye, upper=False).to(dt)

        return inverse_factor_sqnorms(self._cached(("linv", dt), make))

    def prepare(self, dtype: torch.dtype | None = None) -> None:
        """Build the factors the products use (otherwise built on first use): the centred kernel in the
        compute ``dtype`` (default: ``tx.settings.dtype_policy``'s for the training inputs) and, for float32,
        the explicit inverse of the Cholesky factor."""
        dt = dtype if dtype is not None else settings.dtype_policy.compute_dtype(self.x)
        self._rows(dt)
        self._sqnorms(dt)

    def training_stats(self, variances: bool = True) -> TrainingStats:
        """Local scores at the training rows, their means and (``variances=True``) the S4 gap statistics,
        computed once per compute dtype and cached; ``local`` is in the compute dtype."""
        dt = settings.dtype_policy.compute_dtype(self.x)
        stats: TrainingStats | None = self._cache.get(("stats", dt))
        if stats is not None and (stats.gap_sum is not None or not variances):
            return stats
        train = self._rows(dt)
        new = self.kernel.training_stats(train, self.xi, stats, self._sqnorms(dt) if variances else None)
        if stats is None and self.mean_module is not None:
            local = new.local + self._mean_shift_difference(train.x)
            new = TrainingStats(
                local,
                local.mean(0, dtype=torch.float64),
                local.abs().mean(0, dtype=torch.float64),
                new.gap_sum,
                new.gap_sqnorm,
                new.extra_prior,
            )
        self._cache[("stats", dt)] = new
        return new

    def is_training(self, xq: Tensor) -> bool:
        """Whether ``xq`` holds exactly the training inputs (in their order)."""
        return xq.shape == self.x.shape and torch.equal(xq, self.x.to(xq.dtype))

    def local_scores(self, xq: Any) -> Tensor:
        """``(Q, J)`` posterior means ``E[f(x_q) - f(x_q + xi_j e_j) | y]`` at ``xq`` ``(Q, J)``, in its dtype."""
        xq = check_rows(xq, self.x)
        if self.is_training(xq):
            return self.training_stats(variances=False).local.to(xq.dtype, copy=True)
        dt = settings.dtype_policy.compute_dtype(xq, self.x)
        rows = xq.to(dt)
        delta = self.kernel.scores(rows, self._rows(dt), self.xi)
        if self.mean_module is not None:
            delta += self._mean_shift_difference(rows)
        return delta.to(xq.dtype)

    def group_scores(self, xq: Any, groups: Tensor) -> Tensor:
        """``(Q, J)`` scores of joint shifts of groups of features.

        Feature j gets ``E[f(x_q) - f(x_q + sum_{l in g(j)} xi_l e_l) | y]`` where ``g(j)`` is its group
        (``groups`` ``(J,)`` integer ids, Captum's ``feature_mask``).
        """
        xq = check_rows(xq, self.x)
        if groups.shape != (xq.shape[1],) or groups.is_floating_point() or groups.dtype == torch.bool:
            raise ValueError(
                f"groups must be ({xq.shape[1]},) integer group ids, got {groups.dtype} of shape {tuple(groups.shape)}"
            )
        dt = xq.dtype
        _, inverse = torch.unique(groups, return_inverse=True)
        j = xq.shape[1]
        shifts = torch.zeros(j, int(inverse.max()) + 1, dtype=torch.float64, device=xq.device)
        shifts[torch.arange(j, device=xq.device), inverse] = self.xi
        shifted = self.kernel.group_shifted_means(xq, self.x.to(dt), self.alpha.to(dt), shifts)
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
        for a, b in chunk_bounds(q * j, rows_per_chunk(16 * j, q * j)):
            out[a:b] = self._mean(shift_rows(xq[q_idx[a:b]], cols[a:b], self.xi[cols[a:b]]))
        return self._mean(xq)[:, None] - out.reshape(q, j)

    def local_variance(self, xq: Any) -> Tensor:
        """``(Q, J)`` posterior variances ``V[f(x_q) - f(x_q + xi_j e_j) | y]`` (computed in float64).

        Costs O(N^2 Q J): one triangular solve per (query, feature) pair, as blocks of products.
        """
        xq = check_rows(xq, self.x)
        var = self.kernel.local_variance(xq.double(), self._rows(torch.float64), self.xi, cholesky_sqnorms(self.chol))
        return var.clamp_min(0.0).to(xq.dtype)

    def global_covariance(self, features: Tensor) -> Tensor:
        """``(S, S)`` posterior covariance of the global means of ``features`` ``(S,)`` (float64, O(N^2 S^2))."""
        n = self.x.shape[0]
        x64 = self.x.double()
        train = self._rows(torch.float64)
        gaps, extra = self.kernel.gaps(train, self.xi, features)
        w = torch.linalg.solve_triangular(self.chol, gaps, upper=False)
        gap_sum, k_tot = gaps.sum(0), train.krow.sum()
        s = features.numel()
        prior = torch.empty(s, s, dtype=torch.float64, device=self.x.device)
        for a in range(s):
            for b in range(a, s):
                fa, fb = int(features[a]), int(features[b])
                if fa == fb:
                    d_ab = k_tot + extra[a]
                else:
                    d_ab = self.kernel.pair_shift_sum(x64, fa, self.xi[fa], fb, self.xi[fb])
                prior[a, b] = prior[b, a] = gap_sum[a] + gap_sum[b] - k_tot + d_ab
        return (prior - w.T @ w) / n**2

    def global_importance(self, reduction: Reduction = "mean", covariance_features: Any = None) -> GlobalImportance:
        """Global scores over the training rows with S4 variances, in the training inputs' dtype.

        Args:
            reduction: ``"mean"``, ``"abs_mean"`` or ``"mean_abs"`` (see :class:`GlobalImportance`).
            covariance_features: feature indices whose ``(S, S)`` covariance is returned (O(N^2 S^2)).
        """
        check_reduction(reduction)
        features = check_covariance_features(covariance_features, self.x.shape[1])
        features = None if features is None else features.to(self.x.device)
        stats = self.training_stats(variances=True)
        dt = self.x.dtype
        variance = stats.variance()
        assert variance is not None
        return GlobalImportance(
            mean=stats.mean.to(dt),
            score=select_score(reduction, stats.mean, stats.mean_abs).to(dt),
            variance=variance.to(dt),
            covariance=None if features is None else self.global_covariance(features).to(dt),
            covariance_features=features,
            reduction=reduction,
        )

    def posterior_mean(self, xq: Any) -> Tensor:
        """``(Q,)`` posterior mean ``E[f(x_q) | y]`` at ``xq`` ``(Q, J)``, in its dtype (exact solve)."""
        xq = check_rows(xq, self.x)
        dt = xq.dtype
        step = rows_per_chunk(8 * self.x.shape[0], xq.shape[0])
        k = torch.cat([self.kernel.cross(xq[a:b], self.x.to(dt)) for a, b in chunk_bounds(xq.shape[0], step)])
        return k @ self.alpha.to(dt) + self._mean(xq)

    def latent_posterior(self) -> tuple[Tensor, Tensor]:
        """Posterior of ``f(X)`` at the training inputs: mean ``(N,)`` and covariance ``K - K A^{-1} K``
        ``(N, N)``, float64 (input to the RATE baseline)."""
        mean = self.gram @ self.alpha + self._mean(self.x.double())
        w = torch.linalg.solve_triangular(self.chol, self.gram, upper=False)
        return mean, self.gram - w.T @ w

"""RATE (RelATive cEntrality, Crawford et al. 2019): the global-importance baseline GOALS is compared with.

The effect size analog is a linear projection ``beta = P f`` of the latent function (Eq. 4), Gaussian under a
Gaussian posterior of ``f``: ``beta ~ N(mu, V)`` with ``mu = P m`` and ``V = P S P^T``. With ``L = V^{-1}``,
the exact Kullback-Leibler divergence of Eq. 5 between ``p(beta_{-j})`` and ``p(beta_{-j} | beta_j = 0)`` is

``KLD(j) = 1/2 [ mu_j^2 (L_jj - 1/V_jj) + V_jj L_jj - 1 - log(V_jj L_jj) ]``

(the first term is the "mean" part the reference R code keeps; the rest is the covariance part), and
``RATE(j) = KLD(j) / sum_l KLD(l)`` (Eq. 6). This needs ``V`` of full rank, i.e. ``J`` at most the rank of
the centred inputs (use it on screened features, or pass a ``jitter``).
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from torch import Tensor

from torchxplain._core import check_finite, check_number
from torchxplain._core.inputs import to_tensor

KL_TERMS = ("full", "mean")
PROJECTIONS = ("pinv", "cov")
KLTerm = Literal["full", "mean"]
Projection = Literal["pinv", "cov"]


def check_rate_options(projection: object, kl: object, jitter: object) -> None:
    """Check RATE's options: ``projection`` and ``kl`` among their values, ``jitter`` finite and ``>= 0``."""
    if projection not in PROJECTIONS:
        raise ValueError(f"projection must be one of {list(PROJECTIONS)}, got {str(projection)[:40]!r}")
    if kl not in KL_TERMS:
        raise ValueError(f"kl must be one of {list(KL_TERMS)}, got {str(kl)[:40]!r}")
    check_number(jitter, "jitter", at_least=0, hint="e.g. 1e-6")


def rate_kld(mu: Tensor, cov: Tensor, kl: KLTerm = "full") -> Tensor:
    """``(J,)`` KLD(j) for ``beta ~ N(mu, cov)``, ``mu`` ``(J,)``, ``cov`` ``(J, J)`` positive definite.

    ``kl="full"`` is the exact Gaussian divergence; ``kl="mean"`` keeps only the mean term. Float64 inside.
    """
    if kl not in KL_TERMS:
        raise ValueError(f"kl must be one of {list(KL_TERMS)}, got {str(kl)[:40]!r}")
    if mu.ndim != 1 or cov.shape != (mu.numel(), mu.numel()):
        raise ValueError(f"mu must be (J,) and cov (J, J), got {tuple(mu.shape)} and {tuple(cov.shape)}")
    mu64, cov64 = check_finite(mu, "mu").double(), check_finite(cov, "cov").double()
    chol, info = torch.linalg.cholesky_ex(cov64)
    if int(info) != 0:
        raise ValueError(
            "the effect-size covariance is not positive definite (more features than the rank of "
            "the centred inputs?); screen features or pass jitter > 0"
        )
    prec_diag = torch.cholesky_inverse(chol).diagonal()
    v_diag = cov64.diagonal()
    kld = 0.5 * mu64.square() * (prec_diag - 1.0 / v_diag)
    if kl == "full":
        r = v_diag * prec_diag
        kld = kld + 0.5 * (r - 1.0 - torch.log(r))
    return kld.to(mu.dtype)


def rate(
    x: Any,
    f_mean: Any,
    f_cov: Any,
    projection: Projection = "pinv",
    kl: KLTerm = "full",
    jitter: float = 0.0,
) -> tuple[Tensor, Tensor]:
    """RATE of the J inputs for a Gaussian posterior of ``f`` at the N rows of ``x``.

    Args:
        x: ``(N, J)`` inputs (tensor, array or DataFrame); they are centred by their column means (the
            projections assume centred data).
        f_mean: ``(N,)`` posterior mean of ``f(x)``.
        f_cov: ``(N, N)`` posterior covariance of ``f(x)``.
        projection: ``"pinv"`` (``beta = X^+ f``, the paper's Eq. 4) or ``"cov"`` (``beta = X^T f / (N - 1)``,
            the covariance projection of the reference scripts).
        kl: ``"full"`` (exact Gaussian KL) or ``"mean"`` (mean term only).
        jitter: added to the diagonal of the effect-size covariance.

    Returns:
        ``(rate, kld)``, each ``(J,)`` in ``x``'s dtype; ``rate`` sums to one.

    Raises:
        ValueError: NaN or infinite inputs (named with their position), mismatched shapes, or an effect-size
            covariance that is not positive definite.

    Example:
        >>> import torch
        >>> from torchxplain.goals import rate
        >>> x = torch.randn(30, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
        >>> f_mean, f_cov = 2 * x[:, 0], 0.1 * torch.eye(30, dtype=torch.float64)  # a posterior over f at x
        >>> scores, kld = rate(x, f_mean, f_cov)
        >>> scores.shape, int(scores.argmax())  # RATE scores sum to 1; feature 0 drives f
        (torch.Size([3]), 0)
    """
    check_rate_options(projection, kl, jitter)
    x = check_finite(to_tensor(x, "x", ndim=2).tensor, "x")
    f_mean = check_finite(to_tensor(f_mean, "f_mean", device=x.device).tensor, "f_mean")
    f_cov = check_finite(to_tensor(f_cov, "f_cov", device=x.device).tensor, "f_cov")
    if not x.is_floating_point():
        x = x.double()
    n, j = x.shape
    if f_mean.shape != (n,) or f_cov.shape != (n, n):
        raise ValueError(
            f"f_mean must be ({n},) and f_cov ({n}, {n}), got {tuple(f_mean.shape)} and {tuple(f_cov.shape)}"
        )
    xc = x.double() - x.double().mean(0)
    proj = torch.linalg.pinv(xc) if projection == "pinv" else xc.T / (n - 1)
    mu = proj @ f_mean.double()
    cov = proj @ f_cov.double() @ proj.T
    cov = 0.5 * (cov + cov.T) + jitter * torch.eye(j, dtype=torch.float64, device=x.device)
    kld = rate_kld(mu, cov, kl=kl)
    return (kld / kld.sum()).to(x.dtype), kld.to(x.dtype)

"""RATE (Crawford et al. 2019) for a Bayesian last layer, without the ``N x N`` latent covariance.

With ``f = H w`` on the training rows and ``w ~ N(m, V)``, the effect size analog ``beta = P f`` (Eq. 4;
``P`` the pseudo-inverse of the centred inputs, or the covariance projection) is Gaussian with mean
``(P H) m`` and covariance ``(P H) V (P H)^T``: a ``J x L`` product instead of the ``N x N`` ``H V H^T``.
The KL divergences are the exact closed form of :func:`torchxplain.goals._rate.rate_kld`. The head's bias
drops out because ``P`` annihilates constant vectors (the inputs are centred).
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchxplain.goals._rate import KLTerm, Projection, check_rate_options, rate_kld
from torchxplain.goals.bnn._backend import BNNBackend


def bnn_rate(
    backend: BNNBackend, projection: Projection = "pinv", kl: KLTerm = "full", jitter: float = 0.0
) -> tuple[Tensor, Tensor]:
    """RATE of the J inputs for a network with a Gaussian last layer.

    Args:
        backend: the :class:`~torchxplain.goals.BNNBackend` (training inputs, features, ``m``, ``V``), e.g.
            ``Goals(bnn).backend``.
        projection: ``"pinv"`` (``beta = X^+ f``, the paper) or ``"cov"`` (``beta = X^T f / (N - 1)``).
        kl: ``"full"`` (exact Gaussian KL) or ``"mean"`` (mean term only).
        jitter: added to the diagonal of the ``(J, J)`` effect-size covariance. It has rank at most ``L``,
            so ``J > L`` needs ``jitter > 0`` (or screened features).

    Returns:
        ``(rate, kld)``, each ``(J,)`` in the inputs' dtype; ``rate`` sums to one. Computed in float64.
    """
    if not isinstance(backend, BNNBackend):
        raise TypeError(f"backend must be a BNNBackend (Goals(bnn).backend), got {type(backend).__name__}")
    check_rate_options(projection, kl, jitter)
    x = backend.train_inputs
    n, j = x.shape
    h = backend.features_at(x).double()
    xc = x.double() - x.double().mean(0)
    proj = torch.linalg.pinv(xc) if projection == "pinv" else xc.T / (n - 1)
    ph = proj @ h  # (J, L)
    loc, cov = backend.loc.double(), backend.cov.double()
    mu = ph @ loc
    beta_cov = (ph * cov if cov.ndim == 1 else ph @ cov) @ ph.T
    beta_cov = 0.5 * (beta_cov + beta_cov.T) + jitter * torch.eye(j, dtype=torch.float64, device=x.device)
    kld = rate_kld(mu, beta_cov, kl=kl)
    return (kld / kld.sum()).to(x.dtype), kld.to(x.dtype)

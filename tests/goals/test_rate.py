"""RATE against a brute-force Kullback-Leibler divergence between explicit Gaussians."""

from __future__ import annotations

import pytest
import torch
from torch.distributions import MultivariateNormal, kl_divergence

from torchxplain.goals import rate, rate_kld


def _random_gaussian(j, seed):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(j, j, generator=g, dtype=torch.float64)
    return torch.randn(j, generator=g, dtype=torch.float64), a @ a.T + 0.5 * torch.eye(j, dtype=torch.float64)


def _brute_kld(mu, cov):
    out = []
    for j in range(mu.numel()):
        rest = [i for i in range(mu.numel()) if i != j]
        v, c = cov[rest][:, rest], cov[rest, j]
        p = MultivariateNormal(mu[rest], v)
        q = MultivariateNormal(mu[rest] - c * mu[j] / cov[j, j], v - torch.outer(c, c) / cov[j, j])
        out.append(kl_divergence(p, q))
    return torch.stack(out)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_closed_form_kld_matches_brute_force(seed):
    mu, cov = _random_gaussian(6, seed)
    torch.testing.assert_close(rate_kld(mu, cov), _brute_kld(mu, cov), atol=1e-10, rtol=1e-9)


def test_mean_term_only_drops_the_covariance_part():
    mu, cov = _random_gaussian(5, 3)
    full, mean_only = rate_kld(mu, cov), rate_kld(mu, cov, kl="mean")
    zero = rate_kld(torch.zeros_like(mu), cov)  # the covariance part alone
    torch.testing.assert_close(full, mean_only + zero, atol=1e-12, rtol=0)


def test_rate_finds_the_linear_signal_and_sums_to_one():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(200, 8, generator=g, dtype=torch.float64)
    f = 2.0 * x[:, 3] - 1.0 * x[:, 6]
    cov = 0.01 * torch.eye(200, dtype=torch.float64)
    for projection in ("pinv", "cov"):
        r, kld = rate(x, f, cov, projection=projection)
        assert abs(float(r.sum()) - 1.0) < 1e-12
        assert set(torch.argsort(r, descending=True)[:2].tolist()) == {3, 6}
        assert bool((kld >= 0).all())


def test_rank_deficient_effect_size_covariance_is_reported():
    x = torch.randn(5, 8, dtype=torch.float64)
    with pytest.raises(ValueError, match="positive definite"):
        rate(x, torch.randn(5, dtype=torch.float64), torch.eye(5, dtype=torch.float64))
    with pytest.raises(ValueError, match="projection"):
        rate(x, torch.randn(5, dtype=torch.float64), torch.eye(5, dtype=torch.float64), projection="x")

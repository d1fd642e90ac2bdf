"""Black-box FourierSHAP on an MLP with 13 binary inputs: values and pairwise interactions vs brute force."""

from __future__ import annotations

import math

import pytest
import torch

from torchxplain import FourierShap, fit_sparse_fourier
from torchxplain.fourier import shapley_interactions, shapley_values

N = 13


@pytest.fixture(scope="module")
def mlp_and_data():
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(N, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)
    ).double()
    gen = torch.Generator().manual_seed(1)
    queries = torch.randint(0, 2, (2, N), generator=gen).double()
    background = torch.randint(0, 2, (4, N), generator=gen).double()
    return net, queries, background


def coalition_values(net, x_star: torch.Tensor, background: torch.Tensor) -> torch.Tensor:
    """``v(S) = mean_b net(x*_S, b_{N∖S})`` for every coalition ``S`` (bit ``i`` of the index = feature ``i``)."""
    masks = ((torch.arange(2**N)[:, None] >> torch.arange(N)) & 1).bool()
    mixed = torch.where(masks[:, None, :], x_star, background[None])  # (2^N, |D|, N)
    with torch.no_grad():
        return net(mixed.reshape(-1, N)).reshape(2**N, -1).mean(1)


def brute_force(v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Shapley values ``(N,)`` and the pairwise Shapley interaction index ``(N, N)`` by summing over coalitions."""
    index = torch.arange(2**N)
    size = ((index[:, None] >> torch.arange(N)) & 1).sum(1)
    fact = [math.factorial(c) for c in range(N + 1)]
    w1 = torch.tensor([fact[c] * fact[N - c - 1] / fact[N] for c in range(N)], dtype=torch.float64)
    w2 = torch.tensor([fact[c] * fact[N - c - 2] / fact[N - 1] for c in range(N - 1)], dtype=torch.float64)
    phi = torch.zeros(N, dtype=torch.float64)
    sii = torch.zeros(N, N, dtype=torch.float64)
    for i in range(N):
        s = index[(index >> i) & 1 == 0]
        phi[i] = (w1[size[s]] * (v[s | (1 << i)] - v[s])).sum()
        for j in range(i + 1, N):
            s = index[((index >> i) & 1 == 0) & ((index >> j) & 1 == 0)]
            delta = v[s | (1 << i) | (1 << j)] - v[s | (1 << i)] - v[s | (1 << j)] + v[s]
            sii[i, j] = sii[j, i] = (w2[size[s]] * delta).sum()
    return phi, sii


@pytest.fixture(scope="module")
def truth(mlp_and_data):
    net, queries, background = mlp_and_data
    pairs = [brute_force(coalition_values(net, q, background)) for q in queries]
    return torch.stack([p[0] for p in pairs]), torch.stack([p[1] for p in pairs])


def test_mlp_interactions_and_values_from_queries_match_brute_force(mlp_and_data, truth):
    net, queries, background = mlp_and_data
    spectrum, report = fit_sparse_fourier(net, N, k=2**N, method="exact", return_report=True, show_progress=False)
    assert report.n_queries == 2**N and report.r2_uniform == pytest.approx(1.0, abs=1e-12)
    phi = shapley_values(spectrum, queries, background)
    sii = shapley_interactions(spectrum, queries, background)
    want_phi, want_sii = truth
    assert want_sii.abs().max() > 1e-3  # the MLP does interact
    torch.testing.assert_close(phi, want_phi, rtol=0, atol=1e-9)
    torch.testing.assert_close(sii, want_sii, rtol=0, atol=1e-9)


@pytest.mark.slow
def test_explainer_interaction_error_shrinks_with_k(mlp_and_data, truth):
    net, queries, background = mlp_and_data
    want = truth[1]
    errors = []
    for k in (64, 1024, 2**N):
        explainer = FourierShap(net, background, k=k, method="exact", show_progress=False)
        assert explainer.fit_report.n_terms == k
        errors.append(float((explainer.interactions(queries) - want).norm() / want.norm()))
    assert errors[0] > errors[1] > errors[2] and errors[2] < 1e-9, errors

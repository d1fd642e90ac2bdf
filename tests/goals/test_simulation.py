"""The Eq. 17-18 simulation design: variance shares, structure of the parts, seeding, validation."""

from __future__ import annotations

import pytest
import torch

from torchxplain.data import simulate_goals_design


@pytest.mark.parametrize("v2,rho,pc_var", [(0.6, 0.5, 0.0), (0.3, 1.0, 0.2), (0.6, 0.0, 0.5)])
def test_parts_have_the_prescribed_sample_variances(v2, rho, pc_var):
    d = simulate_goals_design(n=300, n_features=30, n_causal=6, v2=v2, rho=rho, pc_var=pc_var, seed=4)
    parts = {
        "additive": rho * v2,
        "interaction": (1 - rho) * v2,
        "structure": pc_var * (1 - v2),
        "noise": (1 - pc_var) * (1 - v2),
    }
    for name, var in parts.items():
        t = getattr(d, name)
        assert abs(float(t.var()) - var) < 1e-12, name
        assert abs(float(t.mean())) < 1e-12, name
    torch.testing.assert_close(d.y, d.additive + d.interaction + d.structure + d.noise)


def test_parts_are_built_from_the_causal_features():
    d = simulate_goals_design(n=200, n_features=20, n_causal=4, seed=1)
    x = d.x
    assert d.causal.sum() == 4 and d.tau.numel() == 6
    assert torch.allclose(x.mean(0), torch.zeros(20, dtype=x.dtype), atol=1e-12)
    assert torch.allclose(x.std(0), torch.ones(20, dtype=x.dtype), atol=1e-12)
    xc = x[:, d.causal]
    add = xc @ d.beta
    torch.testing.assert_close(d.additive, add - add.mean())
    i, j = torch.combinations(torch.arange(4), r=2).T
    inter = (xc[:, i] * xc[:, j]) @ d.tau
    torch.testing.assert_close(d.interaction, inter - inter.mean())


def test_raw_genotypes_are_counts():
    d = simulate_goals_design(n=100, n_features=10, n_causal=3, standardize=False, seed=2)
    assert set(d.x.unique().tolist()) <= {0.0, 1.0, 2.0}


def test_seeded_and_reproducible():
    a = simulate_goals_design(seed=7, n=60, n_features=12, n_causal=3)
    b = simulate_goals_design(seed=7, n=60, n_features=12, n_causal=3)
    c = simulate_goals_design(seed=8, n=60, n_features=12, n_causal=3)
    torch.testing.assert_close(a.y, b.y)
    assert torch.equal(a.causal, b.causal)
    assert not torch.allclose(a.y, c.y)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(n_causal=1), "n_causal"),
        (dict(v2=1.5), "v2"),
        (dict(rho=-0.1), "rho"),
        (dict(maf_range=(0.0, 0.5)), "maf_range"),
        (dict(n_pcs=0), "n_pcs"),
        (dict(n=2), "n must be an int >= 3, got 2"),
        (dict(n=50.0), "n must be an int"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        simulate_goals_design(**{"n": 50, "n_features": 10, "n_causal": 3, **kwargs})

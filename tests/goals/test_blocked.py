"""The blocked products: every block layout gives the brute-force joint-Gaussian answer, the globals
reuse the local products, and float32 products stay within their stated error of the float64 path."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gp_refs import joint_conditioning, make_gp

import torchxplain as tx
import torchxplain.goals._products as products
from torchxplain import Goals
from torchxplain.testing import tiny_memory_budget

XI = torch.tensor([1.0, -0.5, 0.7, 2.0, 0.3])


def _reference(model, xi):
    """Training-row scores (N, J), S4 means and variances (J,) by brute-force conditioning."""
    x = model.train_inputs[0]
    n, j = x.shape
    mean, cov = joint_conditioning(model, x.numpy(), xi.numpy())
    avg = np.kron(np.eye(j), np.ones((1, n)) / n)
    return mean, mean.mean(0), np.diag(avg @ cov @ avg.T)


@pytest.mark.parametrize("budget", [None, 2048, 4000])
@pytest.mark.parametrize("ard", [True, False])
def test_blocked_training_pass_equals_joint_conditioning_in_float64(budget, ard):
    model = make_gp(n=14, j=5, ard=ard, outputscale=1.3, const=0.4, seed=2)
    local_ref, mean_ref, var_ref = _reference(model, XI)
    g = Goals(model, xi=XI)
    x = model.train_inputs[0]
    if budget is None:
        local, imp = g.attribute(x), g.global_importance()
    else:  # tiny budgets: one or a few feature columns per block
        with tiny_memory_budget(budget):
            local, imp = g.attribute(x), g.global_importance()
    np.testing.assert_allclose(local.numpy(), local_ref, atol=1e-10, rtol=0)
    np.testing.assert_allclose(imp.mean.numpy(), mean_ref, atol=1e-10, rtol=0)
    np.testing.assert_allclose(imp.variance.numpy(), var_ref, atol=1e-10, rtol=0)


@pytest.mark.parametrize("budget", [None, 1024, 30_000])
def test_blocked_local_variances_equal_joint_conditioning(budget):
    """Whole-row blocks (many queries per solve), single rows split over features, and the default."""
    model = make_gp(n=12, j=5, seed=4)
    xq = torch.randn(4, 5, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 1.3
    mean, cov = joint_conditioning(model, xq.numpy(), XI.numpy())
    g = Goals(model, xi=XI)
    if budget is None:
        var, scores = g.local_variance(xq), g.attribute(xq)
    else:
        with tiny_memory_budget(budget):
            var, scores = g.local_variance(xq), g.attribute(xq)
    np.testing.assert_allclose(var.numpy(), np.diag(cov).reshape(5, 4).T, atol=1e-10, rtol=0)
    np.testing.assert_allclose(scores.numpy(), mean, atol=1e-10, rtol=0)


def test_globals_reuse_the_local_products(monkeypatch):
    """After attribute(x_train), global_importance forms only the S4 product (J columns, not 2J)."""
    widths = []
    real = products.centred_product

    def counting(kc, k0, rhs):
        widths.append(rhs.shape[1])
        return real(kc, k0, rhs)

    monkeypatch.setattr(products, "centred_product", counting)
    model = make_gp(n=20, j=5)
    g = Goals(model)
    x = model.train_inputs[0]
    local = g.attribute(x)
    assert sum(widths) == 5
    imp = g.global_importance()
    assert sum(widths) == 10  # 5 more columns: the S4 gaps only
    torch.testing.assert_close(imp.mean, local.mean(0), atol=1e-14, rtol=0)
    torch.testing.assert_close(imp.score, imp.mean)
    again = g.global_importance(reduction="mean_abs")
    assert sum(widths) == 10  # cached: nothing recomputed
    torch.testing.assert_close(again.score, local.abs().mean(0), atol=1e-14, rtol=0)
    local[0, 0] = 123.0  # the caller's copy; the cache is not aliased
    assert float(g.attribute(x)[0, 0]) != 123.0


def test_cache_follows_dtype_and_device_moves():
    model = make_gp(n=15, j=4, dtype=torch.float32)
    g = Goals(model)
    x = model.train_inputs[0]
    first = g.global_importance()
    g.to(torch.float64)
    assert g.backend.x.dtype == torch.float64
    moved = g.global_importance()
    assert moved.mean.dtype == torch.float64
    torch.testing.assert_close(moved.mean.float(), first.mean, atol=2e-6, rtol=0)
    torch.testing.assert_close(
        g.attribute(x.double()), Goals(make_gp(n=15, j=4)).attribute(x.double()), atol=2e-6, rtol=0
    )


def test_float32_products_are_within_the_stated_error_of_float64():
    """Float32 models use float32 products on the small parts only: scores within ~1e-6 of each feature's
    scale, global means and S4 variances within ~1e-6 relative of the float64 path on the same data."""
    g = torch.Generator().manual_seed(0)
    n, j = 300, 60
    x = torch.randn(n, j, generator=g)
    y = x[:, 0] - x[:, 1] * x[:, 2] + 0.3 * torch.randn(n, generator=g)
    model = make_gp(n=4, j=j, dtype=torch.float32, ard=False)
    model.set_train_data(x, y, strict=False)
    model.covar_module.base_kernel.lengthscale = float(j) ** 0.5
    fast = Goals(model)
    local32, imp32 = fast.attribute(x), fast.global_importance()
    with tx.settings.dtype_policy("float64"):
        exact = Goals(model)
        local64, imp64 = exact.attribute(x), exact.global_importance()
    assert local32.dtype == torch.float32 and local64.dtype == torch.float32  # results in the model's dtype
    stats32 = fast.backend.training_stats()
    with tx.settings.dtype_policy("float64"):
        stats64 = exact.backend.training_stats()
    scale = stats64.local.abs().max(0).values
    assert float(((stats32.local.double() - stats64.local).abs().max(0).values / scale).max()) < 1e-5
    top = torch.argsort(stats64.mean.abs(), descending=True)[:10]
    assert float(((stats32.mean - stats64.mean).abs() / stats64.mean.abs())[top].max()) < 1e-6
    var32, var64 = stats32.variance(), stats64.variance()
    assert float(((var32 - var64).abs() / var64).max()) < 1e-6
    assert torch.equal(imp32.ranking[:10], imp64.ranking[:10])

"""The CUDA paths of both kernels (float16 pair counts, butterfly transforms, gathered patterns, device placement)
give the CPU values; skipped without a GPU."""

from __future__ import annotations

import pytest
import torch

from tests.fourier.cases import random_case
from torchxplain import FourierShap
from torchxplain.fourier import banzhaf_values, shapley_interactions, shapley_values

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


@pytest.mark.parametrize("kernel", ["gemm", "small_support", "auto"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_values_on_cuda_equal_cpu(dtype, kernel):
    spec, *_, xq, bg = random_case(0, 30, 500, 50, 40, max_degree=4)
    spec, xq, bg = spec.to(dtype), xq.to(dtype), bg.to(dtype)
    groups = torch.arange(30) // 3
    for fn, kwargs in [
        (shapley_values, {}),
        (shapley_values, {"groups": groups}),
        (banzhaf_values, {}),
        (shapley_interactions, {"groups": groups}),
    ]:
        cpu = fn(spec, xq, bg, kernel="gemm", **kwargs)
        gpu_kwargs = {k: v.cuda() for k, v in kwargs.items()}
        gpu = fn(spec.to("cuda"), xq.cuda(), bg.cuda(), kernel=kernel, **gpu_kwargs)
        assert gpu.device.type == "cuda" and gpu.dtype == dtype
        scale = float(cpu.abs().max())
        assert float((gpu.cpu() - cpu).abs().max()) <= (1e-10 if dtype == torch.float64 else 1e-4) * scale


def test_explainer_moves_to_cuda():
    spec, *_, xq, bg = random_case(1, 12, 100, 20, 10)
    explainer = FourierShap.from_spectrum(spec, bg).to("cuda")
    torch.testing.assert_close(explainer.attribute(xq.cuda()).cpu(), shapley_values(spec, xq, bg))
    with pytest.raises(ValueError, match="device"):
        explainer.attribute(xq)


def test_tree_spectrum_tables_on_cuda_equal_cpu():
    from tests.fourier.tree_cases import binary_data, fit
    from torchxplain import tree_spectrum
    from torchxplain.fourier.values._plan import ValuePlan

    x, y = binary_data(40, rows=300, seed=3)
    spectrum = tree_spectrum(fit("rf_reg", 6, x, y))
    q, bg = torch.from_numpy(x[:50]), torch.from_numpy(x[100:150])
    cpu = ValuePlan(spectrum, bg, None, 40, kernel="small_support")
    gpu = ValuePlan(spectrum.to("cuda"), bg.cuda(), None, 40, kernel="small_support")
    for method in ("shapley", "banzhaf", "interactions"):
        expected, got = getattr(cpu, method)(q), getattr(gpu, method)(q.cuda())
        assert got.device.type == "cuda"
        torch.testing.assert_close(got.cpu(), expected, atol=1e-10 * float(expected.abs().max()), rtol=0)
    assert gpu.families.members.device.type == "cuda"


def test_pruning_on_cuda_equals_cpu():
    from tests.fourier.tree_cases import binary_data, fit
    from torchxplain import tree_spectrum
    from torchxplain.fourier import prune_tree_spectrum

    x, y = binary_data(20, rows=300, seed=4)
    spectrum = tree_spectrum(fit("rf_reg", 5, x, y))
    bg = torch.from_numpy(x[:40])
    cpu, cpu_report = prune_tree_spectrum(spectrum, bg, r2_target=0.99)
    gpu, gpu_report = prune_tree_spectrum(spectrum.to("cuda"), bg.cuda(), r2_target=0.99)
    assert gpu.amplitudes.device.type == "cuda" and len(gpu) == len(cpu)
    assert gpu_report.r2_hybrid == pytest.approx(cpu_report.r2_hybrid, abs=1e-9)

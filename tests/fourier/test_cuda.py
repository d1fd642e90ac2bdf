"""The CUDA path (float16 pair counts, device placement) gives the CPU values; skipped without a GPU."""

from __future__ import annotations

import pytest
import torch

from tests.fourier.test_values import random_case
from torchxplain.fourier import FourierShap, banzhaf_values, shapley_interactions, shapley_values

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_values_on_cuda_equal_cpu(dtype):
    spec, *_, xq, bg = random_case(0, 30, 500, 50, 40, max_degree=4)
    spec, xq, bg = spec.to(dtype), xq.to(dtype), bg.to(dtype)
    groups = torch.arange(30) // 3
    for fn, kwargs in [
        (shapley_values, {}),
        (shapley_values, {"groups": groups}),
        (banzhaf_values, {}),
        (shapley_interactions, {"groups": groups}),
    ]:
        cpu = fn(spec, xq, bg, **kwargs)
        gpu_kwargs = {k: v.cuda() for k, v in kwargs.items()}
        gpu = fn(spec.to("cuda"), xq.cuda(), bg.cuda(), **gpu_kwargs)
        assert gpu.device.type == "cuda" and gpu.dtype == dtype
        scale = float(cpu.abs().max())
        assert float((gpu.cpu() - cpu).abs().max()) <= (1e-10 if dtype == torch.float64 else 1e-4) * scale


def test_explainer_moves_to_cuda():
    spec, *_, xq, bg = random_case(1, 12, 100, 20, 10)
    explainer = FourierShap.from_spectrum(spec, bg).to("cuda")
    torch.testing.assert_close(explainer.attribute(xq.cuda()).cpu(), shapley_values(spec, xq, bg))
    with pytest.raises(ValueError, match="device"):
        explainer.attribute(xq)

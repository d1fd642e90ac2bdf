"""Tree-spectrum extraction on a CUDA device equals the CPU result (skipped without a GPU)."""

from __future__ import annotations

import pytest
import torch

import torchxplain as tx
from tests.fourier.tree_cases import binary_data, diabetes, fit

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


@pytest.mark.parametrize(
    "kind,data",
    [("rf_reg", "diabetes"), ("gbm_clf", "binary"), ("lgb_reg", "diabetes"), ("cat_reg", "binary")],
)
def test_cuda_extraction_equals_cpu(kind: str, data: str) -> None:
    x, y = diabetes() if data == "diabetes" else binary_data(20, seed=1)
    model = fit(kind, 5, x, y)
    cpu, cpu_families = tx.tree_spectrum(model, return_families=True)
    gpu, gpu_families = tx.tree_spectrum(model, device="cuda", return_families=True)
    assert gpu.device.type == "cuda" and gpu_families.family.device.type == "cuda"
    assert torch.equal(gpu.frequencies.cpu(), cpu.frequencies)
    torch.testing.assert_close(gpu.amplitudes.cpu(), cpu.amplitudes, atol=1e-12, rtol=0)
    assert torch.equal(gpu_families.family.cpu(), cpu_families.family)
    gpu_families.check()
    if data == "diabetes":
        encoding = tx.fourier.TreeEncoding.from_model(model)
        bits = encoding.transform(torch.from_numpy(x).cuda())
        assert bits.device.type == "cuda" and torch.equal(bits.cpu(), encoding.transform(x))

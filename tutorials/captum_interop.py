# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # torchxplain inside Captum: NoiseTunnel, infidelity, sensitivity, and KernelSHAP side by side
#
# Every torchxplain explainer is a Captum `Attribution`. Here a FourierSHAP explainer of a small MLP on binary
# inputs is used with Captum's wrappers and metrics, and compared with Captum's own `KernelShap` and
# `ShapleyValueSampling`, which get an interventional background through `background_averaged`.
# `TORCHXPLAIN_QUICK=1` for a short run.

# %%
from __future__ import annotations

import os
import time

import torch
from captum.attr import KernelShap, NoiseTunnel, ShapleyValueSampling
from captum.metrics import infidelity, sensitivity_max
from torch import nn

import torchxplain as tx
from torchxplain.integrations import background_averaged

QUICK = os.environ.get("TORCHXPLAIN_QUICK") == "1"
torch.manual_seed(0)
n = 10
model = nn.Sequential(nn.Linear(n, 32), nn.ReLU(), nn.Linear(32, 1), nn.Flatten(0))
x = torch.randint(0, 2, (8, n)).float()
background = torch.randint(0, 2, (20, n)).float()

# %% [markdown]
# FourierSHAP: the exact spectrum (2^10 queries) and exact interventional SHAP values. `relaxed=True` lets
# NoiseTunnel and sensitivity_max feed continuous noise (values of the multilinear extension).

# %%
explainer = tx.FourierShap(model, background, k=2**n, method="exact", relaxed=True)
start = time.perf_counter()
ours = explainer.attribute(x).detach()
print(f"FourierSHAP: {time.perf_counter() - start:.4f} s for {len(x)} rows")

# %%
wrapped = background_averaged(model, background)
samples = 64 if QUICK else 2000
start = time.perf_counter()
kernel = KernelShap(wrapped).attribute(x, baselines=wrapped.baselines(x), n_samples=samples)
print(
    f"Captum KernelShap ({samples} samples): {time.perf_counter() - start:.2f} s, "
    f"max |diff| {float((kernel - ours).abs().max()):.3f}"
)
start = time.perf_counter()
sampling = ShapleyValueSampling(wrapped).attribute(x, baselines=wrapped.baselines(x), n_samples=5 if QUICK else 50)
print(
    f"Captum ShapleyValueSampling: {time.perf_counter() - start:.2f} s, "
    f"max |diff| {float((sampling - ours).abs().max()):.3f}"
)

# %% [markdown]
# Captum's wrappers and metrics take the explainer as they take their own methods.

# %%
smooth = NoiseTunnel(explainer).attribute(x, nt_samples=4, stdevs=0.05)
print("NoiseTunnel:", tuple(smooth.shape))


def perturb(inputs):
    noise = 0.05 * torch.randn_like(inputs)
    return noise, inputs - noise


print("infidelity:", infidelity(model, perturb, x, ours).mean().item())
print("sensitivity_max:", sensitivity_max(explainer.attribute, x, n_perturb_samples=4).mean().item())

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
# # GOALS on a Gaussian process: which features matter, with posterior uncertainty
#
# GOALS scores feature j by the posterior of δ_j(x) = f(x) − f(x + ξ e_j): locally per row, globally as the
# mean over the training inputs, with closed-form posterior variances. Below: the paper's simulation design
# (Eq. 17–18), then — when the data folder is present — heterogeneous-stock mice (body weight), which cannot be
# shipped with the package. (`TORCHXPLAIN_QUICK=1` for a short run.)

# %%
from __future__ import annotations

import os
from pathlib import Path

import gpytorch
import numpy as np
import torch

import torchxplain as tx
from torchxplain.data import simulate_goals_design

QUICK = os.environ.get("TORCHXPLAIN_QUICK") == "1"


class ExactGP(gpytorch.models.ExactGP):
    def __init__(self, x, y):
        super().__init__(x, y, gpytorch.likelihoods.GaussianLikelihood())
        self.mean_module = gpytorch.means.ConstantMean()
        self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


def fit(x, y, iterations):
    model = ExactGP(x, y).double()
    model.covar_module.base_kernel.lengthscale = float(x.shape[1]) ** 0.5
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(model.likelihood, model)
    for _ in range(iterations):
        opt.zero_grad()
        (-mll(model(x), y)).backward()
        opt.step()
    return model.eval()


# %% [markdown]
# ## Simulation design: 5 causal of J features, additive and pairwise-interaction effects

# %%
data = simulate_goals_design(n=200 if QUICK else 500, n_features=20 if QUICK else 50, n_causal=5, seed=0)
gp = fit(data.x, data.y, 30 if QUICK else 100)
goals = tx.Goals(gp, xi=1.0)
importance = goals.global_importance(reduction="mean_abs")
print(importance.to_frame().head(8))
score = importance.mean.abs()
auc = float((score[data.causal][:, None] > score[~data.causal][None, :]).double().mean())
print(f"ROC-AUC of the causal features: {auc:.3f}")
assert auc > 0.5, "GOALS should rank the causal features above chance"
display = importance.plot(top=10)  # a tx.viz.ImportanceDisplay: display.figure_, display.ax_

# %% [markdown]
# Local scores for new rows, with their posterior variances:

# %%
local = goals.attribute(data.x[:5])
print(local.shape, goals.local_variance(data.x[:5]).shape)

# %% [markdown]
# ## Heterogeneous-stock mice (body weight), when the data are present
#
# The HS mice data are not shipped: set `TORCHXPLAIN_DATA` to the folder that holds `mice_hs/`.

# %%
mice = Path(os.environ.get("TORCHXPLAIN_DATA", "")) / "mice_hs"
if "TORCHXPLAIN_DATA" in os.environ and (mice / "mice.npz").exists() and not QUICK:
    import pandas as pd

    arrays = np.load(mice / "mice.npz")
    pheno = pd.read_csv(mice / "mice_pheno.csv")
    print("mice data:", {k: arrays[k].shape for k in arrays.files}, pheno.shape)
    print("see benchmarks/goals.py --mice for the full genome scan with a Manhattan plot")
else:
    print("mice data absent or quick mode: skipped")

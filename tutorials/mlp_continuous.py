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
# # Explaining an MLP on continuous features right after training
#
# The model torch users train most is an MLP on continuous tabular features. Interventional SHAP only evaluates it
# at *hybrids* `(x_S, b_~S)`, where every feature comes whole from the explained row or a background row. FourierSHAP
# encodes each column by thresholds between its values in the training data (a thermometer code), so a hybrid of rows
# is the hybrid of their codes; it fits a sparse Fourier surrogate on those codes by querying the model, reports how
# close the surrogate's SHAP values are (estimated on held-out rows the fit never saw), and then computes the values
# of any number of rows in closed form. Here we train an MLP on scikit-learn's diabetes data, explain it with one call,
# check the values against exact enumeration through the network itself, and draw shap's beeswarm.
# (`TORCHXPLAIN_QUICK=1` for a short run: a smaller query budget, the same checks.)

# %%
from __future__ import annotations

import os
import tempfile
import time
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import shap
import torch
from sklearn.datasets import load_diabetes
from torch import nn

import torchxplain as tx

QUICK = os.environ.get("TORCHXPLAIN_QUICK") == "1"
out = Path(os.environ.get("TORCHXPLAIN_OUT") or tempfile.mkdtemp(prefix="torchxplain-mlp-continuous-"))

# %% [markdown]
# ## Train an MLP
#
# Ten continuous features (age, sex, BMI, blood pressure, six serum measurements), standardized on the training
# split; a 10-64-64-1 ReLU network trained by Adam, as a torch user writes it first.

# %%
data = load_diabetes()
frame = pd.DataFrame(data.data, columns=data.feature_names)
order = np.random.default_rng(0).permutation(len(frame))
train, test = frame.iloc[order[88:]], frame.iloc[order[:88]]
mean, std = train.mean(), train.std()
train, test = (train - mean) / std, (test - mean) / std
y = torch.tensor((data.target[order[88:]] - data.target.mean()) / data.target.std(), dtype=torch.float32)

torch.manual_seed(0)
mlp = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1), nn.Flatten(0))
optimizer = torch.optim.Adam(mlp.parameters(), lr=3e-3, weight_decay=1e-2)
x_train = torch.tensor(train.to_numpy(), dtype=torch.float32)
for _ in range(100):
    optimizer.zero_grad()
    nn.functional.mse_loss(mlp(x_train), y).backward()
    optimizer.step()
mlp.eval()

# %% [markdown]
# ## Explain it right after `fit`
#
# `explain_after_fit` sees a torch module on continuous inputs and knows the rows to explain, so its router prices
# every route in seconds — the network's measured cost per row times the rows each route queries, plus our own
# algebra — and takes the cheapest: enumeration (every coalition of every (row, background row) pair, `2^10` queries
# a pair, the network queried at the raw hybrids: exact), or the correction (an additive surrogate fitted once, then
# per row an unbiased Monte Carlo correction until the values reach R² ≥ 0.999 against the exact ones, with standard
# errors), taking the exact route unless it costs clearly more. With ten columns and a fast network the two are
# close; the reason lists every candidate with its predicted seconds.

# %%
start = time.perf_counter()
result = tx.explain_after_fit(mlp, train, test, show_progress=False)
print(
    f"explained {len(test)} rows in {time.perf_counter() - start:.1f} s by route {result.explainer.fit_report.method!r}"
)
print("reason:", result.reason)

# %% [markdown]
# ## The exact values
#
# `method=tx.fourier.Enumerate()` pins enumeration: the exact values, against the same background (a seeded sample
# of the training rows). They add up to the network's output less its mean over the background (efficiency), and
# the default route's values are checked against them.

# %%
exact_result = tx.explain_after_fit(mlp, train, test, method=tx.fourier.Enumerate(), show_progress=False)
explainer = exact_result.explainer
exact = exact_result.attributions.double()
with torch.no_grad():
    network = mlp(torch.tensor(test.to_numpy(), dtype=torch.float32)).double()
    base = mlp(explainer.background.float()).double().mean()
print("max efficiency error of the exact values:", float((exact.sum(1) - (network - base)).abs().max()))
default = result.attributions.double()
r2_default = 1 - float(((default - exact) ** 2).sum() / ((exact - exact.mean()) ** 2).sum())
print(f"SHAP R^2 of the default route's values against exact enumeration: {r2_default:.5f}")

# %% [markdown]
# ## The surrogate fit, for many rows
#
# A fit is what pays for itself over many rows: `method=tx.fourier.Fit()` asks for FourierSHAP's continuous fit —
# thresholds at the midpoints of the training values (at most 128 per column), one player per column, a surrogate
# fitted on hybrids of the training rows with the background. Its report says how close the surrogate's SHAP values
# are to the model's: an estimate on held-out training rows kept out of the thresholds and the fit, so the error of
# snapping unseen values into the nearest slot is part of it. Below its `target_r2` (0.99 by default) it warns with
# what to change — a ReLU network's hybrids have interactions of many features, so on diabetes the default ladder
# may stop short of it, and then the warning says so. Here its values are checked against the exact ones above.

# %%
fit = tx.fourier.Fit(n_queries=32_768) if QUICK else tx.fourier.Fit()
start = time.perf_counter()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", tx.fourier.FitQualityWarning)
    fitted = tx.explain_after_fit(mlp, train, test, method=fit, show_progress=False)
print(f"fitted and explained {len(test)} rows in {time.perf_counter() - start:.1f} s")
report = fitted.explainer.fit_report
print(report)
for warning in caught:
    print("warning:", str(warning.message)[:300])
print(f"estimated SHAP R^2 (report): {report.r2_shap:.4f} ± {report.r2_shap_se:.4f}")
values = fitted.attributions.double()
r2 = 1 - float(((values - exact) ** 2).sum() / ((exact - exact.mean()) ** 2).sum())
print(f"SHAP R^2 against exact enumeration on {len(test)} test rows: {r2:.4f}")

# %% [markdown]
# ## The beeswarm
#
# `to_shap()` hands the values (named by the DataFrame's columns) to shap's plots.

# %%
explanation = explainer.to_shap(test)  # the exact values, a view of the result (nothing recomputed)
shap.plots.beeswarm(explanation, show=False)
plt.savefig(out / "beeswarm.png", bbox_inches="tight")
print("beeswarm.png:", (out / "beeswarm.png").stat().st_size, "bytes in", out)
mean_abs = explanation.values.__abs__().mean(0)
print("top features:", [explanation.feature_names[i] for i in np.argsort(-mean_abs)[:3]])

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
# # Exact tree SHAP values in shap's plots: waterfall and beeswarm
#
# A scikit-learn random forest classifier on the breast-cancer data (a DataFrame, so features keep their names),
# explained exactly from its Fourier spectrum; `to_shap()` hands the values to shap's own waterfall and beeswarm
# plots. The forest explains its positive class on its own scale (the probability of class 1), as stated in
# `explainer.outputs`. Figures go to a temporary folder (`TORCHXPLAIN_OUT` to choose one); `TORCHXPLAIN_QUICK=1`
# for a short run.

# %%
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import shap
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier

import torchxplain as tx

QUICK = os.environ.get("TORCHXPLAIN_QUICK") == "1"
out = Path(os.environ.get("TORCHXPLAIN_OUT") or tempfile.mkdtemp(prefix="torchxplain-tree-plots-"))
out.mkdir(parents=True, exist_ok=True)
data = load_breast_cancer(as_frame=True)
forest = RandomForestClassifier(n_estimators=10 if QUICK else 50, max_depth=4, random_state=0)
forest.fit(data.data, data.target)

# %% [markdown]
# The exact spectrum, a background of 100 rows, and the values of 50 rows as a `shap.Explanation`.

# %%
explainer = tx.FourierShap.from_trees(forest, data.data.iloc[:100])
print("explains:", explainer.outputs.names[0])
explanation = explainer.to_shap(data.data.iloc[100:150])
error = np.abs(
    explanation.values.sum(1) + explanation.base_values - forest.predict_proba(data.data.iloc[100:150])[:, 1]
)
print(f"max |values + base - predict_proba|: {error.max():.3g}")

# %%
shap.plots.waterfall(explanation[0], show=False)
plt.savefig(out / "waterfall.png", bbox_inches="tight")

# %%
plt.close("all")  # shap draws on the current figure: start the beeswarm on a new one
shap.plots.beeswarm(explanation, show=False)
plt.savefig(out / "beeswarm.png", bbox_inches="tight")

# %%
for name in ("waterfall.png", "beeswarm.png"):
    print(f"{name}: {(out / name).stat().st_size} bytes in {out}")

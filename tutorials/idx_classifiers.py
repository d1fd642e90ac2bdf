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
# # IDX: influence-driven explanations of Bayesian network classifiers
#
# IDX explains a Bayesian classifier through its structure: which inputs and intermediate classifications
# support or attack one another (monotonic/stochastic dialectical relations), which are counterfactually
# critical, and how this compares with LIME/SHAP-based relations. (`TORCHXPLAIN_QUICK=1` for a short run.)

# %%
from __future__ import annotations

import os
import tempfile

import torchxplain as tx
from torchxplain.idx import datasets, stats

QUICK = os.environ.get("TORCHXPLAIN_QUICK") == "1"

# %% [markdown]
# ## The paper's running example: play outside
# Observations w(ind), t(emperature), p(ressure); classifications r (raining) and o (play outside).

# %%
bc = datasets.play_outside()
rows = datasets.play_outside_data()[["w", "t", "p"]]
print(bc.decode(bc.decide(rows))[:3])
ex = tx.idx.explain(bc, {"w": "l", "t": "l", "p": "l"}, kit="md", explanandum="o")[0]
print("relevant:", ex.relevant, "relations:", ex.relations)
print(ex.to_json())
display = ex.plot()  # a tx.viz.ExplanationGraphDisplay: display.figure_, display.ax_
shap_ex = tx.idx.explain(bc, {"w": "l", "t": "l", "p": "l"}, kit="shap", background=datasets.all_inputs(bc))[0]
print("SHAP-IDX relations (one SHAP player per categorical observation):", shap_ex.relations)

# %% [markdown]
# ## Many inputs at once: the bulk path
# `explain_batch` computes several kits in one pass and keeps every relation as a boolean tensor over the
# influences; names are made only when asked for (`to_frame()`, or an `Explanation`'s attributes). A classifier
# saves to JSON (no pickle) and loads back with identical explanations.

# %%
batch = tx.idx.explain_batch(bc, rows, kits=["md", "sd", "cf"])
print(batch)
print(batch.to_frame().iloc[:3, :9])
print("MD supporters per input:", batch.relations("md")["support"].sum(dim=1).tolist())
path = bc.save(os.path.join(tempfile.mkdtemp(), "play_outside.json"))
same = tx.idx.BayesianClassifier.load(path)
print("reloaded classifier explains identically:", tx.idx.explain(same, rows, "cf") == tx.idx.explain(bc, rows, "cf"))

# %% [markdown]
# ## A naive Bayes classifier of the 1984 House votes (fitted from the shipped data)

# %%
votes = datasets.votes(missing="mode")
nbc = tx.idx.BayesianClassifier.fit(votes, structure="party", alpha=1.0)
sample = votes.drop(columns=["party"]).head(5 if QUICK else 50)
for kit in ("md", "sd", "cf"):
    explanations = tx.idx.explain(nbc, sample, kit=kit)
    counts = {name: sum(len(e.relations[name]) for e in explanations) for name in explanations[0].relations}
    print(f"{kit}: {counts} over {len(sample)} representatives")

# %% [markdown]
# ## Child (pgmpy's bundled network) as a chain classifier: relation shares over all 1,080 inputs
# `datasets.child()` reads the network as the paper does: every non-leaf node becomes a naive Bayes classifier over
# its children, decided bottom-up. `BayesianClassifier.from_pgmpy` on your own network does the same and warns
# (`ChainApproximationWarning`) that the chain's posteriors can differ from the network's own inference.

# %%
if not QUICK:
    child = datasets.child()
    print(stats.relation_shares(child, datasets.all_inputs(child)))

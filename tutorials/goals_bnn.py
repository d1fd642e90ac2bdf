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
# # Variable importance with uncertainty for a torch MLP: GOALS on a Bayesian last layer
#
# You trained a small torch network and want to know which inputs it relies on, with error bars. This
# tutorial
#
# 1. trains a plain torch MLP regressor,
# 2. makes its last layer Bayesian (`LastLayerBNN.from_sequential`) and fits the posterior of that layer
#    by stochastic variational inference in Pyro,
# 3. explains it with GOALS (`tx.Goals`): local scores `E[f(x) - f(x + xi e_j)]` per sample and feature,
#    their posterior variances, and global scores (the mean over the training data) with credible intervals,
# 4. and, for a Pyro model you wrote yourself, does the same with `tx.Goals.from_pyro`.
#
# Run it as a script (`python tutorials/goals_bnn.py`, add `--quick` or set `TORCHXPLAIN_QUICK=1` for a
# smaller run) or open it as a notebook with jupytext. The full run takes well under two minutes on a CPU.

# %%
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pyro
import pyro.distributions as dist
import torch
from pyro.infer.autoguide import AutoNormal
from pyro.nn import PyroModule, PyroSample
from sklearn.datasets import make_friedman1
from torch import nn

import torchxplain as tx
from torchxplain.goals import LastLayerBNN, bnn_rate

QUICK = "--quick" in sys.argv or os.environ.get("TORCHXPLAIN_QUICK", "0") not in ("", "0")
OUT = Path(os.environ.get("TORCHXPLAIN_OUT", tempfile.mkdtemp(prefix="goals_bnn_")))
OUT.mkdir(parents=True, exist_ok=True)
torch.manual_seed(0)

# %% [markdown]
# ## Data
# Friedman's benchmark: `y = 10 sin(pi x0 x1) + 20 (x2 - 0.5)^2 + 10 x3 + 5 x4 + noise` with ten uniform
# inputs, of which only the first five matter (x0 and x1 only through their interaction). We standardise the
# inputs, so a shift `xi = 1` means one standard deviation, and the target.

# %%
n = 300 if QUICK else 1000
X_np, y_np = make_friedman1(n_samples=n + 200, n_features=10, noise=1.0, random_state=0)
X = torch.tensor(X_np, dtype=torch.float32)
y = torch.tensor(y_np, dtype=torch.float32)
X = (X - X[:n].mean(0)) / X[:n].std(0)
y = (y - y[:n].mean()) / y[:n].std()
X_train, y_train, X_test, y_test = X[:n], y[:n], X[n:], y[n:]
names = [f"x{j}" for j in range(10)]

# %% [markdown]
# ## 1. An ordinary torch MLP regressor

# %%
net = nn.Sequential(nn.Linear(10, 64), nn.Tanh(), nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 1))
opt = torch.optim.Adam(net.parameters(), lr=3e-3, weight_decay=1e-4)
for _epoch in range(250 if QUICK else 800):
    opt.zero_grad()
    loss = ((net(X_train)[:, 0] - y_train) ** 2).mean()
    loss.backward()
    opt.step()
with torch.no_grad():
    r2 = 1 - ((net(X_test)[:, 0] - y_test) ** 2).mean() / y_test.var()
print(f"MLP test R^2: {float(r2):.3f}")

# %% [markdown]
# ## 2. Make the last layer Bayesian
# `from_sequential` keeps `net[:-1]` as a deterministic feature extractor `h(x)` and replaces `net[-1]` by
# a linear head with a Normal prior; its weights start the posterior means. `fit` runs SVI (`Trace_ELBO`,
# mini-batches, seeded) for the head's mean-field Gaussian posterior `q(w) = N(m, V)` and the noise scale.
# The extractor stays fixed unless you pass `train_features=True`. Pyro parameters live in the module, not
# in Pyro's global parameter store.

# %%
bnn = LastLayerBNN.from_sequential(net, prior_scale=1.0)
bnn.fit(X_train, y_train, epochs=60 if QUICK else 300, lr=1e-2, batch_size=150 if QUICK else 128, seed=0)
mean, std = bnn.predict(X_test, return_std=True)
r2 = 1 - ((mean - y_test) ** 2).mean() / y_test.var()
print(
    f"Bayesian last layer: test R^2 {float(r2):.3f}, noise sd {float(bnn.sigma.detach()):.3f}, "
    f"mean latent sd {float(std.mean()):.3f}; ELBO loss {bnn.losses[0]:.1f} -> {bnn.losses[-1]:.1f}"
)

# %% [markdown]
# ## 3. Explain it with GOALS
# Local scores: for each sample and feature, the posterior mean of `f(x) - f(x + xi e_j)` in units of `y`
# (a *negative* score means increasing the feature increases the prediction). The J shifted inputs go
# through the network in batched, memory-chunked forward passes; because the extractor starts with an
# `nn.Linear`, only that layer's pre-activations are shifted.

# %%
g = tx.Goals(bnn, xi=1.0, feature_names=names)
local = g.attribute(X_test[:5])  # (5, 10)
local_sd = g.local_variance(X_test[:5]).sqrt()
print("local scores of the first test sample (mean +- sd):")
for j in range(10):
    print(f"  {names[j]}: {float(local[0, j]):+.3f} +- {float(local_sd[0, j]):.3f}")

# %% [markdown]
# Global importance: the mean of the local scores over the training data, with its exact posterior variance
# under `q(w)`. `reduction="mean_abs"` ranks by the mean magnitude of the local scores instead, which does
# not cancel for interactions and non-monotone effects (x0, x1 and x2 here).

# %%
imp = g.global_importance(reduction="abs_mean")
print(imp.to_frame().round(3).to_string(index=False))
imp_abs = g.global_importance(reduction="mean_abs")
print("ranking by mean |local score|:", [names[int(j)] for j in imp_abs.ranking])
display = imp.plot(top=10)  # a tx.viz.ImportanceDisplay holding figure_ and ax_
display.figure_.savefig(OUT / "goals_bnn_importance.png", dpi=100)
print(f"figure written to {OUT / 'goals_bnn_importance.png'}")
top5 = {int(j) for j in imp_abs.ranking[:5]}
print("top five by mean |local score| are the five relevant inputs:", top5 == {0, 1, 2, 3, 4})

# %% [markdown]
# For comparison, RATE (the KL-based centrality of the linear projection of `f` on the inputs), computed in
# closed form for the Bayesian last layer. It sees only the part of `f` that is linear in each input, so it
# can miss interaction-only features.

# %%
rate, _ = bnn_rate(g.backend)
print("RATE:", {names[j]: round(float(rate[j]), 3) for j in range(10)})

# %% [markdown]
# ## 4. Your own Pyro model: `tx.Goals.from_pyro`
# Any Pyro model whose head is a `PyroModule[nn.Linear]` with a Normal prior on its weight works, with an
# `AutoNormal`, `AutoDiagonalNormal`, `AutoMultivariateNormal` or `AutoLowRankMultivariateNormal` guide.
# Everything before the head must be deterministic. Here the feature extractor is the trained MLP body.


# %%
class MyBNN(PyroModule):
    def __init__(self, body: nn.Module, width: int) -> None:
        super().__init__()
        self.body = body
        self.out = PyroModule[nn.Linear](width, 1)
        self.out.weight = PyroSample(dist.Normal(0.0, 1.0).expand([1, width]).to_event(2))
        self.out.bias = PyroSample(dist.Normal(0.0, 1.0).expand([1]).to_event(1))

    def forward(self, x: torch.Tensor, y: torch.Tensor | None = None) -> torch.Tensor:
        f = self.out(self.body(x)).squeeze(-1)
        sigma = pyro.sample("sigma", dist.LogNormal(-1.0, 0.5))
        with pyro.plate("data", x.shape[0]):
            pyro.sample("obs", dist.Normal(f, sigma), obs=y)
        return f


with pyro.settings.context(module_local_params=True):
    body = net[:-1].requires_grad_(False)
    model = MyBNN(body, 32)
    guide = AutoNormal(model)
    elbo = pyro.infer.Trace_ELBO()(model, guide)
    elbo(X_train, y_train)
    opt = torch.optim.Adam(elbo.parameters(), lr=0.02)
    for _step in range(60 if QUICK else 300):
        opt.zero_grad()
        elbo(X_train, y_train).backward()
        opt.step()

g_user = tx.Goals.from_pyro(model, guide, head="out", train_inputs=X_train, xi=1.0, features=body, feature_names=names)
imp_user = g_user.global_importance(reduction="mean_abs")
print("your Pyro model, ranking by mean |local score|:", [names[int(j)] for j in imp_user.ranking])

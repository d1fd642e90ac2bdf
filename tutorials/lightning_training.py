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
# # Explanations during Lightning training, and a whole dataset explained with `Trainer.predict`
#
# `ExplanationCallback` explains a fixed probe batch at the end of every validation epoch, logs per-feature
# scalars (`xai/mean_abs/<feature>`), figures and tensors, and keeps its history in the checkpoint.
# `ExplainModule` + `ExplanationWriter` turn `Trainer.predict` into "explain this dataset"; with
# `strategy="ddp"` each process explains its own rows (see `benchmarks/scale.py`). This notebook uses one
# device (DDP re-launches scripts and is refused in notebooks). `TORCHXPLAIN_QUICK=1` for a short run.

# %%
from __future__ import annotations

import os
import tempfile

import lightning.pytorch as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import torchxplain as tx
from torchxplain.data import load_entacmaea
from torchxplain.integrations import ExplainModule, ExplanationCallback, ExplanationWriter, merge_shards

QUICK = os.environ.get("TORCHXPLAIN_QUICK") == "1"
torch.manual_seed(0)
out = tempfile.mkdtemp(prefix="torchxplain-lightning-")

# %%
x, y = load_entacmaea("brightness_red")
y = (y - y.mean()) / y.std()
train = DataLoader(TensorDataset(x, y), batch_size=256, shuffle=True)
val = DataLoader(TensorDataset(x[:1024], y[:1024]), batch_size=1024)


class Regressor(pl.LightningModule):
    def __init__(self, hidden: int = 64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(13, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1), nn.Flatten(0)
        )

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, _):
        return nn.functional.mse_loss(self(batch[0]), batch[1])

    def validation_step(self, batch, _):
        self.log("val_mse", nn.functional.mse_loss(self(batch[0]), batch[1]))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


# %% [markdown]
# The factory builds a fresh explainer from the current weights: here FourierSHAP with the exact spectrum of
# the network (2^13 queries), explaining the probe against a background of 40 genotypes.

# %%
background, probe = x[torch.randperm(len(x))[:40]], x[torch.randperm(len(x))[:32]]
callback = ExplanationCallback(
    lambda module: tx.FourierShap(module, background),
    probe,
    feature_names=[f"site{j}" for j in range(13)],
)
trainer = pl.Trainer(
    max_epochs=2 if QUICK else 10,
    default_root_dir=out,
    callbacks=[callback],
    enable_progress_bar=False,
    enable_model_summary=False,
    limit_train_batches=5 if QUICK else None,
)
model = Regressor(hidden=32 if QUICK else 128)
trainer.fit(model, train, val)
print("explained epochs:", [h["epoch"] for h in callback.history])
print("importance at the last epoch:", callback.history[-1]["importance"])

# %% [markdown]
# ## Explain a whole dataset with `Trainer.predict`

# %%
explainer = tx.FourierShap(model.eval(), background)
writer = ExplanationWriter(os.path.join(out, "shards"))
pl.Trainer(logger=False, callbacks=[writer], enable_progress_bar=False).predict(
    ExplainModule(explainer), DataLoader(TensorDataset(x[:2000]), batch_size=500), return_predictions=False
)
merged = merge_shards(os.path.join(out, "shards"), expected_rows=2000)
print({k: tuple(v.shape) for k, v in merged.items()})
assert torch.allclose(merged["attributions"], explainer.attribute(x[:2000]).detach(), atol=1e-5)

"""A tiny regression task and module for the Lightning tests, for either Lightning package."""

from __future__ import annotations

from types import ModuleType

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

N_FEATURES = 6
QUIET = dict(accelerator="cpu", devices=1, enable_progress_bar=False, enable_model_summary=False)


def regressor_class(pl: ModuleType) -> type:
    """A small MLP regressor (dropout included, so eval mode matters) on ``pl.LightningModule``."""

    class Regressor(pl.LightningModule):
        def __init__(self, n: int = N_FEATURES) -> None:
            super().__init__()
            self.net = nn.Sequential(nn.Linear(n, 16), nn.Tanh(), nn.Dropout(0.2), nn.Linear(16, 1))

        def forward(self, x):
            return self.net(x).squeeze(-1)

        def training_step(self, batch, batch_idx):
            x, y = batch
            return nn.functional.mse_loss(self(x), y)

        def validation_step(self, batch, batch_idx):
            x, y = batch
            self.log("val_loss", nn.functional.mse_loss(self(x), y))

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=0.05)

    return Regressor


def data(binary: bool = False, rows: int = 96, n: int = N_FEATURES) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(rows, n, generator=gen)
    x = (x < 0.5).float() if binary else x
    y = 3 * x[:, 0] - 2 * x[:, 1] + x[:, 2] * x[:, 3] + 0.05 * torch.randn(rows, generator=gen)
    return x, y


def loaders(x: torch.Tensor, y: torch.Tensor) -> tuple[DataLoader, DataLoader]:
    ds = TensorDataset(x, y)
    return DataLoader(ds, batch_size=16, shuffle=False), DataLoader(ds, batch_size=32)


def is_png(payload: bytes) -> bool:
    return payload[:8] == b"\x89PNG\r\n\x1a\n"

"""The continuous benchmark's settings: torch MLPs on four scikit-learn data sets, trained once and cached.

Every data set comes from scikit-learn (nothing is downloaded): diabetes (10 features), Friedman #1
(``make_friedman1``, 10 features of which 5 matter, with a pairwise interaction), breast cancer (30 features, the
model outputs a probability) and a 50-feature ``make_regression`` plus 25 pairwise products. Features are
standardized on the training split (80/20, seeded); regression targets too. The MLPs are what a torch user writes
first: two hidden layers of 64 ReLU units, Adam (lr 3e-3, weight decay 1e-2), full batch, the epochs that give
about the best test score (printed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

Model = Callable[[Tensor], Tensor]

EPOCHS = {"diabetes": 100, "friedman1": 800, "breast_cancer": 200, "regression50": 800}
NAMES = tuple(EPOCHS)


@dataclass
class Setting:
    """One setting: the split rows (float64, standardized), the trained module and its description."""

    name: str
    x_train: Tensor
    x_test: Tensor
    feature_names: list[str]
    model: nn.Module  # (B, p) float -> (B, 1); a probability for breast cancer
    note: str

    def f(self, x: Tensor) -> Tensor:
        """``(B,)`` float64 outputs without grad (the references' and the peers' view of the model)."""
        with torch.no_grad():
            return self.model(x.to(torch.float32))[:, 0].double()


def _raw(name: str) -> tuple[np.ndarray, np.ndarray, list[str], bool]:
    from sklearn.datasets import load_breast_cancer, load_diabetes, make_friedman1, make_regression

    if name == "diabetes":
        bunch = load_diabetes()
        return bunch.data, bunch.target, list(bunch.feature_names), False
    if name == "friedman1":
        x, y = make_friedman1(n_samples=2000, noise=1.0, random_state=0)
        return x, y, [f"x{j}" for j in range(10)], False
    if name == "breast_cancer":
        bunch = load_breast_cancer()
        return bunch.data, bunch.target.astype(float), list(bunch.feature_names), True
    if name == "regression50":
        x, y = make_regression(n_samples=2000, n_features=50, n_informative=20, noise=5.0, random_state=0)
        pairs = np.random.default_rng(0).choice(50, size=(25, 2))
        y = y + 30 * sum(x[:, i] * x[:, j] for i, j in pairs if i != j)
        return x, y, [f"x{j}" for j in range(50)], False
    raise ValueError(f"unknown setting {name!r}; known: {NAMES}")


def mlp(p: int, probability: bool) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Linear(p, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1)]
    return nn.Sequential(*layers, *([nn.Sigmoid()] if probability else []))


def setting(name: str, cache: Path) -> Setting:
    """Split, standardize, train (or load) the MLP of one setting."""
    x, y, names, classifier = _raw(name)
    perm = np.random.default_rng(0).permutation(x.shape[0])
    n_test = x.shape[0] // 5
    test, train = perm[:n_test], perm[n_test:]
    mean, std = x[train].mean(0), x[train].std(0)
    x = (x - mean) / std
    if not classifier:
        y = (y - y[train].mean()) / y[train].std()
    torch.manual_seed(0)
    model = mlp(x.shape[1], classifier)
    path = cache / f"continuous_{name}_{EPOCHS[name]}.pt"
    xt = torch.tensor(x[train], dtype=torch.float32)
    yt = torch.tensor(y[train], dtype=torch.float32)
    if path.exists():
        model.load_state_dict(torch.load(path))
    else:
        logits = model[:-1] if classifier else model
        loss_fn = nn.BCEWithLogitsLoss() if classifier else nn.MSELoss()
        opt = torch.optim.Adam(model.parameters(), lr=3e-3, weight_decay=1e-2)
        for _ in range(EPOCHS[name]):
            opt.zero_grad()
            loss_fn(logits(xt)[:, 0], yt).backward()
            opt.step()
        cache.mkdir(parents=True, exist_ok=True)
        torch.save(model.state_dict(), path)
    model.eval()
    with torch.no_grad():
        pred = model(torch.tensor(x[test], dtype=torch.float32))[:, 0].numpy()
    if classifier:
        note = f"test accuracy {((pred > 0.5) == y[test]).mean():.3f}"
    else:
        note = f"test R² {1 - ((pred - y[test]) ** 2).sum() / ((y[test] - y[test].mean()) ** 2).sum():.3f}"
    note += f", MLP {x.shape[1]}-64-64-1{' + sigmoid' if classifier else ''}, {EPOCHS[name]} epochs"
    return Setting(name, torch.as_tensor(x[train]), torch.as_tensor(x[test]), names, model, note)

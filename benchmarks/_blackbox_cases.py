"""The black-box benchmark's cases: the issue's torch MLPs on tabular features and the paper's four settings.

Each :class:`Case` holds a model ``f`` on ``(B, n)`` float rows (``(B,)`` float64 outputs, no grad), the rows to
explain, rows like them for a surrogate's fit (``pool``), a 40-row background, the players (one per column, or a
one-hot block's columns), and how it was made. Models are trained once and cached.

* ``diabetes`` — MLP 10-64-64-1 on ``load_diabetes`` (standardized), 300 epochs (the issue's model, rough in
  hybrid space);
* ``friedman1`` — MLP 10-64-64-1 on ``make_friedman1`` (2,000 rows), 800 epochs;
* ``tanh40`` — MLP 40-64-64-1 on 4,000 Gaussian rows with ``y = Σ_k tanh(a_k·x) + Σ_15 pairs 0.5 x_i x_j`` plus
  noise (ten random directions, fifteen random pairs), 800 epochs;
* ``breast_cancer`` — MLP 30-64-64-1 + sigmoid on ``load_breast_cancer``: the explained output is the probability;
* ``gb1_mlp`` — the paper's 3x300 MLP on GB1's 80 one-hot bits (single-bit players), ``gb1_forest`` — a random
  forest (20 trees, depth 5) on the same bits;
* ``entacmaea`` — 3x300 MLP on the 13 binary sites; ``sgemm`` — 3x300 MLP on SGEMM's 14 parameters one-hot (40
  single-bit players); ``avgfp`` — CatBoost (10 trees, depth 5) on avGFP's 236 mutated-site bits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import _blackbox_models as paper
import _continuous_cases as tabular
import _data
import numpy as np
import torch
from torch import Tensor, nn

Model = Callable[[Tensor], Tensor]

BACKGROUND = 40
CONTINUOUS = ("diabetes", "friedman1", "tanh40", "breast_cancer")
BINARY = ("gb1_mlp", "gb1_forest", "entacmaea", "sgemm", "avgfp")
NAMES = CONTINUOUS + BINARY
EPOCHS = {"diabetes": 300, "friedman1": 800, "tanh40": 800, "breast_cancer": 200}


@dataclass
class Case:
    """One case: the model, its rows and players."""

    name: str
    f: Model
    module: nn.Module | None  # the torch model (None for trees)
    tree_model: object | None  # a fitted tree ensemble (its own exact values)
    background: Tensor  # (40, n)
    rows: Tensor  # (R, n) rows to explain
    pool: Tensor  # rows like them, for a fit (never the explained rows)
    players: Tensor  # (n,) int64
    note: str

    @property
    def m(self) -> int:
        return int(self.players.max()) + 1


def _module_f(module: nn.Module) -> Model:
    def f(x: Tensor) -> Tensor:
        with torch.no_grad():
            out = module(x.to(torch.float32))
        return (out[:, 0] if out.ndim == 2 else out).double()

    return f


def _tanh40(cache: Path) -> tuple[Tensor, Tensor, nn.Module, str]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4000, 40))
    directions = rng.normal(size=(10, 40)) / np.sqrt(40) * 2
    pairs = rng.choice(40, size=(15, 2))
    y = np.tanh(x @ directions.T).sum(1) + 0.5 * sum(x[:, i] * x[:, j] for i, j in pairs) + 0.1 * rng.normal(size=4000)
    y = (y - y.mean()) / y.std()
    train, test = x[:3200], x[3200:]
    model = tabular.mlp(40, False)
    path = cache / "blackbox_tanh40_800.pt"
    torch.manual_seed(0)
    if path.exists():
        model.load_state_dict(torch.load(path))
    else:
        xt, yt = torch.tensor(train, dtype=torch.float32), torch.tensor(y[:3200], dtype=torch.float32)
        opt = torch.optim.Adam(model.parameters(), lr=3e-3, weight_decay=1e-2)
        for _ in range(EPOCHS["tanh40"]):
            opt.zero_grad()
            nn.functional.mse_loss(model(xt)[:, 0], yt).backward()
            opt.step()
        cache.mkdir(parents=True, exist_ok=True)
        torch.save(model.state_dict(), path)
    model.eval()
    with torch.no_grad():
        pred = model(torch.tensor(test, dtype=torch.float32))[:, 0].numpy()
    score = 1 - ((pred - y[3200:]) ** 2).sum() / ((y[3200:] - y[3200:].mean()) ** 2).sum()
    note = f"test R² {score:.3f}, MLP 40-64-64-1, {EPOCHS['tanh40']} epochs, y = tanh of 10 directions + 15 products"
    return torch.as_tensor(train), torch.as_tensor(test), model, note


def _split(x: Tensor, pool_rows: int, explained: int) -> tuple[Tensor, Tensor, Tensor]:
    perm = torch.randperm(x.shape[0], generator=torch.Generator().manual_seed(0))
    background = x[perm[:BACKGROUND]]
    rows = x[perm[BACKGROUND : BACKGROUND + explained]]
    pool = x[perm[BACKGROUND + explained : BACKGROUND + explained + pool_rows]]
    return background, rows, pool


def _double(f: Model) -> Model:
    def g(x: Tensor) -> Tensor:
        return f(x).double()

    return g


def case(name: str, cache: Path) -> Case:
    """Build (or load) one case."""
    if name in CONTINUOUS:
        if name == "tanh40":
            train, test, module, note = _tanh40(cache)
        else:
            tabular.EPOCHS[name] = EPOCHS[name]
            setting = tabular.setting(name, cache)
            train, test, module, note = setting.x_train, setting.x_test, setting.model, setting.note
        perm = torch.randperm(train.shape[0], generator=torch.Generator().manual_seed(0))
        background, pool = train[perm[:BACKGROUND]], train[perm[BACKGROUND:]]
        players = torch.arange(train.shape[1])
        return Case(name, _module_f(module), module, None, background, test, pool, players, note)
    setting_name = {"avgfp": "avgfp_catboost"}.get(name, name)
    found = paper.settings(cache, [setting_name], False)
    if not found:
        raise _data.DatasetMissing(f"{name}: its data set is missing (set TORCHXPLAIN_DATA to the shared data folder)")
    (setting,) = found
    x = setting.data.x
    if setting.tree_model is not None:
        x = x.double()
    background, rows, pool = _split(x, 20_000, 1000)
    players = torch.arange(x.shape[1])
    module = None
    if name in ("gb1_mlp", "entacmaea", "sgemm"):
        module = setting.f.__closure__[0].cell_contents  # type: ignore[union-attr]  # the net inside torch_model
    return Case(
        name, _double(setting.f), module, setting.tree_model, background, rows, pool, players, setting.model_note
    )

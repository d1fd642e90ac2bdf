"""The black-box benchmark's settings: the paper's four trained models plus a GB1 MLP and an MLP on a generated
6-site protein landscape, cached on disk.

Each :class:`Setting` holds the data set, a black box ``f`` on ``(B, n)`` float tensors (``(B,)`` outputs, no
grad), its name, and the player maps to explain with (singletons; one player per categorical variable).
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import _data
import numpy as np
import torch
from sklearn.metrics import r2_score
from torch import Tensor, nn

Model = Callable[[Tensor], Tensor]


@dataclass
class Setting:
    """One benchmark setting: a data set, a trained black box and its player maps."""

    name: str
    data: _data.Dataset
    f: Model
    model_note: str
    players: dict[str, Tensor]  # label -> (n,) player id per binary feature
    tree_model: object | None = None  # the fitted tree ensemble (for the TreeExplainer reference)


def mlp(n: int, hidden: int = 300) -> nn.Module:
    """The paper's 3 × 300 ReLU MLP with a scalar output."""
    return nn.Sequential(
        nn.Linear(n, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, 1),
        nn.Flatten(0),
    )


def _split(ds: _data.Dataset, seed: int = 0) -> tuple[Tensor, Tensor]:
    perm = torch.randperm(ds.x.shape[0], generator=torch.Generator().manual_seed(seed))
    cut = int(0.9 * len(perm))
    return perm[:cut], perm[cut:]


def train_mlp(ds: _data.Dataset, epochs: int, seed: int = 0) -> tuple[nn.Module, float]:
    """Adam (lr 0.01), MSE, batches of 256 on 90% of the rows (the paper's setup); returns (net, test R²)."""
    torch.manual_seed(seed)
    train, test = _split(ds, seed)
    net = mlp(ds.x.shape[1])
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    for _ in range(epochs):
        for idx in train[torch.randperm(len(train))].split(256):
            loss = nn.functional.mse_loss(net(ds.x[idx]), ds.y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    net.eval()
    with torch.no_grad():
        return net, float(r2_score(ds.y[test].numpy(), net(ds.x[test]).numpy()))


def torch_model(net: nn.Module) -> Model:
    def f(x: Tensor) -> Tensor:
        with torch.no_grad():
            return net(x.float())

    return f


def numpy_model(predict: Callable[[np.ndarray], np.ndarray]) -> Model:
    def f(x: Tensor) -> Tensor:
        return torch.as_tensor(np.asarray(predict(x.detach().cpu().numpy().astype(np.float32)), dtype=np.float64))

    return f


def _cached(path: Path, build: Callable[[], tuple[object, float]]) -> tuple[object, float, str]:
    if path.exists():
        with path.open("rb") as handle:
            model, score = pickle.load(handle)
        return model, score, "cached"
    start = time.perf_counter()
    model, score = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        pickle.dump((model, score), handle)
    return model, score, f"trained in {time.perf_counter() - start:.0f} s"


def _forest(ds: _data.Dataset) -> tuple[object, float]:
    from sklearn.ensemble import RandomForestRegressor

    train, test = _split(ds)
    forest = RandomForestRegressor(n_estimators=20, max_depth=5, n_jobs=1, random_state=0)
    forest.fit(ds.x[train].numpy(), ds.y[train].numpy())
    return forest, float(forest.score(ds.x[test].numpy(), ds.y[test].numpy()))


def _catboost(ds: _data.Dataset) -> tuple[object, float]:
    train, test = _split(ds)
    try:
        from catboost import CatBoostRegressor
    except ImportError:  # the paper's model; a depth-5 random forest stands in without catboost
        return _forest(ds)
    model = CatBoostRegressor(
        iterations=10, depth=5, thread_count=1, random_seed=0, verbose=False, allow_writing_files=False
    )
    model.fit(ds.x[train].numpy(), ds.y[train].numpy())
    return model, float(r2_score(ds.y[test].numpy(), model.predict(ds.x[test].numpy())))


def settings(cache: Path, names: list[str], quick: bool) -> list[Setting]:
    """The requested settings (``entacmaea``, ``sgemm``, ``gb1_forest``, ``avgfp_catboost``, ``gb1_mlp``,
    ``protein6``)."""
    out = []
    loaders = {
        "entacmaea": _data.entacmaea,
        "sgemm": _data.sgemm,
        "gb1_forest": _data.gb1,
        "gb1_mlp": _data.gb1,
        "avgfp_catboost": _data.avgfp,
        "protein6": _data.protein6,
    }
    loaded: dict[str, _data.Dataset] = {}
    for name in names:
        try:
            ds = loaded.setdefault(loaders[name].__name__, loaders[name]())
        except _data.DatasetMissing as err:
            print(f"=== skipping {name}: {err}")
            continue
        epochs = {"entacmaea": 60, "sgemm": 20, "gb1_mlp": 3, "protein6": 60}.get(name, 0) // (4 if quick else 1)
        model = None
        tag = f"{name}{'_quick' if quick else ''}.pkl"
        if name in ("entacmaea", "sgemm", "gb1_mlp", "protein6"):
            net, score, how = _cached(cache / tag, lambda ds=ds, e=epochs: train_mlp(ds, max(e, 1)))
            f, note = torch_model(net), f"MLP 3x300, {max(epochs, 1)} epochs"  # type: ignore[arg-type]
        elif name == "gb1_forest":
            model, score, how = _cached(cache / tag, lambda ds=ds: _forest(ds))
            f, note = numpy_model(model.predict), "random forest, 20 trees, depth 5"  # type: ignore[attr-defined]
        else:
            model, score, how = _cached(cache / tag, lambda ds=ds: _catboost(ds))
            kind = type(model).__name__
            note = "CatBoost, 10 trees, depth 5" if kind.startswith("CatBoost") else "random forest (no catboost)"
            f = numpy_model(model.predict)  # type: ignore[attr-defined]
        players = {"singletons": torch.arange(ds.x.shape[1])}
        if int(ds.groups.max()) + 1 < ds.x.shape[1]:
            players["per variable"] = ds.groups
        out.append(Setting(name, ds, f, f"{note} (test R² {score:.3f}, {how})", players, model))
    return out

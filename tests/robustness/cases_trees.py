"""The tree source's own surface (``FourierShap.from_trees(..., route=...)``, :class:`~torchxplain.fourier.Trees`):
a route that does not exist, a ``category`` DataFrame whose categories are not the model's, and memory budgets that
no route can work in, each refused with the argument and the fix; categories listed in another order explained as
the library's own ``predict`` reads them."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

import torchxplain as tx
from tests.robustness.harness import case, result_case

FS = "torchxplain.FourierShap"


def _deep_tree() -> tuple[Any, np.ndarray]:
    from sklearn.tree import DecisionTreeRegressor

    x = np.random.default_rng(0).normal(size=(400, 4))
    y = x[:, 0] * x[:, 1] + np.sin(3 * x[:, 2]) + x[:, 3]
    return DecisionTreeRegressor(max_depth=14, random_state=0).fit(x, y), x


def _category_frame(rows: int = 300) -> tuple[Any, np.ndarray]:
    import pandas as pd

    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {
            "a": rng.normal(size=rows),
            "colour": pd.Categorical(rng.choice(["red", "green", "blue"], rows)),
            "shape": pd.Categorical(rng.choice(["round", "square", "star"], rows)),
        }
    )
    y = frame.a + 2.0 * (frame.colour == "green") + (frame["shape"] == "star") * (frame.colour == "red")
    return frame, y.to_numpy()


@case(FS, "from_trees(route=) not a route", ValueError, r"route must be one of \('auto', 'spectrum', 'leaves'\)")
def _():
    model, x = _deep_tree()
    tx.FourierShap.from_trees(model, x[:10], route="fast")


@case("torchxplain.fourier.Trees", "route= not a route", ValueError, r"route must be one of")
def _():
    tx.fourier.Trees(route=None)  # type: ignore[arg-type]


@case(FS, "a spectrum-only option on route='leaves'", ValueError, r"energy act on a Fourier spectrum.*route='spectrum'")
def _():
    model, x = _deep_tree()
    tx.FourierShap.from_trees(model, x[:10], route="leaves", energy=0.99)


@case(FS, "a category the model was not fitted on", ValueError, r"'shape' holds 'hexagon', a category .*not fitted on")
def _():
    import pandas as pd
    import xgboost

    frame, y = _category_frame()
    model = xgboost.XGBRegressor(n_estimators=3, max_depth=3, enable_categorical=True, n_jobs=1).fit(frame, y)
    explainer = tx.FourierShap.from_trees(model, frame.iloc[:10])
    other = frame.iloc[:2].copy()
    other["shape"] = pd.Categorical(["hexagon", "star"])
    explainer.attribute(other)


@case(FS, "a category column the model splits by threshold", ValueError, r"'size' has dtype category.*pass those")
def _():
    import pandas as pd
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(0)
    x = rng.integers(0, 5, size=(200, 2)).astype(float)
    model = RandomForestRegressor(3, max_depth=3, random_state=0).fit(x, x[:, 0] * x[:, 1])
    frame = pd.DataFrame({"size": pd.Categorical(x[:10, 0]), "b": x[:10, 1]})
    tx.FourierShap.from_trees(model, frame, route="leaves")


@case(FS, "max_memory below what any route works in", ValueError, r"max_memory must be at least 1 MiB.*max_memory=")
def _():
    model, x = _deep_tree()
    tx.FourierShap.from_trees(model, x[:10], max_memory="64KB")


@case(FS, "interactions of deep trees over max_memory", ValueError, r"need its Fourier spectrum.*more than max_memory")
def _():
    model, x = _deep_tree()
    tx.FourierShap.from_trees(model, x[:10], max_memory="1MB").interactions(x[:2])


@result_case(FS, "a category DataFrame listing the model's categories in another order")
def _():
    """LightGBM maps a frame's categories to the ones it was fitted on (``pandas_categorical``): the leaf route reads
    them the same way, so reordered categories give the same values, which sum to ``predict`` minus its mean."""
    import lightgbm

    frame, y = _category_frame()
    model = lightgbm.LGBMRegressor(n_estimators=5, min_data_per_group=5, cat_smooth=1, verbose=-1, n_jobs=1)
    model.fit(frame, y)
    background, query = frame.iloc[:20], frame.iloc[20:26]
    reordered = query.copy()
    for column in ("colour", "shape"):
        reordered[column] = reordered[column].cat.reorder_categories(reordered[column].cat.categories[::-1])
    explainer = tx.FourierShap.from_trees(model, background)
    phi = explainer.attribute(reordered)
    torch.testing.assert_close(phi, explainer.attribute(query), atol=1e-12, rtol=0)
    predict = model.predict(reordered, raw_score=True) - model.predict(background, raw_score=True).mean()
    np.testing.assert_allclose(phi.sum(1).numpy(), predict, atol=1e-10, rtol=0)

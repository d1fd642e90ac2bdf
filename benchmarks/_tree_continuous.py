"""The continuous part of the tree benchmark: thresholds as binary features, values per original feature.

Models: a random forest (50 trees, depth 5) and XGBoost (100 trees, depth 6) on scikit-learn's breast
cancer (30 features; the positive class: probability for the forest, margin for XGBoost) and diabetes (10 features)
data; and a newcomer's tabular DataFrame — 15 numeric and 2 one-hot categorical columns (4 and 6 levels), 5,000
rows — with XGBoost (defaults: 100 trees, depth 6), LightGBM (100 trees × 31 leaves) and HistGradientBoosting
(defaults: 255 bins, 31 leaves). The public call is timed with DataFrames where the model was fitted on one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestClassifier, RandomForestRegressor


def tabular_frame(rows: int = 5000, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """15 numeric columns and 2 one-hot categorical variables (``colour``: 4 levels, ``shape``: 6), and a target
    with interactions between them."""
    rng = np.random.default_rng(seed)
    num = rng.normal(size=(rows, 15))
    colour, shape = rng.integers(0, 4, rows), rng.integers(0, 6, rows)
    y = (
        num[:, 0] * num[:, 1]
        + np.sin(2 * num[:, 2])
        + (num[:, 3] > 0) * num[:, 4]
        + 0.5 * (colour == 2)
        - 0.7 * (shape == 3) * num[:, 5]
        + 0.1 * rng.normal(size=rows)
    )
    frame = pd.DataFrame(num, columns=[f"num_{i}" for i in range(15)])
    for name, codes, levels in (("colour", colour, 4), ("shape", shape, 6)):
        for level in range(levels):
            frame[f"{name}_{level}"] = (codes == level).astype(float)
    return frame, y


def models(seed: int) -> list[dict[str, Any]]:
    """Every continuous case: ``{data, model, fitted, x (array or frame), output (the explained output's
    function), classes (explained output, or None)}``."""
    import lightgbm
    import xgboost

    out: list[dict[str, Any]] = []
    for data, (x, y) in (
        ("breast_cancer", load_breast_cancer(return_X_y=True)),
        ("diabetes", load_diabetes(return_X_y=True)),
    ):
        classify = data == "breast_cancer"
        forest = (RandomForestClassifier if classify else RandomForestRegressor)(
            n_estimators=50, max_depth=5, random_state=seed, n_jobs=1
        ).fit(x, y)
        boost = (xgboost.XGBClassifier if classify else xgboost.XGBRegressor)(
            n_estimators=100, max_depth=6, random_state=seed, n_jobs=1
        ).fit(x, y)
        forest_out = (lambda m: lambda z: m.predict_proba(z)[:, 1])(forest) if classify else forest.predict
        out.append(dict(data=data, model="rf50-d5", fitted=forest, x=x, output=forest_out))
        out.append(dict(data=data, model="xgb100-d6", fitted=boost, x=x, output=_margin(boost)))
    frame, y = tabular_frame(seed=seed)
    tabular = [
        ("xgb-defaults", xgboost.XGBRegressor(random_state=seed, n_jobs=1)),
        (
            "lgbm100x31",
            lightgbm.LGBMRegressor(n_estimators=100, num_leaves=31, random_state=seed, n_jobs=1, verbose=-1),
        ),
        ("histgb-defaults", HistGradientBoostingRegressor(random_state=seed)),
    ]
    for name, model in tabular:
        model.fit(frame, y)
        output = _margin(model) if name.startswith("xgb") else _raw(model) if name.startswith("lgbm") else model.predict
        out.append(dict(data="tabular15+2", model=name, fitted=model, x=frame, output=output))
    return out


def _margin(model: Any) -> Any:
    return lambda z: model.predict(z, output_margin=True).astype(np.float64)


def _raw(model: Any) -> Any:
    return lambda z: model.predict(z, raw_score=True)


def positive_class(values: np.ndarray, q: int) -> np.ndarray:
    """A classifier's values for class 1 from shap's ``(Q, p, 2)`` or the older list format ``(2, Q, p)``."""
    if values.ndim < 3:
        return values
    return values[1] if values.shape[0] == 2 and values.shape[1] == q else values[..., 1]

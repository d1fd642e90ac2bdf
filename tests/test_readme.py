"""README's tree and after-fit snippets run as written on the classifiers users fit first (issue 16).

The code blocks are read from README.md itself (so the README cannot drift from what works), executed with the
snippet's free names bound to a fitted model and its data, and their results checked against the model's own
predictions (efficiency: values plus the base value reproduce the explained output).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.datasets import load_breast_cancer, load_wine

import torchxplain as tx

README = Path(__file__).resolve().parents[1] / "README.md"


def code_block(heading: str) -> str:
    """The first ```python block under the ``## heading`` section of README.md."""
    text = README.read_text()
    section = text[text.index(heading) :]
    return re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)


def fitted(name: str):
    if name == "multiclass LGBMClassifier":
        lightgbm = pytest.importorskip("lightgbm")
        data = load_wine(as_frame=True)
        model = lightgbm.LGBMClassifier(n_estimators=8, max_depth=3, num_leaves=8, verbose=-1).fit(
            data.data, data.target
        )
        return model, data.data, lambda x: model.predict(x, raw_score=True)
    data = load_breast_cancer(as_frame=True)
    if name == "RandomForestClassifier":
        from sklearn.ensemble import RandomForestClassifier

        model = RandomForestClassifier(n_estimators=10, max_depth=4, random_state=0).fit(data.data, data.target)
        return model, data.data, lambda x: model.predict_proba(x)[:, 1]
    xgboost = pytest.importorskip("xgboost")
    model = xgboost.XGBClassifier(n_estimators=10, max_depth=3).fit(data.data, data.target)
    return model, data.data, lambda x: model.predict(x, output_margin=True).astype(np.float64)


MODELS = ["RandomForestClassifier", "XGBClassifier", "multiclass LGBMClassifier"]


@pytest.mark.parametrize("name", MODELS)
def test_tree_snippet_runs_as_written(name):
    model, frame, output = fitted(name)
    scope = {"tx": tx, "torch": torch, "forest": model, "X_background": frame.iloc[:40], "X": frame.iloc[100:106]}
    exec(code_block("## Tree ensembles"), scope)
    phi, explanation = scope["phi"], scope["explanation"]
    want = output(frame.iloc[100:106])
    base = output(frame.iloc[:40]).mean(0)
    assert phi.shape == ((6, frame.shape[1]) + want.shape[1:])
    tol = 2e-5 if name == "XGBClassifier" else 1e-8  # XGBoost's margins are float32
    np.testing.assert_allclose(phi.sum(1).numpy(), want - base, atol=tol * max(1.0, np.abs(want).max()), rtol=0)
    np.testing.assert_allclose(explanation.values.sum(1) + explanation.base_values, want, atol=tol * 10, rtol=0)
    assert list(explanation.feature_names) == list(frame.columns)
    assert scope["pruned"].pruning is not None


@pytest.mark.parametrize("name", MODELS)
def test_after_fit_snippet_runs_as_written(name):
    model, frame, output = fitted(name)
    scope = {"tx": tx, "model": model, "X_train": frame, "X_test": frame.iloc[:5]}
    exec(code_block("## Right after `model.fit`"), scope)
    result = scope["result"]
    assert result.method == "trees"
    want = output(frame.iloc[:5])
    assert result.attributions.shape == ((5, frame.shape[1]) + want.shape[1:])

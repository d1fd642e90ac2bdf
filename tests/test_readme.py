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


def test_continuous_black_box_snippet_runs_as_written():
    """The continuous block (an MLP on a DataFrame): values per column named by the frame, its report, and the
    enumeration it names as the exact reference agreeing with the fit on a model the fit's blocks hold exactly."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    values = np.clip(rng.normal(size=(400, 4)), -2, 2) * np.array([2, 2, 1, 1])  # few values, each frequent
    X_train = pd.DataFrame(values.round() / np.array([2, 2, 1, 1]), columns=["age", "bmi", "bp", "s1"])
    X_test = X_train.iloc[:8]

    def mlp(x: torch.Tensor) -> torch.Tensor:  # main effects and a pair of 5-level columns: the fit's blocks
        return torch.sin(x[:, 0]) + x[:, 1] ** 2 - x[:, 2] * x[:, 3]

    text = README.read_text()
    block = re.search(r"```python\n(.*?)```", text[text.index("**Continuous black boxes") :], flags=re.S).group(1)
    scope = {"tx": tx, "mlp": mlp, "X_train": X_train, "X_test": X_test}
    exec(block, scope)
    explainer, phi = scope["explainer"], scope["phi"]
    assert explainer.fit_report.method == "continuous" and explainer.feature_names == tuple(X_train.columns)
    assert phi.shape == (8, 4)
    np.testing.assert_allclose(phi.numpy(), scope["exact"].attribute(X_test).numpy(), atol=1e-6, rtol=0)

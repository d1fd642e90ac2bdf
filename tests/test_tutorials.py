"""Every tutorial runs end to end in quick mode (TORCHXPLAIN_QUICK=1), each in a fresh process, and prints the
results it claims: each check below reads the tutorial's output and compares it with an independent reference
(scikit-learn's predictions, shap, Captum's estimators, the IDX paper's Table 2, the simulation's causal set) or
with a property the method guarantees."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # executes every tutorial in a subprocess

ROOT = Path(__file__).resolve().parents[1]
ALL = sorted((ROOT / "tutorials").glob("*.py"))
# goals_bnn runs in tests/goals/test_bnn_tutorial.py, which also checks what it finds
TUTORIALS = [p for p in ALL if p.stem != "goals_bnn"]


def number(stdout: str, label: str) -> float:
    """The number printed after ``label`` (the first occurrence)."""
    match = re.search(re.escape(label) + r"\s*([-+0-9.eE]+|nan|inf)", stdout)
    assert match, f"the tutorial did not print {label!r}:\n{stdout[-3000:]}"
    return float(match.group(1))


def literal(stdout: str, label: str) -> object:
    """The Python literal printed on the rest of the line after ``label``."""
    match = re.search(re.escape(label) + r"\s*(.+)", stdout)
    assert match, f"the tutorial did not print {label!r}:\n{stdout[-3000:]}"
    return ast.literal_eval(match.group(1).strip())


def tensor_values(stdout: str, label: str) -> list[float]:
    """The entries of a ``tensor([...])`` printed after ``label`` (possibly over several lines)."""
    match = re.search(re.escape(label) + r"\s*tensor\(\[([^\]]*)\]", stdout)
    assert match, f"the tutorial did not print {label!r}:\n{stdout[-3000:]}"
    return [float(v) for v in match.group(1).replace("\n", " ").split(",")]


def check_captum_interop(stdout: str) -> None:
    # Captum's own sampling estimators of the same interventional SHAP values land close to the exact ones
    assert number(stdout, "samples):") >= 0 and number(stdout, "max |diff|") < 0.1
    assert number(stdout, "ShapleyValueSampling:") >= 0
    assert float(re.findall(r"max \|diff\| ([0-9.]+)", stdout)[1]) < 0.1
    assert literal(stdout, "NoiseTunnel:") == (8, 10)  # the inputs' shape: 8 rows of 10 binary features
    assert 0 <= number(stdout, "infidelity:") < 0.01 and 0 <= number(stdout, "sensitivity_max:") < 1


def check_fourier_landscapes(stdout: str) -> None:
    # both tabulate (8,192 genotypes by the router; GB1's 160,000 site combinations asked for): exact on their checks
    reports = re.findall(r"^fit_sparse_fourier: method='(\w+)'", stdout, re.M)
    assert reports == ["tabulate", "tabulate"] and stdout.count(": met") >= 2
    assert number(stdout, "estimated R^2 of the SHAP values:") > 0.9999
    # against enumeration through the network itself (float32: rounding of the largest values)
    assert number(stdout, "largest |tabulated - enumerated| over 5 genotypes:") < 1e-4
    assert number(stdout, "max efficiency error:") < 1e-4  # sum of values = surrogate(x) - mean surrogate(background)
    pairs = literal(stdout, "strongest interacting site pairs:")
    assert all(0 <= i < 13 and 0 <= j < 13 and i != j for i, j in pairs)
    assert (pairs[0][1], pairs[0][0]) in pairs  # the interaction matrix is symmetric
    per_site = tensor_values(stdout, "mean |SHAP| per site:")
    assert len(per_site) == 4 and all(v >= 0 for v in per_site)  # GB1's four sites, one player each


def check_goals_gp(stdout: str) -> None:
    from torchxplain.data import simulate_goals_design

    causal = simulate_goals_design(n=200, n_features=20, n_causal=5, seed=0).causal.nonzero().flatten().tolist()
    rows = re.findall(r"^\s*\d+\s+x(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)$", stdout, re.M)
    assert len(rows) == 8, stdout
    assert [int(r[2]) for r in rows] == list(range(1, 9))  # ranks
    # the simulation's causal features (from the generator itself) lead the ranking
    assert {int(r[0]) for r in rows[:3]} <= set(causal)
    for _, _, _, mean, _, sd, z in rows:  # z = |mean| / sd, as documented
        assert abs(float(z) - abs(float(mean)) / float(sd)) < 1e-3 * float(z) + 1e-5
    assert number(stdout, "ROC-AUC of the causal features:") >= 0.8
    assert "torch.Size([5, 20]) torch.Size([5, 20])" in stdout  # local scores and variances, (rows, features)


def check_idx_classifiers(stdout: str) -> None:
    # Table 2 of Rago et al. (2021): decisions of its first three inputs and the md relations of w=l, t=l, p=l
    assert ast.literal_eval(stdout.splitlines()[0]) == [
        {"w": "l", "t": "l", "p": "l", "r": "+", "o": "-"},
        {"w": "m", "t": "l", "p": "l", "r": "+", "o": "-"},
        {"w": "l", "t": "m", "p": "l", "r": "+", "o": "-"},
    ]
    (explanation,) = [json.loads(line) for line in stdout.splitlines() if line.startswith('{"kit"')]
    assert explanation["assignment"] == {"w": "l", "t": "l", "p": "l", "r": "+", "o": "-"}
    assert explanation["relations"] == {"attack": [["w", "o"]], "support": [["p", "r"], ["r", "o"]]}
    counts = {kit: ast.literal_eval(c) for kit, c in re.findall(r"^(md|sd|cf): (\{.*\}) over 5 ", stdout, re.M)}
    assert set(counts) == {"md", "sd", "cf"}, stdout
    # binary votes and a binary class: MD = SD, and CF-critical is a subset of MD-support (counted here)
    assert counts["md"] == counts["sd"] and counts["cf"]["critical"] <= counts["md"]["support"]


def check_lightning_training(stdout: str) -> None:
    assert literal(stdout, "explained epochs:") == [0, 1]  # quick mode: 2 epochs, explained after each
    importance = tensor_values(stdout, "importance at the last epoch:")
    assert len(importance) == 13 and all(v >= 0 for v in importance) and max(importance) > 0
    assert re.search(r"\{'index': \(2000,\), 'attributions': \(2000, 13\)\}", stdout)  # every row, once


def check_trees_continuous(stdout: str) -> None:
    # values add up to scikit-learn's own decision function minus its background mean
    assert number(stdout, "max efficiency error:") < 1e-8
    # the definition itself: Shapley's sum over all 2^10 coalitions of the model's decision_function
    assert number(stdout, "max |FourierSHAP - brute force|:") <= 1e-9 * number(stdout, "value scale:")
    assert "explained output: decision_function (log-odds of class 1)" in stdout
    from sklearn.datasets import load_breast_cancer

    top = re.search(r"top features: \[(.*)\]", stdout)
    assert top and set(re.findall(r"'([^']+)'", top.group(1))) <= set(load_breast_cancer().feature_names)
    assert literal(stdout, "interaction matrix:") == (10, 30, 30)  # 10 rows, 30 features


def check_trees_shap_plots(stdout: str) -> None:
    # values plus shap's base value give back the forest's own predict_proba[:, 1]; both figures were written
    assert "predict_proba[:, 1]" in stdout
    assert number(stdout, "max |values + base - predict_proba|:") < 1e-8
    assert number(stdout, "waterfall.png:") > 1000 and number(stdout, "beeswarm.png:") > 1000


def check_mlp_continuous(stdout: str) -> None:
    # the router took the cheaper of enumeration (exact) and the correction (R² >= 0.999) for the known rows and
    # said why, pricing every candidate; the pinned enumeration's values satisfy efficiency against the network
    # itself, and the default route's values are within the correction's target of them; the continuous fit, asked
    # for, gives values close to them, as its report estimated
    route = re.search(r"by route '(\w+)'", stdout)
    assert route and route.group(1) in ("enumerate", "correct"), stdout[-3000:]
    assert "not 0/1" in stdout and "s predicted" in stdout
    assert "method='continuous'" in stdout
    assert number(stdout, "max efficiency error of the exact values:") < 1e-4  # a float32 network
    assert number(stdout, "SHAP R^2 of the default route's values against exact enumeration:") > 0.998
    match = re.search(r"SHAP R\^2 against exact enumeration on \d+ test rows: ([0-9.]+)", stdout)
    assert match, stdout[-3000:]
    exact, estimate = float(match.group(1)), number(stdout, "estimated SHAP R^2 (report):")
    assert exact > 0.9 and abs(exact - estimate) < 0.05, (exact, estimate)
    assert number(stdout, "beeswarm.png:") > 1000
    from sklearn.datasets import load_diabetes

    assert set(literal(stdout, "top features:")) <= set(load_diabetes().feature_names)


CHECKS: dict[str, Callable[[str], None]] = {
    "captum_interop": check_captum_interop,
    "fourier_landscapes": check_fourier_landscapes,
    "goals_gp": check_goals_gp,
    "idx_classifiers": check_idx_classifiers,
    "lightning_training": check_lightning_training,
    "mlp_continuous": check_mlp_continuous,
    "trees_continuous": check_trees_continuous,
    "trees_shap_plots": check_trees_shap_plots,
}


def test_there_are_tutorials_for_every_family_and_each_is_checked():
    names = {p.stem for p in ALL}
    assert {
        "fourier_landscapes",
        "trees_continuous",
        "goals_gp",
        "goals_bnn",
        "idx_classifiers",
        "lightning_training",
        "captum_interop",
        "mlp_continuous",
    } <= names
    assert set(CHECKS) == {p.stem for p in TUTORIALS}, "a new tutorial needs a check of its output here"


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_runs_in_quick_mode_and_prints_true_results(path, tmp_path):
    env = {
        **os.environ,
        "TORCHXPLAIN_QUICK": "1",
        "TORCHXPLAIN_PROGRESS": "0",
        "MPLBACKEND": "Agg",
        "PYTHONPATH": str(ROOT),
    }
    result = subprocess.run(
        [sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    CHECKS[path.stem](result.stdout)
    assert not list(tmp_path.iterdir()), "tutorials must not write into the working directory"

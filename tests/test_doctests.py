"""The ``>>>`` examples in the package's docstrings run and print what they show (so they cannot drift), and every
top-level public object and function has one: each name of ``torchxplain.__all__`` and the subpackages' headline
names below."""

from __future__ import annotations

import doctest
import importlib
import inspect
import types
from pathlib import Path

import pytest
import torch

import torchxplain

HEADLINES = {
    "torchxplain.fourier": [
        "shapley_values",
        "banzhaf_values",
        "shapley_interactions",
        "interaction_values",
        "FitOptions",
        "ThresholdEncoding",
        "parse_model",
        "to_shap_explanation",
        "to_shapiq_values",
        "Enumerate",
        "Tabulate",
        "Fit",
        "FourierExplanation",
    ],
    "torchxplain.goals": ["LastLayerBNN", "GlobalImportance", "rate"],
    "torchxplain.idx": ["BayesianClassifier", "explain", "explain_batch", "Explanation"],
    "torchxplain.idx.datasets": ["play_outside"],
    "torchxplain.idx.stats": ["relation_shares"],
    "torchxplain.integrations": [
        "ExplanationCallback",
        "ExplainModule",
        "attribute_batch",
        "background_averaged",
        "expand_to_inputs",
    ],
    "torchxplain.viz": ["BeeswarmDisplay", "BarDisplay", "ImportanceDisplay"],
    "torchxplain.settings": ["max_memory", "show_progress", "using"],
    "torchxplain.data": ["load_entacmaea", "load_gb1", "simulate_goals_design"],
    "torchxplain.testing": ["ExplainerTestCase"],
}


def modules_with_examples() -> list[str]:
    """The package's modules whose source holds a ``>>>`` line (read from the files: nothing is imported here)."""
    root = Path(torchxplain.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.name != "__main__.py" and ">>>" in path.read_text():
            parts = path.relative_to(root.parent).with_suffix("").parts
            found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


@pytest.mark.parametrize("module_name", modules_with_examples())
def test_docstring_examples_print_what_they_show(module_name):
    module = importlib.import_module(module_name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    tests = [t for t in finder.find(module, module_name) if t.examples]
    assert tests, f"{module_name} has '>>>' in its source but no docstring example was found"
    torch.manual_seed(0)
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {module_name} failed (see above)"


def headline_objects() -> list[tuple[str, object]]:
    found = [
        (f"torchxplain.{n}", getattr(torchxplain, n))
        for n in torchxplain.__all__
        if not isinstance(getattr(torchxplain, n), types.ModuleType)
    ]
    for module_name, names in HEADLINES.items():
        module = importlib.import_module(module_name)
        found += [(f"{module_name}.{n}", getattr(module, n)) for n in names]
    return found


@pytest.mark.parametrize("path, obj", headline_objects(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_headline_name_has_an_example(path, obj):
    assert ">>>" in (inspect.getdoc(obj) or ""), f"{path}: add a short '>>>' example with its output"

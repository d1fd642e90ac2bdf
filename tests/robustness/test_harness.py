"""Run every robustness case, and check that every public name has a case or a stated exemption."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import torchxplain
from tests.robustness import (  # noqa: F401  (they register their cases)
    cases_blackbox,
    cases_continuous,
    cases_core,
    cases_fourier,
    cases_goals,
    cases_idx,
    cases_integrations,
    cases_sources,
    cases_trees,
    cases_viz,
)
from tests.robustness.harness import CASES, EXEMPT, RESULT_CASES


def public_namespaces() -> list[str]:
    """Every public module that declares ``__all__`` (no private part in its path), found by walking the package."""
    found = []
    for info in pkgutil.walk_packages(torchxplain.__path__, "torchxplain."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            if hasattr(importlib.import_module(info.name), "__all__"):
                found.append(info.name)
    return ["torchxplain", *sorted(found)]


def public_names() -> list[str]:
    """Every ``module.name`` in ``__all__`` of the package and each subpackage (re-exports listed once per module)."""
    names = []
    for module_name in public_namespaces():
        module = importlib.import_module(module_name)
        names.extend(f"{module_name}.{name}" for name in module.__all__)
    return names


def _covered(name: str) -> bool:
    """A re-export is covered by a case of the same object under any public path."""
    module_name, _, attr = name.rpartition(".")
    obj = getattr(importlib.import_module(module_name), attr)
    for target in {c.target for c in CASES} | {c.target for c in RESULT_CASES} | set(EXEMPT):
        t_module, _, t_attr = target.rpartition(".")
        if target == name or getattr(importlib.import_module(t_module), t_attr, None) is obj:
            return True
    return False


@pytest.mark.parametrize("bad", CASES, ids=[f"{c.target.removeprefix('torchxplain.')}: {c.what}" for c in CASES])
def test_bad_input_gets_a_clear_error(bad):
    with pytest.raises(bad.error) as info:
        bad.call()
    message = str(info.value)
    assert re.search(bad.match, message, flags=re.S), f"message does not match {bad.match!r}: {message!r}"
    assert len(message) < 2_000, "messages must not echo unbounded input"


@pytest.mark.parametrize(
    "good", RESULT_CASES, ids=[f"{c.target.removeprefix('torchxplain.')}: {c.what}" for c in RESULT_CASES]
)
def test_input_gets_the_right_result(good):
    good.check()


def test_every_public_name_is_covered():
    assert torchxplain.__all__, "torchxplain exports nothing?"
    missing = [name for name in public_names() if not _covered(name)]
    assert not missing, f"public names with no robustness case and no exemption: {missing}"

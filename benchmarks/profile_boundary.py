"""How often each input is validated, encoded and each model run, on the public paths users call (issue 12).

Every boundary helper is wrapped in a counter for one call of each path, so the table shows, per call, how many
times the background and the queries were converted, shape-checked, value-checked (binary / finite) and encoded,
and how many times the model (or classifier) ran forward. Run: ``python benchmarks/profile_boundary.py``.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import importlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch
from sklearn.ensemble import RandomForestRegressor

import torchxplain as tx

WATCHED = {
    "to_tensor": [("torchxplain._core.inputs", "to_tensor")],
    "check_matrix": [("torchxplain._core.validation", "check_matrix")],
    "check_binary": [("torchxplain._core.validation", "check_binary")],
    "check_finite": [("torchxplain._core.validation", "check_finite")],
    "TreeEncoding.transform": [("torchxplain.fourier.trees", "TreeEncoding.transform")],
    "parse_model_outputs": [("torchxplain.fourier.trees.adapters._dispatch", "parse_model_outputs")],
}


@contextlib.contextmanager
def counting(extra: dict[str, list[tuple[str, str]]] | None = None) -> Iterator[collections.Counter[str]]:
    """Count calls of the watched functions (wherever a module imported them by name)."""
    counts: collections.Counter[str] = collections.Counter({label: 0 for label in extra or {}})  # zeros shown
    patches: list[tuple[Any, str, Any]] = []
    watched = {**WATCHED, **(extra or {})}
    for label, places in watched.items():
        for module_name, attr in places:
            owner: Any = importlib.import_module(module_name)
            *path, name = attr.split(".")
            for part in path:
                owner = getattr(owner, part)
            original = getattr(owner, name)

            def wrapper(*args: Any, _f: Callable[..., Any] = original, _l: str = label, **kwargs: Any) -> Any:
                name_arg = kwargs.get("name", args[1] if len(args) > 1 and isinstance(args[1], str) else None)
                counts[f"{_l}({name_arg})" if name_arg else _l] += 1
                return _f(*args, **kwargs)

            patches.append((owner, name, original))
            setattr(owner, name, wrapper)
            # modules that imported the function by name hold their own reference: patch those too
            if not path:
                for module in list(importlib.sys.modules.values()):  # type: ignore[attr-defined]
                    if module is not None and module.__name__.startswith("torchxplain") and module is not owner:
                        if getattr(module, name, None) is original:
                            patches.append((module, name, original))
                            setattr(module, name, wrapper)
    try:
        yield counts
    finally:
        for owner, name, original in reversed(patches):
            setattr(owner, name, original)


def trees_path() -> dict[str, collections.Counter[str]]:
    """``FourierShap.from_trees(forest, X_bg).attribute(X)`` on continuous data, with numpy inputs."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 8))
    y = x[:, 0] * x[:, 1] + np.sin(x[:, 2])
    forest = RandomForestRegressor(n_estimators=10, max_depth=5, random_state=0).fit(x, y)
    background, queries = x[:50], x[100:140]
    with counting() as build:
        explainer = tx.FourierShap.from_trees(forest, background)
    with counting() as explain:
        explainer.attribute(queries)
    with counting() as again:
        explainer.attribute(queries)
    return {"from_trees(forest, X_bg)": build, "  .attribute(X)": explain, "  .attribute(X) again": again}


def binary_path() -> dict[str, collections.Counter[str]]:
    """``FourierShap.from_trees`` on binary (one-hot-like) data, then ``attribute`` with a feature_mask."""
    rng = np.random.default_rng(1)
    x = rng.integers(0, 2, size=(300, 12)).astype(float)
    y = x[:, 0] * x[:, 1] + x[:, 2] - x[:, 3] * x[:, 4] * x[:, 5]
    forest = RandomForestRegressor(n_estimators=10, max_depth=5, random_state=0).fit(x, y)
    with counting() as build:
        explainer = tx.FourierShap.from_trees(forest, torch.from_numpy(x[:50]))
    mask = torch.arange(12)[None] // 3
    with counting() as explain:
        explainer.attribute(torch.from_numpy(x[100:140]), feature_mask=mask)
    return {"from_trees(binary forest, bg)": build, "  .attribute(X, feature_mask)": explain}


def idx_path() -> dict[str, collections.Counter[str]]:
    """``idx.explain(bc, inputs)`` on Child: how often the classifier runs forward, cold (its family tables are
    built on first use and cached on the classifier) and warm."""
    from torchxplain import idx

    bc = idx.datasets.child()
    inputs = idx.datasets.all_inputs(bc)
    extra = {
        "classifier forward": [(type(bc).__module__, f"{type(bc).__name__}.{_forward_name(bc)}")],
        "family_logits (one classification's posterior)": [(type(bc).__module__, f"{type(bc).__name__}.family_logits")],
    }
    with counting(extra) as cold:
        idx.explain(bc, inputs, kit="md")
    with counting(extra) as warm:
        idx.explain(bc, inputs, kit="md")
    return {"idx.explain(child, all inputs, kit='md'), first call": cold, "  same call again": warm}


def _forward_name(bc: Any) -> str:
    for name in ("log_posteriors", "posterior", "forward", "predict_log_proba"):
        if hasattr(type(bc), name):
            return name
    raise AttributeError("the classifier exposes no forward method this profile knows")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--skip-idx", action="store_true", help="profile only the FourierSHAP paths")
    args = parser.parse_args()
    rows = {**trees_path(), **binary_path()}
    if not args.skip_idx:
        rows.update(idx_path())
    for row, counts in rows.items():
        print(f"{row}: " + ", ".join(f"{label} x{n}" for label, n in sorted(counts.items())))


if __name__ == "__main__":
    main()

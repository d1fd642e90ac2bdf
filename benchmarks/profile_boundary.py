"""How often each input is converted, checked and encoded, and each model run, on the public paths.

Every boundary helper of ``torchxplain._core.inputs`` and ``_core.validation`` is wrapped in a counter for one call
of each path, so the table shows, per call and per argument, how many times it was converted (``to_tensor``),
shape-checked (``check_matrix``), value-checked (``check_binary`` / ``check_finite``), resolved into players
(``player_ids``) and encoded, and how many times the model (or classifier) ran forward. The paths:
``FourierShap.from_trees(...).attribute``, the black-box ``FourierShap(model, ...)``, ``tx.fourier.shapley_values``,
``tx.fourier.interaction_values``, ``idx.explain_batch`` and ``Goals.attribute``. A last table gives the rejection of
the same bad players on every path that takes players (one contract: same type, same message but for the
argument's name). Run: ``python benchmarks/profile_boundary.py``.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import importlib
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch
from sklearn.ensemble import RandomForestRegressor

import torchxplain as tx

WATCHED = {
    "to_tensor": [("torchxplain._core.inputs", "to_tensor")],
    "player_ids": [("torchxplain._core.inputs", "player_ids")],
    "check_matrix": [("torchxplain._core.validation", "check_matrix")],
    "check_binary": [("torchxplain._core.validation", "check_binary")],
    "check_finite": [("torchxplain._core.validation", "check_finite")],
    "threshold_codes": [("torchxplain.fourier.encoding._thresholds", "threshold_codes")],
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
    wrappers = {id(getattr(owner, name)): original for owner, name, original in patches}
    try:
        yield counts
    finally:
        for owner, name, original in reversed(patches):
            setattr(owner, name, original)
        # a module first imported inside the block (torchxplain imports lazily) took a wrapper by name: unpatch it
        for module in list(importlib.sys.modules.values()):  # type: ignore[attr-defined]
            if module is not None and module.__name__.startswith("torchxplain"):
                for name in {attr.split(".")[-1] for places in watched.values() for _, attr in places}:
                    if id(getattr(module, name, None)) in wrappers:
                        setattr(module, name, wrappers[id(getattr(module, name))])


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


def black_box_path() -> dict[str, collections.Counter[str]]:
    """The black-box constructor ``FourierShap(model, background, data=..., groups=...)`` (an exact fit on 8
    players), then ``attribute``; the model's calls are counted too."""
    rng = np.random.default_rng(2)
    background, data = (torch.from_numpy(rng.integers(0, 2, size=(r, 8)).astype(np.float32)) for r in (20, 60))
    calls = collections.Counter[str]()

    def model(z: torch.Tensor) -> torch.Tensor:
        calls["model forward"] += 1
        return z[:, 0] * z[:, 1] - z[:, 2] + 0.5 * z[:, 3] * z[:, 4] * z[:, 5]

    groups = torch.tensor([0, 0, 1, 2, 3, 4, 5, 6])
    with counting() as build:
        explainer = tx.FourierShap(model, background, data=data, groups=groups, method="exact")
    build.update(calls)
    calls.clear()
    with counting() as explain:
        explainer.attribute(data[:10])
    explain.update(calls)
    return {"FourierShap(model, bg, data=, groups=)": build, "  .attribute(data[:10])": explain}


def continuous_path() -> dict[str, collections.Counter[str]]:
    """The black-box constructor on continuous numpy rows (the continuous fit, stopped by a small query budget),
    then ``attribute``."""
    rng = np.random.default_rng(3)
    background, data = (rng.normal(size=(r, 4)) for r in (10, 300))

    def model(z: torch.Tensor) -> torch.Tensor:
        return z[:, 0] * z[:, 1] + torch.sin(z[:, 2]) - z[:, 3]

    with counting() as build, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a fit held to a small budget may miss its target
        explainer = tx.FourierShap(model, background, data=data, n_queries=4096, n_validation=2048)
    with counting() as explain:
        explainer.attribute(data[:10])
    return {"FourierShap(model, continuous bg, data=)": build, "  .attribute(continuous data[:10])": explain}


def value_function_paths() -> dict[str, collections.Counter[str]]:
    """``tx.fourier.shapley_values`` and ``tx.fourier.interaction_values`` on numpy inputs with groups."""
    rng = np.random.default_rng(3)
    freq = torch.from_numpy(rng.random((40, 10)) < 0.3)
    spec = tx.FourierSpectrum(freq, torch.from_numpy(rng.normal(size=40))).coalesce()
    x, background = (rng.integers(0, 2, size=(r, 10)).astype(float) for r in (30, 20))
    groups = np.repeat(np.arange(5), 2)
    with counting() as shapley:
        tx.fourier.shapley_values(spec, x, background, groups=groups)
    with counting() as interactions:
        tx.fourier.interaction_values(spec, x, background, index="k-SII", max_order=2, groups=groups)
    return {
        "tx.fourier.shapley_values(spec, x, bg, groups)": shapley,
        "tx.fourier.interaction_values(...)": interactions,
    }


def idx_batch_path() -> dict[str, collections.Counter[str]]:
    """``idx.explain_batch(bc, codes, kits)`` on Child's integer codes."""
    from torchxplain import idx

    bc = idx.datasets.child()
    inputs = idx.datasets.all_inputs(bc)
    with counting() as batch:
        idx.explain_batch(bc, inputs, kits=["md", "sd", "cf"])
    return {"idx.explain_batch(child, all inputs, md+sd+cf)": batch}


def goals_path() -> dict[str, collections.Counter[str]]:
    """``Goals(gp).attribute(x)`` on a DataFrame, for an exact GP on 5 features."""
    import gpytorch
    import pandas as pd

    class GP(gpytorch.models.ExactGP):
        def __init__(self, x: torch.Tensor, y: torch.Tensor) -> None:
            super().__init__(x, y, gpytorch.likelihoods.GaussianLikelihood())
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel(ard_num_dims=5))

        def forward(self, z: torch.Tensor) -> Any:
            return gpytorch.distributions.MultivariateNormal(self.mean_module(z), self.covar_module(z))

    gen = torch.Generator().manual_seed(4)
    x = torch.randn(80, 5, generator=gen, dtype=torch.float64)
    gp = GP(x, torch.sin(x[:, 0]) + x[:, 1] * x[:, 2]).double().eval()
    names = [f"x{j}" for j in range(5)]
    goals = tx.Goals(gp, feature_names=names)
    frame = pd.DataFrame(x[:20].numpy(), columns=names)
    with counting() as attribute:
        goals.attribute(frame)
    return {"Goals(gp).attribute(DataFrame)": attribute}


def same_rejection() -> list[tuple[str, str]]:
    """``(path, "Type: message")`` for the same float player ids on every path that takes players."""
    rng = np.random.default_rng(5)
    spec = tx.FourierSpectrum(torch.from_numpy(rng.random((10, 4)) < 0.5), torch.from_numpy(rng.normal(size=10)))
    background, x = (torch.from_numpy(rng.integers(0, 2, size=(r, 4)).astype(float)) for r in (6, 5))
    forest = RandomForestRegressor(n_estimators=2, max_depth=3, random_state=0).fit(
        background.numpy(), background[:, 0].numpy()
    )
    explainer = tx.FourierShap.from_spectrum(spec, background)
    bad = torch.tensor([0.0, 0.0, 1.0, 1.0])

    def model(z: torch.Tensor) -> torch.Tensor:
        return z[:, 0] - z[:, 1] * z[:, 2]

    paths: dict[str, Callable[[], Any]] = {
        "tx.fourier.shapley_values(groups=)": lambda: tx.fourier.shapley_values(spec, x, background, groups=bad),
        "tx.fourier.interaction_values(groups=)": lambda: tx.fourier.interaction_values(
            spec, x, background, groups=bad
        ),
        "FourierShap.from_spectrum(groups=)": lambda: tx.FourierShap.from_spectrum(spec, background, groups=bad),
        "FourierShap(model, groups=)": lambda: tx.FourierShap(model, background, method="exact", groups=bad),
        "tx.fit_sparse_fourier(groups=)": lambda: tx.fit_sparse_fourier(model, 4, background=background, groups=bad),
        "explainer.attribute(feature_mask=)": lambda: explainer.attribute(x, feature_mask=bad),
        "FourierShap.from_trees(feature_groups=)": lambda: tx.FourierShap.from_trees(
            forest, background, feature_groups=bad
        ),
    }
    out = []
    for path, call in paths.items():
        try:
            call()
            out.append((path, "accepted"))
        except (TypeError, ValueError) as err:
            out.append((path, f"{type(err).__name__}: {err}"))
    return out


def all_paths(skip_idx: bool = False) -> dict[str, collections.Counter[str]]:
    """Every profiled path's counters, in print order."""
    rows = {
        **trees_path(),
        **binary_path(),
        **black_box_path(),
        **continuous_path(),
        **value_function_paths(),
        **goals_path(),
    }
    if not skip_idx:
        rows.update(idx_path())
        rows.update(idx_batch_path())
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--skip-idx", action="store_true", help="profile only the FourierSHAP and GOALS paths")
    args = parser.parse_args()
    for row, counts in all_paths(args.skip_idx).items():
        print(f"{row}: " + ", ".join(f"{label} x{n}" for label, n in sorted(counts.items())))
    print("\nthe same bad players (float ids) on every path:")
    for path, outcome in same_rejection():
        print(f"  {path}: {outcome}")


if __name__ == "__main__":
    main()

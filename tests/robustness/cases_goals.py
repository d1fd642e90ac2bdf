"""Robustness cases of ``torchxplain.goals``: the explainer, its backends, the Bayesian last layer, RATE and the
global-importance container."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

import gpytorch
import numpy as np
import pandas as pd
import torch
from torch import nn

import torchxplain as tx
from tests.robustness.harness import case, result_case
from torchxplain import goals
from torchxplain._core.saved_fields import SavedFieldError

G = "torchxplain.goals"


class _GP(gpytorch.models.ExactGP):
    def __init__(self, x: torch.Tensor, y: torch.Tensor) -> None:
        super().__init__(x, y, gpytorch.likelihoods.GaussianLikelihood())
        self.mean_module = gpytorch.means.ConstantMean()
        self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())
        self.covar_module.base_kernel.lengthscale = 1.3

    def forward(self, x: torch.Tensor) -> gpytorch.distributions.MultivariateNormal:
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


def _gp() -> _GP:
    x = torch.randn(12, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    return _GP(x, x[:, 0].sin()).double()


def _bnn() -> goals.LastLayerBNN:
    net = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 1)).double()
    return goals.LastLayerBNN.from_sequential(net)


@case(
    "torchxplain.Goals", "a NaN lengthscale (a diverged fit)", ValueError, r"hyperparameter .*raw_lengthscale.* refit"
)
def _():
    model = _gp()
    with torch.no_grad():
        model.covar_module.base_kernel.raw_lengthscale.fill_(float("nan"))
    tx.Goals(model)


@case("torchxplain.Goals", "a NaN mean constant", ValueError, r"hyperparameter model.mean_module.*constant.* NaN")
def _():
    model = _gp()
    with torch.no_grad():
        model.mean_module.constant.fill_(float("nan"))
    tx.Goals(model)


@case("torchxplain.Goals", "a negative jitter", ValueError, r"jitter must be a finite number >= 0, got -0.1; e.g. 1e-6")
def _():
    tx.Goals(_gp(), jitter=-0.1)


@case("torchxplain.Goals", "a zero shift", ValueError, r"xi must be nonzero")
def _():
    tx.Goals(_gp(), xi=0.0)


@case("torchxplain.Goals", "inputs with another feature count", ValueError, r"inputs has 2 features .*expected 3")
def _():
    tx.Goals(_gp()).attribute(np.zeros((4, 2)))


@case("torchxplain.Goals", "DataFrame columns unlike the feature names", ValueError, r"inputs has columns that differ")
def _():
    g = tx.Goals(_gp(), feature_names=["a", "b", "c"])
    g.attribute(pd.DataFrame(np.zeros((2, 3)), columns=["a", "b", "z"]))


@case(
    "torchxplain.Goals",
    "an unknown reduction",
    ValueError,
    r"reduction must be one of \['mean', 'abs_mean', 'mean_abs'\]",
)
def _():
    tx.Goals(_gp()).global_importance(reduction="median")


@case(
    "torchxplain.Goals", "a NaN row", ValueError, r"inputs contains NaN or infinite values \(first at index \(1, 0\)\)"
)
def _():
    tx.Goals(_gp()).local_variance([[0.0, 0.0, 0.0], [float("nan"), 0.0, 0.0]])


@case(f"{G}.GPBackend", "not a GP", TypeError, r"model must be a fitted gpytorch.models.ExactGP, got Linear")
def _():
    goals.GPBackend(nn.Linear(3, 1))


@case(f"{G}.GPBackend", "covariance features out of range", ValueError, r"covariance_features must be indices")
def _():
    goals.GPBackend(_gp()).global_importance(covariance_features=[7])


@case(f"{G}.LastLayerBNN", "num_particles=0", ValueError, r"num_particles must be >= 1, got 0")
def _():
    _bnn().fit(np.zeros((8, 3)), np.zeros(8), num_particles=0)


@case(f"{G}.LastLayerBNN", "an infinite learning rate", ValueError, r"lr must be a finite number > 0, got inf")
def _():
    _bnn().fit(np.zeros((8, 3)), np.zeros(8), lr=float("inf"))


@case(f"{G}.LastLayerBNN", "an unknown likelihood", ValueError, r"likelihood must be one of \['gaussian'")
def _():
    goals.LastLayerBNN(nn.Linear(3, 2), 2, likelihood="poisson")


@case(f"{G}.BNNBackend", "a covariance of the wrong shape", ValueError, r"cov must have shape \(2,\) or \(2, 2\)")
def _():
    goals.BNNBackend(nn.Linear(3, 2).double(), torch.zeros(2, dtype=torch.float64), torch.eye(3), np.zeros((4, 3)))


@case(f"{G}.PyroHead", "a head the model does not have", ValueError, r"model has no submodule 'nope'")
def _():
    tx.Goals(goals.PyroHead(nn.Sequential(nn.Linear(3, 1)), object(), "nope", torch.zeros(4, 3)))


@case(f"{G}.bnn_rate", "not a network backend", TypeError, r"backend must be a BNNBackend")
def _():
    goals.bnn_rate(goals.GPBackend(_gp()))


@case(f"{G}.rate", "a negative jitter", ValueError, r"jitter must be a finite number >= 0")
def _():
    goals.rate(np.zeros((5, 2)), np.zeros(5), np.eye(5), jitter=-1.0)


@case(f"{G}.rate_kld", "an unknown KL term", ValueError, r"kl must be one of \['full', 'mean'\]")
def _():
    goals.rate_kld(torch.zeros(2), torch.eye(2), kl="both")


@case(f"{G}.median_lengthscale", "one row", ValueError, r"x needs at least two distinct rows")
def _():
    goals.median_lengthscale(np.zeros((1, 3)))


@case(f"{G}.GlobalImportance", "an unknown reduction", ValueError, r"reduction must be one of")
def _():
    goals.GlobalImportance(mean=torch.zeros(2), score=torch.zeros(2), reduction="max")


@case(f"{G}.LastLayerBNN", "a string flag", TypeError, r"train_features must be True or False, got str 'no'")
def _():
    _bnn().fit(np.zeros((8, 3)), np.zeros(8), train_features="no")


@case(f"{G}.LastLayerBNN", "a NaN learning rate", ValueError, r"lr must be a finite number > 0, got nan")
def _():
    _bnn().fit(np.zeros((8, 3)), np.zeros(8), lr=float("nan"))


@case(f"{G}.LastLayerBNN", "bias given as a string", TypeError, r"bias must be True or False, got str 'no'")
def _():
    goals.LastLayerBNN(nn.Linear(3, 2), 2, bias="no")


@case(f"{G}.LastLayerBNN", "a float seed", TypeError, r"seed must be an int, got float")
def _():
    _bnn().fit(np.zeros((8, 3)), np.zeros(8), seed=0.5)


@case(f"{G}.GlobalImportance", "a level given as a string", TypeError, r"level must be a finite number in \(0, 1\)")
def _():
    goals.GlobalImportance(mean=torch.zeros(2), score=torch.zeros(2), variance=torch.ones(2)).interval("0.95")


@case(f"{G}.rate", "a jitter given as a string", TypeError, r"jitter must be a finite number >= 0, got str")
def _():
    goals.rate(np.zeros((5, 2)), np.zeros(5), np.eye(5), jitter="1e-6")


# ---------------------------------------------------------------- crafted or damaged saved files
def _saved(kind: str, tmp: str) -> str:
    """A saved GOALS explainer of a GP (RBF or linear kernel) or a network, in ``tmp``."""
    names = ["a", "b", "c"]
    if kind == "bnn":
        bnn = _bnn()
        x = torch.randn(10, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
        bnn.fit(x, x[:, 0], epochs=2, show_progress=False)
        explainer = tx.Goals(bnn, xi=0.5, feature_names=names)
    else:
        model = _gp()
        if kind == "linear":
            model.covar_module.base_kernel = gpytorch.kernels.LinearKernel().double()
        explainer = tx.Goals(model, xi=0.5, feature_names=names)
    return explainer.save(os.path.join(tmp, f"{kind}.pt"))


def _load_crafted(kind: str, edit: Any) -> None:
    """Save, apply ``edit(config, state)`` to the file's contents, write it back and load it."""
    with tempfile.TemporaryDirectory() as tmp:
        path = _saved(kind, tmp)
        data = torch.load(path, weights_only=True)
        meta = json.loads(data["metadata"])
        edit(meta["config"], data["state"])
        data["metadata"] = json.dumps(meta)
        torch.save(data, path)
        tx.Goals.load(path, forward_func=_bnn().features if kind == "bnn" else None)


def _set(key: str, index: Any, value: float) -> Any:
    def edit(config: dict, state: dict) -> None:
        state[key] = state[key].clone()
        state[key][index] = value

    return edit


def _config(key: str, value: Any) -> Any:
    return lambda config, state: config.__setitem__(key, value)


def _state(key: str, make: Any) -> Any:
    return lambda config, state: state.__setitem__(key, make(state[key]))


CRAFTED = [
    ("gp", "a NaN Cholesky factor", _set("backend.chol", (2, 1), float("nan")), r"'backend.chol' holds NaN"),
    ("gp", "an upper-triangular entry in the factor", _set("backend.chol", (0, 3), 0.5), r"not lower triangular"),
    (
        "gp",
        "a Cholesky factor of another matrix",
        _set("backend.chol", (5, 2), 0.3),
        r"'backend.chol' is not a Cholesky factor of the saved kernel matrix",
    ),
    ("gp", "a zero on the factor's diagonal", _set("backend.chol", (4, 4), 0.0), r"diagonal entry <= 0"),
    (
        "gp",
        "a kernel matrix unlike the inputs'",
        _set("backend.gram", (1, 2), 0.0),
        r"'backend.gram' is not the kernel",
    ),
    (
        "gp",
        "a negative lengthscale (theta)",
        _set("backend.kernel.theta", 1, -0.3),
        r"'backend.kernel.theta' must hold values > 0",
    ),
    ("gp", "a zero outputscale", _set("backend.kernel.outputscale", (), 0.0), r"outputscale' must hold values > 0"),
    (
        "linear",
        "a negative kernel variance",
        _set("backend.kernel.variance", (), -1.0),
        r"variance' must hold values > 0",
    ),
    ("gp", "xi = 0", _set("backend.xi", 1, 0.0), r"'backend.xi' must hold nonzero values"),
    ("gp", "a NaN training input", _set("backend.x", (3, 0), float("nan")), r"'backend.x' holds NaN"),
    ("gp", "NaN weights alpha", _set("backend.alpha", 0, float("nan")), r"'backend.alpha' holds NaN"),
    (
        "gp",
        "an infinite mean constant",
        _set("backend.mean_constant", (), float("inf")),
        r"'backend.mean_constant' holds",
    ),
    ("gp", "shifts of another width", _state("backend.xi", lambda t: t[:2].clone()), r"'backend.xi' has J = 2, but"),
    (
        "gp",
        "shifts as float32",
        _state("backend.xi", lambda t: t.float()),
        r"'backend.xi' must be a torch.float64 tensor",
    ),
    (
        "gp",
        "a stride-0 (expanded) training input of 2^28 rows",
        _state("backend.x", lambda t: t[:1].expand(2**28, 3)),
        r"'backend.x' is an expanded \(stride-0\) view",
    ),
    ("gp", "a missing factor", lambda config, state: state.pop("backend.chol"), r"'backend.chol' is missing"),
    ("gp", "feature names of the wrong length", _config("feature_names", ["a", "b"]), r"has 2 names, expected 3"),
    ("gp", "feature names that are not strings", _config("feature_names", [1, 2, 3]), r"must be a list of strings"),
    ("gp", "show_progress: 'no'", _config("show_progress", "no"), r"'show_progress' must be true or false, got str"),
    ("gp", "a budget under 1 MiB", _config("max_memory", 10), r"'max_memory' is not a memory budget"),
    ("gp", "an unknown kernel", _config("kernel", "matern"), r"'kernel' must be one of \['rbf', 'linear'\]"),
    ("gp", "an unknown backend", _config("backend", "svm"), r"'backend' must be one of \['gp', 'bnn'\]"),
    ("bnn", "NaN head weights", _set("backend.loc", 2, float("nan")), r"'backend.loc' holds NaN"),
    ("bnn", "a negative posterior variance", _set("backend.cov", 0, -1.0), r"'backend.cov' holds a negative variance"),
    (
        "bnn",
        "a covariance of the wrong shape",
        _state("backend.cov", lambda t: t[:3].clone()),
        r"'backend.cov' must have shape \(5,\) or \(5, 5\)",
    ),
    ("bnn", "xi = 0", _set("backend.xi", 0, 0.0), r"'backend.xi' must hold nonzero values"),
    ("bnn", "shortcut: 1", _config("shortcut", 1), r"'shortcut' must be true or false, got int"),
    ("bnn", "feature names of the wrong length", _config("feature_names", ["a"]), r"has 1 names, expected 3"),
]

for _kind, _what, _edit, _match in CRAFTED:

    @case("torchxplain.Goals", f"load: {_what} ({_kind})", SavedFieldError, r"\.pt': saved field .*" + _match)
    def _(kind=_kind, edit=_edit):
        _load_crafted(kind, edit)


# ---------------------------------------------------------------- inputs, model layouts and fits
def _frame(x: torch.Tensor, columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame(x.numpy(), columns=columns)


def _shift_reference(model: gpytorch.models.ExactGP, x: torch.Tensor, xi: float) -> torch.Tensor:
    """``(Q, J)`` ``E[f(x)] - E[f(x + xi e_j)]`` from GPyTorch's own exact predictive mean (independent of GOALS)."""
    model.eval()
    shifted = torch.stack([x + xi * torch.eye(x.shape[1], dtype=x.dtype)[j] for j in range(x.shape[1])])
    with torch.no_grad(), gpytorch.settings.fast_pred_var(False), gpytorch.settings.max_cholesky_size(10**9):
        base = model(x).mean
        moved = torch.stack([model(s).mean for s in shifted], 1)
    return base[:, None] - moved


class _RenamedGP(gpytorch.models.ExactGP):
    """A GP whose mean and kernel have their own names (not mean_module / covar_module)."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, kernel: Any, extra: Any = None, scale: float = 1.0) -> None:
        super().__init__(x, y, gpytorch.likelihoods.GaussianLikelihood())
        self.prior_mean = gpytorch.means.ConstantMean()
        self.kernel = kernel
        self.extra, self.scale = extra, scale

    def forward(self, x: torch.Tensor) -> gpytorch.distributions.MultivariateNormal:
        covar = self.kernel(x) * self.scale
        return gpytorch.distributions.MultivariateNormal(self.prior_mean(x), covar)


def _renamed(**kwargs: Any) -> _RenamedGP:
    reference = _gp()
    x, y = reference.train_inputs[0], reference.train_targets
    model = _RenamedGP(x, y, gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel()), **kwargs).double()
    model.kernel.base_kernel.lengthscale = 1.3
    return model


@case("torchxplain.Goals", "a DataFrame without feature names to check it", ValueError, r"no feature names to check")
def _():
    x = _gp().train_inputs[0][:3]
    tx.Goals(_gp()).attribute(_frame(x, ["a", "b", "c"]))


@case(
    "torchxplain.Goals",
    "a column-reversed DataFrame",
    ValueError,
    r"differ from those seen at fit time \(the same names in",
)
def _():
    x = _gp().train_inputs[0][:3]
    tx.Goals(_gp(), feature_names=["a", "b", "c"]).attribute(_frame(x.flip(1), ["c", "b", "a"]))


@case(
    "torchxplain.Goals",
    "a GP with two kernel modules",
    ValueError,
    r"exactly one gpytorch.kernels.Kernel module \(found 2",
)
def _():
    tx.Goals(_renamed(extra=gpytorch.kernels.RBFKernel()))


@case(
    "torchxplain.Goals",
    "a GP whose forward scales its kernel",
    ValueError,
    r"prior forward\(x\) is not MultivariateNormal",
)
def _():
    tx.Goals(_renamed(scale=2.0))


@case(
    "torchxplain.Goals",
    "a GP without a mean module",
    ValueError,
    r"exactly one gpytorch.means.Mean module \(found none\)",
)
def _():
    model = _renamed()
    del model.prior_mean
    tx.Goals(model)


@case(
    f"{G}.LastLayerBNN", "X of the wrong feature count", ValueError, r"fails on X of shape \(8, 2\).*takes 3 features"
)
def _():
    _bnn().fit(np.zeros((8, 2)), np.zeros(8))


@case(
    f"{G}.LastLayerBNN", "a diverging learning rate", ValueError, r"SVI diverged: NaN parameters in epoch 1; lower lr"
)
def _():
    x = torch.randn(40, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    _bnn().fit(x, x[:, 0] * 1e6, epochs=3, lr=1e6, batch_size=4, show_progress=False)


@case(
    f"{G}.LastLayerBNN", "NaN features X", ValueError, r"X contains NaN or infinite values \(first at index \(2, 1\)\)"
)
def _():
    x = np.ones((8, 3))
    x[2, 1] = np.nan
    _bnn().fit(x, np.zeros(8), show_progress=False)


@case(
    f"{G}.LastLayerBNN", "an extractor with NaN weights", ValueError, r"features\(X\) is NaN or infinite at rows \[0, 1"
)
def _():
    bnn = _bnn()
    with torch.no_grad():
        bnn.features[0].weight[0, 0] = float("nan")
    bnn.fit(np.ones((8, 3)), np.zeros(8), show_progress=False)


@case(f"{G}.rate", "NaN inputs", ValueError, r"x contains NaN or infinite values \(first at index \(1, 0\)\)")
def _():
    goals.rate([[0.0, 1.0], [float("nan"), 0.0], [1.0, 1.0]], np.zeros(3), np.eye(3))


@case(f"{G}.rate", "a NaN posterior mean (used to return NaN)", ValueError, r"f_mean contains NaN .* \(2,\)")
def _():
    goals.rate(np.random.default_rng(0).normal(size=(5, 2)), [0.0, 1.0, float("nan"), 0.0, 1.0], np.eye(5))


@case(f"{G}.rate_kld", "a NaN covariance", ValueError, r"cov contains NaN or infinite values")
def _():
    goals.rate_kld(torch.zeros(2), torch.tensor([[1.0, float("nan")], [0.0, 1.0]]))


@result_case("torchxplain.Goals", "a DataFrame with the training columns, and the same frame reordered")
def _():
    model = _gp()
    x = torch.randn(5, 3, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    g = tx.Goals(model, xi=0.5, feature_names=["a", "b", "c"])
    torch.testing.assert_close(
        g.attribute(_frame(x, ["a", "b", "c"])), _shift_reference(model, x, 0.5), atol=1e-8, rtol=0
    )
    try:  # the reversed frame used to be read in its own order: other scores, no error
        g.attribute(_frame(x.flip(1), ["c", "b", "a"]))
    except ValueError as err:
        assert "another order" in str(err)
    else:
        raise AssertionError("a column-reversed frame was accepted")


@result_case("torchxplain.Goals", "a GP whose mean and kernel are not called mean_module / covar_module")
def _():
    model = _renamed()
    x = torch.randn(5, 3, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    torch.testing.assert_close(tx.Goals(model).attribute(x), _shift_reference(model, x, 1.0), atol=1e-8, rtol=0)


@result_case("torchxplain.Goals", "to_shap values have the sign of the slopes (shap's 'impact on model output')")
def _():
    g_ = torch.Generator().manual_seed(2)
    x = torch.randn(30, 3, generator=g_, dtype=torch.float64)
    y = 2.0 * x[:, 0] - 3.0 * x[:, 1] + 0.01 * torch.randn(30, generator=g_, dtype=torch.float64)
    model = _GP(x, y).double()
    model.covar_module = gpytorch.kernels.LinearKernel().double()
    model.likelihood.noise = 1e-3
    explanation = tx.Goals(model, xi=0.5).to_shap(x[:6])
    slopes = torch.tensor([2.0, -3.0, 0.0], dtype=torch.float64) * 0.5  # f(x + xi e_j) - f(x) of y's linear part
    np.testing.assert_allclose(explanation.values, slopes.expand(6, 3).numpy(), atol=0.05)
    np.testing.assert_allclose(explanation.values, -_shift_reference(model, x[:6], 0.5).numpy(), atol=1e-8)


# --- complex shifts, numpy masks, a diverging fit ---------------------------------------------------------------
@case("torchxplain.Goals", "a complex xi (its imaginary part was dropped)", TypeError, r"xi must be real.*complex")
def _():
    tx.Goals(_gp(), xi=1.0 + 0.5j)


@case("torchxplain.Goals", "a complex (J,) xi tensor", TypeError, r"xi must be real")
def _():
    tx.Goals(_gp(), xi=torch.tensor([1.0, 2.0, 1.0], dtype=torch.complex128))


@result_case("torchxplain.Goals", "a numpy feature_mask (was refused): the tensor mask's scores")
def _():
    explainer, x = tx.Goals(_gp(), xi=0.5), torch.randn(4, 3, generator=torch.Generator().manual_seed(1)).double()
    mask = np.array([[0, 0, 1]])
    want = explainer.attribute(x, feature_mask=torch.tensor(mask))
    torch.testing.assert_close(explainer.attribute(x, feature_mask=mask), want, rtol=0, atol=0)
    torch.testing.assert_close(explainer.attribute(x, feature_mask=[[0, 0, 1]]), want, rtol=0, atol=0)
    # the reference: shifting features 0 and 1 together through the posterior mean itself
    shift = torch.tensor([0.5, 0.5, 0.0], dtype=torch.float64)
    joint = explainer.forward_func(x) - explainer.forward_func(x + shift)
    torch.testing.assert_close(want[:, 0], joint, rtol=1e-6, atol=1e-8)


@case(f"{G}.LastLayerBNN", "a step driving a scale to 0 (Pyro's error)", ValueError, r"scale that reached 0")
def _():
    x = torch.randn(64, 3, generator=torch.Generator().manual_seed(0))
    with torch.random.fork_rng():
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
    goals.LastLayerBNN.from_sequential(net).fit(x, 3 * x[:, 0], epochs=5, lr=1e4, show_progress=False)

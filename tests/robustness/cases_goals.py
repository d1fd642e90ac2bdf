"""Robustness cases of ``torchxplain.goals``: the explainer, its backends, the Bayesian last layer, RATE and the
global-importance container."""

from __future__ import annotations

import gpytorch
import numpy as np
import pandas as pd
import torch
from torch import nn

from tests.robustness.harness import case
from torchxplain import goals

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


@case(f"{G}.Goals", "a NaN lengthscale (a diverged fit)", ValueError, r"hyperparameter .*raw_lengthscale.* refit")
def _():
    model = _gp()
    with torch.no_grad():
        model.covar_module.base_kernel.raw_lengthscale.fill_(float("nan"))
    goals.Goals(model)


@case(f"{G}.Goals", "a NaN mean constant", ValueError, r"hyperparameter model.mean_module.*constant.* NaN")
def _():
    model = _gp()
    with torch.no_grad():
        model.mean_module.constant.fill_(float("nan"))
    goals.Goals(model)


@case(f"{G}.Goals", "a negative jitter", ValueError, r"jitter must be a finite number >= 0, got -0.1; e.g. 1e-6")
def _():
    goals.Goals(_gp(), jitter=-0.1)


@case(f"{G}.Goals", "a zero shift", ValueError, r"xi must be nonzero")
def _():
    goals.Goals(_gp(), xi=0.0)


@case(f"{G}.Goals", "inputs with another feature count", ValueError, r"inputs has 2 features .*expected 3")
def _():
    goals.Goals(_gp()).attribute(np.zeros((4, 2)))


@case(f"{G}.Goals", "DataFrame columns unlike the feature names", ValueError, r"inputs has columns that differ")
def _():
    g = goals.Goals(_gp(), feature_names=["a", "b", "c"])
    g.attribute(pd.DataFrame(np.zeros((2, 3)), columns=["a", "b", "z"]))


@case(f"{G}.Goals", "an unknown reduction", ValueError, r"reduction must be one of \['mean', 'abs_mean', 'mean_abs'\]")
def _():
    goals.Goals(_gp()).global_importance(reduction="median")


@case(f"{G}.Goals", "a NaN row", ValueError, r"inputs contains NaN or infinite values \(first at index \(1, 0\)\)")
def _():
    goals.Goals(_gp()).local_variance([[0.0, 0.0, 0.0], [float("nan"), 0.0, 0.0]])


@case(f"{G}.GPBackend", "not a GP", TypeError, r"model must be a fitted gpytorch.models.ExactGP, got Linear")
def _():
    goals.GPBackend(nn.Linear(3, 1))


@case(f"{G}.GPBackend", "covariance features out of range", ValueError, r"covariance_features must be indices")
def _():
    goals.GPBackend(_gp()).global_importance(covariance_features=[7])


@case(f"{G}.LastLayerBNN", "num_particles=0", ValueError, r"num_particles must be a positive int, got int 0")
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
    goals.Goals(goals.PyroHead(nn.Sequential(nn.Linear(3, 1)), object(), "nope", torch.zeros(4, 3)))


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


@case(f"{G}.LastLayerBNN", "a float seed", TypeError, r"seed must be a non-negative int, got float")
def _():
    _bnn().fit(np.zeros((8, 3)), np.zeros(8), seed=0.5)


@case(f"{G}.GlobalImportance", "a level given as a string", TypeError, r"level must be a finite number in \(0, 1\)")
def _():
    goals.GlobalImportance(mean=torch.zeros(2), score=torch.zeros(2), variance=torch.ones(2)).interval("0.95")


@case(f"{G}.rate", "a jitter given as a string", TypeError, r"jitter must be a finite number >= 0, got str")
def _():
    goals.rate(np.zeros((5, 2)), np.zeros(5), np.eye(5), jitter="1e-6")


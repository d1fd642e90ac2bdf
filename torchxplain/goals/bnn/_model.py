"""``LastLayerBNN``: a deterministic feature extractor with a Bayesian linear head, fitted by SVI in Pyro.

The network is ``f(x) = h(x)^T W + b`` with a point-estimated extractor ``h`` and a Gaussian variational
posterior over the head (the GOALS supplement, Eqs. S5-S8). Pyro parameters are always module-local:
nothing here reads, writes or clears Pyro's global parameter store.
"""

from __future__ import annotations

import math
from typing import Any, Literal, cast

import pyro
import pyro.distributions as dist
import torch
from pyro.distributions import constraints
from pyro.infer import Trace_ELBO
from pyro.infer.autoguide import AutoMultivariateNormal, AutoNormal, init_to_feasible, init_to_value
from pyro.nn import PyroModule, PyroParam, PyroSample
from torch import Tensor, nn

from torchxplain._core import (
    check_finite,
    check_flag,
    check_matrix,
    chunk_bounds,
    make_generator,
    progress,
    settings,
)
from torchxplain._core.inputs import check_feature_names, to_tensor
from torchxplain.goals.bnn._fit_checks import check_features, check_fit_options, check_model_options
from torchxplain.goals.bnn._modes import local_params, train_mode
from torchxplain.goals.bnn._posterior import guide_moments, output_block

LIKELIHOODS = ("gaussian", "bernoulli", "categorical")
GUIDES = ("normal", "multivariate_normal")
Likelihood = Literal["gaussian", "bernoulli", "categorical"]
GuideKind = Literal["normal", "multivariate_normal"]


class _LocalParams:
    """Builds and calls a PyroModule with ``module_local_params=True``: its parameters never touch the global
    parameter store (Pyro fixes the mode when a module is built, so both need it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        with local_params():
            super().__init__(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with local_params():
            return super().__call__(*args, **kwargs)  # type: ignore[misc]  # a mixin before an nn.Module


class _AutoNormal(_LocalParams, AutoNormal):
    pass


class _AutoMultivariateNormal(_LocalParams, AutoMultivariateNormal):
    pass


class LastLayerBNN(_LocalParams, PyroModule):
    """A deterministic feature extractor with a Bayesian linear head, fitted by SVI.

    Model: ``f = h(x) W^T + b`` with ``W ~ N(0, prior_scale^2)`` ``(K, L)`` and
    ``b ~ N(0, bias_prior_scale^2)``;
    ``y ~ N(f, sigma^2)`` with a learned ``sigma`` (``"gaussian"``, ``K = 1``), ``Bernoulli(logits=f)``
    (``K = 1``) or ``Categorical(logits=f)`` (``K = n_classes``). The returned latent ``f`` is on the logit
    scale for classification. The guide is an ``AutoNormal`` (mean-field) or ``AutoMultivariateNormal``.

    Args:
        features: any ``nn.Module`` mapping ``(B, J)`` to ``(B, L)``; point-estimated (kept fixed by
            :meth:`fit` unless ``train_features=True``).
        feature_dim: ``L``, the width of ``features``' output.
        likelihood: one of ``"gaussian"``, ``"bernoulli"``, ``"categorical"``.
        n_classes: number of classes for ``"categorical"``.
        prior_scale: prior standard deviation of the head's weights.
        bias_prior_scale: prior standard deviation of the bias (default: ``prior_scale``).
        bias: whether the head has a (Bayesian) bias.
        guide: ``"normal"`` (``AutoNormal``) or ``"multivariate_normal"`` (full rank).
        init_scale: initial posterior standard deviation of the guide.
        init_head: optional ``nn.Linear`` whose weights initialise the guide's means
            (see :meth:`from_sequential`).

    Example:
        >>> import torch
        >>> from torch import nn
        >>> import torchxplain as tx
        >>> from torchxplain.goals import LastLayerBNN
        >>> _ = torch.manual_seed(0)
        >>> net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))  # a trained regressor, say
        >>> X, y = torch.randn(64, 3), torch.randn(64)
        >>> bnn = LastLayerBNN.from_sequential(net).fit(X, y, epochs=5, seed=0, show_progress=False)
        >>> tx.Goals(bnn).attribute(X[:2]).shape
        torch.Size([2, 3])
    """

    def __init__(
        self,
        features: nn.Module,
        feature_dim: int,
        *,
        likelihood: Likelihood = "gaussian",
        n_classes: int | None = None,
        prior_scale: float = 1.0,
        bias_prior_scale: float | None = None,
        bias: bool = True,
        guide: GuideKind = "normal",
        init_scale: float = 0.1,
        init_head: nn.Linear | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(features, nn.Module):
            raise TypeError(f"features must be an nn.Module, got {type(features).__name__}")
        bias_scale = check_model_options(
            likelihood,
            guide,
            n_classes,
            feature_dim,
            prior_scale,
            bias_prior_scale,
            bias,
            init_scale,
            LIKELIHOODS,
            GUIDES,
        )

        param = next(features.parameters(), None)
        dtype = param.dtype if param is not None else torch.get_default_dtype()
        self.likelihood = likelihood
        self.n_outputs: int = n_classes if likelihood == "categorical" and n_classes is not None else 1
        self.feature_dim = feature_dim
        self.guide_kind = guide
        self.has_bias = bool(bias)
        self.init_scale = float(init_scale)
        self.features = features
        k, width = self.n_outputs, feature_dim
        linear: Any = PyroModule[nn.Linear]  # a PyroModule subclass of nn.Linear, built at run time
        self.head = linear(width, k, bias=bias).to(dtype)
        self.head.register_buffer("prior_scale", torch.tensor(float(prior_scale), dtype=dtype))
        self.head.register_buffer("bias_prior_scale", torch.tensor(float(bias_scale), dtype=dtype))
        self.head.weight = PyroSample(
            lambda head: (
                dist.Normal(torch.zeros_like(head.prior_scale), head.prior_scale).expand([k, width]).to_event(2)
            )
        )
        if bias:
            self.head.bias = PyroSample(
                lambda head: (
                    dist.Normal(torch.zeros_like(head.bias_prior_scale), head.bias_prior_scale).expand([k]).to_event(1)
                )
            )
        if likelihood == "gaussian":
            self.sigma = PyroParam(torch.tensor(1.0, dtype=dtype), constraint=constraints.positive)
        self._init_values: dict[str, Tensor] = {}
        if init_head is not None:
            if not isinstance(init_head, nn.Linear) or init_head.weight.shape != (k, width):
                raise ValueError(f"init_head must be an nn.Linear({width}, {k}), got {init_head!r}")
            self._init_values["head.weight"] = init_head.weight.detach().clone().to(dtype)
            if bias and init_head.bias is not None:
                self._init_values["head.bias"] = init_head.bias.detach().clone().to(dtype)
        self.posterior = nn.ModuleDict()
        self._data_size: int | None = None
        self.n_inputs: int | None = None
        self.feature_names: tuple[str, ...] | None = None
        self.losses: list[float] = []

    @classmethod
    def from_sequential(cls, net: nn.Sequential, **kwargs: Any) -> LastLayerBNN:
        """Make the last layer of a (trained) ``nn.Sequential`` Bayesian.

        ``net[:-1]`` becomes the feature extractor and ``net[-1]`` (an ``nn.Linear``) the head, whose
        weights initialise the posterior means. Keyword arguments go to the constructor.
        """
        if not isinstance(net, nn.Sequential) or len(net) < 2:
            raise TypeError(f"net must be an nn.Sequential of at least two modules, got {type(net).__name__}")
        head = net[-1]
        if not isinstance(head, nn.Linear):
            raise TypeError(f"the last module of net must be an nn.Linear head, got {type(head).__name__}")
        return cls(net[:-1], head.in_features, init_head=head, **kwargs)

    @property
    def guide(self) -> AutoNormal | AutoMultivariateNormal:
        """The fitted variational guide (raises before :meth:`fit`)."""
        if "guide" not in self.posterior:
            raise ValueError("this LastLayerBNN has not been fitted; call fit(X, y) first")
        return cast("AutoNormal | AutoMultivariateNormal", self.posterior["guide"])

    @property
    def train_inputs(self) -> Tensor:
        """``(N, J)`` the inputs of the last :meth:`fit` (GOALS averages over them)."""
        x = self._buffers.get("_train_inputs")
        if x is None:
            raise ValueError("this LastLayerBNN has not been fitted; call fit(X, y) first")
        return x

    def forward(self, x: Tensor, y: Tensor | None = None) -> Tensor:
        """The Pyro model: returns the latent ``f`` ``(B,)`` (``(B, K)``: categorical), observing ``y``."""
        h = self.features(x)
        w, b = self.head.weight, self.head.bias
        f = torch.matmul(h, w.transpose(-1, -2))
        if b is not None:
            f = f + b.unsqueeze(-2)
        if f.ndim > 2:  # vectorised draws (Predictive(parallel=True)): drop the data plate's placeholder dim
            f = f.squeeze(-3)
        batch = x.shape[0]
        size = max(self._data_size or batch, batch)
        with pyro.plate("data", size=size, subsample=torch.arange(batch, device=x.device)):
            if self.likelihood == "gaussian":
                f = f[..., 0]
                pyro.sample("obs", dist.Normal(f, cast(Tensor, self.sigma)), obs=y)
            elif self.likelihood == "bernoulli":
                f = f[..., 0]
                pyro.sample("obs", dist.Bernoulli(logits=f), obs=y)
            else:
                pyro.sample("obs", dist.Categorical(logits=f), obs=y)
        return f

    def fit(
        self,
        X: Any,
        y: Any,
        *,
        epochs: int = 200,
        lr: float = 1e-2,
        batch_size: int | None = 256,
        num_particles: int = 1,
        train_features: bool = False,
        seed: int = 0,
        show_progress: bool | None = None,
    ) -> LastLayerBNN:
        """Fit the head's posterior (and ``sigma``) by SVI with ``Trace_ELBO`` on shuffled mini-batches.

        Args:
            X: ``(N, J)`` inputs (tensor, array or DataFrame, whose columns become ``feature_names``), in the
                features' dtype; arrays and frames are converted to it on the features' device.
            y: ``(N,)`` targets: real (gaussian), 0/1 (bernoulli) or class indices (categorical).
            epochs: passes over the data; ``batch_size=None`` uses full batches.
            lr: Adam's learning rate (finite, > 0); ``num_particles``: ELBO samples per step (>= 1).
            train_features: also learn the extractor's weights (point estimates); by default they stay fixed.
            seed: seeds the shuffling and the ELBO's draws (the global RNG state is restored afterwards).
            show_progress: a progress bar over epochs (``None``: ``tx.settings.show_progress``).

        Returns ``self``; ``self.losses`` holds the mean negative ELBO (full-data estimate) of every epoch.
        Calling ``fit`` again continues from the current posterior (with a fresh optimiser).
        """
        check_fit_options(epochs, lr, batch_size, num_particles, seed, train_features)
        X, y = self._check_data(X, y)
        n = X.shape[0]
        step = n if batch_size is None else min(batch_size, n)
        self.n_inputs = X.shape[1]
        self._data_size = n
        self.register_buffer("_train_inputs", X.detach(), persistent=True)
        frozen = [p for p in self.features.parameters() if p.requires_grad and not train_features]
        devices = [X.device] if X.device.type == "cuda" else []
        try:
            for p in frozen:
                p.requires_grad_(False)
            rng = torch.random.fork_rng(devices=devices)  # the caller's RNG state is restored afterwards
            with (
                train_mode(self.features, train_features),
                rng,
                local_params(),
                settings.using(show_progress=show_progress),
            ):
                torch.manual_seed(seed)
                self._svi(X, y, epochs, lr, step, num_particles, train_features, seed)
        finally:
            for p in frozen:
                p.requires_grad_(True)
        return self

    def _svi(
        self,
        X: Tensor,
        y: Tensor,
        epochs: int,
        lr: float,
        step: int,
        num_particles: int,
        train_features: bool,
        seed: int,
    ) -> None:
        if "guide" not in self.posterior:
            if self.likelihood == "gaussian":
                self.sigma = PyroParam(0.5 * y.std().clamp_min(1e-3).detach(), constraint=constraints.positive)
            init = init_to_value(values=self._init_values) if self._init_values else init_to_feasible
            kind = _AutoNormal if self.guide_kind == "normal" else _AutoMultivariateNormal
            new = kind(self, init_loc_fn=init, init_scale=self.init_scale)
            new(X[:step], y[:step])
            self.posterior["guide"] = new
        guide = self.guide
        params = list(guide.parameters())
        if self.likelihood == "gaussian":
            params.append(self.sigma_unconstrained)
        if train_features:
            params += list(self.features.parameters())
        optim = torch.optim.Adam(params, lr=lr)
        elbo = Trace_ELBO(num_particles=num_particles)
        gen = make_generator(seed, X.device)
        n = X.shape[0]
        steps = 0
        for _ in progress(range(epochs), desc="SVI epochs"):
            order = torch.randperm(n, generator=gen, device=X.device)
            total = X.new_zeros(())
            for start, stop in chunk_bounds(n, step):
                idx = order[start:stop]
                optim.zero_grad()
                try:
                    loss = elbo.differentiable_loss(self, guide, X[idx], y[idx])
                except ValueError as err:  # Pyro's distributions refuse the parameters of a diverged step
                    finite = all(bool(torch.isfinite(p).all()) for p in params)
                    if finite and steps == 0:  # the starting point itself: the model or the data, not a step
                        raise
                    what = "a scale that reached 0 (a parameter left its support)" if finite else "NaN parameters"
                    raise self._diverged(what, len(self.losses) + 1, lr) from err
                loss.backward()
                optim.step()
                steps += 1
                total += loss.detach() * (stop - start)
            self.losses.append(float(total) / n)
            if not math.isfinite(self.losses[-1]):
                raise self._diverged(f"an ELBO of {self.losses[-1]}", len(self.losses), lr)

    @staticmethod
    def _diverged(what: str, epoch: int, lr: float) -> ValueError:
        return ValueError(
            f"SVI diverged: {what} in epoch {epoch}; lower lr (now {lr!r}), standardise X and y, or check the "
            "features for NaN"
        )

    def _dtype(self) -> torch.dtype:
        return self.head.prior_scale.dtype

    def _inputs(self, x: Any, name: str) -> tuple[Tensor, tuple[str, ...] | None]:
        """Convert and check ``(Q, J)`` inputs (the features' dtype, finite, the fitted width and names);
        returns the tensor and a DataFrame's column names."""
        converted = to_tensor(x, name, device=self.head.prior_scale.device, ndim=2)
        check_feature_names(self.feature_names, converted.feature_names, name)
        t = converted.tensor
        if not isinstance(x, Tensor) or not t.is_floating_point():
            t = t.to(self._dtype())
        if t.dtype != self._dtype():
            raise TypeError(f"{name} must have the model's dtype {self._dtype()}, got {t.dtype}; pass {name}.to(...)")
        return check_finite(check_matrix(t, name, self.n_inputs), name), converted.feature_names

    def _check_data(self, X: Any, y: Any) -> tuple[Tensor, Tensor]:
        X, names = self._inputs(X, "X")
        y = to_tensor(y, "y", device=X.device, ndim=1).tensor
        if y.shape != (X.shape[0],):
            raise ValueError(f"y must have shape ({X.shape[0]},) to match X, got {tuple(y.shape)}")
        check_features(self.features, X, self.feature_dim)
        self.feature_names = names
        if self.likelihood == "categorical":
            if y.is_floating_point() or bool(((y < 0) | (y >= self.n_outputs)).any()):
                raise ValueError(
                    f"y must hold integer class indices in [0, {self.n_outputs}) for likelihood='categorical'"
                )
            return X, y.long()
        if self.likelihood == "bernoulli" and bool(((y != 0) & (y != 1)).any()):
            raise ValueError("y must hold 0/1 labels for likelihood='bernoulli'")
        return X, check_finite(y.to(self._dtype()), "y")

    def head_posterior(self, output: int | None = None) -> tuple[Tensor, Tensor]:
        """Posterior mean ``(L,)`` and covariance (``(L,)`` diagonal or ``(L, L)``) of an output's weights."""
        loc, cov = guide_moments(self.guide, ["head.weight"])
        return output_block(loc, cov, self.n_outputs, output)

    @torch.no_grad()
    def predict(self, x: Any, return_std: bool = False) -> Tensor | tuple[Tensor, Tensor]:
        """Posterior predictive mean (and standard deviation) of the latent ``f`` at ``x`` ``(Q, J)``.

        Returns ``(Q,)`` tensors (``(Q, K)`` for categorical), exact for the Gaussian head posterior.
        """
        check_flag(return_std, "return_std")
        x, _ = self._inputs(x, "x")
        names = ["head.weight"] + (["head.bias"] if self.has_bias else [])
        loc, cov = guide_moments(self.guide, names)
        k, width = self.n_outputs, self.feature_dim
        with train_mode(self.features, False):
            h = self.features(x)
        means, stds = [], []
        for out in range(k):
            sel = torch.arange(out * width, (out + 1) * width, device=loc.device)
            if len(names) == 2:
                sel = torch.cat([sel, torch.tensor([k * width + out], device=loc.device)])
            hh = torch.cat([h, torch.ones_like(h[:, :1])], 1)[:, : sel.numel()]
            block = cov[sel] if cov.ndim == 1 else cov[sel][:, sel]
            means.append(hh @ loc[sel])
            stds.append(((hh * hh) @ block if block.ndim == 1 else ((hh @ block) * hh).sum(-1)).clamp_min(0).sqrt())
        mean, std = torch.stack(means, -1), torch.stack(stds, -1)
        if k == 1:
            mean, std = mean[:, 0], std[:, 0]
        return (mean, std) if return_std else mean

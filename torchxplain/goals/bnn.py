"""GOALS on networks with a Bayesian last layer: ``LastLayerBNN`` (Pyro) and the ``BNNBackend`` of ``Goals``.

The network is ``f(x) = h(x)^T w + b`` with a deterministic, point-estimated feature extractor ``h`` and
a Gaussian variational posterior ``q(w) = N(m, V)`` over the head (the GOALS supplement, Eqs. S5-S8,
with S7's ``N(0, V)`` read as ``N(m, V)``). Scores are posterior moments of ``f(x) - f(x + xi e_j)``
(see :mod:`torchxplain.goals.bnn_math`); the bias cancels. Pyro parameters are always module-local:
nothing here reads, writes or clears Pyro's global parameter store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyro
import pyro.distributions as dist
import torch
from pyro import poutine
from pyro.distributions import constraints
from pyro.infer import Trace_ELBO
from pyro.infer.autoguide import AutoMultivariateNormal, AutoNormal, init_to_feasible, init_to_value
from pyro.nn import PyroModule, PyroParam, PyroSample
from torch import Tensor, nn

from torchxplain._core import as_tensor, check_finite, check_matrix, chunk_bounds, make_generator, progress
from torchxplain.goals.bnn_math import FeatureMap, global_moments, local_moments, training_summary
from torchxplain.goals.bnn_posterior import guide_moments, output_block
from torchxplain.goals.gp import check_xi
from torchxplain.goals.importance import REDUCTIONS, GlobalImportance

LIKELIHOODS = ("gaussian", "bernoulli", "categorical")
GUIDES = ("normal", "multivariate_normal")


def _local_params() -> Any:
    return pyro.settings.context(module_local_params=True)


def _native_params(module: object) -> Any:
    """The ``module_local_params`` setting a (user's) Pyro module was built under; calls must use the same."""
    return pyro.settings.context(
        module_local_params=hasattr(getattr(module, "_pyro_context", None), "param_state")
    )


class _LocalParams:
    """Builds and calls a PyroModule with ``module_local_params=True``: its parameters never touch the global
    parameter store (Pyro fixes the mode when a module is built, so both need it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        with _local_params():
            super().__init__(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with _local_params():
            return super().__call__(*args, **kwargs)


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
    """

    def __init__(
        self,
        features: nn.Module,
        feature_dim: int,
        *,
        likelihood: str = "gaussian",
        n_classes: int | None = None,
        prior_scale: float = 1.0,
        bias_prior_scale: float | None = None,
        bias: bool = True,
        guide: str = "normal",
        init_scale: float = 0.1,
        init_head: nn.Linear | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(features, nn.Module):
            raise TypeError(f"features must be an nn.Module, got {type(features).__name__}")
        if likelihood not in LIKELIHOODS:
            raise ValueError(f"likelihood must be one of {LIKELIHOODS}, got {likelihood!r}")
        if guide not in GUIDES:
            raise ValueError(f"guide must be one of {GUIDES}, got {guide!r}")
        if likelihood == "categorical":
            if not isinstance(n_classes, int) or n_classes < 2:
                raise ValueError(f"likelihood='categorical' needs n_classes >= 2, got {n_classes!r}")
        elif n_classes is not None:
            raise ValueError(f"n_classes is only used with likelihood='categorical', got {n_classes!r}")
        if not isinstance(feature_dim, int) or feature_dim < 1:
            raise ValueError(f"feature_dim must be a positive int, got {feature_dim!r}")
        for name, value in (("prior_scale", prior_scale), ("init_scale", init_scale)):
            if not value > 0:
                raise ValueError(f"{name} must be positive, got {value!r}")
        bias_scale = prior_scale if bias_prior_scale is None else bias_prior_scale
        if bias and not bias_scale > 0:
            raise ValueError(f"bias_prior_scale must be positive, got {bias_prior_scale!r}")

        param = next(features.parameters(), None)
        dtype = param.dtype if param is not None else torch.get_default_dtype()
        self.likelihood = likelihood
        self.n_outputs = n_classes if likelihood == "categorical" else 1
        self.feature_dim = feature_dim
        self.guide_kind = guide
        self.has_bias = bool(bias)
        self.init_scale = float(init_scale)
        self.features = features
        k, width = self.n_outputs, feature_dim
        self.head = PyroModule[nn.Linear](width, k, bias=bias).to(dtype)
        self.head.register_buffer("prior_scale", torch.tensor(float(prior_scale), dtype=dtype))
        self.head.register_buffer("bias_prior_scale", torch.tensor(float(bias_scale), dtype=dtype))
        self.head.weight = PyroSample(
            lambda head: (
                dist.Normal(torch.zeros_like(head.prior_scale), head.prior_scale)
                .expand([k, width])
                .to_event(2)
            )
        )
        if bias:
            self.head.bias = PyroSample(
                lambda head: (
                    dist.Normal(torch.zeros_like(head.bias_prior_scale), head.bias_prior_scale)
                    .expand([k])
                    .to_event(1)
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
        return self.posterior["guide"]

    @property
    def train_inputs(self) -> Tensor:
        """``(N, J)`` the inputs of the last :meth:`fit` (GOALS averages over them)."""
        if "_train_inputs" not in self._buffers:
            raise ValueError("this LastLayerBNN has not been fitted; call fit(X, y) first")
        return self._buffers["_train_inputs"]

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
                pyro.sample("obs", dist.Normal(f, self.sigma), obs=y)
            elif self.likelihood == "bernoulli":
                f = f[..., 0]
                pyro.sample("obs", dist.Bernoulli(logits=f), obs=y)
            else:
                pyro.sample("obs", dist.Categorical(logits=f), obs=y)
        return f

    def fit(
        self,
        X: Tensor,
        y: Tensor,
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
            X: ``(N, J)`` inputs, in the features' dtype and device.
            y: ``(N,)`` targets: real (gaussian), 0/1 (bernoulli) or class indices (categorical).
            epochs: passes over the data; ``batch_size=None`` uses full batches.
            train_features: also learn the extractor's weights (point estimates); by default they stay fixed.
            seed: seeds the shuffling and the ELBO's draws (the global RNG state is restored afterwards).

        Returns ``self``; ``self.losses`` holds the mean ELBO loss of every epoch.
        """
        X, y = self._check_data(X, y)
        n = X.shape[0]
        if not isinstance(epochs, int) or epochs < 1:
            raise ValueError(f"epochs must be a positive int, got {epochs!r}")
        if not lr > 0:
            raise ValueError(f"lr must be positive, got {lr!r}")
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(f"batch_size must be a positive int or None, got {batch_size!r}")
        step = n if batch_size is None else min(batch_size, n)
        self.n_inputs = X.shape[1]
        self._data_size = n
        self.register_buffer("_train_inputs", X.detach(), persistent=True)
        was_training = self.features.training
        frozen = [p for p in self.features.parameters() if p.requires_grad and not train_features]
        devices = [X.device] if X.device.type == "cuda" else []
        try:
            for p in frozen:
                p.requires_grad_(False)
            self.features.train(train_features)
            with torch.random.fork_rng(devices=devices), _local_params():
                torch.manual_seed(seed)
                self._svi(X, y, epochs, lr, step, num_particles, train_features, seed, show_progress)
        finally:
            for p in frozen:
                p.requires_grad_(True)
            self.features.train(was_training)
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
        show_progress: bool | None,
    ) -> None:
        if "guide" not in self.posterior:
            if self.likelihood == "gaussian":
                self.sigma = PyroParam(
                    0.5 * y.std().clamp_min(1e-3).detach(), constraint=constraints.positive
                )
            init = init_to_value(values=self._init_values) if self._init_values else init_to_feasible
            kind = _AutoNormal if self.guide_kind == "normal" else _AutoMultivariateNormal
            guide = kind(self, init_loc_fn=init, init_scale=self.init_scale)
            guide(X[:step], y[:step])
            self.posterior["guide"] = guide
        guide = self.posterior["guide"]
        params = list(guide.parameters())
        if self.likelihood == "gaussian":
            params.append(self.sigma_unconstrained)
        if train_features:
            params += list(self.features.parameters())
        optim = torch.optim.Adam(params, lr=lr)
        elbo = Trace_ELBO(num_particles=num_particles)
        gen = make_generator(seed, X.device)
        n = X.shape[0]
        for _ in progress(range(epochs), None if show_progress is None else show_progress, desc="SVI epochs"):
            order = torch.randperm(n, generator=gen, device=X.device)
            total = X.new_zeros(())
            for start, stop in chunk_bounds(n, step):
                idx = order[start:stop]
                optim.zero_grad()
                loss = elbo.differentiable_loss(self, guide, X[idx], y[idx])
                loss.backward()
                optim.step()
                total += loss.detach() * (stop - start)
            self.losses.append(float(total) / n)

    def _check_data(self, X: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        X = check_finite(check_matrix(as_tensor(X, "X"), "X", self.n_inputs), "X")
        y = as_tensor(y, "y")
        if y.shape != (X.shape[0],):
            raise ValueError(f"y must have shape ({X.shape[0]},) to match X, got {tuple(y.shape)}")
        dtype = self.head.prior_scale.dtype
        if X.dtype != dtype:
            raise TypeError(f"X must have the model's dtype {dtype}, got {X.dtype}")
        h = self.features(X[:2])
        if h.ndim != 2 or h.shape[1] != self.feature_dim:
            raise ValueError(f"features(X) must have shape (batch, {self.feature_dim}), got {tuple(h.shape)}")
        if self.likelihood == "categorical":
            if y.is_floating_point() or bool(((y < 0) | (y >= self.n_outputs)).any()):
                raise ValueError(
                    f"y must hold integer class indices in [0, {self.n_outputs}) for likelihood='categorical'"
                )
            return X, y.long()
        if self.likelihood == "bernoulli" and bool(((y != 0) & (y != 1)).any()):
            raise ValueError("y must hold 0/1 labels for likelihood='bernoulli'")
        return X, check_finite(y.to(dtype), "y")

    def head_posterior(self, output: int | None = None) -> tuple[Tensor, Tensor]:
        """Posterior mean ``(L,)`` and covariance (``(L,)`` diagonal or ``(L, L)``) of an output's weights."""
        loc, cov = guide_moments(self.guide, ["head.weight"])
        return output_block(loc, cov, self.n_outputs, output)

    @torch.no_grad()
    def predict(self, x: Tensor, return_std: bool = False) -> Tensor | tuple[Tensor, Tensor]:
        """Posterior predictive mean (and standard deviation) of the latent ``f`` at ``x`` ``(Q, J)``.

        Returns ``(Q,)`` tensors (``(Q, K)`` for categorical), exact for the Gaussian head posterior.
        """
        x = check_matrix(as_tensor(x, "x"), "x", self.n_inputs)
        names = ["head.weight"] + (["head.bias"] if self.has_bias else [])
        loc, cov = guide_moments(self.guide, names)
        k, width = self.n_outputs, self.feature_dim
        was_training = self.features.training
        self.features.eval()
        try:
            h = self.features(x)
        finally:
            self.features.train(was_training)
        means, stds = [], []
        for out in range(k):
            sel = torch.arange(out * width, (out + 1) * width, device=loc.device)
            if len(names) == 2:
                sel = torch.cat([sel, torch.tensor([k * width + out], device=loc.device)])
            hh = torch.cat([h, torch.ones_like(h[:, :1])], 1)[:, : sel.numel()]
            block = cov[sel] if cov.ndim == 1 else cov[sel][:, sel]
            means.append(hh @ loc[sel])
            stds.append(
                ((hh * hh) @ block if block.ndim == 1 else ((hh @ block) * hh).sum(-1)).clamp_min(0).sqrt()
            )
        mean, std = torch.stack(means, -1), torch.stack(stds, -1)
        if k == 1:
            mean, std = mean[:, 0], std[:, 0]
        return (mean, std) if return_std else mean


class _HeadInput:
    """``h(x)`` of a user's Pyro model: the input of its head, captured by a forward pre-hook while the
    model runs with every latent site fixed at ``latents`` (the guide's median)."""

    def __init__(self, model: Callable[..., Any], head: nn.Module, latents: dict[str, Tensor]) -> None:
        self.model, self.head, self.latents = model, head, latents

    def __call__(self, x: Tensor) -> Tensor:
        captured: list[Tensor] = []
        handle = self.head.register_forward_pre_hook(lambda _module, args: captured.append(args[0]))
        try:
            with _native_params(self.model), poutine.block():
                poutine.condition(self.model, data=self.latents)(x)
        finally:
            handle.remove()
        if len(captured) != 1:
            raise ValueError(f"the head must run exactly once per model call, it ran {len(captured)} times")
        return captured[0]


@dataclass(frozen=True)
class PyroHead:
    """A user's fitted Pyro model with a Bayesian linear head, as ``Goals`` takes it.

    See :meth:`BNNBackend.from_pyro` for the requirements.

    Attributes:
        model: the ``PyroModule``, called as ``model(x)``.
        guide: its fitted autoguide.
        head: module path of the linear head, also the prefix of its sites (``f"{head}.weight"``).
        train_inputs: ``(N, J)`` training inputs.
        features: optional ``nn.Module`` computing the head's input (enables the first-layer shortcut).
    """

    model: Any
    guide: Any
    head: str
    train_inputs: Tensor
    features: nn.Module | None = None


class BNNBackend(nn.Module):
    """GOALS for ``f(x) = h(x)^T w + b`` with ``w ~ N(loc, cov)``: the backend ``Goals`` delegates to.

    Args:
        features: the deterministic extractor ``h``: an ``nn.Module`` or callable ``(B, J) -> (B, L)``;
            kept as a reference (never registered, moved or switched to train mode here).
        loc: ``(L,)`` posterior mean of the head's weights (one output).
        cov: ``(L, L)`` posterior covariance, or its ``(L,)`` diagonal (mean-field).
        train_inputs: ``(N, J)`` inputs the global scores average over.
        xi: the shift, a nonzero scalar or ``(J,)`` per feature (in input units; negative allowed).
        bias: posterior mean of the head's bias (only used by :meth:`posterior_mean`).
        shortcut: shift first-``nn.Linear`` pre-activations (default: whenever the extractor starts with one).
        max_memory: budget for one chunk of shifted forward passes (bytes or a string like ``"1GB"``).
        show_progress: progress bar over the chunks.

    Scores are in the units of ``f`` per shift ``xi_j`` with the sign ``f(x) - f(x + xi e_j)``; they are
    computed without autograd, in the extractor's dtype (which the inputs must have).
    """

    def __init__(
        self,
        features: Callable[[Tensor], Tensor],
        loc: Tensor,
        cov: Tensor,
        train_inputs: Tensor,
        xi: float | Tensor = 1.0,
        *,
        bias: float | Tensor = 0.0,
        shortcut: bool | None = None,
        max_memory: int | str | None = None,
        show_progress: bool | None = False,
    ) -> None:
        super().__init__()
        if not callable(features):
            raise TypeError(f"features must be an nn.Module or callable, got {type(features).__name__}")
        x = check_matrix(as_tensor(train_inputs, "train_inputs"), "train_inputs")
        x = check_finite(x, "train_inputs")
        loc = check_finite(as_tensor(loc, "loc"), "loc")
        cov = check_finite(as_tensor(cov, "cov"), "cov")
        if loc.ndim != 1:
            raise ValueError(f"loc must be 1-D (L,), got shape {tuple(loc.shape)}")
        width = loc.numel()
        if cov.shape not in ((width,), (width, width)):
            raise ValueError(f"cov must have shape ({width},) or ({width}, {width}), got {tuple(cov.shape)}")
        if loc.dtype != x.dtype or cov.dtype != x.dtype:
            raise TypeError(
                f"loc and cov must have train_inputs' dtype {x.dtype}, got {loc.dtype}, {cov.dtype}"
            )
        self.__dict__["fmap"] = FeatureMap(features, shortcut)
        self.register_buffer("x", x.detach())
        self.register_buffer("loc", loc.detach())
        self.register_buffer("cov", cov.detach())
        self.register_buffer(
            "bias", torch.as_tensor(bias, dtype=x.dtype, device=x.device).detach().reshape(())
        )
        self.register_buffer("xi", check_xi(xi, x.shape[1]).to(device=x.device, dtype=x.dtype))
        self.max_memory, self.show_progress = max_memory, show_progress
        h = self._run(lambda: self.fmap(x[:1]))
        if h.shape[1] != width:
            raise ValueError(f"features(x) has {h.shape[1]} columns but loc has {width} entries")
        self._summary: tuple[Tensor, Tensor] | None = None

    @classmethod
    def from_model(
        cls,
        model: LastLayerBNN | PyroHead,
        xi: float | Tensor = 1.0,
        *,
        output: int | None = None,
        **options: Any,
    ) -> BNNBackend:
        """The backend of a fitted :class:`LastLayerBNN` or a :class:`PyroHead` (``output``: class index)."""
        if isinstance(model, PyroHead):
            return cls.from_pyro(
                model.model,
                model.guide,
                model.head,
                model.train_inputs,
                xi,
                output=output,
                features=model.features,
                **options,
            )
        loc, cov = model.head_posterior(output)
        bias = 0.0
        if model.has_bias:
            bias_loc, _ = guide_moments(model.guide, ["head.bias"])
            bias = bias_loc[0 if output is None else output]
        return cls(model.features, loc, cov, model.train_inputs, xi, bias=bias, **options)

    @classmethod
    def from_pyro(
        cls,
        model: Callable[..., Any],
        guide: Any,
        head: str,
        train_inputs: Tensor,
        xi: float | Tensor = 1.0,
        *,
        output: int | None = None,
        features: nn.Module | None = None,
        **options: Any,
    ) -> BNNBackend:
        """The backend of a user's Pyro model whose submodule ``head`` is a linear layer with sampled weights.

        Args:
            model: a ``PyroModule`` called as ``model(x)``; ``model.get_submodule(head)`` must be an
                ``nn.Linear`` (e.g. ``PyroModule[nn.Linear]``) whose ``weight`` is the guide's site
                ``f"{head}.weight"`` with a Normal prior. Everything before the head must be deterministic.
            guide: the fitted autoguide (``AutoNormal``, ``AutoDiagonalNormal``, ``AutoMultivariateNormal``
                or ``AutoLowRankMultivariateNormal``).
            head: the head's module path and site prefix.
            train_inputs: ``(N, J)`` the training inputs.
            output: which output (row of the head's weight) to explain; needed when there are several.
            features: optionally the ``nn.Module`` computing the head's input (enables the first-layer
                shortcut); it is checked against the model.
        """
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a PyroModule, got {type(model).__name__}")
        try:
            head_module = model.get_submodule(head)
        except AttributeError as err:
            raise ValueError(f"model has no submodule {head!r} (head names the linear last layer)") from err
        if not isinstance(head_module, nn.Linear):
            raise TypeError(
                f"the head {head!r} must be a linear layer (nn.Linear), got {type(head_module).__name__}"
            )
        loc, cov = guide_moments(guide, [f"{head}.weight"])
        n_out, width = head_module.out_features, head_module.in_features
        if loc.numel() != n_out * width:
            raise ValueError(f"site {head}.weight has {loc.numel()} entries, expected {n_out}x{width}")
        loc, cov = output_block(loc, cov, n_out, output)
        x = check_matrix(as_tensor(train_inputs, "train_inputs"), "train_inputs")
        with torch.no_grad():
            with _native_params(guide):
                latents = {k: v.detach() for k, v in guide.median().items()}
                drawn = {k: v.detach() for k, v in guide().items()}
            hooked = _HeadInput(model, head_module, latents)
            probe = x[: min(8, x.shape[0])]
            h = hooked(probe)
            if not torch.allclose(_HeadInput(model, head_module, drawn)(probe), h):
                raise ValueError(
                    f"the layers before {head!r} are random; GOALS needs a deterministic extractor"
                )
            if features is not None and not torch.allclose(features(probe), h):
                raise ValueError(f"features(x) does not match the input of {head!r} in the model")
        bias_site = latents.get(f"{head}.bias")
        bias = bias_site.reshape(-1)[output or 0] if bias_site is not None else 0.0
        return cls(hooked if features is None else features, loc, cov, x, xi, bias=bias, **options)

    @property
    def train_inputs(self) -> Tensor:
        """``(N, J)`` the training inputs."""
        return self.x

    def _inputs(self, x: Tensor) -> Tensor:
        x = check_matrix(as_tensor(x, "inputs"), "inputs", self.x.shape[1])
        if x.dtype != self.x.dtype:
            raise TypeError(f"inputs must have the model's dtype {self.x.dtype}, got {x.dtype}")
        return check_finite(x, "inputs")

    @torch.no_grad()
    def _run(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` without autograd, the extractor in eval mode (dropout off, frozen batch-norm)."""
        module = self.fmap.extractor if isinstance(self.fmap.extractor, nn.Module) else None
        modes = [(m, m.training) for m in module.modules()] if module is not None else []
        if module is not None:
            module.eval()
        try:
            return fn()
        finally:
            for m, mode in modes:
                m.training = mode

    def local_scores(self, x: Tensor) -> Tensor:
        """``(Q, J)`` posterior means of ``f(x) - f(x + xi_j e_j)`` at ``x`` ``(Q, J)``."""
        x = self._inputs(x)
        return self._run(
            lambda: local_moments(
                self.fmap,
                x,
                self.xi.to(x.device),
                self.loc.to(x.device),
                None,
                max_memory=self.max_memory,
                show_progress=self.show_progress,
            )
        )[0]

    def local_variance(self, x: Tensor) -> Tensor:
        """``(Q, J)`` posterior variances of ``f(x) - f(x + xi_j e_j)`` at ``x`` ``(Q, J)``."""
        x = self._inputs(x)
        return self._run(
            lambda: local_moments(
                self.fmap,
                x,
                self.xi.to(x.device),
                self.loc.to(x.device),
                self.cov.to(x.device),
                max_memory=self.max_memory,
                show_progress=self.show_progress,
            )
        )[1]

    def posterior_mean(self, x: Tensor) -> Tensor:
        """``(Q,)`` posterior mean of ``f`` at ``x`` ``(Q, J)``: ``h(x)^T m + E[b]``."""
        x = self._inputs(x)
        return self._run(lambda: self.fmap(x) @ self.loc.to(x.device) + self.bias.to(x.device))

    def latent_posterior(self) -> tuple[Tensor, Tensor]:
        """Posterior of ``f(X) - E[b]`` on the training rows: mean ``(N,)``, covariance ``H V H^T``."""
        h = self._run(lambda: self.fmap(self.x))
        return h @ self.loc, (h * self.cov if self.cov.ndim == 1 else h @ self.cov) @ h.T

    def _training_summary(self) -> tuple[Tensor, Tensor]:
        if self._summary is None or self._summary[0].device != self.x.device:
            self._summary = self._run(
                lambda: training_summary(
                    self.fmap,
                    self.x,
                    self.xi,
                    self.loc,
                    max_memory=self.max_memory,
                    show_progress=self.show_progress,
                )
            )
        return self._summary

    def global_moments(self) -> tuple[Tensor, Tensor]:
        """Posterior mean ``(J,)`` and covariance ``(J, J)`` of the global scores ``mean_i delta_j(x_i)``."""
        return global_moments(self._training_summary()[0], self.loc, self.cov)

    def global_importance(
        self, reduction: str = "mean", covariance_features: Sequence[int] | Tensor | None = None
    ) -> GlobalImportance:
        """Global scores over the training inputs with posterior variances (and covariances on request).

        Args:
            reduction: ``"mean"`` (signed mean, the paper), ``"abs_mean"`` (its magnitude) or ``"mean_abs"``
                (mean magnitude of the local posterior means).
            covariance_features: feature indices whose joint posterior covariance is returned.
        """
        if reduction not in REDUCTIONS:
            raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
        dbar, mean_abs = self._training_summary()
        mean, cov = global_moments(dbar, self.loc, self.cov)
        score = {"mean": mean, "abs_mean": mean.abs(), "mean_abs": mean_abs}[reduction]
        sel = None
        if covariance_features is not None:
            j = mean.numel()
            sel = torch.as_tensor(covariance_features, dtype=torch.long, device=mean.device).reshape(-1)
            if sel.numel() == 0 or bool((sel < 0).any()) or bool((sel >= j).any()):
                raise ValueError(f"covariance_features must be indices in [0, {j}), got {sel.tolist()}")
        return GlobalImportance(
            mean=mean,
            score=score,
            variance=torch.diagonal(cov).clone(),
            covariance=None if sel is None else cov[sel][:, sel],
            covariance_features=sel,
            reduction=reduction,
        )

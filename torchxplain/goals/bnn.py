"""GOALS on networks with a Bayesian last layer: the ``BNNBackend`` that ``Goals`` delegates to.

The network is ``f(x) = h(x)^T w + b`` with a deterministic, point-estimated feature extractor ``h`` and
a Gaussian posterior ``q(w) = N(m, V)`` over the head (the GOALS supplement, Eqs. S5-S8, with S7's
``N(0, V)`` read as ``N(m, V)``). Scores are posterior moments of ``f(x) - f(x + xi e_j)`` (see
:mod:`torchxplain.goals.bnn_math`); the bias cancels. Models: a fitted
:class:`~torchxplain.goals.bnn_model.LastLayerBNN`, or a user's own Pyro model and autoguide
(:class:`PyroHead`, :meth:`BNNBackend.from_pyro`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from pyro import poutine
from torch import Tensor, nn

from torchxplain._core import as_tensor, check_finite, check_matrix
from torchxplain.goals.bnn_math import FeatureMap, global_moments, local_moments, training_summary
from torchxplain.goals.bnn_model import LastLayerBNN, _mode, _native_params
from torchxplain.goals.bnn_posterior import guide_moments, output_block
from torchxplain.goals.gp import check_xi
from torchxplain.goals.importance import REDUCTIONS, GlobalImportance

__all__ = ["BNNBackend", "LastLayerBNN", "PyroHead"]


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
            raise TypeError(f"loc and cov must have train_inputs' dtype {x.dtype}, got {loc.dtype}, {cov.dtype}")
        self.__dict__["fmap"] = FeatureMap(features, shortcut)
        self.register_buffer("x", x.detach())
        self.register_buffer("loc", loc.detach())
        self.register_buffer("cov", cov.detach())
        self.register_buffer("bias", torch.as_tensor(bias, dtype=x.dtype, device=x.device).detach().reshape(()))
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
            raise TypeError(f"the head {head!r} must be a linear layer (nn.Linear), got {type(head_module).__name__}")
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
                raise ValueError(f"the layers before {head!r} are random; GOALS needs a deterministic extractor")
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
        with _mode(self.fmap.extractor, False):
            return fn()

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
        stale = self._summary is not None and (self._summary[0].device, self._summary[0].dtype) != (
            self.x.device,
            self.x.dtype,
        )
        if self._summary is None or stale:
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

"""GOALS on networks with a Bayesian last layer: the ``BNNBackend`` that ``Goals`` delegates to.

The network is ``f(x) = h(x)^T w + b`` with a deterministic, point-estimated feature extractor ``h`` and
a Gaussian posterior ``q(w) = N(m, V)`` over the head (the GOALS supplement, Eqs. S5-S8, with S7's
``N(0, V)`` read as ``N(m, V)``). Scores are posterior moments of ``f(x) - f(x + xi e_j)`` (see
:mod:`torchxplain.goals.bnn._features`); the bias cancels. Models: a fitted
:class:`~torchxplain.goals.bnn._model.LastLayerBNN`, or a user's own Pyro model and autoguide
(:class:`~torchxplain.goals.bnn._pyro_head.PyroHead`, :meth:`BNNBackend.from_pyro`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from torchxplain._core import check_finite, check_flag, check_matrix
from torchxplain._core.inputs import to_tensor
from torchxplain.goals._gp_checks import check_xi
from torchxplain.goals._importance import (
    GlobalImportance,
    Reduction,
    check_covariance_features,
    check_reduction,
    select_score,
)
from torchxplain.goals._inputs import check_rows
from torchxplain.goals.bnn._features import FeatureMap, global_moments, local_moments, training_summary
from torchxplain.goals.bnn._model import LastLayerBNN
from torchxplain.goals.bnn._modes import native_params, train_mode
from torchxplain.goals.bnn._posterior import guide_moments, output_block
from torchxplain.goals.bnn._pyro_head import HeadInput, PyroHead


class BNNBackend(nn.Module):
    """GOALS for ``f(x) = h(x)^T w + b`` with ``w ~ N(loc, cov)``: the backend ``Goals`` delegates to.

    Methods read the memory budget and progress setting in force (``tx.settings``).

    Args:
        features: the deterministic extractor ``h``: an ``nn.Module`` or callable ``(B, J) -> (B, L)``;
            kept as a reference (never registered, moved or switched to train mode here).
        loc: ``(L,)`` posterior mean of the head's weights (one output).
        cov: ``(L, L)`` posterior covariance, or its ``(L,)`` diagonal (mean-field).
        train_inputs: ``(N, J)`` inputs the global scores average over (tensor, array or DataFrame, whose
            columns become ``feature_names``).
        xi: the shift, a nonzero scalar or ``(J,)`` per feature (in input units; negative allowed).
        bias: posterior mean of the head's bias (only used by :meth:`posterior_mean`).
        shortcut: shift first-``nn.Linear`` pre-activations (default: whenever the extractor starts with one).

    Scores are in the units of ``f`` per shift ``xi_j`` with the sign ``f(x) - f(x + xi e_j)``; they are
    computed without autograd, in the extractor's dtype (which the inputs must have).
    """

    x: Tensor
    loc: Tensor
    cov: Tensor
    bias: Tensor
    xi: Tensor
    fmap: FeatureMap

    def __init__(
        self,
        features: Callable[[Tensor], Tensor],
        loc: Any,
        cov: Any,
        train_inputs: Any,
        xi: float | Tensor = 1.0,
        *,
        bias: float | Tensor = 0.0,
        shortcut: bool | None = None,
        feature_names: tuple[str, ...] | list[str] | None = None,
    ) -> None:
        super().__init__()
        if not callable(features):
            raise TypeError(f"features must be an nn.Module or callable, got {type(features).__name__}")
        if shortcut is not None:
            check_flag(shortcut, "shortcut")
        converted = to_tensor(train_inputs, "train_inputs", ndim=2)
        x = check_finite(check_matrix(converted.tensor, "train_inputs"), "train_inputs")
        if not x.is_floating_point():
            raise TypeError(f"train_inputs must be floating point, got {x.dtype}")
        loc = check_finite(to_tensor(loc, "loc", device=x.device, ndim=1).tensor, "loc")
        cov = check_finite(to_tensor(cov, "cov", device=x.device, ndim=(1, 2)).tensor, "cov")
        width = loc.numel()
        if cov.shape not in ((width,), (width, width)):
            raise ValueError(f"cov must have shape ({width},) or ({width}, {width}), got {tuple(cov.shape)}")
        if loc.dtype != x.dtype or cov.dtype != x.dtype:
            raise TypeError(f"loc and cov must have train_inputs' dtype {x.dtype}, got {loc.dtype}, {cov.dtype}")
        self.fmap = FeatureMap(features, shortcut)  # not a Module: the user's network is never registered
        self.shortcut = shortcut
        self.feature_names = converted.feature_names if feature_names is None else tuple(feature_names)
        self.register_buffer("x", x.detach())
        self.register_buffer("loc", loc.detach())
        self.register_buffer("cov", cov.detach())
        self.register_buffer("bias", torch.as_tensor(bias, dtype=x.dtype, device=x.device).detach().reshape(()))
        self.register_buffer("xi", check_xi(xi, x.shape[1]).to(device=x.device, dtype=x.dtype))
        h = self.features_at(x[:1])
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
        shortcut: bool | None = None,
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
                shortcut=shortcut,
            )
        loc, cov = model.head_posterior(output)
        bias: float | Tensor = 0.0
        if model.has_bias:
            bias_loc, _ = guide_moments(model.guide, ["head.bias"])
            bias = bias_loc[0 if output is None else output]
        return cls(
            model.features,
            loc,
            cov,
            model.train_inputs,
            xi,
            bias=bias,
            shortcut=shortcut,
            feature_names=model.feature_names,
        )

    @classmethod
    def from_pyro(
        cls,
        model: Callable[..., Any],
        guide: Any,
        head: str,
        train_inputs: Any,
        xi: float | Tensor = 1.0,
        *,
        output: int | None = None,
        features: nn.Module | None = None,
        shortcut: bool | None = None,
    ) -> BNNBackend:
        """The backend of a user's Pyro model whose submodule ``head`` is a linear layer with sampled weights.

        Args:
            model: a ``PyroModule`` called as ``model(x)``; ``model.get_submodule(head)`` must be an
                ``nn.Linear`` (e.g. ``PyroModule[nn.Linear]``) whose ``weight`` is the guide's site
                ``f"{head}.weight"`` with a Normal prior. Everything before the head must be deterministic.
            guide: the fitted autoguide (``AutoNormal``, ``AutoDiagonalNormal``, ``AutoMultivariateNormal``
                or ``AutoLowRankMultivariateNormal``).
            head: the head's module path and site prefix.
            train_inputs: ``(N, J)`` the training inputs (tensor, array or DataFrame).
            output: which output (row of the head's weight) to explain; needed when there are several.
            features: optionally the ``nn.Module`` computing the head's input (enables the first-layer
                shortcut); it is checked against the model.
            shortcut: as in the constructor.
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
        converted = to_tensor(train_inputs, "train_inputs", ndim=2)
        x = check_matrix(converted.tensor, "train_inputs")
        with torch.no_grad():
            with native_params(guide):
                latents = {k: v.detach() for k, v in guide.median().items()}
                drawn = {k: v.detach() for k, v in guide().items()}
            hooked = HeadInput(model, head_module, latents)
            probe = x[: min(8, x.shape[0])]
            h = hooked(probe)
            if not torch.allclose(HeadInput(model, head_module, drawn)(probe), h):
                raise ValueError(f"the layers before {head!r} are random; GOALS needs a deterministic extractor")
            if features is not None and not torch.allclose(features(probe), h):
                raise ValueError(f"features(x) does not match the input of {head!r} in the model")
        bias_site = latents.get(f"{head}.bias")
        bias = bias_site.reshape(-1)[output or 0] if bias_site is not None else 0.0
        return cls(
            hooked if features is None else features,
            loc,
            cov,
            x,
            xi,
            bias=bias,
            shortcut=shortcut,
            feature_names=converted.feature_names,
        )

    @property
    def train_inputs(self) -> Tensor:
        """``(N, J)`` the training inputs."""
        return self.x

    @property
    def extractor(self) -> Callable[[Tensor], Tensor]:
        """The feature extractor ``h`` (the user's module or callable; not part of the state)."""
        return self.fmap.extractor

    @torch.no_grad()
    def _run(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` without autograd, the extractor in eval mode (dropout off, frozen batch-norm)."""
        with train_mode(self.fmap.extractor, False):
            return fn()

    def features_at(self, x: Tensor) -> Tensor:
        """``(B, L)`` features ``h(x)`` of valid inputs ``x`` ``(B, J)`` (no autograd, eval mode)."""
        return self._run(lambda: self.fmap(x))

    def _finite(self, out: Tensor, what: str) -> Tensor:
        bad = ~torch.isfinite(out)
        if bool(bad.any()):
            row = int(bad.any(-1).nonzero()[0, 0]) if out.ndim > 1 else int(bad.nonzero()[0, 0])
            raise ValueError(
                f"the {what} are NaN or infinite at input row {row}: the feature extractor returns non-finite "
                "values there (check the network's weights and the row's values)"
            )
        return out

    def _inputs(self, x: Any) -> Tensor:
        x = check_rows(x, self.x)
        if x.dtype != self.x.dtype:
            raise TypeError(f"inputs must have the model's dtype {self.x.dtype}, got {x.dtype}; pass x.to(...)")
        return x

    def local_scores(self, x: Any) -> Tensor:
        """``(Q, J)`` posterior means of ``f(x) - f(x + xi_j e_j)`` at inputs ``x`` ``(Q, J)``."""
        x = self._inputs(x)
        scores = self._run(lambda: local_moments(self.fmap, x, self.xi, self.loc, None))[0]
        return self._finite(scores, "local scores")

    def local_variance(self, x: Any) -> Tensor:
        """``(Q, J)`` posterior variances of ``f(x) - f(x + xi_j e_j)`` at inputs ``x`` ``(Q, J)``."""
        x = self._inputs(x)
        variances = self._run(lambda: local_moments(self.fmap, x, self.xi, self.loc, self.cov))[1]
        return self._finite(variances, "local variances")

    def posterior_mean(self, x: Any) -> Tensor:
        """``(Q,)`` posterior mean of ``f`` at ``x`` ``(Q, J)``: ``h(x)^T m + E[b]``."""
        return self.features_at(self._inputs(x)) @ self.loc + self.bias

    def latent_posterior(self) -> tuple[Tensor, Tensor]:
        """Posterior of ``f(X) - E[b]`` on the training rows: mean ``(N,)``, covariance ``H V H^T``."""
        h = self.features_at(self.x)
        return h @ self.loc, (h * self.cov if self.cov.ndim == 1 else h @ self.cov) @ h.T

    def _training_summary(self) -> tuple[Tensor, Tensor]:
        stale = self._summary is not None and (self._summary[0].device, self._summary[0].dtype) != (
            self.x.device,
            self.x.dtype,
        )
        if self._summary is None or stale:
            summary = self._run(lambda: training_summary(self.fmap, self.x, self.xi, self.loc))
            self._summary = (self._finite(summary[0], "shifted feature differences"), summary[1])
        return self._summary

    def global_moments(self) -> tuple[Tensor, Tensor]:
        """Posterior mean ``(J,)`` and covariance ``(J, J)`` of the global scores ``mean_i delta_j(x_i)``."""
        return global_moments(self._training_summary()[0], self.loc, self.cov)

    def global_importance(self, reduction: Reduction = "mean", covariance_features: Any = None) -> GlobalImportance:
        """Global scores over the training inputs with posterior variances (and covariances on request).

        Args:
            reduction: ``"mean"`` (signed mean, the paper), ``"abs_mean"`` (its magnitude) or ``"mean_abs"``
                (mean magnitude of the local posterior means).
            covariance_features: feature indices whose joint posterior covariance is returned.
        """
        check_reduction(reduction)
        features = check_covariance_features(covariance_features, self.x.shape[1])
        features = None if features is None else features.to(self.x.device)
        dbar, mean_abs = self._training_summary()
        mean, cov = global_moments(dbar, self.loc, self.cov)
        return GlobalImportance(
            mean=mean,
            score=select_score(reduction, mean, mean_abs),
            variance=torch.diagonal(cov).clone(),
            covariance=None if features is None else cov[features][:, features],
            covariance_features=features,
            reduction=reduction,
            feature_names=None if self.feature_names is None else list(self.feature_names),
        )

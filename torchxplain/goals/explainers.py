"""``Goals``: the Captum-compatible GOALS explainer; the math lives in a backend chosen by model type."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import gpytorch
from torch import Tensor

from torchxplain._core import ExplainerBase, check_finite, check_matrix, check_same_device
from torchxplain.goals.bnn import BNNBackend, LastLayerBNN, PyroHead
from torchxplain.goals.gp import GPBackend
from torchxplain.goals.importance import GlobalImportance


def _make_backend(model: Any, likelihood: Any, xi: float | Tensor, **options: Any) -> Any:
    """The GOALS backend for ``model``: one explicit ``isinstance`` branch per supported model family.

    A backend provides ``local_scores(x)`` ``(Q, J)``, ``local_variance(x)`` ``(Q, J)``,
    ``global_importance(reduction, covariance_features, ...)`` and ``train_inputs`` ``(N, J)``.
    """
    if isinstance(model, gpytorch.models.ExactGP):
        return GPBackend(model, likelihood, xi, **options)
    if isinstance(model, (LastLayerBNN, PyroHead)):
        if likelihood is not None:
            raise ValueError("a Bayesian last-layer network carries its own likelihood; pass likelihood=None")
        return BNNBackend.from_model(model, xi, **options)
    raise TypeError(
        f"Goals supports fitted gpytorch.models.ExactGP and LastLayerBNN models (or a Pyro model via "
        f"Goals.from_pyro), got {type(model).__name__}"
    )


class Goals(ExplainerBase):
    """GOALS (GlObal And Local Score) for Bayesian regression models.

    The local score of feature j at ``x`` is the posterior mean of ``delta_j(x) = f(x) - f(x + xi_j e_j)``
    (a positive effect of feature j gives a negative score; rank by magnitude), in the output's units per
    shift ``xi_j``. The global score is its mean over the training inputs, with closed-form posterior moments.
    With Captum's ``feature_mask`` the features of a group are shifted together and share the group's score.
    ``forward_func`` is the backend's posterior mean (a tensor-valued callable, so Captum's metrics can query
    it) when the backend has one; the user's model is ``self.model`` and is never registered or modified.

    Args:
        model: a fitted ``gpytorch.models.ExactGP`` (RBF/ARD-RBF and linear kernels, optionally scaled, use
            batched closed forms; other kernels a generic exact path).
        likelihood: the model's Gaussian likelihood (default ``model.likelihood``).
        xi: shift, a nonzero scalar or a ``(J,)`` tensor (in the units of the model's inputs).
        feature_names: optional names of the J features (used by :meth:`global_importance`).
        **options: backend options; for GPs ``max_memory`` (e.g. ``"1GB"``), ``jitter`` and ``show_progress``
            (progress bars for long computations; Captum's per-call ``show_progress`` is not used).
            For a fitted :class:`~torchxplain.goals.bnn.LastLayerBNN` (``likelihood=None``): ``output`` (the
            class of a categorical head), ``shortcut``, ``max_memory`` and ``show_progress``.

    Example:
        >>> g = Goals(gp, xi=1.0)                 # doctest: +SKIP
        >>> scores = g.attribute(x)               # (Q, J)
        >>> imp = g.global_importance()           # GlobalImportance over the training inputs
    """

    def __init__(
        self,
        model: Any,
        likelihood: Any = None,
        xi: float | Tensor = 1.0,
        *,
        feature_names: Sequence[str] | None = None,
        **options: Any,
    ) -> None:
        backend = _make_backend(model, likelihood, xi, **options)
        n_features = backend.train_inputs.shape[1]
        if feature_names is not None and len(feature_names) != n_features:
            raise ValueError(f"feature_names has {len(feature_names)} names, expected {n_features}")
        # Captum's metrics call forward_func on tensors: use the backend's posterior mean when it has one.
        super().__init__(forward_func=getattr(backend, "posterior_mean", model))
        self.__dict__["model"] = model
        self.backend = backend
        self.feature_names = None if feature_names is None else list(feature_names)

    @classmethod
    def from_pyro(
        cls,
        model: Any,
        guide: Any,
        head: str = "head",
        *,
        train_inputs: Tensor,
        xi: float | Tensor = 1.0,
        features: Any = None,
        feature_names: Sequence[str] | None = None,
        **options: Any,
    ) -> Goals:
        """GOALS for a user's fitted Pyro model whose submodule ``head`` is a Bayesian ``nn.Linear``.

        The guide (``AutoNormal``, ``AutoDiagonalNormal``, ``AutoMultivariateNormal`` or
        ``AutoLowRankMultivariateNormal``) must hold the site ``f"{head}.weight"``; ``train_inputs``
        ``(N, J)`` are the rows global scores average over; ``features`` optionally computes the head's input
        (enables the first-layer shortcut). See :meth:`torchxplain.goals.bnn.BNNBackend.from_pyro`.
        """
        return cls(
            PyroHead(model, guide, head, train_inputs, features),
            xi=xi,
            feature_names=feature_names,
            **options,
        )

    @property
    def train_inputs(self) -> Tensor:
        """``(N, J)`` training inputs of the explained model."""
        return self.backend.train_inputs

    def _check_inputs(self, x: Any, name: str = "inputs") -> Tensor:
        if not isinstance(x, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor of shape (Q, J), got {type(x).__name__}")
        if not x.is_floating_point():
            raise TypeError(f"{name} must be floating point, got {x.dtype}")
        check_matrix(x, name, n_features=self.train_inputs.shape[1])
        check_finite(x, name)
        check_same_device(**{name: x, "training inputs": self.train_inputs})
        return x

    def _attribute(
        self,
        inputs: tuple[Tensor, ...],
        *,
        baselines: Any,
        target: Any,
        additional_forward_args: Any,
        feature_mask: tuple[Tensor, ...] | None,
        show_progress: bool,
        **kwargs: Any,
    ) -> tuple[Tensor, ...]:
        if len(inputs) != 1:
            raise ValueError(f"Goals explains models of one (Q, J) input tensor, got a tuple of {len(inputs)}")
        if baselines is not None:
            raise ValueError("Goals takes no baselines: the perturbation is the shift xi given at construction")
        if target not in (None, 0):
            raise ValueError(f"Goals explains a single-output model; target must be None or 0, got {target!r}")
        if additional_forward_args is not None:
            raise ValueError("Goals does not take additional_forward_args")
        if kwargs:
            raise TypeError(f"unexpected argument(s) for Goals.attribute: {sorted(kwargs)}")
        x = self._check_inputs(inputs[0])
        if feature_mask is not None:
            return (self._group_scores(x.detach(), feature_mask[0]),)
        return (self.backend.local_scores(x.detach()),)

    def _group_scores(self, x: Tensor, mask: Any) -> Tensor:
        """Scores of joint shifts of the features sharing a ``feature_mask`` id (one mask for all rows)."""
        if not hasattr(self.backend, "group_scores"):
            raise ValueError(f"feature_mask is not supported for {type(self.backend).__name__}")
        if not isinstance(mask, Tensor) or mask.is_floating_point() or mask.is_complex():
            raise TypeError("feature_mask must be an integer tensor of group ids broadcastable to the inputs")
        try:
            full = mask.to(x.device).expand(x.shape)
        except RuntimeError as err:
            raise ValueError(
                f"feature_mask of shape {tuple(mask.shape)} does not broadcast to inputs {tuple(x.shape)}"
            ) from err
        if not bool((full == full[:1]).all()):
            raise ValueError("Goals needs the same feature_mask for every row (the groups define the shifts)")
        return self.backend.group_scores(x, full[0])

    def local_variance(self, inputs: Tensor) -> Tensor:
        """``(Q, J)`` posterior variances of the local scores at ``inputs`` ``(Q, J)`` (GPs: O(N^2 Q J))."""
        return self.backend.local_variance(self._check_inputs(inputs).detach())

    def global_importance(
        self, reduction: str = "mean", covariance_features: Sequence[int] | Tensor | None = None
    ) -> GlobalImportance:
        """Global importance over the training inputs: see :class:`~torchxplain.goals.GlobalImportance`.

        Args:
            reduction: ``"mean"`` (signed mean, Eq. 12), ``"abs_mean"`` or ``"mean_abs"``.
            covariance_features: indices of features whose posterior covariance is also returned.
        """
        imp = self.backend.global_importance(reduction, covariance_features)
        return imp if self.feature_names is None else replace(imp, feature_names=self.feature_names)

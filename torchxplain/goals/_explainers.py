"""``Goals``: the Captum-compatible GOALS explainer; the math lives in a backend chosen by model type."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import gpytorch
import numpy as np
import torch
from captum.log import log_usage
from torch import Tensor

from torchxplain._core import ExplainerBase, settings
from torchxplain._core.inputs import check_feature_names, to_tensor
from torchxplain._core.saved_fields import SavedFields
from torchxplain.goals._gp import GPBackend
from torchxplain.goals._importance import GlobalImportance, Reduction
from torchxplain.goals._inputs import check_rows
from torchxplain.goals._persistence import backend_from, config_of
from torchxplain.goals._shap import local_explanation
from torchxplain.goals.bnn._backend import BNNBackend
from torchxplain.goals.bnn._model import LastLayerBNN
from torchxplain.goals.bnn._pyro_head import PyroHead

Backend = GPBackend | BNNBackend


def _make_backend(model: Any, likelihood: Any, xi: float | Tensor, **options: Any) -> Backend:
    """The GOALS backend for ``model``: one explicit ``isinstance`` branch per supported model family.

    A backend provides ``local_scores(x)`` ``(Q, J)``, ``local_variance(x)`` ``(Q, J)``,
    ``global_importance(reduction, covariance_features)`` and ``train_inputs`` ``(N, J)``.
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
    it); the user's model is ``self.model`` and is never registered or modified.

    Args:
        model: a fitted ``gpytorch.models.ExactGP`` (RBF/ARD-RBF and linear kernels, optionally scaled, use
            batched closed forms; other kernels a generic exact path), or a fitted
            :class:`~torchxplain.goals.LastLayerBNN`.
        likelihood: the GP's Gaussian likelihood (default ``model.likelihood``; ``None`` for networks).
        xi: shift, a nonzero scalar or a ``(J,)`` tensor (in the units of the model's inputs).
        feature_names: optional names of the J features, in the order of the training inputs' columns (used by
            :meth:`global_importance` and plots). DataFrame inputs must have exactly these columns in this
            order; without names (a GP's training inputs carry none) DataFrame inputs are refused, since their
            column order could not be checked. A network fitted on a DataFrame takes its columns.
        max_memory: default budget of this explainer's calls (bytes or e.g. ``"1GB"``; ``None``: the
            ``tx.settings.max_memory`` in force).
        show_progress: default progress bars of this explainer's calls (``None``: the setting in force).
        **options: backend options; GPs: ``jitter`` (added to ``K + noise`` before the Cholesky factorisation);
            networks: ``output`` (the class of a categorical head) and ``shortcut``.

    Example:
        >>> import gpytorch
        >>> import torch
        >>> import torchxplain as tx
        >>> class GP(gpytorch.models.ExactGP):
        ...     def __init__(self, x, y):
        ...         super().__init__(x, y, gpytorch.likelihoods.GaussianLikelihood())
        ...         self.mean_module = gpytorch.means.ConstantMean()
        ...         self.covar_module = gpytorch.kernels.RBFKernel(ard_num_dims=3)
        ...     def forward(self, x):
        ...         return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))
        >>> x = torch.rand(40, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
        >>> gp = GP(x, torch.sin(6 * x[:, 0]) + x[:, 1]).double()
        >>> gp.covar_module.lengthscale, gp.likelihood.noise = 0.5, 0.01  # as a fit would set them
        >>> g = tx.Goals(gp, xi=0.1, feature_names=["a", "b", "c"])
        >>> g.attribute(x[:4]).shape, g.local_variance(x[:4]).shape  # (Q, J) scores and posterior variances
        (torch.Size([4, 3]), torch.Size([4, 3]))
        >>> g.global_importance().to_frame()[["feature", "rank"]]
          feature  rank
        0       a     1
        1       b     2
        2       c     3
    """

    def __init__(
        self,
        model: Any,
        likelihood: Any = None,
        xi: float | Tensor = 1.0,
        *,
        feature_names: Sequence[str] | None = None,
        max_memory: int | str | None = None,
        show_progress: bool | None = None,
        **options: Any,
    ) -> None:
        defaults: dict[str, Any] = {
            "max_memory": None if max_memory is None else settings.max_memory.resolve(max_memory),
            "show_progress": None if show_progress is None else settings.show_progress.resolve(show_progress),
        }
        with settings.using(**defaults):
            backend = _make_backend(model, likelihood, xi, **options)
        names = feature_names if feature_names is not None else backend.feature_names
        self._setup(backend, model, names, defaults)

    def _setup(
        self, backend: Backend, model: Any, feature_names: Sequence[str] | None, defaults: dict[str, Any]
    ) -> None:
        n_features = backend.train_inputs.shape[1]
        if feature_names is not None and len(feature_names) != n_features:
            raise ValueError(f"feature_names has {len(feature_names)} names, expected {n_features} (one per feature)")
        # Captum's metrics call forward_func on tensors: use the backend's exact posterior mean.
        super().__init__(forward_func=backend.posterior_mean)
        self.__dict__["model"] = model
        self._defaults = defaults
        self.backend = backend
        self.feature_names: list[str] | None = None if feature_names is None else [str(f) for f in feature_names]

    def _using(self, max_memory: int | str | None = None, show_progress: bool | None = None) -> Any:
        """The settings of one call: explicit arguments, else this explainer's defaults, else the settings."""
        return settings.using(
            max_memory=max_memory if max_memory is not None else self._defaults["max_memory"],
            show_progress=show_progress if show_progress is not None else self._defaults["show_progress"],
        )

    @classmethod
    def from_pyro(
        cls,
        model: Any,
        guide: Any,
        head: str = "head",
        *,
        train_inputs: Any,
        xi: float | Tensor = 1.0,
        features: Any = None,
        feature_names: Sequence[str] | None = None,
        **options: Any,
    ) -> Goals:
        """GOALS for a user's fitted Pyro model whose submodule ``head`` is a Bayesian ``nn.Linear``.

        The guide (``AutoNormal``, ``AutoDiagonalNormal``, ``AutoMultivariateNormal`` or
        ``AutoLowRankMultivariateNormal``) must hold the site ``f"{head}.weight"``; ``train_inputs``
        ``(N, J)`` (tensor, array or DataFrame, whose columns become ``feature_names``) are the rows global
        scores average over; ``features`` optionally computes the head's input (enables the first-layer
        shortcut). See :meth:`torchxplain.goals.BNNBackend.from_pyro`.
        """
        converted = to_tensor(train_inputs, "train_inputs", ndim=2)
        names = feature_names if feature_names is not None else converted.feature_names
        return cls(
            PyroHead(model, guide, head, converted.tensor, features),
            xi=xi,
            feature_names=names,
            **options,
        )

    @property
    def train_inputs(self) -> Tensor:
        """``(N, J)`` training inputs of the explained model."""
        return self.backend.train_inputs

    def _convert(self, x: Any) -> Tensor:
        return self._check_inputs(x)

    def _check_inputs(self, x: Any, name: str = "inputs") -> Tensor:
        """Convert ``x`` (tensor, array, DataFrame) and check DataFrame columns against ``feature_names`` (same
        names, same order); the backend checks shapes and values.

        Raises:
            ValueError: a DataFrame whose columns differ from ``feature_names``, or a DataFrame when this
                explainer has no feature names to check its columns against (pass ``feature_names=``).
        """
        converted = to_tensor(x, name, device=self.train_inputs.device, ndim=2)
        if converted.feature_names is not None and self.feature_names is None:
            columns = list(converted.feature_names)
            raise ValueError(
                f"{name} is a DataFrame with columns {columns[:8]}{'...' if len(columns) > 8 else ''}, but this Goals "
                "explainer has no feature names to check their order against (a GP's training inputs carry none): "
                "pass feature_names=[...] (the training columns, in order) to Goals, or pass a tensor or array"
            )
        names = None if self.feature_names is None else tuple(self.feature_names)
        check_feature_names(names, converted.feature_names, name)
        return converted.tensor

    @log_usage()
    def attribute(
        self,
        inputs: Any,
        baselines: Any = None,
        target: Any = None,
        additional_forward_args: Any = None,
        feature_mask: Any = None,
        show_progress: bool | None = None,
        *,
        max_memory: int | str | None = None,
        **kwargs: Any,
    ) -> Tensor | tuple[Tensor, ...]:
        """``(Q, J)`` local scores at ``inputs`` (a tensor, array or DataFrame ``(Q, J)``; Captum's signature).

        ``feature_mask`` (integer group ids, one mask for all rows) shifts each group jointly;
        ``show_progress`` and ``max_memory`` override this explainer's defaults for the call. ``baselines``,
        ``target`` (other than ``None``/0) and ``additional_forward_args`` do not apply and are refused.
        """
        with self._using(max_memory, show_progress):
            return super().attribute(
                inputs,
                baselines=baselines,
                target=target,
                additional_forward_args=additional_forward_args,
                feature_mask=feature_mask,
                show_progress=show_progress,
                **kwargs,
            )

    def _attribute(
        self,
        inputs: tuple[Tensor, ...],
        *,
        baselines: Any,
        target: Any,
        additional_forward_args: Any,
        feature_mask: tuple[Tensor, ...] | None,
        show_progress: bool | None,
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
        x = inputs[0]
        if feature_mask is not None:
            return (self._group_scores(x, feature_mask[0]),)
        return (self.backend.local_scores(x),)

    def _group_scores(self, x: Tensor, mask: Any) -> Tensor:
        """Scores of joint shifts of the features sharing a ``feature_mask`` id (one mask for all rows)."""
        if not isinstance(self.backend, GPBackend):
            raise ValueError(f"feature_mask is not supported for {type(self.backend).__name__}")
        x = check_rows(x, self.train_inputs)
        if isinstance(mask, (np.ndarray, list)):  # converted as every other explainer converts it
            mask = to_tensor(mask, "feature_mask").tensor
        if not isinstance(mask, Tensor) or mask.is_floating_point() or mask.is_complex() or mask.dtype == torch.bool:
            raise TypeError(
                "feature_mask must be an integer tensor of group ids broadcastable to the inputs, "
                f"got {type(mask).__name__} {getattr(mask, 'dtype', '')}"
            )
        try:
            full = mask.to(x.device).expand(x.shape)
        except RuntimeError as err:
            raise ValueError(
                f"feature_mask of shape {tuple(mask.shape)} does not broadcast to inputs {tuple(x.shape)}"
            ) from err
        if not bool((full == full[:1]).all()):
            raise ValueError("Goals needs the same feature_mask for every row (the groups define the shifts)")
        return self.backend.group_scores(x, full[0])

    def local_variance(
        self, inputs: Any, *, max_memory: int | str | None = None, show_progress: bool | None = None
    ) -> Tensor:
        """``(Q, J)`` posterior variances of the local scores at ``inputs`` ``(Q, J)``.

        GPs: O(N^2 Q J), computed in float64 as blocks of triangular solves; networks: ``dh^T V dh``.
        """
        with self._using(max_memory, show_progress):
            return self.backend.local_variance(self._check_inputs(inputs))

    def global_importance(
        self,
        reduction: Reduction = "mean",
        covariance_features: Sequence[int] | Tensor | None = None,
        *,
        max_memory: int | str | None = None,
        show_progress: bool | None = None,
    ) -> GlobalImportance:
        """Global importance over the training inputs: see :class:`~torchxplain.goals.GlobalImportance`.

        Args:
            reduction: ``"mean"`` (signed mean, Eq. 12), ``"abs_mean"`` (its magnitude) or ``"mean_abs"``
                (the mean magnitude of the local scores, a plug-in without posterior intervals).
            covariance_features: indices of features whose ``(S, S)`` posterior covariance is also returned
                (GPs: O(N^2 S^2)).
            max_memory, show_progress: override this explainer's defaults for the call.
        """
        with self._using(max_memory, show_progress):
            imp = self.backend.global_importance(reduction, covariance_features)
        return imp if self.feature_names is None else replace(imp, feature_names=list(self.feature_names))

    def to_shap(self, inputs: Any, **attribute_kwargs: Any) -> Any:
        """The local scores at ``inputs`` ``(Q, J)`` as a ``shap.Explanation`` ``(Q, J)`` for shap's distribution
        plots, with the sign shap's axes expect.

        Values are the *negated* scores ``f(x + xi_j e_j) - f(x)``: the output's change when feature j is raised
        by ``xi_j`` (positive where the output rises with feature j), since shap plots read a positive value as
        "raises the output" and a GOALS score ``f(x) - f(x + xi_j e_j)`` has the opposite sign. The
        explanation's ``output_names`` says so. GOALS scores are finite differences, not an additive
        decomposition of ``f(x)``: they do not sum to ``f(x) - E f``. The explanation therefore has
        ``base_values=None``, so shap's additive plots (waterfall, force), which would draw a false sum, refuse
        it, while beeswarm, bar and scatter plots, which show each feature's values, are meaningful. Requires
        the ``shap`` package.
        """
        x = self._check_inputs(inputs)
        scores = self.attribute(x, **attribute_kwargs)
        assert isinstance(scores, Tensor)
        return local_explanation(scores, x, self.feature_names)

    def _config(self) -> dict[str, Any]:
        return config_of(self.backend, self._defaults, self.feature_names)

    @classmethod
    def _from_config(
        cls, config: dict[str, Any], state: dict[str, Tensor], forward_func: Callable[..., Tensor] | None
    ) -> Goals:
        fields = SavedFields(config, state)
        goals = cls.__new__(cls)
        defaults = {"max_memory": fields.memory("max_memory"), "show_progress": fields.flag("show_progress", True)}
        backend = backend_from(fields, forward_func)
        goals._setup(backend, forward_func, fields.names("feature_names", "J", optional=True), defaults)
        return goals

"""Small bridges between torchxplain and Captum.

* :func:`expand_to_inputs`: per-feature (global) importances broadcast to the inputs' shape, which
  ``captum.metrics.infidelity`` requires (it asserts ``attributions.shape == inputs.shape``).
* :func:`background_averaged`: turns a model into the interventional value function over a background set,
  so Captum's coalition samplers (``KernelShap``, ``ShapleyValueSampling``, ``ShapleyValues``,
  ``FeatureAblation``) compute interventional SHAP against a background *distribution* instead of a single
  baseline row — the quantity FourierSHAP computes exactly::

      g = background_averaged(model, background)               # background: (B, n)
      phi = KernelShap(g).attribute(x, baselines=g.baselines(x), n_samples=2000)
      # phi ~ FourierShap(model, background, ...).attribute(x) within sampling error

  How it works: Captum builds each perturbed row as ``x * mask + baselines * (1 - mask)`` (exact for 0/1
  masks), so with ``baselines`` filled with a sentinel value every "absent" feature arrives as the sentinel.
  ``g`` replaces the sentinels of each row by every background row in turn and averages the model's outputs:
  ``g(z) = mean_b f(z_S, b_{not S})`` with ``S`` the non-sentinel features.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from torchxplain._core import check_finite, check_matrix, chunk_bounds, rows_per_chunk

DEFAULT_SENTINEL = -1.0e9


def expand_to_inputs(
    importance: Tensor | tuple[Tensor, ...], inputs: Tensor | tuple[Tensor, ...]
) -> Tensor | tuple[Tensor, ...]:
    """Broadcast global importances to the inputs' shape (each row gets the same values).

    Args:
        importance: ``(n,)`` (or ``inputs.shape[1:]``) per-feature importances, or already input-shaped
            ``(N, ...)``; a tuple of such tensors for tuple inputs.
        inputs: ``(N, ...)`` tensor or tuple of tensors.

    Returns:
        Contiguous tensor(s) with the inputs' shapes, in the importances' dtype, with the inputs' structure.
    """
    is_tuple = isinstance(inputs, tuple)
    inputs_t = inputs if is_tuple else (inputs,)
    importance_t = importance if isinstance(importance, tuple) else (importance,)
    if len(importance_t) != len(inputs_t) or isinstance(importance, tuple) != is_tuple:
        raise ValueError(
            f"importance must have the inputs' structure: {len(inputs_t)} tensor(s), "
            f"{'a tuple' if is_tuple else 'one tensor'}"
        )
    out = []
    for imp, x in zip(importance_t, inputs_t):
        if not isinstance(imp, Tensor) or not imp.is_floating_point():
            raise TypeError(f"importance must be floating tensors, got {getattr(imp, 'dtype', type(imp).__name__)}")
        if imp.device != x.device:
            raise ValueError(f"importance is on {imp.device} but inputs on {x.device}")
        if imp.shape == x.shape:
            out.append(imp)
        elif imp.shape == x.shape[1:]:
            out.append(imp.expand(x.shape).contiguous())
        else:
            raise ValueError(
                f"importance of shape {tuple(imp.shape)} fits neither inputs {tuple(x.shape)} "
                f"nor one row {tuple(x.shape[1:])}"
            )
    return tuple(out) if is_tuple else out[0]


class BackgroundAveraged:
    """``g(z) = mean_b f(z with its sentinel entries replaced by background row b)``; see :func:`background_averaged`.

    Args:
        forward_func: the model, ``(M, n) -> (M,)`` or ``(M, C)``.
        background: ``(B, n)`` background rows.
        sentinel: the value marking an absent feature (must not occur in real inputs).
        max_memory: budget for the ``(P * B, n)`` expanded batch (bytes or e.g. ``"1GB"``).
    """

    def __init__(
        self,
        forward_func: Callable[..., Tensor],
        background: Tensor,
        sentinel: float = DEFAULT_SENTINEL,
        max_memory: int | str | None = None,
    ) -> None:
        if not callable(forward_func):
            raise TypeError(f"forward_func must be callable, got {type(forward_func).__name__}")
        check_matrix(background, "background")
        check_finite(background, "background")
        if not torch.isfinite(torch.tensor(sentinel, dtype=background.dtype)):
            raise ValueError(f"sentinel {sentinel} is not finite in {background.dtype}")
        if bool((background == sentinel).any()):
            raise ValueError(f"the background contains the sentinel value {sentinel}; pick another sentinel")
        self.forward_func = forward_func
        self.background = background
        self.sentinel = float(sentinel)
        self.max_memory = max_memory

    def baselines(self, inputs: Tensor) -> Tensor:
        """The ``baselines`` to pass to Captum: ``inputs``-shaped, filled with the sentinel."""
        return torch.full_like(inputs, self.sentinel)

    def __call__(self, inputs: Tensor, *additional_forward_args: Any) -> Tensor:
        """Evaluate ``g`` on ``(P, n)`` rows (sentinel = absent); returns ``(P,)`` or ``(P, C)``.

        Tensor ``additional_forward_args`` with ``P`` rows are repeated once per background row.
        """
        check_matrix(inputs, "inputs", self.background.shape[1], allow_empty=True)
        bg = self.background.to(device=inputs.device, dtype=inputs.dtype)
        n_bg = bg.shape[0]
        step = rows_per_chunk(n_bg * inputs.shape[1] * inputs.element_size() * 3, inputs.shape[0], self.max_memory)
        out = []
        for start, stop in chunk_bounds(inputs.shape[0], step):
            z = inputs[start:stop]
            filled = torch.where(z[:, None, :] == self.sentinel, bg[None], z[:, None, :])  # (p, B, n)
            extra = tuple(
                a[start:stop].repeat_interleave(n_bg, 0)
                if isinstance(a, Tensor) and a.ndim and a.shape[0] == inputs.shape[0]
                else a
                for a in additional_forward_args
            )
            y = self.forward_func(filled.reshape(-1, z.shape[1]), *extra)
            out.append(y.reshape(stop - start, n_bg, *y.shape[1:]).mean(1))
        if not out:
            return inputs.new_zeros(0)
        return torch.cat(out)


def background_averaged(
    forward_func: Callable[..., Tensor],
    background: Tensor,
    sentinel: float = DEFAULT_SENTINEL,
    max_memory: int | str | None = None,
) -> BackgroundAveraged:
    """Wrap a model so that Captum's coalition samplers compute interventional SHAP over ``background``.

    Pass ``baselines=wrapper.baselines(x)`` to the Captum method. Each Captum forward pass then costs
    ``B`` model rows per perturbed row (chunked to ``max_memory``).

    Args:
        forward_func: the model, ``(M, n) -> (M,)`` or ``(M, C)`` (``target`` picks a column in Captum).
        background: ``(B, n)`` background rows (the interventional reference distribution).
        sentinel: marks absent features; any finite value that real inputs never take (default ``-1e9``).
        max_memory: memory budget of the expanded batch.

    Returns:
        A :class:`BackgroundAveraged` callable.
    """
    return BackgroundAveraged(forward_func, background, sentinel=sentinel, max_memory=max_memory)

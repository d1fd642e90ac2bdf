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

from torchxplain._core import (
    check_finite,
    check_matrix,
    check_number,
    chunk_bounds,
    parse_memory,
    rows_per_chunk,
    settings,
)
from torchxplain._core.inputs import to_tensor

DEFAULT_SENTINEL = -1.0e9


def expand_to_inputs(importance: Any, inputs: Any) -> Tensor | tuple[Tensor, ...]:
    """Broadcast global importances to the inputs' shape (each row gets the same values).

    Args:
        importance: ``(n,)`` (or ``inputs.shape[1:]``) per-feature importances, or already input-shaped
            ``(N, ...)``; a tuple of such for tuple inputs. Tensors, numpy arrays, lists or pandas objects
            (non-tensors are placed on the inputs' device).
        inputs: ``(N, ...)`` tensor or tuple of tensors (numpy arrays, lists and DataFrames are converted).

    Returns:
        Contiguous tensor(s) with the inputs' shapes, in the importances' dtype, with the inputs' structure.

    Example:
        >>> import torch
        >>> from torchxplain.integrations import expand_to_inputs
        >>> expand_to_inputs(torch.tensor([0.5, 0.25, 0.0]), torch.ones(2, 3))  # global importance, shaped like inputs
        tensor([[0.5000, 0.2500, 0.0000],
                [0.5000, 0.2500, 0.0000]])
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
        x = to_tensor(x, "inputs").tensor
        if not isinstance(imp, Tensor):
            imp = to_tensor(imp, "importance", device=x.device).tensor
        if not imp.is_floating_point():
            raise TypeError(f"importance must be floating, got {imp.dtype}")
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
        background: ``(B, n)`` background rows (tensor, numpy array, list or DataFrame).
        sentinel: the value marking an absent feature (a finite number that real inputs never take).
        max_memory: budget for the ``(P * B, n)`` expanded batch (bytes or e.g. ``"1GB"``; ``None``:
            ``tx.settings.max_memory`` at call time).
    """

    background: Tensor

    def __init__(
        self,
        forward_func: Callable[..., Tensor],
        background: Any,
        sentinel: float = DEFAULT_SENTINEL,
        max_memory: int | str | None = None,
    ) -> None:
        if not callable(forward_func):
            raise TypeError(f"forward_func must be callable, got {type(forward_func).__name__}")
        sentinel = check_number(sentinel, "sentinel", hint="a value that real inputs never take")
        background = to_tensor(background, "background", ndim=2).tensor
        check_matrix(background, "background")
        check_finite(background, "background")
        dtype = background.dtype if background.is_floating_point() else torch.get_default_dtype()
        if not torch.isfinite(torch.tensor(sentinel, dtype=dtype)):
            raise ValueError(f"sentinel {sentinel} is not finite in {dtype}; pick a smaller value")
        if bool((background == sentinel).any()):
            raise ValueError(f"the background contains the sentinel value {sentinel}; pick another sentinel")
        if max_memory is not None:
            parse_memory(max_memory)  # refuse a bad budget here, not at Captum's first call
        self.forward_func = forward_func
        self.background = background
        self.sentinel = float(sentinel)
        self.max_memory = max_memory

    def baselines(self, inputs: Any) -> Tensor:
        """The ``baselines`` to pass to Captum: ``inputs``-shaped, filled with the sentinel."""
        return torch.full_like(to_tensor(inputs, "inputs").tensor, self.sentinel)

    def __call__(self, inputs: Any, *additional_forward_args: Any) -> Tensor:
        """Evaluate ``g`` on ``(P, n)`` rows (sentinel = absent); returns ``(P,)`` or ``(P, C)``.

        Tensor ``additional_forward_args`` with ``P`` rows are repeated once per background row.

        Raises:
            ValueError: the model returned NaN or infinity; the message names the input and background rows.
        """
        inputs = to_tensor(inputs, "inputs", device=self.background.device).tensor
        check_matrix(inputs, "inputs", self.background.shape[1], allow_empty=True)
        with settings.using(max_memory=self.max_memory):
            return self._average(inputs, additional_forward_args)

    def _average(self, inputs: Tensor, additional_forward_args: tuple[Any, ...]) -> Tensor:
        bg = self.background.to(device=inputs.device, dtype=inputs.dtype)
        n_bg = bg.shape[0]
        step = rows_per_chunk(n_bg * inputs.shape[1] * inputs.element_size() * 3, inputs.shape[0])
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
            y = y.reshape(stop - start, n_bg, *y.shape[1:])
            if settings.validation.checks_values():
                _check_model_rows(y, start)
            out.append(y.mean(1))
        if not out:
            return inputs.new_zeros(0)
        return torch.cat(out)


def _check_model_rows(y: Tensor, offset: int) -> None:
    """Raise on NaN/inf in ``(p, B, ...)`` model outputs, naming the first input row and background row."""
    bad = ~torch.isfinite(y.reshape(y.shape[0], y.shape[1], -1)).all(-1)
    if bool(bad.any()):
        row, b = (int(i) for i in bad.nonzero()[0])
        rows = (bad.any(1).nonzero().flatten() + offset).tolist()
        raise ValueError(
            f"forward_func returned NaN or infinite values for input rows {rows[:10]}"
            f"{' ...' if len(rows) > 10 else ''} (first: input row {row + offset} filled from background row {b}); "
            "the average over the background would be NaN. Check the model on those rows"
        )


def background_averaged(
    forward_func: Callable[..., Tensor],
    background: Any,
    sentinel: float = DEFAULT_SENTINEL,
    max_memory: int | str | None = None,
) -> BackgroundAveraged:
    """Wrap a model so that Captum's coalition samplers compute interventional SHAP over ``background``.

    Pass ``baselines=wrapper.baselines(x)`` to the Captum method. Each Captum forward pass then costs
    ``B`` model rows per perturbed row (chunked to ``max_memory``).

    Args:
        forward_func: the model, ``(M, n) -> (M,)`` or ``(M, C)`` (``target`` picks a column in Captum).
        background: ``(B, n)`` background rows (the interventional reference distribution); a tensor, numpy
            array, list or DataFrame.
        sentinel: marks absent features; any finite value that real inputs never take (default ``-1e9``).
        max_memory: memory budget of the expanded batch (``None``: ``tx.settings.max_memory``).

    Raises:
        TypeError: ``forward_func`` not callable, a non-numeric background or sentinel.
        ValueError: a background that is not ``(B, n)``, holds NaN/inf or the sentinel; an infinite sentinel;
            a budget under 1 MiB. Calls raise when the model returns NaN/inf (naming the rows).

    Returns:
        A :class:`BackgroundAveraged` callable.

    Example:
        >>> import torch
        >>> from torchxplain.integrations import background_averaged
        >>> model = lambda x: x[:, 0] * x[:, 1]
        >>> wrapped = background_averaged(model, torch.tensor([[0.0, 0.0], [2.0, 2.0]]))
        >>> x = torch.ones(1, 2)
        >>> wrapped(x), wrapped(wrapped.baselines(x))  # f at x, and E_b f(b): the game's two ends
        (tensor([1.]), tensor([2.]))
    """
    return BackgroundAveraged(forward_func, background, sentinel=sentinel, max_memory=max_memory)

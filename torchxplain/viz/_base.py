"""What every display shares: the ``figure_``/``ax_`` it drew on, saving, and input conversion for plotting."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from torch import Tensor

from torchxplain._core.inputs import to_tensor

ArrayLike = Tensor | np.ndarray | Sequence[Any] | Any
"""Tensors, numpy arrays, lists, pandas DataFrames/Series: anything :func:`as_numpy` converts."""


def as_numpy(x: ArrayLike, name: str, ndim: int | tuple[int, ...] | None = None) -> np.ndarray:
    """``x`` as a float64 numpy array (a detached CPU copy), converted like every public input
    (:func:`torchxplain._core.inputs.to_tensor`) and checked for its number of dimensions.

    Raises:
        TypeError: ``x`` is not numeric array-like (the message names ``name``).
        ValueError: ``x`` is ragged or has the wrong number of dimensions (the message names ``name``).
    """
    tensor = to_tensor(x, name, ndim=ndim).tensor
    return tensor.detach().cpu().to(torch.float64).numpy()


def resolve_names(names: Sequence[str] | None, count: int, source: Any = None) -> list[str]:
    """``count`` display names: the given ones, else ``source``'s DataFrame columns, else ``x0, x1, ...``.

    Raises:
        ValueError: ``names`` does not have ``count`` entries.
    """
    if names is None and source is not None and hasattr(source, "columns"):
        names = [str(c) for c in source.columns]
    if names is None:
        return [f"x{i}" for i in range(count)]
    names = [str(n) for n in names]
    if len(names) != count:
        raise ValueError(f"feature_names has {len(names)} names for {count} features; pass one name per feature")
    return names


def top_order(score: np.ndarray, max_features: int) -> np.ndarray:
    """Indices of the ``max_features`` largest ``|score|`` (ties: first index first), smallest first.

    Drawn bottom-up on a y axis, the most important feature lands on top.
    """
    if max_features < 1:
        raise ValueError(f"max_features must be a positive integer, got {max_features}")
    return np.argsort(-np.abs(score), kind="stable")[:max_features][::-1]


def save(figure: Figure, path: str | Path, dpi: int = 110) -> str:
    """Save ``figure`` as PNG at ``path``, close it and return the path as a string."""
    import matplotlib.pyplot as plt

    if not isinstance(figure, Figure):
        raise TypeError(f"figure must be a matplotlib Figure, got {type(figure).__name__}; pass display.figure_")
    figure.savefig(path, dpi=dpi)
    plt.close(figure)
    return str(path)


class Display:
    """Base of the plot objects (scikit-learn's Display style).

    A display holds the numbers to draw; ``plot`` (in each subclass) draws them on ``ax`` (a new figure
    when ``None``), stores ``figure_`` and ``ax_`` and returns the display. Nothing is ever shown and the
    matplotlib backend is never changed.
    """

    figure_: Figure
    ax_: Axes

    def _start(self, ax: Axes | None, size: tuple[float, float]) -> Axes:
        """Use ``ax`` or a new ``size``-inch figure; record ``figure_`` and ``ax_``."""
        if ax is None:
            import matplotlib.pyplot as plt

            self.figure_, ax = plt.subplots(figsize=size)
        else:
            figure = ax.figure
            self.figure_ = figure if isinstance(figure, Figure) else figure.figure  # a SubFigure's root
        self.ax_ = ax
        return ax

    def save(self, path: str | Path, dpi: int = 110) -> str:
        """Save the drawn figure as PNG at ``path``, close it and return the path (call ``plot`` first)."""
        if not hasattr(self, "figure_"):
            raise RuntimeError(f"{type(self).__name__}.save needs a figure: call .plot() first")
        return save(self.figure_, path, dpi)

"""GOALS for a Bayesian last layer ``f(x) = h(x)^T w``, ``q(w) = N(m, V)``: the math on tensors.

With ``dh_j(x) = h(x) - h(x + xi_j e_j)`` (``L`` penultimate features):

* local score ``delta_j(x) = dh_j(x)^T m`` (posterior mean of ``f(x) - f(x + xi_j e_j)``),
* local variance ``dh_j(x)^T V dh_j(x)``,
* global mean ``dbar_j^T m`` and covariance ``dbar_j^T V dbar_l`` with ``dbar_j = mean_i dh_j(x_i)``.

The bias of the head cancels in every difference. ``V`` is given either as a full ``(L, L)`` covariance
or as the ``(L,)`` diagonal of a mean-field posterior. The J shifted inputs of Q query rows are formed
as chunks of the ``Q*J`` (query, feature) pairs and pushed through the extractor in batched forward
passes; when the extractor starts with an ``nn.Linear`` the shift is applied to that layer's
pre-activations instead (``z + xi_j W[:, j]``), so a pair costs ``H1`` instead of ``J`` input values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
from torch import Tensor, nn

from torchxplain._core import chunk_bounds, progress, rows_per_chunk


def local_scores(dh: Tensor, loc: Tensor) -> Tensor:
    """Posterior means ``dh @ loc``: ``(..., L)`` feature differences and ``(L,)`` mean -> ``(...)``."""
    return dh @ loc


def local_variances(dh: Tensor, cov: Tensor) -> Tensor:
    """Variances ``dh^T V dh`` of ``(..., L)`` differences; ``cov`` is ``(L, L)`` or a diagonal ``(L,)``."""
    if cov.ndim == 1:
        return (dh * dh) @ cov
    return ((dh @ cov) * dh).sum(-1)


def global_moments(dbar: Tensor, loc: Tensor, cov: Tensor) -> tuple[Tensor, Tensor]:
    """Posterior mean ``(J,)`` and covariance ``(J, J)`` of the global scores from ``dbar`` ``(J, L)``."""
    mean = dbar @ loc
    right = dbar * cov if cov.ndim == 1 else dbar @ cov
    return mean, right @ dbar.T


class FeatureMap:
    """The deterministic penultimate features ``h(x)`` at inputs and at shifted inputs.

    Args:
        extractor: an ``nn.Module`` or callable mapping ``(B, J)`` inputs to ``(B, L)`` features.
        shortcut: shift the pre-activations of a leading ``nn.Linear`` instead of the inputs. ``None``
            uses it whenever the extractor is an ``nn.Linear`` or an ``nn.Sequential`` starting with one;
            ``True`` raises when that is not the case.
    """

    def __init__(self, extractor: Callable[[Tensor], Tensor], shortcut: bool | None = None) -> None:
        first, rest = _split_first_linear(extractor)
        if shortcut and first is None:
            raise ValueError(
                "shortcut=True needs an nn.Linear extractor or an nn.Sequential starting with one, "
                f"got {type(extractor).__name__}"
            )
        self.extractor = extractor
        self.first: nn.Linear | None = first if shortcut is not False else None
        self.rest: Callable[[Tensor], Tensor] = rest if rest is not None else extractor

    @property
    def uses_shortcut(self) -> bool:
        """Whether shifted features come from shifted first-layer pre-activations."""
        return self.first is not None

    def __call__(self, x: Tensor) -> Tensor:
        """``h(x)``: ``(B, J)`` -> ``(B, L)``."""
        return self._check(self.extractor(x), x.shape[0])

    def base(self, x: Tensor) -> Tensor:
        """What the shifted path needs per row: first-layer pre-activations ``(B, H1)``, or ``x`` itself."""
        return self.first(x) if self.first is not None else x

    def shifted(self, base: Tensor, rows: Tensor, cols: Tensor, shift: Tensor) -> Tensor:
        """``h(x_r + xi_c e_c)`` ``(P, L)`` for the pairs ``(rows, cols)``; ``base`` from :meth:`base`."""
        if self.first is not None:
            z = base[rows] + shift[cols, None] * self.first.weight.T[cols]
            return self._check(self.rest(z), rows.numel())
        x = base[rows].clone()
        x[torch.arange(rows.numel(), device=x.device), cols] += shift[cols]
        return self._check(self.extractor(x), rows.numel())

    def bytes_per_pair(self, n_features: int, n_hidden: int, itemsize: int) -> int:
        """A rough memory cost of one (query, feature) pair in the shifted forward pass."""
        width = self.first.out_features if self.first is not None else n_features
        return itemsize * (width + 3 * max(n_hidden, width))

    @staticmethod
    def _check(h: Tensor, rows: int) -> Tensor:
        if h.ndim != 2 or h.shape[0] != rows:
            raise ValueError(
                f"the feature extractor must return a (batch, L) tensor, got shape {tuple(h.shape)}"
            )
        return h


def _split_first_linear(extractor: object) -> tuple[nn.Linear | None, Callable[[Tensor], Tensor] | None]:
    if isinstance(extractor, nn.Linear):
        return extractor, nn.Identity()
    if isinstance(extractor, nn.Sequential) and len(extractor) > 0 and isinstance(extractor[0], nn.Linear):
        return extractor[0], extractor[1:]
    return None, None


def shift_differences(
    fmap: FeatureMap,
    x: Tensor,
    xi: Tensor,
    *,
    max_memory: int | str | None = None,
    show_progress: bool | None = False,
) -> Iterator[tuple[Tensor, Tensor, Tensor]]:
    """Yield ``(rows, cols, dh)`` over chunks of the ``Q*J`` pairs of ``x`` ``(Q, J)`` and features.

    ``dh`` ``(P, L)`` holds ``h(x_r) - h(x_r + xi_c e_c)`` for the pairs ``(rows[p], cols[p])``; pairs run
    row-major (``p = r*J + c``). Nothing of size ``Q*J*J`` is ever formed.
    """
    q, j = x.shape
    h = fmap(x)
    base = fmap.base(x)
    step = rows_per_chunk(fmap.bytes_per_pair(j, h.shape[1], x.element_size()), q * j, max_memory)
    bounds = chunk_bounds(q * j, step)
    for start, stop in progress(bounds, show_progress, desc="GOALS shifted features", total=len(bounds)):
        pairs = torch.arange(start, stop, device=x.device)
        rows, cols = pairs // j, pairs % j
        yield rows, cols, h[rows] - fmap.shifted(base, rows, cols, xi)


def local_moments(
    fmap: FeatureMap,
    x: Tensor,
    xi: Tensor,
    loc: Tensor,
    cov: Tensor | None,
    *,
    max_memory: int | str | None = None,
    show_progress: bool | None = False,
) -> tuple[Tensor, Tensor | None]:
    """Local scores ``(Q, J)`` and, when ``cov`` is given, local variances ``(Q, J)`` in one pass."""
    q, j = x.shape
    scores = x.new_empty(q * j)
    variances = x.new_empty(q * j) if cov is not None else None
    for rows, cols, dh in shift_differences(fmap, x, xi, max_memory=max_memory, show_progress=show_progress):
        idx = rows * j + cols
        scores[idx] = local_scores(dh, loc)
        if variances is not None:
            variances[idx] = local_variances(dh, cov)
    return scores.view(q, j), None if variances is None else variances.view(q, j)


def training_summary(
    fmap: FeatureMap,
    x: Tensor,
    xi: Tensor,
    loc: Tensor,
    *,
    max_memory: int | str | None = None,
    show_progress: bool | None = False,
) -> tuple[Tensor, Tensor]:
    """Over the rows of ``x`` ``(N, J)``: ``dbar`` ``(J, L)``, the mean of ``h(x) - h(x + xi_j e_j)``, and
    ``(J,)`` the mean absolute local score ``mean_i |dh_j(x_i)^T m|``, in one pass."""
    n, j = x.shape
    dbar: Tensor | None = None
    abs_sum = x.new_zeros(j)
    for _, cols, dh in shift_differences(fmap, x, xi, max_memory=max_memory, show_progress=show_progress):
        if dbar is None:
            dbar = dh.new_zeros(j, dh.shape[1])
        dbar.index_add_(0, cols, dh)
        abs_sum.index_add_(0, cols, local_scores(dh, loc).abs())
    assert dbar is not None
    return dbar / n, abs_sum / n

"""GOALS for a Bayesian last layer ``f(x) = h(x)^T w``, ``q(w) = N(m, V)``: the math on tensors.

With ``dh_j(x) = h(x) - h(x + xi_j e_j)`` (``L`` penultimate features):

* local score ``delta_j(x) = dh_j(x)^T m`` (posterior mean of ``f(x) - f(x + xi_j e_j)``),
* local variance ``dh_j(x)^T V dh_j(x)``,
* global mean ``dbar_j^T m`` and covariance ``dbar_j^T V dbar_l`` with ``dbar_j = mean_i dh_j(x_i)``.

The bias of the head cancels in every difference. ``V`` is given either as a full ``(L, L)`` covariance
or as the ``(L,)`` diagonal of a mean-field posterior. The J shifted inputs of Q query rows are formed
as blocks of (query rows x features), broadcast and pushed through the extractor in batched forward
passes; when the extractor starts with an ``nn.Linear`` the shift is applied to that layer's
pre-activations instead (``z + xi_j W[:, j]``), so a pair costs ``H1`` instead of ``J`` input values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
from torch import Tensor, nn

from torchxplain._core import chunk_bounds, parse_memory, progress, rows_per_chunk

# On CPUs, blocks of about this size stay cache-friendly (measured 1.3x faster than 512 MiB blocks at N=1000,
# J=500); ``max_memory`` still caps them. On GPUs the whole budget is used.
CPU_BLOCK_BYTES = 16 * 2**20


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

    def shifted(self, base: Tensor, start: int, stop: int, shift: Tensor) -> Tensor:
        """``h(x_r + xi_c e_c)`` ``(R, C, L)`` for the rows of ``base`` ``(R, .)`` (see :meth:`base`) and the
        features ``start <= c < stop``; ``shift`` is the ``(J,)`` shift."""
        r, c, dev = base.shape[0], stop - start, base.device
        if self.first is not None:
            step = shift[start:stop, None] * self.first.weight.T[start:stop]  # (C, H1) pre-activation shifts
        else:
            step = torch.zeros(c, base.shape[1], dtype=base.dtype, device=dev)
            step[torch.arange(c, device=dev), torch.arange(start, stop, device=dev)] = shift[start:stop]
        z = (base[:, None, :] + step[None]).reshape(r * c, -1)
        h = self._check(self.rest(z) if self.first is not None else self.extractor(z), r * c)
        return h.view(r, c, -1)

    def bytes_per_pair(self, n_features: int, n_hidden: int, itemsize: int) -> int:
        """A rough memory cost of one (query, feature) pair in the shifted forward pass."""
        width = self.first.out_features if self.first is not None else n_features
        return itemsize * (width + 3 * max(n_hidden, width))

    @staticmethod
    def _check(h: Tensor, rows: int) -> Tensor:
        if h.ndim != 2 or h.shape[0] != rows:
            raise ValueError(f"the feature extractor must return a (batch, L) tensor, got shape {tuple(h.shape)}")
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
) -> Iterator[tuple[slice, slice, Tensor]]:
    """Yield ``(rows, cols, dh)`` over blocks of the rows of ``x`` ``(Q, J)`` and the features.

    ``dh`` ``(R, C, L)`` holds ``h(x_r) - h(x_r + xi_c e_c)`` for ``r`` in the slice ``rows`` and ``c`` in
    ``cols``. Blocks are whole rows (all J features) when one row fits ``max_memory``, else single rows
    split over features; nothing of size ``Q*J*J`` is ever formed. Blocks follow ``tx.settings.max_memory``.
    """
    q, j = x.shape
    h = fmap(x)
    base = fmap.base(x)
    per_pair = fmap.bytes_per_pair(j, h.shape[1], x.element_size())
    budget = parse_memory()
    if x.device.type == "cpu":
        budget = min(budget, CPU_BLOCK_BYTES)
    cols_per_block = rows_per_chunk(per_pair, j, budget)
    if cols_per_block == j:
        row_bounds = chunk_bounds(q, rows_per_chunk(per_pair * j, q, budget))
        blocks = [(a, b, 0, j) for a, b in row_bounds]
    else:
        blocks = [(r, r + 1, a, b) for r in range(q) for a, b in chunk_bounds(j, cols_per_block)]
    for r0, r1, c0, c1 in progress(blocks, desc="GOALS shifted features", total=len(blocks)):
        yield slice(r0, r1), slice(c0, c1), h[r0:r1, None, :] - fmap.shifted(base[r0:r1], c0, c1, xi)


def local_moments(
    fmap: FeatureMap,
    x: Tensor,
    xi: Tensor,
    loc: Tensor,
    cov: Tensor | None,
) -> tuple[Tensor, Tensor | None]:
    """Local scores ``(Q, J)`` and, when ``cov`` is given, local variances ``(Q, J)`` in one pass."""
    q, j = x.shape
    scores = x.new_empty(q, j)
    variances = x.new_empty(q, j) if cov is not None else None
    for rows, cols, dh in shift_differences(fmap, x, xi):
        scores[rows, cols] = local_scores(dh, loc)
        if variances is not None and cov is not None:
            variances[rows, cols] = local_variances(dh, cov)
    return scores, variances


def training_summary(
    fmap: FeatureMap,
    x: Tensor,
    xi: Tensor,
    loc: Tensor,
) -> tuple[Tensor, Tensor]:
    """Over the rows of ``x`` ``(N, J)``: ``dbar`` ``(J, L)``, the mean of ``h(x) - h(x + xi_j e_j)``, and
    ``(J,)`` the mean absolute local score ``mean_i |dh_j(x_i)^T m|``, in one pass."""
    n, j = x.shape
    dbar: Tensor | None = None
    abs_sum = x.new_zeros(j)
    for _, cols, dh in shift_differences(fmap, x, xi):
        if dbar is None:
            dbar = dh.new_zeros(j, dh.shape[-1])
        dbar[cols] += dh.sum(0)
        abs_sum[cols] += local_scores(dh, loc).abs().sum(0)
    assert dbar is not None
    return dbar / n, abs_sum / n

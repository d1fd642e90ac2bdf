"""``interaction_values``: the public, validating entry point of the interaction-index family."""

from __future__ import annotations

import torch
from torch import Tensor

from torchxplain._core import parse_memory, settings
from torchxplain._core.settings import MIN_MEMORY
from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.values._cost import Kernel
from torchxplain.fourier.values._public import _plan
from torchxplain.fourier.values.interactions._weights import INDICES, Index

_VALUES = ("SV", "BV")


def check_index(index: object, max_order: object, m: int) -> int:
    """Validate ``index`` and ``max_order`` for ``m`` players; return the order in force.

    ``max_order=None`` means 1 for the values ``"SV"``/``"BV"`` and 2 for every interaction index.
    """
    if not isinstance(index, str) or index not in INDICES:
        raise ValueError(f"index must be one of {list(INDICES)} (shapiq's names), got {str(index)[:40]!r}")
    if max_order is None:
        return 1 if index in _VALUES else min(2, m)
    if isinstance(max_order, bool) or not isinstance(max_order, int):
        raise TypeError(f"max_order must be an int, got {type(max_order).__name__} {str(max_order)[:40]!r}")
    if index in _VALUES and max_order != 1:
        raise ValueError(
            f"index {index!r} is a value (order 1), got max_order={max_order}; pass max_order=1, or use "
            f"{'SII' if index == 'SV' else 'BII'!r} / 'k-SII' for interactions"
        )
    if not 1 <= max_order <= m:
        raise ValueError(f"max_order must be between 1 and the number of players ({m}), got {max_order}")
    return max_order


def check_result_memory(m: int, max_order: int, dtype: torch.dtype) -> None:
    """Refuse a result whose dense tensors of orders ``0..max_order`` exceed the memory budget for a single row.

    The result holds one entry per ordered tuple of players (``Σ_t m^t`` per row), so one row of it cannot be
    chunked: above the budget (at least 1 MiB; the tests' tiny budgets only chunk intermediates) the call is
    refused before anything is allocated, with the size and the fixes. Many rows are the caller's output, as the
    ``(Q, m)`` of the first-order values are.
    """
    per_row = sum(m**t for t in range(max_order + 1)) * (torch.finfo(dtype).bits // 8)
    budget = max(parse_memory(), MIN_MEMORY)
    if per_row > budget:
        raise ValueError(
            f"interaction_values up to order {max_order} on {m} players returns dense tensors of "
            f"{per_row / 2**30:.3g} GiB per row, above max_memory={budget / 2**30:.3g} GiB; lower max_order, group "
            "the players (groups= / feature_mask=), or raise max_memory"
        )


def interaction_values(
    spectrum: FourierSpectrum,
    x: object,
    background: object,
    index: Index = "k-SII",
    max_order: int | None = None,
    groups: object = None,
    max_memory: int | str | None = None,
    show_progress: bool | None = None,
    kernel: Kernel = "auto",
) -> dict[int, Tensor]:
    """Exact interventional interaction indices of a sparse spectrum, every order up to ``max_order``.

    The game of query ``x*`` is ``v(S) = mean_b h(x*_S, b_{~S})`` over the background rows ``b``; each index is
    shapiq's definition of it (``shapiq.ExactComputer`` gives the same numbers), computed in closed form per
    (background row, frequency) — the documentation's design page derives the weights —
    or, up to order 2, from the small-support tables of each order,
    whichever the cost model predicts cheaper.

    Args:
        spectrum: ``k`` frequencies on ``n`` binary features (computed in ``tx.settings.dtype_policy``'s dtype:
            the spectrum's float32/float64, float32 for half precision).
        x: ``(Q, n)`` binary queries (tensor, numpy, list or DataFrame).
        background: ``(B, n)`` binary background, or its :func:`~torchxplain.fourier.precompute_background` term.
        index: ``"k-SII"``, ``"STII"``, ``"FSII"``, ``"FBII"``, ``"BII"``, ``"SII"``, ``"SV"``, ``"BV"``,
            ``"Moebius"`` or ``"Co-Moebius"``.
        max_order: the largest order ``k`` (default 1 for ``"SV"``/``"BV"``, else 2); the order-dependent
            indices (k-SII, STII, FSII, FBII) depend on it.
        groups: optional ``(n,)`` non-negative integer player id per feature (players ordered by id, as in
            :func:`~torchxplain.fourier.shapley_values`); a player's parity is the parity of the frequency
            restricted to its features.
        max_memory: byte budget of the chunked intermediates (e.g. ``"2GB"``); ``None``: ``tx.settings``.
        show_progress: a tqdm bar over frequency blocks; ``None``: ``tx.settings``.
        kernel: ``"auto"`` (cost model), ``"gemm"`` (the per-(row, frequency) kernel) or ``"small_support"``
            (tables; ``max_order`` at most 2); all are exact.

    Returns:
        ``{0: (Q,), 1: (Q, m), 2: (Q, m, m), 3: (Q, m, m, m), ...}`` up to ``max_order``, in the output's units;
        order ``t ≥ 2`` is symmetric with zeros where a player repeats. Order 0 is shapiq's empty-set entry:
        the baseline ``v(∅) = mean_b h(b)`` for SV, k-SII, STII, FSII, Moebius, Co-Moebius (and SII at
        ``max_order=1``), the index's own empty-set value for SII, BII, BV and FBII.

    Example:
        >>> import torch
        >>> import torchxplain as tx
        >>> frequencies = torch.tensor([[0, 0, 0], [1, 0, 0], [1, 1, 0]], dtype=torch.bool)
        >>> spec = tx.FourierSpectrum(frequencies, torch.tensor([1.0, 2.0, 0.5]))
        >>> iv = tx.fourier.interaction_values(spec, torch.ones(1, 3), torch.zeros(1, 3), index="k-SII", max_order=2)
        >>> iv[0], iv[1], iv[2][0, 0, 1]  # v(empty set), first-order values, the (0, 1) pair
        (tensor([3.5000]), tensor([[-5., -1.,  0.]]), tensor(2.))
    """
    with settings.using(max_memory=max_memory, show_progress=show_progress):
        plan, xq = _plan(spectrum, x, background, groups, kernel, relaxed=False)  # the value functions' checks
        order = check_index(index, max_order, plan.m)
        check_result_memory(plan.m, order, xq.dtype)
        return plan.interaction_values(xq, index, order)

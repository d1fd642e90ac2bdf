"""``ValuePlan``: the closed forms of one spectrum against one background, prepared once, reused per batch.

The explainer builds one plan per (spectrum, background, players) and caches it, so the background-only work
(the paper's "Precompute": signed amplitudes, and for other kernels their tables) is done once however many
query batches follow. A plan's methods assume valid inputs — binary ``(Q, n)`` queries in the plan's dtype and
on its device — because validation happens once, at the public boundary that called them.
"""

from __future__ import annotations

from typing import Literal

from torch import Tensor

from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.values import (
    BackgroundTerm,
    _grouped_first_order,
    _grouped_interactions,
    _relaxed_shapley,
    _singleton_gemm,
    background_term,
)

Kernel = Literal["auto", "gemm"]


class ValuePlan:
    """Shapley, Banzhaf and pairwise interaction values of ``spectrum`` against a fixed background.

    Args:
        spectrum: ``k`` frequencies on ``n`` binary features (its dtype is the working dtype).
        background: ``(B, n)`` validated binary background.
        groups: ``(n,)`` validated player id per feature in ``0..m-1`` (``None``: one player per feature).
        m: number of players (``n`` when ``groups`` is ``None``).
        kernel: ``"auto"`` picks by the cost model; ``"gemm"`` forces the dense two-GEMM form.
    """

    def __init__(
        self, spectrum: FourierSpectrum, background: Tensor, groups: Tensor | None, m: int, kernel: Kernel = "auto"
    ) -> None:
        self.spectrum = spectrum
        self.groups = groups
        self.m = m
        self.kernel: Kernel = "gemm" if kernel == "auto" else kernel
        self.term: BackgroundTerm = background_term(spectrum, background)

    def shapley(self, xq: Tensor, relaxed: bool = False) -> Tensor:
        """``(Q, m)`` Shapley values; ``relaxed`` queries may be real-valued (singleton players only)."""
        if relaxed:
            return _relaxed_shapley(self.spectrum, xq, self.term, None)
        if self.groups is None:
            return _singleton_gemm(self.spectrum, xq, self.term, "shapley", None)
        return _grouped_first_order(self.spectrum, xq, self.term, self.groups, self.m, "shapley", None)

    def banzhaf(self, xq: Tensor) -> Tensor:
        """``(Q, m)`` Banzhaf values."""
        if self.groups is None:
            return _singleton_gemm(self.spectrum, xq, self.term, "banzhaf", None)
        return _grouped_first_order(self.spectrum, xq, self.term, self.groups, self.m, "banzhaf", None)

    def interactions(self, xq: Tensor) -> Tensor:
        """``(Q, m, m)`` pairwise Shapley interaction index (zero diagonal)."""
        return _grouped_interactions(self.spectrum, xq, self.term, self.groups, self.m, None)

    def describe(self) -> dict[str, object]:
        """The chosen kernel and the sizes it was chosen for (JSON-able)."""
        return {
            "kernel": self.kernel,
            "k": len(self.spectrum),
            "n": self.spectrum.n_features,
            "background": int(self.term.background.shape[0]),
            "players": self.m,
        }

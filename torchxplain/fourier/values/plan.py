"""``ValuePlan``: the closed forms of one spectrum against one background, prepared once, reused per batch.

The explainer builds one plan per (spectrum, background, players) and caches it, so the background-only work
(the paper's "Precompute": signed amplitudes, and for other kernels their tables) is done once however many
query batches follow. A plan's methods assume valid inputs — binary ``(Q, n)`` queries in the plan's dtype and
on its device — because validation happens once, at the public boundary that called them. Memory is bounded by
``tx.settings.max_memory`` in force when a method runs.
"""

from __future__ import annotations

from typing import Literal, get_args

from torch import Tensor

from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.values.background import BackgroundTerm
from torchxplain.fourier.values.gemm import grouped_first_order, grouped_interactions, singleton_gemm
from torchxplain.fourier.values.relaxed import relaxed_shapley

Kernel = Literal["auto", "gemm"]


def check_kernel(kernel: object) -> None:
    """Raise ``ValueError`` unless ``kernel`` is one of :data:`Kernel`'s options."""
    if kernel not in get_args(Kernel):
        raise ValueError(f"kernel must be one of {list(get_args(Kernel))}, got {str(kernel)[:40]!r}")


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
        self._init(BackgroundTerm(spectrum, background), groups, m, kernel)

    @classmethod
    def from_term(cls, term: BackgroundTerm, groups: Tensor | None, m: int, kernel: Kernel = "auto") -> ValuePlan:
        """A plan on an existing :class:`BackgroundTerm` (sharing its cached signed amplitudes)."""
        plan = cls.__new__(cls)
        plan._init(term, groups, m, kernel)
        return plan

    def _init(self, term: BackgroundTerm, groups: Tensor | None, m: int, kernel: Kernel) -> None:
        check_kernel(kernel)
        self.term = term
        self.spectrum = term.spectrum
        self.groups = groups
        self.m = m
        self.kernel: Kernel = "gemm" if kernel == "auto" else kernel

    def shapley(self, xq: Tensor, relaxed: bool = False) -> Tensor:
        """``(Q, m)`` Shapley values; ``relaxed`` queries may be real-valued (singleton players only)."""
        if relaxed:
            return relaxed_shapley(xq, self.term)
        if self.groups is None:
            return singleton_gemm(xq, self.term, "shapley")
        return grouped_first_order(xq, self.term, self.groups, self.m, "shapley")

    def banzhaf(self, xq: Tensor) -> Tensor:
        """``(Q, m)`` Banzhaf values."""
        if self.groups is None:
            return singleton_gemm(xq, self.term, "banzhaf")
        return grouped_first_order(xq, self.term, self.groups, self.m, "banzhaf")

    def interactions(self, xq: Tensor) -> Tensor:
        """``(Q, m, m)`` pairwise Shapley interaction index (zero diagonal)."""
        return grouped_interactions(xq, self.term, self.groups, self.m)

    def describe(self) -> dict[str, object]:
        """The chosen kernel and the sizes it was chosen for (JSON-able)."""
        return {
            "kernel": self.kernel,
            "k": len(self.spectrum),
            "n": self.spectrum.n_features,
            "background": int(self.term.background.shape[0]),
            "players": self.m,
        }

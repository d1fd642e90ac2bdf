"""Exact values by enumeration through the model: :class:`Enumerate`, the library's reference.

For each (row, background row) pair, every coalition of the ``d`` players the two differ in is queried
(``2^d`` model rows; :mod:`~torchxplain.fourier.fit._enumerate`): exact Shapley, Banzhaf and pairwise interaction
values, for binary rows (at their bits) and continuous rows (at raw hybrids: each column comes whole from the row
or the background row). Nothing is fitted; the model is queried when values are asked for. It is the cheapest exact
route for few players and a fast model, which is why the router prices it in seconds.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import torch
from torch import Tensor

from torchxplain.fourier.encoding import BinaryEncoder, RawEncoder
from torchxplain.fourier.fit import EnumerationPlan, Oracle, enumeration_report
from torchxplain.fourier.sources._base import BlackBoxSource, check_queries
from torchxplain.fourier.sources._built import Built
from torchxplain.fourier.sources._outputs import single_output
from torchxplain.fourier.sources._problem import Problem

REFUSALS = {
    "paired": (
        "method='enumerate' averages over a background set; per-row baselines (one baseline row per input row) need "
        "a spectrum: pass background= (the rows to average over), or fit one (method='auto')"
    ),
    "interaction_values": (
        "interaction_values needs a spectrum; with method='enumerate' use interactions() (pairwise Shapley "
        "interactions), shapley or banzhaf values, or fit one (method='auto')"
    ),
    "save": (
        "an explainer with method='enumerate' holds no spectrum to save (it queries the model); save the model, or "
        "fit a spectrum (method='auto') to save the explainer"
    ),
    "relaxed": "relaxed=True explains a spectrum's multilinear extension; method='enumerate' holds no spectrum",
    "spectrum": "an explainer with method='enumerate' enumerates coalitions: it holds no spectrum",
}


class ModelValues:
    """Exact values through the model (a :class:`~torchxplain.fourier.sources._built.Provider`).

    Args:
        oracle: the model's queries (batches on its device, answers checked, rows counted).
        binary: the codes are bits (cast to bool); ``False``: raw real rows, queried as they are.
    """

    route = "enumerate"

    def __init__(self, oracle: Oracle, binary: bool) -> None:
        self.oracle, self.binary = oracle, binary

    def plan(self, background_codes: Tensor, groups: Tensor | None, m: int, column: int = 0) -> EnumerationPlan:
        """Enumeration against ``background_codes`` for these players."""
        return EnumerationPlan(self.oracle, background_codes, groups, m, self.binary, self.oracle.dtype)

    def evaluate(self, codes: Tensor) -> Tensor:
        """``(R,)`` the model at encoded rows (bits, or raw rows)."""
        return self.oracle(codes.bool() if self.binary else codes)

    def refusal(self, what: str) -> str | None:
        """Why ``what`` needs a spectrum this route does not hold (module docstring)."""
        return REFUSALS.get(what)


@dataclasses.dataclass(frozen=True)
class Enumerate(BlackBoxSource):
    """Exact values through the model by enumerating coalitions (module docstring).

    Args:
        batch_size: model rows per call of the model.
        dtype: dtype of the query tensors (default: the model's, else the rows').

    Example:
        >>> import torch
        >>> import torchxplain as tx
        >>> model = lambda x: x[:, 0] * x[:, 1] + x[:, 2]
        >>> explainer = tx.FourierShap(model, torch.zeros(1, 3), method=tx.fourier.Enumerate())
        >>> explainer.attribute(torch.ones(1, 3))  # the product's 1 split evenly; x2's 1 to x2
        tensor([[0.5000, 0.5000, 1.0000]])
    """

    names: ClassVar[tuple[str, ...]] = ("enumerate",)
    title: ClassVar[str] = "tx.fourier.Enumerate (method='enumerate')"
    exact: ClassVar[bool] = True
    summary: ClassVar[str] = (
        "exact values by enumeration: for each (row, background row) pair, every coalition of the players they differ "
        "in (2^d model queries per pair, at raw hybrids for continuous rows), made when values are asked for"
    )

    batch_size: int = 4096
    dtype: torch.dtype | None = None

    def __post_init__(self) -> None:
        check_queries(self.batch_size, self.dtype)

    def build(self, problem: Problem, reason: str) -> Built:
        """An explainer state that enumerates through ``problem``'s model when values are asked for."""
        p = problem.n_features
        dtype = problem.dtype if self.dtype is None else self.dtype
        oracle = Oracle(problem.model, p, problem.device, dtype, self.batch_size, problem.target)
        oracle.phase = "enumeration"  # queried only when values are asked for
        if problem.continuous:
            encoder: BinaryEncoder = RawEncoder(p)
            codes = problem.background
        else:
            encoder, codes = BinaryEncoder(p), problem.background.bool()
        report = enumeration_report(p, problem.players.m, problem.players.description, reason)
        return Built(
            encoder=encoder,
            background=problem.background,
            codes=codes,
            spectra=[],
            provider=ModelValues(oracle, binary=not problem.continuous),
            outputs=single_output(problem.target, "model output"),
            groups=problem.players.ids,
            names=problem.names,
            report=report,
        )

"""Exact spectra of small level grids: :class:`Tabulate`.

With one player per variable, a hybrid takes each player's columns whole from the row or from the background row,
so every hybrid lies on the product of the players' observed levels (in ``data`` and the background). When that
grid is small, every combination is queried once (:mod:`~torchxplain.fourier.fit._tabulate`): the table is the
model on the manifold, its reference-coded expansion is the exact spectrum, and the values are exact for any row
and background on those levels. Binary (one-hot) rows only: continuous columns have as many levels as values.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import torch

from torchxplain._core.validation import check_int
from torchxplain.fourier.fit import TargetMetric, fit_validated
from torchxplain.fourier.sources._base import BlackBoxSource, check_queries
from torchxplain.fourier.sources._built import Built
from torchxplain.fourier.sources._fit import Fit, check_target_r2, fitted_bits, options_check, options_of
from torchxplain.fourier.sources._problem import Problem

TABULATE_LIMIT = 2**20
"""Largest level grid ``Tabulate`` queries when ``n_queries=None`` (the router's default too)."""


@dataclasses.dataclass(frozen=True)
class Tabulate(BlackBoxSource):
    """Every combination of the players' observed levels queried once: an exact spectrum (module docstring).

    Args:
        n_queries: largest grid to query (``None``: ``2^20`` combinations); a larger grid is refused.
        k: keep the ``k`` largest terms of the exact spectrum (``None``: all of them).
        threshold: drop terms with ``|a_f| < threshold``.
        target_r2: the held-out check's target (exact on the grid: a miss means the model is not deterministic).
        target_metric: what ``target_r2`` applies to: ``"shap"`` or ``"hybrid"``.
        n_validation: queries of the held-out check (at most 4,096 are used).
        one_hot: ``True`` declares every multi-column player one-hot and checks it on the rows.
        batch_size: model rows per call; dtype: dtype of the query tensors.

    Example:
        >>> import torch
        >>> import torchxplain as tx
        >>> model = lambda x: x[:, 0] * x[:, 1] + x[:, 2]
        >>> background = torch.tensor([[0.0, 0, 0], [1, 0, 1], [0, 1, 1], [1, 1, 0]])
        >>> explainer = tx.FourierShap(model, background, method=tx.fourier.Tabulate())
        >>> explainer.fit_report.method, explainer.attribute(torch.ones(1, 3))
        ('tabulate', tensor([[0.3750, 0.3750, 0.5000]]))
    """

    names: ClassVar[tuple[str, ...]] = ("tabulate",)
    title: ClassVar[str] = "tx.fourier.Tabulate (method='tabulate')"
    exact: ClassVar[bool] = True
    summary: ClassVar[str] = (
        "every combination of the players' observed levels queried once: the spectrum is exact for any row and "
        "background on those levels"
    )

    n_queries: int | None = None
    k: int | None = None
    threshold: float | None = None
    target_r2: float | None = 0.99
    target_metric: TargetMetric = "shap"
    n_validation: int = 65536
    one_hot: bool | None = None
    batch_size: int = 4096
    dtype: torch.dtype | None = None

    def __post_init__(self) -> None:
        check_int(self.n_queries, "n_queries", minimum=1, optional=True)
        check_int(self.k, "k", minimum=1, optional=True)
        check_target_r2(self.target_r2)
        check_queries(self.batch_size, self.dtype)
        options_check(self)

    @property
    def limit(self) -> int:
        """The largest grid this source queries."""
        return TABULATE_LIMIT if self.n_queries is None else self.n_queries

    def build(self, problem: Problem, reason: str) -> Built:
        """Query every level combination of ``problem``'s players."""
        if problem.continuous:
            raise ValueError(
                f"method='tabulate' queries every combination of the players' levels, but {problem.why_continuous}: "
                "a continuous column has as many levels as values. Use method='auto', 'fit' or 'enumerate'"
            )
        made = problem.hybrid_rows(self.one_hot)
        if made.levels.grid_size > self.limit:
            raise ValueError(
                f"method='tabulate' would query all {made.describe_grid()}, over the limit of {self.limit:,} "
                "(n_queries=): raise n_queries, group the features into fewer players, or use method='auto'"
            )
        players = problem.players
        spectrum, report = fit_validated(
            problem.model,
            problem.n_features,
            background=problem.background.bool(),
            data=problem.binary(problem.data),
            players=players.index,
            m=players.m,
            k=self.k,
            max_degree=None,
            n_queries=self.limit,
            method="tabulate",
            seed=problem.seed,
            target=problem.target,
            target_r2=self.target_r2,
            eval_data=None,
            options=options_of(self, problem),
            reason=reason,
            found=players.found,
            rows=made,
        )
        return Fit._built(problem, fitted_bits(problem), problem.background.bool(), spectrum, report)

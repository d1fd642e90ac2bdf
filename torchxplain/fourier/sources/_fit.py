"""Spectra fitted to a black box by queries: :class:`Fit` (where SHAP looks) and :class:`CubeFit` (the whole cube).

* :class:`Fit` holds the surrogate to hybrid points ``(x_S, b_~S)`` of rows like the explained ones with the
  background. On binary rows it is a sparse regression in the players' reference-coded basis, grown stage by stage
  (:mod:`~torchxplain.fourier.fit.hybrid`); on continuous or mixed rows each column is first encoded by thresholds
  at the midpoints of its values and the surrogate is fitted on the codes by blocks
  (:mod:`~torchxplain.fourier.fit.continuous`). Both stop at ``target_r2`` (the SHAP values' R² estimated on
  held-out rows), at the query budget, or when stages stop gaining.
* :class:`CubeFit` fits on uniform inputs of the cube (the exact WHT, the sparse WHT by hashing, or low-degree
  regression) and is checked on the held-out hybrids.

Knobs that have no meaning for the rows at hand are refused with the reason (``k``, ``time_budget`` and
``threshold`` on continuous rows, ``max_thresholds`` on binary ones).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Literal

import torch

from torchxplain._core.validation import check_int, check_number
from torchxplain.fourier.encoding import BinaryEncoder, ThresholdEncoder
from torchxplain.fourier.fit import FitOptions, TargetMetric, fit_continuous, fit_validated, fitted_range
from torchxplain.fourier.sources._base import BlackBoxSource, Source, check_queries
from torchxplain.fourier.sources._built import Built
from torchxplain.fourier.sources._outputs import single_output
from torchxplain.fourier.sources._problem import Problem

CubeKind = Literal["exact", "hashing", "regression"]


def check_target_r2(value: object) -> None:
    """``target_r2`` is a number ≤ 1, or ``None`` (no check)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value <= 1):
        raise ValueError(f"target_r2 must be a number <= 1 or None, got {value!r}")


PLACEMENT = ("device", "dtype", "show_progress", "max_memory")
"""Engine options that come from the problem and the settings in force, not from a source's knobs."""


def _engine_fields(source: Any) -> dict[str, Any]:
    return {
        name: getattr(source, name) for name in FitOptions.names() if hasattr(source, name) and name not in PLACEMENT
    }


def options_of(source: Any, problem: Problem) -> FitOptions:
    """The engine's :class:`~torchxplain.fourier.FitOptions` from a source's knobs (the query placement from the
    problem; progress and memory from the settings in force)."""
    dtype = problem.dtype if getattr(source, "dtype", None) is None else source.dtype
    return FitOptions(**_engine_fields(source), device=problem.device, dtype=dtype)


@dataclasses.dataclass(frozen=True)
class Fit(BlackBoxSource):
    """A sparse spectrum fitted on hybrid points of the rows with the background (module docstring).

    Args:
        k: most Walsh terms kept (binary rows; ``None``: as many as ``target_r2`` needs).
        max_degree: most players per term (``None``: the ladder's; at least 1 on continuous rows).
        n_queries: query budget of the fit (``None``: the ladder's); the held-out check's queries come on top.
        target_r2: the estimated R² of the SHAP values on held-out rows the fit is held to (``None``: no check);
            below it a ``FitQualityWarning`` says what to change.
        target_metric: what ``target_r2`` applies to: ``"shap"`` or ``"hybrid"`` (pointwise on held-out hybrids).
        n_validation: queries of the held-out check.
        time_budget: binary rows: seconds the ladder may plan for (``None``: none, the default).
        max_thresholds: continuous rows: most thresholds per column (``None``: every midpoint).
        threshold: binary rows: drop terms with ``|a_f| < threshold`` after the fit.
        one_hot: ``True`` declares every multi-column player one-hot and checks it on the rows.
        batch_size: model rows per call; dtype: dtype of the query tensors.

    Example:
        >>> import torch
        >>> import torchxplain as tx
        >>> model = lambda x: x[:, 0] * x[:, 1] + x[:, 2]
        >>> background = torch.tensor([[0.0, 0, 0], [1, 0, 1], [0, 1, 1], [1, 1, 0]])
        >>> explainer = tx.FourierShap(model, background, method=tx.fourier.Fit(max_degree=2))
        >>> explainer.fit_report.method, explainer.attribute(torch.ones(1, 3))
        ('hybrid', tensor([[0.3750, 0.3750, 0.5000]]))
    """

    names: ClassVar[tuple[str, ...]] = ("fit", "hybrid")
    title: ClassVar[str] = "tx.fourier.Fit (method='fit')"
    summary: ClassVar[str] = (
        "a surrogate fitted on hybrid points of the rows with the background (binary rows: a sparse regression in the "
        "players' reference-coded basis; continuous rows: blocks on threshold codes of the columns), held to "
        "target_r2 on held-out rows"
    )

    k: int | None = None
    max_degree: int | None = None
    n_queries: int | None = None
    target_r2: float | None = 0.99
    target_metric: TargetMetric = "shap"
    n_validation: int = 65536
    time_budget: float | None = None
    max_thresholds: int | None = 128
    threshold: float | None = None
    one_hot: bool | None = None
    batch_size: int = 4096
    dtype: torch.dtype | None = None

    def __post_init__(self) -> None:
        check_int(self.k, "k", minimum=1, optional=True)
        check_int(self.max_degree, "max_degree", minimum=0, optional=True)
        check_int(self.n_queries, "n_queries", minimum=1, optional=True)
        check_target_r2(self.target_r2)
        check_queries(self.batch_size, self.dtype)
        options_check(self)

    def continuous_refusals(self, why: str) -> None:
        """Knobs of a binary fit, refused on continuous rows with the reason."""
        if self.k is not None:
            raise ValueError(
                f"k caps the Walsh terms of a binary fit, but {why}: the continuous fit's size follows its blocks; "
                "leave k=None"
            )
        if self.threshold is not None:
            raise ValueError(
                f"threshold= drops small Walsh terms of a binary fit, but {why}: the continuous fit's terms come "
                "whole from its blocks (cutting some would change every value of a column); leave threshold=None"
            )
        if self.time_budget is not None:
            raise ValueError("the continuous fit's budget counts queries (n_queries=), not seconds: drop time_budget")
        if self.max_degree == 0:
            raise ValueError(
                f"max_degree=0 would fit a constant, but {why}: the continuous fit's blocks hold 1 (main effects) to "
                "3 players; pass max_degree >= 1"
            )

    def build(self, problem: Problem, reason: str) -> Built:
        """Fit the spectrum of ``problem``'s model (binary or continuous rows)."""
        players = problem.players
        if problem.continuous:
            assert problem.why_continuous is not None
            self.continuous_refusals(problem.why_continuous)
            encoding, spectrum, report = fit_continuous(
                problem.model,
                problem.background,
                problem.data,
                players.index,
                players.m,
                max_thresholds=self.max_thresholds,
                max_degree=self.max_degree,
                n_queries=self.n_queries,
                seed=problem.seed,
                target=problem.target,
                target_r2=self.target_r2,
                options=options_of(self, problem),
                found=players.found,
                reason=reason,
            )
            domain = fitted_range(encoding.input_dtype, problem.background, problem.data)  # values warn outside
            encoder = ThresholdEncoder(encoding, finite=True, domain=domain).to(problem.background.device)
            codes = encoder.encode(problem.background, torch.float32).bool()
            return self._built(problem, encoder, codes, spectrum, report)
        if self.max_thresholds != Fit.max_thresholds:
            raise ValueError(
                "max_thresholds caps the thresholds of continuous columns, but every entry of the background and "
                "data is 0 or 1 (binary rows have no thresholds); drop max_thresholds"
            )
        spectrum, report = fit_validated(
            problem.model,
            problem.n_features,
            background=problem.background.bool(),
            data=problem.binary(problem.data),
            players=players.index,
            m=players.m,
            k=self.k,
            max_degree=self.max_degree,
            n_queries=self.n_queries,
            method="hybrid",
            seed=problem.seed,
            target=problem.target,
            target_r2=self.target_r2,
            eval_data=None,
            options=options_of(self, problem),
            reason=reason,
            found=players.found,
            rows=problem.hybrid_rows(self.one_hot),
        )
        return self._built(problem, fitted_bits(problem), problem.background.bool(), spectrum, report)

    @staticmethod
    def _built(problem: Problem, encoder: Any, codes: Any, spectrum: Any, report: Any) -> Built:
        return Built(
            encoder=encoder,
            background=problem.background,
            codes=codes,
            spectra=[spectrum],
            provider=None,
            outputs=single_output(problem.target, "model output"),
            groups=problem.players.ids,
            names=problem.names,
            report=report,
        )


def fitted_bits(problem: Problem) -> BinaryEncoder:
    """The encoder of a binary fit held to hybrids of ``data`` with the background: it holds each bit's range over
    them (a bit constant there has no fitted effect: values of rows holding its other value warn). Without
    ``data`` the fit also queried every constant bit at its other value: no domain."""
    domain = None if problem.data is None else fitted_range(torch.float64, problem.background, problem.data)
    return BinaryEncoder(problem.n_features, domain=domain)


def options_check(source: Any) -> None:
    """The engine options' own checks, run when the source is made (not at the fit)."""
    FitOptions(**_engine_fields(source))
    if getattr(source, "threshold", None) is not None:
        check_number(source.threshold, "threshold", at_least=0, hint="a non-negative amplitude, or None")


@dataclasses.dataclass(frozen=True)
class CubeFit(BlackBoxSource):
    """A spectrum fitted on uniform inputs of the cube, checked on held-out hybrids (binary rows).

    ``method="exact"`` queries all ``2^n`` inputs and takes one fast WHT (``n <= 22``); ``"hashing"`` is the sparse
    WHT by hashing and peeling; ``"regression"`` least squares over every frequency of degree ``<= max_degree``
    (or over ``support``).

    Args:
        kind: ``"exact"``, ``"hashing"`` or ``"regression"`` (set by ``method=``).
        k: most Walsh terms kept (``None``: 256, or all ``2^n`` for ``"exact"``).
        max_degree, n_queries, target_r2, n_validation, threshold, batch_size, dtype: as :class:`Fit`'s.
        support: ``(s, n)`` candidate frequencies of ``"regression"``.
        n_bits, n_hashes, n_delays, n_refit, singleton_tol: sizes of ``"hashing"``.
    """

    names: ClassVar[tuple[str, ...]] = ("exact", "hashing", "regression")
    title: ClassVar[str] = "tx.fourier.CubeFit (method='exact', 'hashing' or 'regression')"
    summary: ClassVar[str] = "a spectrum fitted on uniform inputs of the cube, checked on held-out hybrids"

    kind: CubeKind = "hashing"
    k: int | None = None
    max_degree: int | None = None
    n_queries: int | None = None
    target_r2: float | None = 0.99
    n_validation: int = 65536
    threshold: float | None = None
    support: Any = None
    n_bits: int | None = None
    n_hashes: int | None = None
    n_delays: int | None = None
    n_refit: int | None = None
    singleton_tol: float = 0.3
    batch_size: int = 4096
    dtype: torch.dtype | None = None

    @classmethod
    def from_name(cls, name: str, knobs: dict[str, Any]) -> Source:
        if "kind" in knobs and knobs["kind"] != name:
            raise ValueError(f"method={name!r} is CubeFit(kind={name!r}); kind={knobs['kind']!r} contradicts it")
        return cls(**{**knobs, "kind": name})

    def __post_init__(self) -> None:
        if self.kind not in ("exact", "hashing", "regression"):
            raise ValueError(f"kind must be 'exact', 'hashing' or 'regression', got {self.kind!r}")
        check_int(self.k, "k", minimum=1, optional=True)
        check_int(self.max_degree, "max_degree", minimum=0, optional=True)
        check_int(self.n_queries, "n_queries", minimum=1, optional=True)
        check_target_r2(self.target_r2)
        check_queries(self.batch_size, self.dtype)
        options_check(self)

    def build(self, problem: Problem, reason: str) -> Built:
        """Fit ``problem``'s model on the cube."""
        if problem.continuous:
            raise ValueError(
                f"method={self.kind!r} fits binary inputs on the cube, but {problem.why_continuous}: continuous "
                "inputs take method='auto', 'fit' (a fit on threshold codes of the columns) or 'enumerate' (exact "
                "values through the model)"
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
            max_degree=self.max_degree,
            n_queries=self.n_queries,
            method=self.kind,
            seed=problem.seed,
            target=problem.target,
            target_r2=self.target_r2,
            eval_data=None,
            options=options_of(self, problem),
            reason=reason,
            found=players.found,
            rows=problem.hybrid_rows(None),
        )
        return Fit._built(problem, BinaryEncoder(problem.n_features), problem.background.bool(), spectrum, report)

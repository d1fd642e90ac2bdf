"""The public value functions: validate once, then run the same :class:`~torchxplain.fourier.values._plan.ValuePlan` the
explainer uses (so both paths pick their kernel with the same cost model).

They compute in ``tx.settings.dtype_policy``'s dtype (``dtype_policy.compute_dtype`` of the spectrum's: float32 or
float64 as given under ``"auto"``, float32 for a half-precision spectrum; a forced dtype otherwise), never in half
precision.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from torchxplain._core import check_same_device, settings
from torchxplain._core.inputs import dense_players, player_ids, rows
from torchxplain._core.settings import dtype_policy
from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.values._background import BackgroundTerm
from torchxplain.fourier.values._cost import Kernel, check_kernel
from torchxplain.fourier.values._plan import ValuePlan


def precompute_background(spectrum: FourierSpectrum, background: Any) -> BackgroundTerm:
    """Prepare ``background`` once for many calls of the value functions on ``spectrum``.

    Pass the returned term as ``background=`` to :func:`shapley_values`, :func:`banzhaf_values` or
    :func:`shapley_interactions`: the background-only work (the dense kernel's signed amplitudes, the
    small-support kernel's tables) is then done once per player grouping instead of once per call.

    Args:
        spectrum: the spectrum (``k`` frequencies on ``n`` features).
        background: ``(B, n)`` binary rows (tensor, numpy array, list or DataFrame), ``B ≥ 1``.

    Returns:
        A :class:`BackgroundTerm` in the compute dtype (module docstring), on the background's device.
    """
    _check_spectrum(spectrum)
    work = _working(spectrum)
    return BackgroundTerm(work, _background(work, background))


def shapley_values(
    spectrum: FourierSpectrum,
    x: Any,
    background: Any,
    groups: Any = None,
    max_memory: int | str | None = None,
    relaxed: bool = False,
    kernel: Kernel = "auto",
) -> Tensor:
    """Exact interventional Shapley values of the spectrum's function (paper Eq. 5).

    Args:
        spectrum: ``k`` frequencies on ``n`` binary features.
        x: ``(Q, n)`` binary queries. With ``relaxed=True`` any real values are allowed and the game is
            played on the multilinear extension (exact Gauss–Legendre integration of Owen's formula).
        background: ``(B, n)`` binary background, or its :func:`precompute_background` term.
        groups: optional ``(n,)`` non-negative integer player id per feature (features sharing an id form one
            player; ``m`` players, ordered by id).
        max_memory: budget for the chunked intermediates (bytes or e.g. ``"2GB"``; default
            ``tx.settings.max_memory``).
        relaxed: allow non-binary queries (singleton players only; always the dense kernel).
        kernel: ``"auto"`` (cost model), ``"gemm"`` (dense two-GEMM form) or ``"small_support"`` (tables over
            the patterns of small support families); all are exact.

    Returns:
        ``(Q, m)`` Shapley values (``m = n`` without groups), in the output's units, on the queries' device
        and in the compute dtype (module docstring).

    Example:
        >>> import torch
        >>> import torchxplain as tx
        >>> frequencies = torch.tensor([[0, 0, 0], [1, 0, 0], [0, 1, 1]], dtype=torch.bool)
        >>> spec = tx.FourierSpectrum(frequencies, torch.tensor([1.0, 2.0, 0.5]))  # 1 + 2(-1)^x0 + 0.5(-1)^(x1+x2)
        >>> x, background = torch.tensor([[1.0, 1.0, 0.0]]), torch.zeros(1, 3)
        >>> phi = tx.fourier.shapley_values(spec, x, background)
        >>> phi
        tensor([[-4., -1., -0.]])
        >>> phi.sum() == spec.evaluate(x) - spec.evaluate(background)  # efficiency
        tensor([True])
    """
    with settings.using(max_memory=max_memory):
        plan, xq = _plan(spectrum, x, background, groups, kernel, relaxed)
        binary = not relaxed or bool(((xq == 0) | (xq == 1)).all())  # binary queries take the exact integer path
        if not binary and plan.groups is not None:
            raise ValueError("relaxed=True supports singleton players only; pass groups=None")
        return plan.shapley(xq, relaxed=not binary)


def banzhaf_values(
    spectrum: FourierSpectrum,
    x: Any,
    background: Any,
    groups: Any = None,
    max_memory: int | str | None = None,
    kernel: Kernel = "auto",
) -> Tensor:
    """Exact interventional Banzhaf values; arguments as :func:`shapley_values`.

    Returns:
        ``(Q, m)`` Banzhaf values.

    Example:
        >>> import torch
        >>> import torchxplain as tx
        >>> frequencies = torch.tensor([[1, 0, 0], [1, 1, 0]], dtype=torch.bool)
        >>> spec = tx.FourierSpectrum(frequencies, torch.tensor([2.0, 0.5]))  # 2(-1)^x0 + 0.5(-1)^(x0+x1)
        >>> tx.fourier.banzhaf_values(spec, torch.ones(1, 3), torch.zeros(1, 3))
        tensor([[-4., -0.,  0.]])
    """
    with settings.using(max_memory=max_memory):
        plan, xq = _plan(spectrum, x, background, groups, kernel, relaxed=False)
        return plan.banzhaf(xq)


def shapley_interactions(
    spectrum: FourierSpectrum,
    x: Any,
    background: Any,
    groups: Any = None,
    max_memory: int | str | None = None,
    kernel: Kernel = "auto",
) -> Tensor:
    """Exact interventional pairwise Shapley interaction index; arguments as :func:`shapley_values`.

    Returns:
        ``(Q, m, m)`` symmetric matrices with zero diagonal: ``[q, g, h]`` is the interaction of
        players ``g ≠ h`` at query ``q``.

    Example:
        >>> import torch
        >>> import torchxplain as tx
        >>> pair = torch.tensor([[1, 1, 0]], dtype=torch.bool)
        >>> spec = tx.FourierSpectrum(pair, torch.tensor([0.5]))  # 0.5 (-1)^(x0 + x1)
        >>> tx.fourier.shapley_interactions(spec, torch.ones(1, 3), torch.zeros(1, 3))[0]
        tensor([[0., 2., 0.],
                [2., 0., 0.],
                [0., 0., 0.]])
    """
    with settings.using(max_memory=max_memory):
        plan, xq = _plan(spectrum, x, background, groups, kernel, relaxed=False)
        return plan.interactions(xq)


# ---------------------------------------------------------------------------------------------------
def _check_spectrum(spectrum: object) -> None:
    if not isinstance(spectrum, FourierSpectrum):
        raise TypeError(f"spectrum must be a FourierSpectrum, got {type(spectrum).__name__}")


def _working(spectrum: FourierSpectrum) -> FourierSpectrum:
    """The spectrum in the compute dtype (itself when it is in it already)."""
    dtype = dtype_policy.compute_dtype(spectrum.dtype)
    return spectrum if spectrum.dtype == dtype else spectrum.to(dtype)


def _same_function(term: FourierSpectrum, spectrum: FourierSpectrum) -> bool:
    """Whether a term's spectrum is ``spectrum`` (the same object, or the same frequencies and amplitudes)."""
    if term is spectrum:
        return True
    if term.frequencies.shape != spectrum.frequencies.shape:
        return False
    amplitudes = spectrum.amplitudes.detach().to(device=term.device, dtype=term.dtype)
    same = torch.equal(term.frequencies, spectrum.frequencies.to(term.frequencies.device))
    return same and torch.equal(term.amplitudes.detach(), amplitudes)


def _background(spectrum: FourierSpectrum, background: Any) -> Tensor:
    return rows(
        background, "background", n_features=spectrum.n_features, device=spectrum.device, values="binary"
    ).tensor


def value_plan(spectrum: FourierSpectrum, background: Any, groups: Any = None, kernel: Kernel = "auto") -> ValuePlan:
    """The plan the value functions run for ``spectrum`` against ``background``: to see what the cost model picks.

    Its ``describe()`` reports the kernel option, the sizes and, after a first call of ``shapley`` / ``banzhaf``
    / ``interactions`` on ``(Q, n)`` binary queries, each choice with the predicted seconds of both kernels and
    the support families.

    Args:
        spectrum, background, groups, kernel: as :func:`shapley_values` (a :func:`precompute_background` term
            shares its cached plan with the value functions).

    Returns:
        The value plan (cached on the background term): ``shapley(bits)``, ``banzhaf(bits)`` and
        ``interactions(bits)`` on encoded ``(Q, n)`` rows, and ``describe()``.
    """
    return _prepared(spectrum, background, groups, kernel)


def _prepared(spectrum: FourierSpectrum, background: Any, groups: Any, kernel: Kernel) -> ValuePlan:
    """Validate the spectrum, background and players once; the plan, cached on the background term."""
    _check_spectrum(spectrum)
    check_kernel(kernel)
    n = spectrum.n_features
    work = _working(spectrum)
    if isinstance(background, BackgroundTerm):
        if background.background.shape[1] != n:
            raise ValueError(
                f"the precomputed background term has {background.background.shape[1]} features but the spectrum "
                f"has {n}; make it with precompute_background(spectrum, background)"
            )
        if not _same_function(background.spectrum, spectrum):
            raise ValueError(
                f"the precomputed background term was made for another spectrum (k={len(background.spectrum)}, this "
                f"one has k={len(spectrum)} or other amplitudes); make one for this spectrum with "
                "precompute_background(spectrum, background), or pass the background rows"
            )
        same_dtype = background.spectrum.dtype == work.dtype  # else the dtype policy changed since: recast
        term = background if same_dtype else BackgroundTerm(work, background.background)
    else:
        term = BackgroundTerm(work, _background(work, background))
    m = n
    ids = player_ids(groups, n, "groups", term.background.device)
    if ids is not None:
        groups, _, m = dense_players(ids)
    key = (None if groups is None else tuple(groups.tolist()), kernel)
    plan = term.plans.get(key)
    if plan is None:
        plan = term.plans[key] = ValuePlan.from_term(term, groups, m, kernel=kernel)
    return plan


def _plan(
    spectrum: FourierSpectrum, x: Any, background: Any, groups: Any, kernel: Kernel, relaxed: bool
) -> tuple[ValuePlan, Tensor]:
    """Validate every argument once and return the plan (cached on a precomputed term) and the queries."""
    plan = _prepared(spectrum, background, groups, kernel)
    device = plan.term.background.device
    xq = rows(x, "x", n_features=spectrum.n_features, device=device, values="finite" if relaxed else "binary").tensor
    check_same_device(x=xq, background=plan.term.background)
    return plan, xq.to(plan.spectrum.dtype)

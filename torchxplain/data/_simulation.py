"""The GOALS paper's simulation design (Eq. 17-18): genotypes, additive and pairwise-interaction effects.

``y = X_C beta + W tau + Z omega + eps`` with ``W`` the Hadamard products of all pairs of causal columns,
``Z`` the top principal components of ``X``, and the parts scaled to sample variances
``V[X_C beta] = rho v2``, ``V[W tau] = (1 - rho) v2``, ``V[Z omega] = pc_var (1 - v2)`` and
``V[eps] = (1 - pc_var)(1 - v2)``, so ``V[y] = 1`` up to the sample covariances between the parts.

Choices the paper leaves open: genotypes are Binomial(2, maf) with
``maf ~ U(maf_range)``; "all pairwise interactions" means all pairs of causal features; by default the
population structure takes no variance (``pc_var = 0``); the standardised genotypes enter both the generative
model and the returned ``x``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain._core import check_flag, check_float_dtype, make_generator


@dataclass(frozen=True)
class SimulatedData:
    """One replicate of the Eq. 17-18 design.

    Attributes:
        x: ``(N, J)`` standardised genotypes (raw 0/1/2 counts when ``standardize=False``).
        y: ``(N,)`` response with unit total variance (approximately; the parts are scaled exactly).
        causal: ``(J,)`` bool, the causal features.
        beta: ``(C,)`` additive effects of the causal features (after scaling), in ``causal`` index order.
        tau: ``(M,)`` interaction effects of the ``M = C (C - 1) / 2`` causal pairs (after scaling).
        additive: ``(N,)`` the additive part of ``y``.
        interaction: ``(N,)`` the pairwise-interaction part of ``y``.
        structure: ``(N,)`` the population-structure part of ``y``.
        noise: ``(N,)`` the noise part of ``y``.
    """

    x: Tensor
    y: Tensor
    causal: Tensor
    beta: Tensor
    tau: Tensor
    additive: Tensor
    interaction: Tensor
    structure: Tensor
    noise: Tensor


def _scaled(part: Tensor, variance: float) -> tuple[Tensor, float]:
    """Centre ``part`` and scale it to sample variance ``variance``; also return the factor used."""
    centred = part - part.mean()
    sd = centred.std()
    if variance == 0.0 or float(sd) == 0.0:
        return torch.zeros_like(part), 0.0
    factor = (variance**0.5) / float(sd)
    return centred * factor, factor


def simulate_goals_design(
    n: int = 500,
    n_features: int = 25,
    n_causal: int = 5,
    v2: float = 0.6,
    rho: float = 0.5,
    pc_var: float = 0.0,
    n_pcs: int = 10,
    maf_range: tuple[float, float] = (0.05, 0.5),
    standardize: bool = True,
    seed: int | torch.Generator | None = 0,
    dtype: torch.dtype = torch.float64,
) -> SimulatedData:
    """Draw one replicate of the GOALS simulation design (Eq. 17-18), seeded.

    Args:
        n: number of samples N.
        n_features: number of features J.
        n_causal: number of causal features C (``2 <= C <= J``).
        v2: signal fraction ``v^2`` in [0, 1].
        rho: additive share of the signal in [0, 1] (``rho = 1``: additive only).
        pc_var: share of the non-signal variance ``1 - v2`` given to the population structure ``Z omega``.
        n_pcs: number of principal components in ``Z``.
        maf_range: range of the minor allele frequencies.
        standardize: standardise genotype columns (used by the generative model and returned).
        seed: int seed or ``torch.Generator``.
        dtype: floating dtype of the returned tensors.

    Example:
        >>> from torchxplain.data import simulate_goals_design
        >>> d = simulate_goals_design(n=50, n_features=10, n_causal=2, seed=0)
        >>> d.x.shape, d.y.shape, int(d.causal.sum())
        (torch.Size([50, 10]), torch.Size([50]), 2)
    """
    for name, value, low in (
        ("n", n, 3),
        ("n_features", n_features, 2),
        ("n_causal", n_causal, 2),
        ("n_pcs", n_pcs, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    if n_causal > n_features:
        raise ValueError(f"n_causal must be at most n_features={n_features}, got {n_causal}")
    for name, fraction in (("v2", v2), ("rho", rho), ("pc_var", pc_var)):
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0.0 <= fraction <= 1.0:
            raise ValueError(f"{name} must be a number in [0, 1], got {fraction!r}")
    numbers = isinstance(maf_range, tuple | list) and all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in maf_range
    )
    if not numbers or len(maf_range) != 2:
        raise ValueError(f"maf_range must be a pair (low, high) with 0 < low <= high <= 0.5, got {maf_range!r}")
    lo, hi = maf_range
    if not 0.0 < lo <= hi <= 0.5:
        raise ValueError(f"maf_range must satisfy 0 < low <= high <= 0.5, got {maf_range}")
    check_flag(standardize, "standardize")
    check_float_dtype(dtype)
    if n_pcs > min(n, n_features):
        raise ValueError(f"n_pcs must be at most min(n, n_features) = {min(n, n_features)}, got {n_pcs}")
    gen = make_generator(seed)
    f64 = torch.float64

    maf = lo + (hi - lo) * torch.rand(n_features, generator=gen, dtype=f64)
    counts = torch.binomial(torch.full((n, n_features), 2.0, dtype=f64), maf.expand(n, -1), generator=gen)
    # Redraw the (rare) monomorphic columns so that every column can be standardised.
    for _ in range(100):
        flat = counts.std(0) == 0
        if not bool(flat.any()):
            break
        trials = torch.full((n, int(flat.sum())), 2.0, dtype=f64)
        counts[:, flat] = torch.binomial(trials, maf[flat].expand(n, -1), generator=gen)
    else:
        raise ValueError("could not draw polymorphic genotypes; increase n or the minor allele frequencies")
    x = (counts - counts.mean(0)) / counts.std(0) if standardize else counts

    causal_idx = torch.randperm(n_features, generator=gen)[:n_causal].sort().values
    xc = x[:, causal_idx]
    beta = torch.randn(n_causal, generator=gen, dtype=f64)
    additive, a_factor = _scaled(xc @ beta, rho * v2)
    pairs = torch.combinations(torch.arange(n_causal), r=2)
    w = xc[:, pairs[:, 0]] * xc[:, pairs[:, 1]]
    tau = torch.randn(pairs.shape[0], generator=gen, dtype=f64)
    interaction, i_factor = _scaled(w @ tau, (1.0 - rho) * v2)
    xs = x - x.mean(0)
    _, _, vh = torch.linalg.svd(xs, full_matrices=False)
    z = xs @ vh[:n_pcs].T
    structure, _ = _scaled(z @ torch.randn(n_pcs, generator=gen, dtype=f64), pc_var * (1.0 - v2))
    noise, _ = _scaled(torch.randn(n, generator=gen, dtype=f64), (1.0 - pc_var) * (1.0 - v2))

    causal = torch.zeros(n_features, dtype=torch.bool)
    causal[causal_idx] = True
    y = additive + interaction + structure + noise
    return SimulatedData(
        x=x.to(dtype),
        y=y.to(dtype),
        causal=causal,
        beta=(beta * a_factor).to(dtype),
        tau=(tau * i_factor).to(dtype),
        additive=additive.to(dtype),
        interaction=interaction.to(dtype),
        structure=structure.to(dtype),
        noise=noise.to(dtype),
    )

"""Pruning an exact spectrum, and reporting its accuracy where SHAP evaluates the model: on hybrid rows.

Interventional SHAP only ever evaluates the model at hybrids ``z = (x_S, b_{~S})`` of an explained row ``x``, a
background row ``b`` and a coalition ``S``. On one-hot data these hybrids are far from the uniform cube, so
keeping the largest amplitudes (the paper's energy rule) can keep 99.95% of the energy and still lose accuracy
there (GB1: R² 0.90–0.93). Hence two criteria:

* ``energy`` / ``threshold``: the energy rule on ``|a_f|`` (kept for compatibility; the report states the R² it
  reaches on hybrids);
* ``r2_target``: order the frequencies by their variance on sampled hybrids (``a_f² Var_z (-1)^{<f,z>}``;
  a term constant on the hybrids only shifts every value's baseline, which cancels from SHAP) and keep the
  fewest whose R² on sampled hybrids — offset-invariant, for the same reason — reaches the target; the report
  measures R² again on a fresh sample, since the selection flatters its own sample.

Hybrids are drawn with the coalition sizes of the Shapley kernel (``∝ (m-1)/(s(m-s))``, ``0 < s < m``) over the
players (groups of binary features when given), ``x`` from the queries when given, else from the background.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, parse_memory
from torchxplain._core.inputs import player_ids, rows
from torchxplain.fourier.spectrum import FourierSpectrum

_REPORT_HYBRIDS = 512  # hybrid rows of the report's R² (standard error about 1e-3 at R² = 0.99)


@dataclass(frozen=True)
class PruningReport:
    """What pruning kept of an exact tree spectrum.

    Attributes:
        total_terms: frequencies before pruning.
        kept_terms: frequencies after pruning.
        kept_energy: ``Σ a_f²`` kept over the total, both without the constant term (which does not affect
            SHAP values).
        r2_background: R² of the pruned spectrum against the exact one on the background rows
            (1.0 when nothing was pruned or the model is constant there).
        r2_hybrid: offset-invariant R² of the pruned spectrum against the exact one on ``hybrid_points`` hybrid
            rows (the points SHAP evaluates), sampled afresh (not the rows ``r2_target`` selected on, so it is an
            unbiased estimate); ``None`` in reports saved before it existed.
        hybrid_points: number of hybrid rows it was measured on.
        r2_target: the requested hybrid R² (``None`` for the energy/threshold rules).
    """

    total_terms: int
    kept_terms: int
    kept_energy: float
    r2_background: float
    r2_hybrid: float | None = None
    hybrid_points: int = 0
    r2_target: float | None = None


def prune_tree_spectrum(
    spectrum: FourierSpectrum,
    background: Tensor,
    energy: float | None = None,
    threshold: float | None = None,
    *,
    r2_target: float | None = None,
    queries: Tensor | None = None,
    groups: Tensor | None = None,
    n_hybrids: int = 1024,
    seed: int = 0,
) -> tuple[FourierSpectrum, PruningReport]:
    """Prune the non-constant part of ``spectrum`` and report what was kept.

    The constant term is always kept and excluded from the energy fraction: it is the model's mean over
    the cube, often far larger than the rest, and cancels from every SHAP value.

    Args:
        spectrum: the exact spectrum.
        background: ``(B, n)`` binary rows (the interventional reference); R² is measured on them and on hybrids.
        energy: keep the fewest largest non-constant frequencies reaching this fraction of their energy.
        threshold: drop non-constant frequencies with ``|a_f| < threshold``.
        r2_target: instead, keep the fewest frequencies (in order of their variance on hybrids) whose R² on the
            sampled hybrids reaches this value in ``(0, 1]``.
        queries: ``(Q, n)`` binary rows to be explained, the ``x`` of the hybrids (default: the background).
        groups: ``(n,)`` player id per feature; coalitions are drawn over players (default: every feature).
        n_hybrids: hybrid rows sampled to select on (``r2_target``); the report's fresh sample has at most 512.
        seed: seed of the hybrid samples.

    Raises:
        TypeError: ``spectrum`` is not a :class:`~torchxplain.FourierSpectrum`, or rows/ids of the wrong type.
        ValueError: ``r2_target`` outside ``(0, 1]``, combined with ``energy``/``threshold``, ``n_hybrids < 1``,
            or rows that are not ``(rows, n)`` binary.
    """
    if not isinstance(spectrum, FourierSpectrum):
        raise TypeError(f"spectrum must be a FourierSpectrum, got {type(spectrum).__name__}")
    n, device = spectrum.n_features, spectrum.device
    background = rows(background, "background", n_features=n, device=device, values="binary").tensor
    if queries is not None:
        queries = rows(queries, "queries", n_features=n, device=device, values="binary").tensor
    return prune(
        spectrum,
        background,
        energy,
        threshold,
        r2_target,
        queries,
        player_ids(groups, n, "groups", device),
        n_hybrids,
        seed,
    )


def prune(
    spectrum: FourierSpectrum,
    background: Tensor,
    energy: float | None,
    threshold: float | None,
    r2_target: float | None,
    queries: Tensor | None,
    groups: Tensor | None,
    n_hybrids: int,
    seed: int,
) -> tuple[FourierSpectrum, PruningReport]:
    """:func:`prune_tree_spectrum` on validated tensors (the explainer's tree source calls it directly)."""
    if r2_target is not None and not 0.0 < r2_target <= 1.0:
        raise ValueError(f"r2_target must be in (0, 1], got {r2_target!r}; e.g. r2_target=0.999")
    if r2_target is not None and (energy is not None or threshold is not None):
        raise ValueError("pass r2_target alone, or energy/threshold: they are different pruning rules")
    if n_hybrids < 1:
        raise ValueError(f"n_hybrids must be a positive number of rows, got {n_hybrids!r}")
    dtype = spectrum.dtype
    bg = background.to(device=spectrum.device, dtype=dtype)
    x = bg if queries is None else queries.to(bg)
    held_out = sample_hybrids(x, bg, groups, min(n_hybrids, _REPORT_HYBRIDS), seed + 1)  # never used to select
    constant = ~spectrum.frequencies.any(dim=1)
    rest = FourierSpectrum(spectrum.frequencies[~constant], spectrum.amplitudes[~constant])
    if r2_target is None:
        kept = rest.prune(energy=energy, threshold=threshold)
    else:
        kept = _prune_to_r2(rest, sample_hybrids(x, bg, groups, n_hybrids, seed), r2_target)
    pruned = FourierSpectrum(
        torch.cat([spectrum.frequencies[constant], kept.frequencies]),
        torch.cat([spectrum.amplitudes[constant], kept.amplitudes]),
    )
    total_energy = float(rest.energy)
    report = PruningReport(
        total_terms=len(spectrum),
        kept_terms=len(pruned),
        kept_energy=float(kept.energy) / total_energy if total_energy > 0 else 1.0,
        r2_background=_r2(spectrum.evaluate(bg), pruned.evaluate(bg), centred=False),
        r2_hybrid=_r2(_evaluate(rest, held_out), _evaluate(kept, held_out), centred=True),
        hybrid_points=int(held_out.shape[0]),
        r2_target=r2_target,
    )
    return pruned, report


def sample_hybrids(x: Tensor, background: Tensor, groups: Tensor | None, count: int, seed: int) -> Tensor:
    """``(count, n)`` hybrid rows ``(x_S, b_{~S})``: ``x`` and ``b`` uniform over their rows, ``|S|`` (in players)
    from the Shapley kernel's size weights, ``S`` uniform given its size."""
    gen = torch.Generator().manual_seed(seed)
    n = background.shape[1]
    players = torch.arange(n) if groups is None else torch.unique(groups.cpu(), return_inverse=True)[1]
    m = int(players.max()) + 1 if n else 0
    if m >= 2:
        sizes = torch.arange(1, m, dtype=torch.float64)
        size = 1 + torch.multinomial((m - 1) / (sizes * (m - sizes)), count, replacement=True, generator=gen)
    else:
        size = torch.randint(0, 2, (count,), generator=gen) * m
    rank = torch.argsort(torch.rand(count, m, generator=gen), dim=1).argsort(dim=1)  # a random order of players
    chosen = (rank < size[:, None])[:, players]  # (count, n): the feature's player is in S
    rows_x = x[torch.randint(0, x.shape[0], (count,), generator=gen).to(x.device)]
    rows_b = background[torch.randint(0, background.shape[0], (count,), generator=gen).to(background.device)]
    return torch.where(chosen.to(x.device), rows_x, rows_b)


def _r2(exact: Tensor, approx: Tensor, centred: bool) -> float:
    """R² of ``approx`` against ``exact``; ``centred`` ignores a constant offset of the residual."""
    residual = exact - approx
    if centred:
        residual = residual - residual.mean()
    variance = float(((exact - exact.mean()) ** 2).sum())
    error = float((residual**2).sum())
    return 1.0 - error / variance if variance > 0 else (1.0 if error <= 1e-24 else float("-inf"))


def _signs(hybrids: Tensor, freq: Tensor) -> Tensor:
    """``(h, kc)`` ``(-1)^{<f, z>}``; the parity counts are exact small integers, so float32 products suffice."""
    return 1.0 - 2.0 * torch.remainder(hybrids.float() @ freq.float().T, 2.0)


def _evaluate(spectrum: FourierSpectrum, rows: Tensor) -> Tensor:
    """``spectrum.evaluate(rows)`` for validated rows, with float32 parity products."""
    amp = spectrum.amplitudes.detach()
    out = torch.zeros(rows.shape[0], dtype=amp.dtype, device=amp.device)
    step = max(1, parse_memory() // (6 * rows.shape[0] * rows.element_size()))
    for a, b in chunk_bounds(len(spectrum), step):
        out += _signs(rows, spectrum.frequencies[a:b]).to(amp.dtype) @ amp[a:b]
    return out


def _prune_to_r2(rest: FourierSpectrum, hybrids: Tensor, target: float) -> FourierSpectrum:
    """The fewest non-constant terms, by decreasing variance on ``hybrids``, whose centred R² there reaches
    ``target``."""
    if len(rest) == 0:
        return rest
    amp = rest.amplitudes.detach()
    h = hybrids.shape[0]
    step = max(1, parse_memory() // (6 * h * hybrids.element_size()))
    chi_mean = [_signs(hybrids, rest.frequencies[a:b]).mean(0) for a, b in chunk_bounds(len(rest), step)]
    exact = _evaluate(rest, hybrids)
    order = torch.argsort(amp**2 * (1.0 - torch.cat(chi_mean).to(amp.dtype) ** 2), descending=True, stable=True)
    exact = exact - exact.mean()
    total = float((exact**2).sum())
    if total <= 0:  # the non-constant part is constant on the hybrids: it changes no SHAP value there
        return FourierSpectrum(rest.frequencies[:0], rest.amplitudes[:0])
    carry = torch.zeros_like(exact)
    for a, b in chunk_bounds(len(rest), step):
        idx = order[a:b]
        partial = carry[:, None] + torch.cumsum(_signs(hybrids, rest.frequencies[idx]).to(amp.dtype) * amp[idx], 1)
        r2 = 1.0 - ((exact[:, None] - (partial - partial.mean(0))) ** 2).sum(0) / total
        hit = torch.nonzero(r2 >= target).flatten()
        if hit.numel():
            keep = order[: a + int(hit[0]) + 1]
            return FourierSpectrum(rest.frequencies[keep], rest.amplitudes[keep])
        carry = partial[:, -1]
    return FourierSpectrum(rest.frequencies[order], rest.amplitudes[order])

"""Test-only references for the interaction indices: shapiq's ExactComputer on the brute-force interventional
game, an exact constrained least-squares FSII, and helpers to read our dense tensors per coalition."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from math import comb

import numpy as np
import shapiq

from tests.fourier import brute_force


def interventional_game(
    predict: Callable[[np.ndarray], np.ndarray], x: np.ndarray, background: np.ndarray, groups: np.ndarray
) -> Callable[[np.ndarray], np.ndarray]:
    """shapiq game ``v(S) = mean_b predict(x_S, b_{~S})`` over players ``groups`` (one id per feature)."""

    def game(coalitions: np.ndarray) -> np.ndarray:
        take = coalitions[:, groups]  # (C, n) which features come from the query
        z = np.where(take[:, None, :], x[None, None, :], background[None, :, :])
        return predict(z.reshape(-1, z.shape[-1])).reshape(coalitions.shape[0], -1).mean(1)

    return game


def spectrum_game(freq, amp, x, background, groups):
    """The interventional game of the spectrum ``(freq, amp)`` evaluated by brute force (no closed forms)."""
    return interventional_game(lambda z: brute_force.evaluate(freq, amp, z), x, background, groups)


def exact_computer(game, m: int) -> shapiq.ExactComputer:
    """shapiq's ExactComputer on ``game``, its 2^m game values evaluated once (reused across indices)."""
    return shapiq.ExactComputer(game, n_players=m, evaluate_game=True)


def coalitions(m: int, max_order: int) -> Iterator[tuple[int, ...]]:
    """Every subset of ``range(m)`` of size ``0..max_order``."""
    return itertools.chain.from_iterable(itertools.combinations(range(m), t) for t in range(max_order + 1))


def ours_at(result: dict, q: int, subset: tuple[int, ...]) -> float:
    return float(result[len(subset)][(q, *subset)])


def game_table(game, m: int) -> dict[tuple[int, ...], float]:
    """``{S: v(S)}`` for every coalition (sorted tuples)."""
    subsets = list(coalitions(m, m))
    matrix = np.zeros((len(subsets), m), dtype=bool)
    for row, subset in enumerate(subsets):
        matrix[row, list(subset)] = True
    return dict(zip(subsets, game(matrix)))


def fsii_exact(game, m: int, order: int) -> dict[tuple[int, ...], float]:
    """Faith-Shap (Tsai et al. 2023, Def. 2) as the *constrained* weighted least squares, solved by KKT.

    ``min Σ_{0<|S|<m} μ(|S|) (v(S) - Σ_{T⊆S,|T|≤k} E(T))²`` s.t. ``E(∅) = v(∅)``, ``Σ_T E(T) = v(N)``, with
    the Shapley kernel ``μ(s) = (m-1) / (C(m, s) s (m-s))``. shapiq's ExactComputer approximates the two
    constraints by a weight of 1e8 instead, which leaves errors of about 1e-9.
    """
    values = game_table(game, m)
    base = values[()]
    terms = [t for t in coalitions(m, order) if t]
    inner = [s for s in values if 0 < len(s) < m]
    design = np.array([[float(set(t) <= set(s)) for t in terms] for s in inner])
    weights = np.array([(m - 1) / (comb(m, len(s)) * len(s) * (m - len(s))) for s in inner])
    target = np.array([values[s] - base for s in inner])
    gram = design.T @ (weights[:, None] * design)
    kkt = np.block([[2 * gram, np.ones((len(terms), 1))], [np.ones((1, len(terms))), np.zeros((1, 1))]])
    rhs = np.concatenate([2 * design.T @ (weights * target), [values[tuple(range(m))] - base]])
    solution = np.linalg.solve(kkt, rhs)[: len(terms)]
    return {(): base, **dict(zip(terms, solution))}

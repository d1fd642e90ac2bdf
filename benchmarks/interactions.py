"""Exact interaction indices from a sparse spectrum (``tx.fourier.interaction_values``) against the peers, one run.

1. **shapiq** — ``shapiq.ExactComputer`` on the same interventional game ``v(S) = mean_b h(x_S, b_{~S})`` (the
   game evaluated through the spectrum, so both sides compute the same numbers; the max difference is printed).
   shapiq enumerates the ``2^n`` coalitions per query; the closed form costs ``Θ(|D|·k·d^t)`` per query.
2. **pairwise SII** — ``tx.fourier.shapley_interactions`` (the dense pairwise kernel of the design page) against
   ``interaction_values(index="SII", max_order=2)`` on larger problems, and order 3 timings.

One thread (``torch.set_num_threads(1)``, BLAS limited to one thread), best of ``--repeat`` runs.

    python benchmarks/interactions.py [--quick] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from torchxplain import FourierSpectrum
from torchxplain.fourier import interaction_values, precompute_background, shapley_interactions


def random_problem(q: int, b: int, k: int, n: int, degree: float, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    freq = torch.rand(k, n, generator=gen) < degree / n
    spec = FourierSpectrum(freq, torch.randn(k, generator=gen, dtype=torch.float64))
    x = torch.randint(0, 2, (q, n), generator=gen).double()
    bg = torch.randint(0, 2, (b, n), generator=gen).double()
    return spec, x, bg


def best_of(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def shapiq_peer(n: int, index: str, order: int, repeat: int) -> None:
    import shapiq

    spec, x, bg = random_problem(1, 20, 200, n, degree=3.0)

    def game(coalitions: np.ndarray) -> np.ndarray:
        take = torch.as_tensor(coalitions)
        z = torch.where(take[:, None, :], x[0][None, None, :], bg[None])  # (C, B, n)
        return spec.evaluate(z.reshape(-1, n)).reshape(len(coalitions), -1).mean(1).numpy()

    ours = interaction_values(spec, x, bg, index=index, max_order=order)
    reference = shapiq.ExactComputer(game, n_players=n)(index, order)
    diff = max(abs(float(ours[len(s)][(0, *s)]) - reference[s]) for s in reference.interaction_lookup)
    t_ours = best_of(lambda: interaction_values(spec, x, bg, index=index, max_order=order), repeat)
    t_peer = best_of(lambda: shapiq.ExactComputer(game, n_players=n)(index, order), max(1, repeat // 2))
    print(
        f"shapiq  n={n:2d} {index:6s} k={order}: ours {t_ours * 1e3:8.2f} ms/query, ExactComputer "
        f"{t_peer * 1e3:9.1f} ms/query, ratio {t_peer / t_ours:8.1f}x, max |diff| {diff:.1e}"
    )


def pairwise_peer(q: int, b: int, k: int, n: int, repeat: int) -> None:
    spec, x, bg = random_problem(q, b, k, n, degree=3.0)
    term = precompute_background(spec, bg)
    ours = interaction_values(spec, x, term, index="SII", max_order=2)[2]
    diff = float((ours - shapley_interactions(spec, x, term)).abs().max())
    t_pair = best_of(lambda: shapley_interactions(spec, x, term), repeat)
    t_ours = best_of(lambda: interaction_values(spec, x, term, index="SII", max_order=2), repeat)
    t_three = best_of(lambda: interaction_values(spec, x, term, index="k-SII", max_order=3), 1)
    print(
        f"pairs   Q={q} B={b} k={k} n={n}: shapley_interactions {t_pair:.3f}s, SII order 2 {t_ours:.3f}s "
        f"(ratio {t_pair / t_ours:.1f}x, max |diff| {diff:.1e}); k-SII up to order 3 {t_three:.3f}s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    with threadpool_limits(1):
        for n in (8, 10) if args.quick else (8, 10, 12):
            for index, order in (("k-SII", 2), ("FSII", 2), ("STII", 3)):
                shapiq_peer(n, index, order, args.repeat)
        cases = [(20, 20, 500, 30)] if args.quick else [(100, 100, 2_000, 60), (400, 50, 1_000, 30)]
        for case in cases:
            pairwise_peer(*case, repeat=args.repeat)


if __name__ == "__main__":
    main()

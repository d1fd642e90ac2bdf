"""GOALS on a Bayesian last layer: speed of the batched, first-layer-shortcut path against its peers, and its
accuracy against Monte Carlo over the guide.

    python benchmarks/goals_bnn.py              # N=1000 rows, J=500 features
    python benchmarks/goals_bnn.py --quick      # N=200, J=100
    python benchmarks/goals_bnn.py --device cuda

Peers, timed in the same process on the same device and dtype (float32), for the global scores (mean and
covariance of the J global means over N training rows) of an MLP ``J -> 256 -> 64`` with a Gaussian head:

* ``loop``: the obvious implementation, one forward pass of ``X + xi e_j`` per feature (J passes of N rows);
* ``plain``: torchxplain without the shortcut (chunks of the N*J shifted inputs through the whole net);
* ``mc``: Monte Carlo over S head draws (the draws are cheap; the J shifted passes are shared with ``loop``),
  reported with its error against the closed form.

Timings are taken with one thread (torch and BLAS pinned) and with the default thread count.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable, Iterator

import torch
from threadpoolctl import threadpool_limits
from torch import nn

from torchxplain.goals import BNNBackend


@contextlib.contextmanager
def threads(n: int | None) -> Iterator[None]:
    """Pin torch and BLAS to ``n`` threads (``None``: leave the defaults)."""
    if n is None:
        yield
        return
    old = torch.get_num_threads()
    with threadpool_limits(n):
        torch.set_num_threads(n)
        try:
            yield
        finally:
            torch.set_num_threads(old)


def timed(fn: Callable[[], object], device: str, repeat: int = 1) -> tuple[float, object]:
    """Best wall time of ``repeat`` calls (after one warm-up call) and the last result."""
    out = fn()
    best = float("inf")
    for _ in range(repeat):
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        start = time.perf_counter()
        out = fn()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best, out


def loop_global(
    features: nn.Module, x: torch.Tensor, xi: float, loc: torch.Tensor, var: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-feature forward passes: dbar_j = mean_i h(x_i) - h(x_i + xi e_j), then the closed-form moments."""
    with torch.no_grad():
        h = features(x).mean(0)
        rows = []
        for j in range(x.shape[1]):
            xs = x.clone()
            xs[:, j] += xi
            rows.append(h - features(xs).mean(0))
        dbar = torch.stack(rows)
    return dbar @ loc, (dbar * var) @ dbar.T


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--draws", type=int, default=20000, help="Monte Carlo draws of the head")
    parser.add_argument("--repeat", type=int, default=3, help="timed repetitions (best is reported)")
    args = parser.parse_args()
    n, j = (200, 100) if args.quick else (1000, 500)
    dev = torch.device(args.device)
    torch.manual_seed(0)
    x = torch.randn(n, j, device=dev)
    features = nn.Sequential(nn.Linear(j, 256), nn.Tanh(), nn.Linear(256, 64), nn.Tanh()).to(dev)
    loc = torch.randn(64, device=dev) / 8
    var = torch.rand(64, device=dev) / 100
    xi = 1.0
    print(f"== GOALS, Bayesian last layer: global scores, N={n}, J={j}, MLP {j}->256->64, float32, {dev} ==")
    print(f"default torch threads: {torch.get_num_threads()}")
    for label, n_threads in (("1 thread", 1), (f"{torch.get_num_threads()} threads", None)):
        with threads(n_threads):
            t_fast, (mean, cov) = timed(
                lambda: BNNBackend(features, loc, var, x, xi).global_moments(), args.device, args.repeat
            )
            t_plain, (mean_p, _) = timed(
                lambda: BNNBackend(features, loc, var, x, xi, shortcut=False).global_moments(), args.device, args.repeat
            )
            t_loop, (mean_l, cov_l) = timed(lambda: loop_global(features, x, xi, loc, var), args.device, args.repeat)
        err_p = float((mean_p - mean).abs().max())
        err_l = max(float((mean_l - mean).abs().max()), float((cov_l - cov).abs().max()))
        print(
            f"[{label}] torchxplain (shortcut) {t_fast:8.3f} s | plain batched {t_plain:8.3f} s "
            f"(x{t_plain / t_fast:5.1f}) | per-feature loop {t_loop:8.3f} s (x{t_loop / t_fast:5.1f}) | "
            f"max |diff| plain {err_p:.1e}, loop {err_l:.1e}"
        )

    # Monte Carlo over S head draws with the per-feature differences computed once (the cheapest MC peer).
    with threads(1), torch.no_grad():
        g = BNNBackend(features, loc, var, x, xi)
        dbar, _ = g._training_summary()
        t_draw, glob = timed(lambda: dbar @ (loc + var.sqrt() * torch.randn(args.draws, 64, device=dev)).T, args.device)
        mean, cov = g.global_moments()
    mc_mean, mc_var = glob.mean(1), glob.var(1)
    z = float(((mc_mean - mean) / (mc_var / args.draws).sqrt()).abs().max())
    rel = float((mc_var / cov.diagonal() - 1).abs().max())
    print(
        f"[1 thread] Monte Carlo, {args.draws} draws on top of the shared differences: {t_draw:.3f} s; "
        f"max |z| of the means {z:.2f}, max relative variance error {rel:.1%} "
        f"(closed form: exact, no draws)"
    )


if __name__ == "__main__":
    main()

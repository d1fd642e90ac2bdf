"""Peers of the continuous benchmark: shap and shapiq (``_blackbox_peers``) and Captum's sampling methods.

All explain the same interventional game, ``v(S) = mean_b f(x_S, b_{~S})`` over the whole background, one player
per feature. Captum takes one baseline per input row, and the interventional value is the background mean of the
single-baseline values (Shapley values are linear in the game), so each row is explained against every background
row in one call (the row repeated, the background as per-example baselines) and the values are averaged.

* Captum ShapleyValueSampling at its default 25 permutations per baseline.
* Captum KernelShap at shap KernelExplainer's default budget, ``2p + 2048`` coalitions per baseline (Captum's
  default of 25 cannot determine ``p + 1`` coefficients): the same model evaluations as shap's, one regression per
  baseline.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable

import numpy as np
import torch
from _blackbox_peers import Counter, default_budget, shap_kernel, shap_permutation, shapiq_values
from torch import Tensor

Model = Callable[[Tensor], Tensor]


def captum_svs(f: Counter, rows: Tensor, background: Tensor) -> np.ndarray:
    """Captum ShapleyValueSampling, default ``n_samples=25`` permutations, against every background row."""
    from captum.attr import ShapleyValueSampling

    explainer = ShapleyValueSampling(f)
    d = background.shape[0]
    out = [
        explainer.attribute(x[None].repeat(d, 1), baselines=background, perturbations_per_eval=16).mean(0) for x in rows
    ]
    return torch.stack(out).numpy()


def captum_kernel(f: Counter, rows: Tensor, background: Tensor) -> np.ndarray:
    """Captum KernelShap with ``2p + 2048`` coalitions per background row (shap's default budget)."""
    from captum.attr import KernelShap

    explainer = KernelShap(f)
    d, p = background.shape
    out = []
    for x in rows:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            values = explainer.attribute(
                x[None].repeat(d, 1), baselines=background, n_samples=default_budget(p), perturbations_per_eval=256
            )
        out.append(values.mean(0))
    return torch.stack(out).numpy()


def _singletons(background: Tensor) -> Tensor:
    return torch.arange(background.shape[1])


PEERS: dict[str, Callable[[Counter, Tensor, Tensor], np.ndarray]] = {
    "shap Permutation": lambda f, r, b: shap_permutation(f, r, b, _singletons(b)),
    "shap Kernel (defaults)": lambda f, r, b: shap_kernel(f, r, b, _singletons(b)),
    "shap Kernel (l1_reg=False)": lambda f, r, b: shap_kernel(f, r, b, _singletons(b), l1_reg=False),
    "shapiq KernelSHAP": lambda f, r, b: shapiq_values("KernelSHAP", f, r, b, _singletons(b)),
    "shapiq kADD-SHAP": lambda f, r, b: shapiq_values("kADD-SHAP", f, r, b, _singletons(b)),
    "Captum ShapleyValueSampling": captum_svs,
    "Captum KernelShap": captum_kernel,
}


def run_peer(
    name: str, f: Model, rows: Tensor, background: Tensor, cap_s: float
) -> tuple[np.ndarray | None, float, float, int, str]:
    """``(values (R', p), seconds per row, queries per row, rows explained, note)``; a peer whose first row takes
    longer than ``cap_s`` explains that row only; an exception becomes the note. A first untimed call on one row
    pays the one-time costs (imports, numba compilation) that would otherwise land on the first timed row."""
    counter = Counter(f)
    try:
        PEERS[name](Counter(f), rows[:1], background)
        start = time.perf_counter()
        first = PEERS[name](counter, rows[:1], background)
        taken = time.perf_counter() - start
        done = rows[:1] if taken > cap_s else rows
        values = first if taken > cap_s else np.concatenate((first, PEERS[name](counter, rows[1:], background)))
    except Exception as err:  # a peer's own failure is a result, reported as such
        return None, float("nan"), float("nan"), 0, f"failed: {type(err).__name__}: {str(err)[:80]}"
    seconds = time.perf_counter() - start
    note = "" if done.shape[0] == rows.shape[0] else f"1 row only (>{cap_s:.0f} s/row)"
    return values, seconds / done.shape[0], counter.rows / done.shape[0], done.shape[0], note

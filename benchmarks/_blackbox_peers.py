"""Black-box SHAP peers for the benchmarks: shap's KernelExplainer and PermutationExplainer, shapiq 1.8's
approximators, each at a given budget.

All explain the same interventional game as ours: players are the given groups of features (one per feature for
singletons), absent players take the background row's values, averaged over the whole background.

* shap works on feature matrices, so grouped players are *coded*: each player's observed patterns become level
  codes, the background and the rows are coded, and the model is wrapped to decode codes back to bits. shap then
  explains ``m`` coded features interventionally, which is the grouped game exactly. ``max_evals`` (Permutation)
  and ``nsamples`` (Kernel) count evaluations of the masked model, each one model row per background row.
* shapiq's approximators take a game on coalitions: ``v(S) = mean_b f(where(S, x, b))``; ``budget`` counts
  coalitions (each costs one model row per background row). shapiq has no default budget: KernelExplainer's
  default ``2m + 2048`` coalitions is used when none is given, capped at ``2^m`` (then they are exact).
* :data:`PEERS` are the issue-30 peers, called with a budget; :func:`run_peer` times one on some rows in CPU
  seconds and counts the model rows it asked for.
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor

Model = Callable[[Tensor], Tensor]


class Counter:
    """Wraps a black box: float tensors in, ``(B,)`` float64 out, counting the rows it is asked about."""

    def __init__(self, f: Model) -> None:
        self.f, self.rows = f, 0

    def __call__(self, x: Tensor) -> Tensor:
        self.rows += x.shape[0]
        with torch.no_grad():
            return self.f(x).double()


class Codec:
    """Level codes of each player's bit patterns, so that shap can explain grouped players as features."""

    def __init__(self, rows: Tensor, groups: Tensor) -> None:
        self.groups, self.m, self.n = groups, int(groups.max()) + 1, rows.shape[1]
        self.bits = [(groups == g).nonzero()[:, 0] for g in range(self.m)]
        self.levels = [torch.unique(rows[:, b], dim=0) for b in self.bits]

    def encode(self, x: Tensor) -> np.ndarray:
        codes = [((x[:, b][:, None, :] == lv[None]).all(-1).float().argmax(1)) for b, lv in zip(self.bits, self.levels)]
        return torch.stack(codes, 1).numpy().astype(np.float64)

    def decode(self, codes: np.ndarray) -> Tensor:
        c = torch.as_tensor(np.rint(codes), dtype=torch.long)
        out = torch.zeros(c.shape[0], self.n)
        for g, (b, lv) in enumerate(zip(self.bits, self.levels)):
            out[:, b] = lv[c[:, g]].float()
        return out


def _numpy_model(f: Counter, codec: Codec | None) -> Callable[[np.ndarray], np.ndarray]:
    def fn(a: np.ndarray) -> np.ndarray:
        x = codec.decode(a) if codec is not None else torch.as_tensor(a, dtype=torch.float32)
        return f(x).numpy()

    return fn


def shap_kernel(f: Counter, rows: Tensor, background: Tensor, groups: Tensor, **kwargs: object) -> np.ndarray:
    """shap.KernelExplainer values ``(R, m)``; ``kwargs`` go to ``shap_values`` (``nsamples``, ``l1_reg``)."""
    import shap

    codec = None if int(groups.max()) + 1 == groups.numel() else Codec(torch.cat((rows, background)), groups)
    data = background.numpy() if codec is None else codec.encode(background)
    explained = rows.numpy() if codec is None else codec.encode(rows)
    explainer = shap.KernelExplainer(_numpy_model(f, codec), data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(explainer.shap_values(explained, silent=True, **kwargs))


def shap_permutation(
    f: Counter, rows: Tensor, background: Tensor, groups: Tensor, max_evals: int | None = None
) -> np.ndarray:
    """shap.PermutationExplainer values ``(R, m)`` with the whole background as an Independent masker;
    ``max_evals`` evaluations of the masked model per row (each costs one model row per background row; default
    shap's 500, raised to its minimum for many features)."""
    import shap

    codec = None if int(groups.max()) + 1 == groups.numel() else Codec(torch.cat((rows, background)), groups)
    data = background.numpy() if codec is None else codec.encode(background)
    explained = rows.numpy() if codec is None else codec.encode(rows)
    masker = shap.maskers.Independent(data, max_samples=data.shape[0])
    m = data.shape[1]
    evals = max(500, 2 * m + 2) if max_evals is None else max(int(max_evals), 2 * m + 2)
    explainer = shap.PermutationExplainer(_numpy_model(f, codec), masker)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(explainer(explained, max_evals=evals, silent=True).values)


def default_budget(m: int) -> int:
    """KernelExplainer's default number of coalitions, ``2m + 2048``, capped at ``2^m``."""
    return int(min(2 * m + 2048, 2**m)) if m < 62 else 2 * m + 2048


SHAPIQ = (
    "KernelSHAP",
    "LeverageSHAP",
    "PolySHAP",
    "RegressionMSR",
    "OddSHAP",
    "ProxySHAP",
    "PermutationSamplingSV",
    "SVARM",
    "kADD-SHAP",
    "PermutationSV",
    "SPEX",
)


def _approximator(name: str, m: int) -> object:
    import shapiq.approximator as a

    make = {
        "KernelSHAP": lambda: a.KernelSHAP(m, random_state=0),
        "LeverageSHAP": lambda: a.LeverageSHAP(m, random_state=0),
        "PolySHAP": lambda: a.PolySHAP(m, random_state=0),
        "RegressionMSR": lambda: a.RegressionMSR(m, "SV", random_state=0),
        "OddSHAP": lambda: a.OddSHAP(m, random_state=0),
        "ProxySHAP": lambda: a.ProxySHAP(m, max_order=1, index="SV", random_state=0),
        "PermutationSamplingSV": lambda: a.PermutationSamplingSV(m, random_state=0),
        "PermutationSV": lambda: a.PermutationSamplingSV(m, random_state=0),
        "SVARM": lambda: a.SVARM(m, "SV", random_state=0),
        "kADD-SHAP": lambda: a.kADDSHAP(m, max_order=2, random_state=0),
        "SPEX": lambda: a.SPEX(n=m, index="SV", max_order=1, random_state=0),
    }[name]
    return make()


def shapiq_values(
    name: str, f: Counter, rows: Tensor, background: Tensor, groups: Tensor, budget: int | None = None
) -> np.ndarray:
    """``(R, m)`` Shapley values from a shapiq approximator (:data:`SHAPIQ`) on the interventional game of each
    row, ``v(S) = mean_b f(x_S, b_{~S})`` (each coalition costs one model row per background row), at ``budget``
    coalitions per row (default :func:`default_budget`)."""
    m = int(groups.max()) + 1
    coalitions = default_budget(m) if budget is None else int(budget)
    out = np.zeros((rows.shape[0], m))
    for r in range(rows.shape[0]):
        x = rows[r]

        def game(coalitions: np.ndarray, x: Tensor = x) -> np.ndarray:
            c = torch.as_tensor(np.atleast_2d(coalitions), dtype=torch.bool)[:, groups]  # (B, n)
            z = torch.where(c[:, None, :], x, background[None])  # (B, D, n)
            return f(z.reshape(-1, x.numel())).reshape(c.shape[0], -1).mean(1).numpy()

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            values = _approximator(name, m).approximate(coalitions, game)  # type: ignore[attr-defined]
        out[r] = [values.dict_values.get((i,), 0.0) for i in range(m)]
    return out


Peer = Callable[[Counter, Tensor, Tensor, Tensor, int], np.ndarray]
PEERS: dict[str, Peer] = {
    **{f"shapiq {name}": functools.partial(shapiq_values, name) for name in SHAPIQ[:8]},
    "shap Permutation": lambda f, r, b, g, k: shap_permutation(f, r, b, g, k),
    "shap Kernel (l1_reg=False)": lambda f, r, b, g, k: shap_kernel(f, r, b, g, nsamples=k, l1_reg=False),
}
"""The issue's peers, each called with a budget of coalitions per row (shap's ``max_evals`` / ``nsamples``)."""


def run_peer(
    name: str, f: Model, rows: Tensor, background: Tensor, groups: Tensor, budget: int, cap_s: float
) -> tuple[np.ndarray | None, float, float, int, str]:
    """``(values (R', m), CPU seconds per row, model rows per row, rows explained, note)`` of one peer at one
    budget; a peer whose first row takes longer than ``cap_s`` explains that row only; an exception becomes the
    note. A first untimed call on one row pays one-time costs (imports, compilation)."""
    try:
        PEERS[name](Counter(f), rows[:1], background, groups, budget)
    except Exception as err:  # a peer's own failure (budget too small, ...) is a result, reported as such
        return None, float("nan"), float("nan"), 0, f"failed: {type(err).__name__}: {str(err)[:80]}"
    counter = Counter(f)
    start = time.process_time()
    first = PEERS[name](counter, rows[:1], background, groups, budget)
    taken = time.process_time() - start
    done = rows[:1] if taken > cap_s else rows
    values = (
        first if taken > cap_s else np.concatenate((first, PEERS[name](counter, rows[1:], background, groups, budget)))
    )
    seconds = time.process_time() - start
    note = "" if done.shape[0] == rows.shape[0] else f"1 row only (>{cap_s:.0f} s/row)"
    return values, seconds / done.shape[0], counter.rows / done.shape[0], done.shape[0], note

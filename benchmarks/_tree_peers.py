"""The peers of the tree benchmark, each timed the same way as the public call: shap, woodelf and FastTreeSHAP.

Every peer gets the full background (shap and FastTreeSHAP through an ``Independent`` masker with
``max_samples=len(background)``; their default silently samples 100 rows) and its constructor is in the timing.
Times are best of a few runs on the clock in use; runs longer than the per-case budget are not repeated.
"""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

DATA_ROOT = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


CLOCK = {"wall": time.perf_counter, "cpu": time.process_time}
clock = CLOCK["wall"]


def use_clock(name: str) -> None:
    """``"wall"`` (default) or ``"cpu"`` (process CPU time: on a machine shared with other jobs, the time a
    single-threaded run would take alone, up to cache and memory-bandwidth contention)."""
    global clock
    clock = CLOCK[name]


def timed(fn: Callable[[], Any], repeat: int, budget: float = 2.0, sync: bool = False) -> tuple[float, Any]:
    """Best seconds of ``fn`` (on the clock in use) over up to ``repeat`` runs, stopping once ``budget`` seconds are
    spent (a run under 0.2 s always gets a second one: the first pays one-off warm-up costs)."""
    best, out, spent = float("inf"), None, 0.0
    for _ in range(max(2, repeat)):
        start = clock()
        out = fn()
        if sync:
            torch.cuda.synchronize()
        took = clock() - start
        best, spent = min(best, took), spent + took
        if spent > budget or (repeat < 2 and took > 0.2):
            break
    return best, out


def avgfp(rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """avGFP (Sarkisyan et al. 2016): 1 where site 1..236 is mutated; log brightness (stop codons dropped)."""
    frame = pd.read_csv(DATA_ROOT / "avgfp_sarkisyan2016" / "avgfp_sarkisyan2016_aa.csv.gz")
    frame = frame[~frame.aa_genotype_native.str.contains(r"\*")]
    frame = frame.sample(n=min(rows, len(frame)), random_state=seed)
    x = np.zeros((len(frame), 236))
    for row, genotype in enumerate(frame.aa_genotype_native):
        if genotype != "wt":
            sites = [int(re.match(r"[A-Z](\d+)", m).group(1)) for m in genotype.split(":")]
            x[row, [s - 1 for s in sites if 1 <= s <= 236]] = 1.0
    return x, frame.log_brightness.to_numpy()


def shap_values(model: Any, background: Any, queries: Any) -> np.ndarray:
    """shap's interventional TreeExplainer over the full background (constructor included in the timing)."""
    import shap

    background, queries = np.asarray(background), np.asarray(queries)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        masker = shap.maskers.Independent(background, max_samples=len(background))
        explainer = shap.TreeExplainer(model, masker, feature_perturbation="interventional")
        return np.asarray(explainer.shap_values(queries, check_additivity=False))


def fasttreeshap_values(model: Any, background: Any, queries: Any) -> np.ndarray:
    """FastTreeSHAP's TreeExplainer (interventional: its original TreeSHAP kernel), full background."""
    import fasttreeshap_fixed as fts

    background, queries = np.asarray(background), np.asarray(queries)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        masker = fts.maskers.Independent(background, max_samples=len(background))
        explainer = fts.TreeExplainer(model, masker, feature_perturbation="interventional", n_jobs=1)
        return np.asarray(explainer.shap_values(queries, check_additivity=False))


def woodelf_values(model: Any, background: Any, queries: Any) -> np.ndarray:
    """woodelf-explainer (float32, full background, DataFrames in: the user's own, or named columns)."""
    import woodelf

    if not isinstance(background, pd.DataFrame):
        columns = [f"x{i}" for i in range(background.shape[1])]
        background, queries = pd.DataFrame(background, columns=columns), pd.DataFrame(queries, columns=columns)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        explainer = woodelf.WoodelfExplainer(model, background)
        return np.asarray(explainer.shap_values(queries, verbose=False))


PEERS: dict[str, Callable[[Any, np.ndarray, np.ndarray], np.ndarray]] = {
    "shap": shap_values,
    "woodelf": woodelf_values,
    "fasttreeshap": fasttreeshap_values,
}


def available_peers() -> dict[str, str]:
    """``{peer: "ok" or why it cannot run}``."""
    status = {}
    for name, module in (("shap", "shap"), ("woodelf", "woodelf"), ("fasttreeshap", "fasttreeshap_fixed")):
        try:
            __import__(module)
            status[name] = "ok"
        except Exception as err:  # noqa: BLE001 (any import failure means the peer cannot run)
            status[name] = f"not installable here ({type(err).__name__}: {err})"[:120]
    return status

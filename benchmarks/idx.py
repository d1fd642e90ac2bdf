"""IDX benchmark: the user paths next to the kernel, a million inputs through the bulk path, and a loop cross-check.

    python benchmarks/idx.py                   # Child user paths vs kernel, 10^6 alarm inputs, loop cross-checks
    python benchmarks/idx.py --quick           # the same with 10^5 alarm inputs and fewer loop inputs
    python benchmarks/idx.py --device cuda --quick

1. **Child, all 1,080 inputs x 25 influences x MD+SD+CF.** The kernel is ``relation_tensors`` on integer codes.
   The user paths are ``explain_batch`` on a list of dicts, a DataFrame of value names and codes (encoding,
   one pass, relevance, the batch object), ``explain`` once per kit (lists of Explanation views) and the names
   materialised (every Explanation's relations, and ``to_frame()``). Each is timed cold (a fresh classifier:
   family tables built on the way) and warm (best of ``--repeat``), and printed as a ratio to the kernel
   measured in the same process. Target: every user path within 1.5x of the kernel.
2. **Alarm, 10^6 inputs sampled from the network** (ancestral sampling; 10^5 with ``--quick``) through the bulk
   path: the kernel, ``explain_batch`` on codes and on a DataFrame, ``relation_shares`` and the wide DataFrame.
3. **Cross-check against a straightforward loop** (numpy probabilities, Python loops over inputs, influences and
   values) on Child, votes, car and alarm: the relations must be identical; the loop's time per input is printed
   next to the bulk path's.

One thread is pinned (``torch.set_num_threads(1)`` + threadpoolctl) for CPU runs; the Child kernel is timed with
the default thread count at the end too. The machine's load average is printed: ratios measured in one process
hold under load, absolute times do not.
"""

from __future__ import annotations

import argparse
import math
import os
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import torch
from threadpoolctl import threadpool_limits

from torchxplain import settings
from torchxplain.idx import BayesianClassifier, datasets, explain, explain_batch, relation_tensors
from torchxplain.idx import _tables as tables
from torchxplain.idx.stats import relation_shares

KITS = ("md", "sd", "cf")


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(fn: Callable[[], Any], repeat: int, device: str) -> tuple[float, float, Any]:
    """``(first, best of the rest, last result)`` wall times in seconds (one result alive at a time)."""
    sync(device)
    start = time.perf_counter()
    out = fn()
    sync(device)
    first, best = time.perf_counter() - start, math.inf
    for _ in range(repeat):
        del out
        start = time.perf_counter()
        out = fn()
        sync(device)
        best = min(best, time.perf_counter() - start)
    return first, best, out


def fresh(bc: BayesianClassifier) -> BayesianClassifier:
    """The same classifier without cached tables."""
    return BayesianClassifier.from_spec(bc.spec, bc.dtype, bc.bin_edges).to(bc.device)


def child_paths(child: BayesianClassifier, repeat: int, device: str) -> None:
    codes = datasets.all_inputs(child)
    names = child.decode(child.decide(codes))
    records = [{o: row[o] for o in child.observations} for row in names]
    frame = pd.DataFrame(records)
    cold, _, _ = timed(lambda: relation_tensors(fresh(child), codes, KITS), 0, device)
    _, kernel, _ = timed(lambda: relation_tensors(child, codes, KITS), repeat, device)
    limit = tables.MAX_FAMILY_TABLE
    tables.MAX_FAMILY_TABLE = 0  # every family evaluated on the rows: the previous design's per-input work
    try:
        _, rows, _ = timed(lambda: relation_tensors(child, codes, ("md", "sd")), repeat, device)
    finally:
        tables.MAX_FAMILY_TABLE = limit
    print(f"\n== Child: {len(codes):,} inputs x {len(child.influences)} influences x MD+SD+CF, device {device}")
    print(f"  kernel relation_tensors(codes): {kernel * 1e3:8.2f} ms warm, {cold * 1e3:8.1f} ms cold (tables built)")
    print(
        f"  (MD+SD evaluated on the rows, without family tables: {rows * 1e3:.2f} ms, {rows / kernel:.0f}x the kernel)"
    )
    paths: dict[str, Callable[[BayesianClassifier], Any]] = {
        "explain_batch(list of dicts)": lambda bc: explain_batch(bc, records, KITS),
        "explain_batch(DataFrame)": lambda bc: explain_batch(bc, frame, KITS),
        "explain_batch(codes)": lambda bc: explain_batch(bc, codes, KITS),
        "explain(dicts) per kit -> Explanations": lambda bc: [explain(bc, records, k) for k in KITS],
        "explain(DataFrame) per kit": lambda bc: [explain(bc, frame, k) for k in KITS],
        "explain(codes) per kit": lambda bc: [explain(bc, codes, k) for k in KITS],
        "+ every Explanation's relations (names)": lambda bc: [
            [e.relations for e in explain(bc, records, k)] for k in KITS
        ],
        "explain_batch(dicts).to_frame() (names)": lambda bc: explain_batch(bc, records, KITS).to_frame(),
    }
    print(f"  {'user path':44s} {'warm ms':>9s} {'x kernel':>9s} {'cold ms':>9s}  target <= 1.5x")
    for name, path in paths.items():
        cold, _, _ = timed(lambda path=path: path(fresh(child)), 0, device)
        _, best, _ = timed(lambda path=path: path(child), repeat, device)
        ratio = best / kernel
        verdict = "met" if ratio <= 1.5 else "MISSED"
        print(f"  {name:44s} {best * 1e3:9.2f} {ratio:9.2f} {cold * 1e3:9.1f}  {verdict}")


def ancestral_sample(network: Any, bc: BayesianClassifier, n: int, seed: int) -> torch.Tensor:
    """``n`` draws of the observations from the network's joint distribution: codes ``(n, |O|)`` in bc's order."""
    gen = torch.Generator().manual_seed(seed)
    drawn: dict[str, torch.Tensor] = {}
    order = list(network.get_cpds())
    while len(drawn) < len(order):
        for cpd in order:
            var = cpd.variable
            parents = list(cpd.variables[1:])
            if var in drawn or any(p not in drawn for p in parents):
                continue
            table = torch.as_tensor(np.asarray(cpd.get_values(), dtype=np.float64))  # (|V(var)|, prod parents)
            column = torch.zeros(n, dtype=torch.long)
            for p, card in zip(parents, cpd.cardinality[1:]):
                column = column * int(card) + drawn[p]
            cum = table.T.cumsum(dim=1)[column]  # (n, |V(var)|)
            u = torch.rand(n, 1, generator=gen, dtype=torch.float64) * cum[:, -1:]
            drawn[var] = (cum < u).sum(dim=1).clamp(max=table.shape[0] - 1)
    states = {v: [str(s) for s in network.states[v]] for v in network.nodes()}
    cols = []
    for o in bc.observations:  # pgmpy's state order is the classifier's value order
        assert states[o] == list(bc.value_names[o]), o
        cols.append(drawn[o])
    return torch.stack(cols, dim=1)


def alarm_bulk(n: int, repeat: int, device: str) -> None:
    start = time.perf_counter()
    network = datasets.pgmpy_network("alarm")
    alarm = datasets.alarm().to(device)
    built = time.perf_counter() - start
    codes = ancestral_sample(network, alarm, n, seed=0).to(device)
    print(f"\n== Alarm: {n:,} inputs sampled from the network x {len(alarm.influences)} influences x MD+SD+CF")
    print(f"  (classifier built from pgmpy by variable elimination in {built:.1f} s, not counted)")
    cold, kernel, result = timed(lambda: relation_tensors(alarm, codes, KITS), repeat, device)
    del result
    print(f"  kernel relation_tensors(codes): {kernel:7.2f} s warm, {cold:7.2f} s cold (tables built)")
    bulk_paths(alarm, codes, kernel, repeat, device)
    batch = explain_batch(alarm, codes, KITS)
    first, _, wide = timed(batch.to_frame, 0, device)
    print(
        f"  {'.to_frame() (wide: one row per input)':44s} {first:7.2f} s  -> {wide.shape[0]:,} x {wide.shape[1]} frame"
    )
    del batch, wide
    shares = relation_shares(alarm, codes)
    print("  shares (%): " + "  ".join(f"{k} {v:.1f}" for k, v in shares.items()))


def bulk_paths(bc: BayesianClassifier, codes: torch.Tensor, kernel: float, repeat: int, device: str) -> None:
    """Time the bulk user paths on codes and on a DataFrame of value names (built beforehand, not counted)."""
    start = time.perf_counter()
    frame = value_frame(bc, codes)
    print(f"  (a DataFrame of value names built in {time.perf_counter() - start:.2f} s, not counted)")
    rows = {
        "explain_batch(codes)": lambda: explain_batch(bc, codes, KITS),
        "explain_batch(DataFrame of value names)": lambda: explain_batch(bc, frame, KITS),
        "relation_shares(codes)": lambda: relation_shares(bc, codes),
    }
    for name, fn in rows.items():
        _, best, _ = timed(fn, repeat, device)
        print(f"  {name:44s} {best:7.2f} s  ({best / kernel:5.2f}x kernel)")


def value_frame(bc: BayesianClassifier, codes: torch.Tensor) -> pd.DataFrame:
    """The inputs as a DataFrame of value names, one column per observation."""
    return pd.DataFrame(
        {
            o: np.asarray(bc.value_names[o], dtype=object)[codes[:, j].cpu().numpy()]
            for j, o in enumerate(bc.observations)
        }
    )


class LoopIDX:
    """Straightforward reference: numpy probabilities, Python loops over inputs, influences and values."""

    def __init__(self, bc: BayesianClassifier, cf: bool) -> None:
        self.bc = bc
        cpu = BayesianClassifier.from_spec(bc.spec, bc.dtype)  # a CPU copy (bc may live on a GPU)
        self.prior = {
            c: cpu.log_prior[cpu.index_of(c), : len(bc.value_names[c])].exp().numpy() for c in bc.classifications
        }
        self.cpt = {
            (x, c): cpu.log_cpt[e, : len(bc.value_names[c]), : len(bc.value_names[x])].exp().numpy()
            for e, (x, c) in enumerate(bc.influences)
        }
        self.weight = {v: cpu.sd_weight[cpu.index_of(v), : len(bc.value_names[v])].numpy() for v in bc.variables}
        self.order = [c for level in bc.levels for c in level]
        self.tol = 64 * np.finfo(np.float64).eps
        self.table = None
        if cf:  # sigma over every assignment of the observations, as an (N, n) array
            rows = [self.sigma(list(a)) for a in np.ndindex(*[len(bc.value_names[o]) for o in bc.observations])]
            self.table = np.array([[r[v] for v in bc.variables] for r in rows])

    def posterior(self, c: str, a: dict) -> np.ndarray:
        s = self.prior[c].copy()
        for x in self.bc.structure[c]:
            s = s * self.cpt[(x, c)][:, a[x]]
        z = s.sum()
        return s / z if z > 0 else np.full_like(s, 1.0 / len(s))

    def sigma(self, codes: list[int]) -> dict:
        a = dict(zip(self.bc.observations, codes))
        for c in self.order:
            a[c] = int(np.argmax(self.posterior(c, a)))
        return a

    def relations(self, codes: list[int], kits: tuple[str, ...]) -> dict:
        bc, a = self.bc, self.sigma(codes)
        out: dict[str, dict[str, list[bool]]] = {
            k: {"attack": [], "support": [], "critical": [], "potential": []} for k in kits
        }
        col = {v: i for i, v in enumerate(bc.variables)}
        for x, y in bc.influences:
            base = self.posterior(y, a)[a[y]]
            alts = [k for k in range(len(bc.value_names[x])) if k != a[x]]
            d = np.array([self.posterior(y, {**a, x: k})[a[y]] - base for k in alts])
            ps = d + base
            d[np.abs(d) <= self.tol * np.maximum(ps, base)] = 0.0
            if "md" in kits:
                out["md"]["attack"].append(bool(alts) and bool((d > 0).all()))
                out["md"]["support"].append(bool(alts) and bool((d < 0).all()))
            if "sd" in kits:
                score = float((self.weight[x][alts] * d).sum())
                out["sd"]["attack"].append(score > 0)
                out["sd"]["support"].append(score < 0)
            if "cf" in kits:
                t = self.table
                others = [z for z in bc.structure[y] if z != x]
                same_others = np.all(t[:, [col[z] for z in others]] == [a[z] for z in others], axis=1)
                s_set = same_others & (t[:, col[x]] != a[x])
                crit = bool(s_set.any()) and not bool((t[s_set, col[y]] == a[y]).any())
                pot = False
                if not crit:
                    first = t[(t[:, col[x]] == a[x]) & (t[:, col[y]] == a[y])][:, [col[z] for z in others]]
                    second = t[(t[:, col[x]] != a[x]) & (t[:, col[y]] != a[y])][:, [col[z] for z in others]]
                    pot = bool(len({tuple(r) for r in first} & {tuple(r) for r in second}))
                out["cf"]["critical"].append(crit)
                out["cf"]["potential"].append(pot)
        return out


def cross_check(
    name: str, bc: BayesianClassifier, codes: torch.Tensor, kits: tuple[str, ...], rows: int, device: str
) -> None:
    bc, codes = bc.to(device), codes.to(device)
    _, bulk, batch = timed(lambda: explain_batch(bc, codes, kits), 1, device)
    start = time.perf_counter()
    loop = LoopIDX(bc, "cf" in kits)
    setup = time.perf_counter() - start
    picked = torch.linspace(0, len(codes) - 1, min(rows, len(codes))).long().tolist()
    start = time.perf_counter()
    ref = [loop.relations(codes[i].tolist(), kits) for i in picked]
    per_loop = (time.perf_counter() - start) / len(picked)
    mismatches = sum(
        int(batch.relations(k)[n][i, e]) != int(r[k][n][e])
        for i, r in zip(picked, ref)
        for k in kits
        for n in batch.relations(k)
        for e in range(len(bc.influences))
    )
    per_bulk = bulk / len(codes)
    print(
        f"  {name:28s} {len(codes):>9,} inputs x {len(bc.influences):>3} infl. {'+'.join(kits):9s} bulk "
        f"{per_bulk * 1e6:8.2f} us/input, loop {per_loop * 1e3:7.2f} ms/input ({per_loop / per_bulk:9.0f}x; "
        f"+{setup:.1f} s CF table), mismatches {mismatches}"
    )


def votes_nbc(missing: str) -> tuple[BayesianClassifier, torch.Tensor]:
    from sklearn.naive_bayes import CategoricalNB

    df = datasets.votes(missing)
    feats = [c for c in df.columns if c != "party"]
    cats = ["n", "y", "?"] if missing == "keep" else ["n", "y"]
    codes = np.stack([[cats.index(v) for v in df[c]] for c in feats], axis=1)
    nb = CategoricalNB(alpha=1.0, class_prior=[0.4, 0.6]).fit(codes, df["party"])
    bc = BayesianClassifier.from_sklearn(nb, feats, class_name="party", value_names={f: cats for f in feats})
    return bc, torch.as_tensor(codes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10^5 alarm inputs, fewer loop inputs")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--repeat", type=int, default=5, help="warm repetitions (best is reported)")
    parser.add_argument("--alarm", type=int, default=None, help="alarm inputs (default 10^6, 10^5 with --quick)")
    args = parser.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device here")
    warnings.simplefilter("ignore")
    default_threads = torch.get_num_threads()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"torch {torch.__version__}, device {args.device}, {os.cpu_count()} CPUs, load average {load:.1f}")
    with threadpool_limits(1), settings.show_progress(False):
        torch.set_num_threads(1)
        child = datasets.child().to(args.device)
        child_paths(child, args.repeat, args.device)
        alarm_bulk(args.alarm or (10**5 if args.quick else 10**6), max(3, args.repeat // 2), args.device)
        print("\n== Cross-check against a per-input loop (relations must be identical)")
        rows = 30 if args.quick else 200
        cross_check("child", child, datasets.all_inputs(child), KITS, rows, args.device)
        votes, vx = votes_nbc("keep")
        cross_check("votes (NBC, y/n/?)", votes, vx, ("md", "sd"), rows, args.device)
        if not args.quick:  # the loop's CF needs sigma over 2^16 assignments in Python (seconds per input)
            binary, bx = votes_nbc("mode")
            cross_check("votes (NBC, y/n)", binary, bx, KITS, 3, args.device)
        car_df = datasets.car()
        car = BayesianClassifier.fit(car_df, "class", values=datasets.CAR_VALUES)
        cross_check("car (NBC)", car, car.encode(car_df), KITS, rows, args.device)
        alarm = datasets.alarm()
        gen = torch.Generator().manual_seed(1)
        cards = alarm.cardinality[alarm.observation_index]
        cross_check(
            "alarm (uniform inputs)",
            alarm,
            (torch.rand(5000, len(cards), generator=gen) * cards).long(),
            ("md", "sd"),
            rows,
            args.device,
        )
        torch.set_num_threads(default_threads)
    codes = datasets.all_inputs(child)
    with settings.show_progress(False):
        _, best, _ = timed(lambda: relation_tensors(child, codes, KITS), args.repeat, args.device)
    print(f"\nChild kernel with the default {default_threads} threads (warm): {best * 1e3:.2f} ms")


if __name__ == "__main__":
    main()

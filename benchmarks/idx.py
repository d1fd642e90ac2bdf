"""IDX benchmark: batched relation tensors vs a straightforward per-input loop, measured in one run.

    python benchmarks/idx.py            # Child (all 1,080 inputs), votes and car NBCs, alarm
    python benchmarks/idx.py --quick    # smaller loop samples, no alarm CF

Prints, per classifier: the batched time for all inputs x every influence x the kits, the loop's time
per input and the ratio (loop / batched, per input), whether both give identical relations, and the
relation shares next to the paper's Table 4 where it reports them. One thread is pinned
(``torch.set_num_threads(1)`` + threadpoolctl); the default thread count is reported too.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from torchxplain.idx import BayesianClassifier, datasets, explain, relation_tensors
from torchxplain.idx.stats import relation_shares, shares_from_relations, structural_share

PAPER = {
    "child": {"SD+": 77.5, "SD-": 22.5, "MD+": 65.4, "MD-": 15.1, "CF!": 34.6, "CF*": 27.6, "R^C": 64.0},
    "votes": {"SD+": 77.1, "SD-": 22.9, "MD+": 77.1, "MD-": 22.9, "CF!": 3.0, "CF*": 74.1},
    "car": {"SD+": 57.4, "SD-": 42.6, "MD+": 39.3, "MD-": 21.1, "CF!": 14.2, "CF*": 66.4},
}


class LoopIDX:
    """Straightforward reference: numpy probabilities, Python loops over inputs, influences and values."""

    def __init__(self, bc: BayesianClassifier, cf_table: bool) -> None:
        self.bc = bc
        self.prior = {
            c: bc.log_prior[bc.index_of(c), : len(bc.value_names[c])].exp().numpy() for c in bc.classifications
        }
        self.cpt = {
            (x, c): bc.log_cpt[e, : len(bc.value_names[c]), : len(bc.value_names[x])].exp().numpy()
            for e, (x, c) in enumerate(bc.influences)
        }
        self.weight = {v: bc.sd_weight[bc.index_of(v), : len(bc.value_names[v])].numpy() for v in bc.variables}
        self.order = [c for level in bc.levels for c in level]
        self.tol = 64 * np.finfo(np.float64).eps
        self.table = None
        if cf_table:  # sigma over every assignment of the observations, as a (N, n) array
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
        out = {
            "md": {"attack": [], "support": []},
            "sd": {"attack": [], "support": []},
            "cf": {"critical": [], "potential": []},
        }
        col = {v: i for i, v in enumerate(bc.variables)}
        for x, y in bc.influences:
            base = self.posterior(y, a)[a[y]]
            alts = [k for k in range(len(bc.value_names[x])) if k != a[x]]
            d = np.array([self.posterior(y, {**a, x: k})[a[y]] - base for k in alts])
            ps = d + base
            d[np.abs(d) <= self.tol * np.maximum(ps, base)] = 0.0
            out["md"]["attack"].append(bool(alts) and bool((d > 0).all()))
            out["md"]["support"].append(bool(alts) and bool((d < 0).all()))
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
        return {k: out[k] for k in kits}


def compare(
    name: str, bc: BayesianClassifier, inputs: torch.Tensor, kits: tuple[str, ...], loop_rows: int, repeats: int
) -> dict:
    bc.__dict__.pop("_cf_cache", None)
    start = time.perf_counter()
    sigma, rel = relation_tensors(bc, inputs, kits)
    cold = time.perf_counter() - start
    warm = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        relation_tensors(bc, inputs, kits)
        warm = min(warm, time.perf_counter() - start)
    start = time.perf_counter()
    loop = LoopIDX(bc, "cf" in kits)
    setup = time.perf_counter() - start
    idx = torch.linspace(0, len(inputs) - 1, min(loop_rows, len(inputs))).long()
    start = time.perf_counter()
    ref = [loop.relations(inputs[i].tolist(), kits) for i in idx.tolist()]
    loop_time = time.perf_counter() - start
    mismatches = sum(
        int(rel[k][n][i, e].item()) != int(r[k][n][e])
        for i, r in zip(idx.tolist(), ref)
        for k in kits
        for n in r[k]
        for e in range(len(bc.influences))
    )
    per_batched = cold / len(inputs)
    per_loop = loop_time / len(idx)
    print(f"\n== {name}: {len(inputs):,} inputs x {len(bc.influences)} influences x {'+'.join(kits).upper()}")
    print(
        f"  batched, one call: {cold * 1e3:8.1f} ms cold (first call, incl. CF tables if asked), "
        f"{warm * 1e3:8.1f} ms warm"
    )
    print(f"  loop: {per_loop * 1e3:.3f} ms/input over {len(idx)} inputs (+ {setup:.2f} s CF table setup)")
    print(
        f"  ratio loop/batched per input: {per_loop / per_batched:8.1f}x cold, {per_loop * len(inputs) / warm:8.1f}x "
        f"warm; relation mismatches on the loop's inputs: {mismatches}"
    )
    return shares_from_relations(rel)


def print_shares(name: str, shares: dict, bc: BayesianClassifier) -> None:
    shares = {**shares, "R^C": structural_share(bc)}
    keys = [k for k in ("SD+", "SD-", "MD+", "MD-", "CF!", "CF*", "R^C") if k in shares]
    print("  shares (%):  " + "  ".join(f"{k} {shares[k]:5.1f}" for k in keys))
    if name in PAPER:
        print("  paper T4 (%): " + "  ".join(f"{k} {PAPER[name][k]:5.1f}" for k in keys if k in PAPER[name]))


def votes_nbc(missing: str = "keep") -> tuple[BayesianClassifier, torch.Tensor]:
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
    parser.add_argument("--quick", action="store_true", help="fewer loop inputs, alarm without CF")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    default_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    loop_rows = 100 if args.quick else 400
    repeats = 3
    with threadpool_limits(1):
        print(f"torch {torch.__version__}, device {args.device}, 1 thread pinned (default {default_threads})")
        child = datasets.child().to(args.device)
        x = datasets.all_inputs(child)
        print_shares("child", compare("child", child, x, ("md", "sd", "cf"), loop_rows, repeats), child)
        sd = relation_shares(child.with_sd_weights("uniform"), x, ("sd",))
        print(f"  SD+/SD- with uniform SD weights: {sd['SD+']:.1f}/{sd['SD-']:.1f} (BN marginals above)")
        start = time.perf_counter()
        explanations = [explain(child, x, kit) for kit in ("md", "sd", "cf")]
        print(
            f"  explain(): {sum(map(len, explanations)):,} Explanation objects (3 kits) in "
            f"{(time.perf_counter() - start) * 1e3:.0f} ms"
        )

        votes, vx = votes_nbc()
        votes = votes.to(args.device)
        print_shares("votes", compare("votes", votes, vx.to(args.device), ("md", "sd"), loop_rows, repeats), votes)
        try:
            relation_tensors(votes, vx, ("cf",))
        except ValueError as err:
            print(f"  CF refused as designed: {err}")

        binary, bx = votes_nbc("mode")
        print_shares(
            "votes",
            compare(
                "votes, '?' -> column mode (binary)",
                binary.to(args.device),
                bx.to(args.device),
                ("md", "sd", "cf"),
                10,
                repeats,
            ),
            binary,
        )

        car_df = datasets.car()
        car = BayesianClassifier.fit(
            car_df, "class", alpha=1.0, values=datasets.CAR_VALUES, class_prior={"class": [0.6, 0.2, 0.1, 0.1]}
        ).to(args.device)
        print_shares("car", compare("car", car, car.encode(car_df), ("md", "sd", "cf"), loop_rows, repeats), car)

        start = time.perf_counter()
        alarm = BayesianClassifier.from_pgmpy(datasets.pgmpy_network("alarm")).to(args.device)
        print(f"\n(alarm: built from pgmpy by variable elimination in {time.perf_counter() - start:.1f} s)")
        gen = torch.Generator().manual_seed(0)
        cards = alarm.cardinality[alarm.observation_index]
        ax = (torch.rand(5000, len(cards), generator=gen) * cards).long().to(args.device)
        shares = compare("alarm", alarm, ax, ("md", "sd"), loop_rows, 1)
        if not args.quick:  # the loop would need sigma over all 279,936 assignments in Python: batched CF only
            alarm.__dict__.pop("_cf_cache", None)
            start = time.perf_counter()
            _, rel = relation_tensors(alarm, ax, ("cf",))
            print(
                f"  batched CF over all {math.prod(cards.tolist()):,} observation assignments (tables included): "
                f"{(time.perf_counter() - start) * 1e3:.0f} ms"
            )
            shares.update(shares_from_relations(rel))
        print_shares("alarm", shares, alarm)
        shares = relation_shares(datasets.asia(), datasets.all_inputs(datasets.asia()))
        print("\n== asia (all 4 inputs), Table 4 row: " + "  ".join(f"{k} {v:.1f}" for k, v in shares.items()))
    torch.set_num_threads(default_threads)
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        relation_tensors(child, x, ("md", "sd", "cf"))
        best = min(best, time.perf_counter() - start)
    print(f"\nchild MD+SD+CF batched with the default {default_threads} threads (warm): {best * 1e3:.1f} ms")


if __name__ == "__main__":
    main()

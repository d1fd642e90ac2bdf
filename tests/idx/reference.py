"""A deliberately simple pure-Python reference for IDX (no tensors), used as an independent oracle.

A classifier is given as plain dicts: ``values[var] -> list of names``, ``structure[c] -> children``,
``prior[c] -> list``, ``cpt[(c, x)] -> rows over c of lists over x``, ``weights[x] -> list``.
"""

from __future__ import annotations

import itertools


class RefBC:
    def __init__(self, values, structure, prior, cpt, weights=None):
        self.values, self.structure, self.prior, self.cpt = values, structure, prior, cpt
        self.weights = weights or prior
        self.cls = [v for v in values if v in structure]
        self.obs = [v for v in values if v not in structure]
        order, done = [], set(self.obs)
        while len(order) < len(self.cls):
            for c in self.cls:
                if c not in done and all(x in done for x in structure[c]):
                    order.append(c)
                    done.add(c)
        self.order = order

    def posterior(self, c, assigned):
        """P(c | its influencers at the values in ``assigned`` (codes))."""
        scores = []
        for k in range(len(self.values[c])):
            s = self.prior[c][k]
            for x in self.structure[c]:
                s *= self.cpt[(c, x)][k][assigned[x]]
            scores.append(s)
        z = sum(scores)
        if z == 0:
            return [1.0 / len(scores)] * len(scores)
        return [s / z for s in scores]

    def sigma(self, obs_codes):
        a = dict(zip(self.obs, obs_codes))
        for c in self.order:
            post = self.posterior(c, a)
            a[c] = max(range(len(post)), key=lambda k: (post[k], -k))
        return a

    def relations(self, obs_codes, tol=1e-12):
        """{kit: {name: set of pairs}} for md, sd, cf (Defs. 7-9 as read in the IDX note)."""
        a = self.sigma(obs_codes)
        out = {
            "md": {"attack": set(), "support": set()},
            "sd": {"attack": set(), "support": set()},
            "cf": {"critical": set(), "potential": set()},
        }
        table = [self.sigma(list(o)) for o in itertools.product(*[range(len(self.values[v])) for v in self.obs])]
        for y in self.cls:
            base = self.posterior(y, a)[a[y]]
            for x in self.structure[y]:
                alts = [k for k in range(len(self.values[x])) if k != a[x]]
                ps = [self.posterior(y, {**a, x: k})[a[y]] for k in alts]
                d = [0.0 if abs(p - base) <= tol else p - base for p in ps]
                if alts and all(v > 0 for v in d):
                    out["md"]["attack"].add((x, y))
                if alts and all(v < 0 for v in d):
                    out["md"]["support"].add((x, y))
                w = [self.weights[x][k] for k in alts]
                if sum(w) > 0:
                    mean = sum(wk * p for wk, p in zip(w, ps)) / sum(w)
                    if mean - base > tol:
                        out["sd"]["attack"].add((x, y))
                    if base - mean > tol:
                        out["sd"]["support"].add((x, y))
                others = [z for z in self.structure[y] if z != x]
                s_set = [b for b in table if b[x] != a[x] and all(b[z] == a[z] for z in others)]
                critical = bool(s_set) and all(b[y] != a[y] for b in s_set)
                if critical:
                    out["cf"]["critical"].add((x, y))
                else:
                    first = [b for b in table if b[x] == a[x] and b[y] == a[y]]
                    second = [b for b in table if b[x] != a[x] and b[y] != a[y]]
                    if any(all(b1[z] == b2[z] for z in others) for b1 in first for b2 in second):
                        out["cf"]["potential"].add((x, y))
        return a, out

    def all_inputs(self):
        return [list(o) for o in itertools.product(*[range(len(self.values[v])) for v in self.obs])]


def random_bc(rng, naive: bool, n_obs: int, n_cls: int, max_card: int = 3, class_card: int | None = None):
    """A random NBC (n_cls ignored) or BCC as plain dicts, drawn with ``random.Random`` ``rng``."""
    values = {}
    obs = [f"o{i}" for i in range(n_obs)]
    cls = ["c0"] if naive else [f"c{i}" for i in range(n_cls)]
    for v in obs + cls:
        k = class_card if (class_card and v in cls) else rng.randint(2, max_card)
        values[v] = [f"{v}_{i}" for i in range(k)]
    structure = {}
    if naive:
        structure["c0"] = list(obs)
    else:
        # c_i may have children among observations and classifications c_j with j > i (a DAG)
        for i, c in enumerate(cls):
            cand = obs + cls[i + 1 :]
            kids = rng.sample(cand, rng.randint(1, min(3, len(cand))))
            structure[c] = kids
        for o in obs:  # every observation feeds some classification
            if not any(o in k for k in structure.values()):
                structure[rng.choice(cls)].append(o)

    def dist(k):
        w = [rng.random() + 0.05 for _ in range(k)]
        return [v / sum(w) for v in w]

    prior = {v: dist(len(values[v])) for v in values}
    cpt = {(c, x): [dist(len(values[x])) for _ in values[c]] for c in structure for x in structure[c]}
    return values, structure, prior, cpt

"""The counterfactual kit (Def. 9 of Rago et al. 2021, read as in the IDX note) as family tables.

Def. 9 quantifies over assignments of the observations, with classifications at their predicted values (the
hard chain). For an influence ``(x, y)`` both tests depend on an input only through the joint value of ``y``'s
influencers, so both are tabulated per family over every joint value:

* **critical**: some *reachable* joint value changes ``x`` while keeping ``y``'s other influencers, and every
  such value changes ``y``'s decision;
* **potential**: not critical, and in some context of the other influencers ``x = sigma(a, x)`` yields
  ``y = sigma(a, y)`` while another value of ``x`` yields another value of ``y`` (the context need not be
  ``a``'s).

A joint value is reachable when some assignment of the observations produces it through the chain: always for
a family of observations; for the others the decision function runs over all ``prod |V(o)|`` assignments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain._core import check_int, chunk_bounds, rows_per_chunk, settings
from torchxplain.idx._classifier import BayesianClassifier, check_classifier
from torchxplain.idx._tables import Family, decide, decision_table, families

DEFAULT_MAX_CF_ASSIGNMENTS = 2**21


@dataclass(frozen=True)
class CounterfactualTables:
    """Critical and potential relations of every family (in the classifier's family order).

    Attributes:
        critical: per family, ``(M_y, m)`` bool: influence ``j`` is critical at joint value ``code``.
        potential: per family, ``(M_y, m)`` bool: potential (and not critical) there.
        reachable: per family, ``(M_y,)`` bool: some assignment of the observations produces the joint value.
    """

    critical: tuple[Tensor, ...]
    potential: tuple[Tensor, ...]
    reachable: tuple[Tensor, ...]


def _check_sizes(bc: BayesianClassifier, max_assignments: int) -> int:
    """The number of observation assignments reachability needs (0 when none); refuses oversized tables."""
    for f in families(bc):
        if f.size > max_assignments:
            c = bc.variables[f.y]
            raise ValueError(
                f"the counterfactual kit needs {c!r}'s decision over all {f.size:,} joint values of its influencers "
                f"{bc.influences_of(c)}, above max_cf_assignments={max_assignments:,}; raise max_cf_assignments to "
                "allow it (time and memory grow with it) or use the md/sd kits"
            )
    if not any(f.chained for f in families(bc)):
        return 0
    n_assign = math.prod(len(bc.value_names[o]) for o in bc.observations)
    if n_assign > max_assignments:
        raise ValueError(
            f"the counterfactual kit needs the decision function over all {n_assign:,} assignments of the "
            f"observations {bc.observations}, above max_cf_assignments={max_assignments:,}; raise "
            "max_cf_assignments to allow it (time and memory grow with it) or use the md/sd kits"
        )
    return n_assign


def _reachable(bc: BayesianClassifier, n_assign: int) -> list[Tensor]:
    """Per family, which joint values some observation assignment produces (all of them for observation families)."""
    fams = families(bc)
    chained = [i for i, f in enumerate(fams) if f.chained]
    out = [torch.ones(f.size, dtype=torch.bool, device=bc.device) for f in fams]
    for i in chained:
        out[i].zero_()
    cards = torch.tensor([len(bc.value_names[o]) for o in bc.observations], device=bc.device)
    strides = torch.tensor([math.prod(cards.tolist()[j + 1 :]) for j in range(len(cards))], device=bc.device)
    rows = rows_per_chunk(16 * len(bc.variables) * 4, n_assign)
    for start, stop in chunk_bounds(n_assign, rows):
        idx = torch.arange(start, stop, device=bc.device)
        sig = decide(bc, torch.div(idx[:, None], strides, rounding_mode="floor") % cards)
        for i in chained:
            out[i][fams[i].codes(sig)] = True
    return out


def _potential(f: Family, decision: Tensor, reachable: Tensor, n_values: int) -> Tensor:
    """``(m, V, V)`` bool: with ``x_j = u`` and ``y = s`` is influence ``j`` potential (ignoring criticality)?"""
    out = torch.zeros((len(f.cards), n_values, n_values), dtype=torch.bool, device=decision.device)
    s = torch.arange(n_values, device=decision.device)
    for j, card in enumerate(f.cards):
        g = decision.reshape(f.cards).movedim(j, 0).reshape(card, -1)  # (V(x_j), contexts)
        r = reachable.reshape(f.cards).movedim(j, 0).reshape(card, -1)
        agree = r[:, :, None] & (g[:, :, None] == s)  # a' with x_j = u reaching y = s
        differ = r[:, :, None] & (g[:, :, None] != s)  # a'' with x_j = v reaching y != s
        others = differ.sum(dim=0, keepdim=True) - differ.long()  # how many v != u do, per context
        out[j, :card] = (agree & (others > 0)).any(dim=1)
    return out


def _family_bits(
    f: Family, decision: Tensor, reachable: Tensor, potential: Tensor, n_values: int
) -> tuple[Tensor, Tensor]:
    """``(critical, potential)`` ``(M, m)`` of family ``f`` at every joint value, chunked over codes."""
    m = len(f.cards)
    ks = torch.arange(n_values, device=decision.device)
    exists = ks[None, :] < torch.tensor(f.cards, device=decision.device)[:, None]  # (m, V)
    crit, pot = [], []
    for start, stop in chunk_bounds(f.size, rows_per_chunk(24 * m * n_values, f.size)):
        vals = f.values(start, stop)  # (R, m)
        code = torch.arange(start, stop, device=decision.device)
        shifted = code[:, None, None] + (ks[None, None, :] - vals[:, :, None]) * f.strides[None, :, None]
        idx = torch.where(exists[None], shifted, torch.zeros_like(shifted))
        alt = exists[None] & (ks[None, None, :] != vals[:, :, None]) & reachable[idx]
        same = decision[idx] == decision[code][:, None, None]
        critical = alt.any(dim=2) & ~(alt & same).any(dim=2)
        crit.append(critical)
        pot.append(potential[torch.arange(m, device=code.device), vals, decision[code][:, None]] & ~critical)
    return torch.cat(crit), torch.cat(pot)


def counterfactual_tables(
    bc: BayesianClassifier, max_assignments: int = DEFAULT_MAX_CF_ASSIGNMENTS, max_memory: int | str | None = None
) -> CounterfactualTables:
    """Tabulate the counterfactual relations of every family (cached on ``bc`` per ``max_assignments``).

    Args:
        bc: the classifier.
        max_assignments: refuse (``ValueError``) when a family has more joint values, or chained families need
            the decision function over more observation assignments.
        max_memory: budget of the chunked intermediates (default ``tx.settings.max_memory``).
    """
    check_int(max_assignments, "max_cf_assignments", 1, hint=f"e.g. {DEFAULT_MAX_CF_ASSIGNMENTS}")
    bc = check_classifier(bc).computing()
    with settings.using(max_memory=max_memory):
        return bc.cached(("cf", max_assignments), lambda: _build(bc, max_assignments))


def _build(bc: BayesianClassifier, max_assignments: int) -> CounterfactualTables:
    reach = _reachable(bc, _check_sizes(bc, max_assignments))
    n_values = bc.log_prior.shape[1]
    crit, pot = [], []
    for f, r in zip(families(bc), reach):
        decision, _ = decision_table(bc, f)
        c, p = _family_bits(f, decision, r, _potential(f, decision, r, n_values), n_values)
        crit.append(c)
        pot.append(p)
    return CounterfactualTables(tuple(crit), tuple(pot), tuple(reach))


def cf_relations(bc: BayesianClassifier, sigma: Tensor, tables: CounterfactualTables) -> dict[str, Tensor]:
    """Critical and potential influences ``(B, E)`` bool each, for decisions ``sigma (B, n)`` (see the module)."""
    shape = (sigma.shape[0], len(bc.influences))
    out = {name: torch.zeros(shape, dtype=torch.bool, device=sigma.device) for name in ("critical", "potential")}
    sig = sigma.T
    for f, crit, pot in zip(families(bc), tables.critical, tables.potential):
        code = f.codes(sig)
        out["critical"][:, f.influences] = crit[code]
        out["potential"][:, f.influences] = pot[code]
    return out

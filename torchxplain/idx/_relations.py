"""The batched core of IDX: decisions, posteriors and the relations of every influence for many inputs.

:func:`evaluate` runs the chain once per chunk of inputs, family by family in bottom-up order, and reads each
family's decision and relations from its table (:mod:`torchxplain.idx._tables`,
:mod:`torchxplain.idx._counterfactual`) or computes them on the rows. Its cost per input is a few integer
operations per influence, so a million inputs take seconds. :func:`relation_tensors` is its public face.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
from torch import Tensor

from torchxplain._core import check_int, chunk_bounds, progress, rows_per_chunk, settings
from torchxplain.idx._classifier import BayesianClassifier, check_classifier
from torchxplain.idx._counterfactual import DEFAULT_MAX_CF_ASSIGNMENTS, CounterfactualTables, counterfactual_tables
from torchxplain.idx._kits import RELATION_NAMES, check_kits, check_rtol
from torchxplain.idx._tables import (
    DIALECTICAL_NAMES,
    Family,
    decide_rows,
    decision_table,
    dialectical_table,
    families,
    family_relations,
    tabulate,
)


@dataclass(frozen=True)
class Evaluation:
    """What one pass of the chain gives for ``B`` inputs.

    Attributes:
        sigma: ``(B, n)`` long, the decision function over all variables.
        log_prob: ``(B, n)``, ``log P(sigma(a, v) | a)`` of every variable (0 for observations).
        relations: ``relations[kit][name]`` bool ``(B, E)`` over ``bc.influences``.
    """

    sigma: Tensor
    log_prob: Tensor
    relations: dict[str, dict[str, Tensor]]


@dataclass(frozen=True)
class _Plan:
    """How one family is evaluated for a batch: through tables or on the rows.

    ``bits`` ``(len(packed), m, M)`` holds the tabulated relations ``packed`` (a contiguous run ``first..`` of
    the requested names); ``direct`` says that MD/SD are computed on the rows.
    """

    family: Family
    decision: tuple[Tensor, Tensor] | None  # decision and log-prob tables, else computed on the rows
    bits: Tensor | None
    first: int
    direct: bool


def _stack(found: dict[str, Tensor], packed: tuple[str, ...]) -> Tensor:
    """``(len(packed), m, M)`` bool: the tabulated relations ``packed`` of one family, relation-major."""
    return torch.stack([found[n].T for n in packed])


def _plans(
    bc: BayesianClassifier,
    batch: int,
    names: list[str],
    rtol: float | None,
    cf: CounterfactualTables | None,
) -> list[_Plan]:
    dialectical = any(n in DIALECTICAL_NAMES for n in names)
    plans = []
    for i, f in enumerate(families(bc)):
        found: dict[str, Tensor] = {}
        direct = dialectical and not tabulate(bc, f, batch, ("dialectical", f.y, rtol))
        if dialectical and not direct:
            found.update(dialectical_table(bc, f, rtol))
        if cf is not None:
            found.update({"cf.critical": cf.critical[i], "cf.potential": cf.potential[i]})
        packed = [n for n in names if n in found]
        first = names.index(packed[0]) if packed else 0
        if packed != names[first : first + len(packed)]:  # kits ordered md, cf, sd with md/sd on the rows
            packed, direct = [n for n in packed if n.startswith("cf.")], True
            first = names.index(packed[0])
        key = ("bits", f.y, rtol, tuple(packed))
        bits = bc.cached(key, partial(_stack, found, tuple(packed))) if packed else None
        use_table = not direct and (cf is not None or tabulate(bc, f, batch, ("decision", f.y)))
        plans.append(_Plan(f, decision_table(bc, f) if use_table else None, bits, first, direct))
    return plans


def evaluate(
    bc: BayesianClassifier,
    codes: Tensor,
    kits: Sequence[str],
    rtol: float | None = None,
    max_cf_assignments: int = DEFAULT_MAX_CF_ASSIGNMENTS,
) -> Evaluation:
    """Decisions, decided posteriors and the relations of ``kits`` (md, sd, cf) for validated codes ``(B, |O|)``.

    Families are visited bottom-up; each gathers its decision and relations from its tables, or is evaluated
    on the rows (large families). Results are stored variable-major (every variable's and influence's values
    contiguous), so the returned ``(B, n)`` and ``(B, E)`` tensors are transposed views. Chunked over inputs to
    ``tx.settings.max_memory``, with a progress bar over chunks when enabled.
    """
    n_rows, n_vars, n_infl = codes.shape[0], len(bc.variables), len(bc.influences)
    cf = counterfactual_tables(bc, max_cf_assignments) if "cf" in kits else None
    names = [f"{k}.{r}" for k in kits for r in RELATION_NAMES[k]]
    plans = _plans(bc, n_rows, names, rtol, cf)
    device = codes.device
    sig_all = torch.empty((n_vars, n_rows), dtype=torch.long, device=device)
    lp_all = torch.empty((n_vars, n_rows), dtype=bc.dtype, device=device)
    for j, o in enumerate(bc.observation_index.tolist()):
        sig_all[o] = codes[:, j]
        lp_all[o] = 0.0
    masks = torch.empty((len(names), n_infl, n_rows), dtype=torch.bool, device=device)
    n_values = bc.log_prior.shape[1]
    widest = max((len(p.family.cards) for p in plans if p.direct), default=0)
    per_row = 16 * (n_vars + n_infl) + 64 * widest * n_values * n_values
    chunks = chunk_bounds(n_rows, rows_per_chunk(per_row, n_rows))
    for start, stop in progress(chunks, None if len(chunks) > 1 else False, desc="IDX relations"):  # bars for >1 chunk
        sig, lp, out = sig_all[:, start:stop], lp_all[:, start:stop], masks[:, :, start:stop]
        for plan in plans:
            f = plan.family
            if plan.direct:
                rel = family_relations(bc, f, sig[list(f.children)].T, rtol)
                sig[f.y], lp[f.y] = rel["decision"], rel["log_prob"]
                for r, name in enumerate(names):
                    if name in DIALECTICAL_NAMES:
                        out[r, f.influences] = rel[name].T
            elif plan.decision is None:
                sig[f.y], lp[f.y] = decide_rows(bc, f, sig[list(f.children)].T)
            if plan.decision is None and plan.bits is None:
                continue
            code = f.codes(sig)
            if plan.decision is not None:
                torch.gather(plan.decision[0], 0, code, out=sig[f.y])
                torch.gather(plan.decision[1], 0, code, out=lp[f.y])
            if plan.bits is not None:
                dest = out[plan.first : plan.first + plan.bits.shape[0], f.influences]
                torch.gather(plan.bits, 2, code.expand(*dest.shape), out=dest)
    relations = {k: {r: masks[names.index(f"{k}.{r}")].T for r in RELATION_NAMES[k]} for k in kits}
    return Evaluation(sig_all.T, lp_all.T, relations)


def relation_tensors(
    bc: BayesianClassifier,
    inputs: Any,
    kits: str | Sequence[str] = ("md", "sd", "cf"),
    *,
    rtol: float | None = None,
    max_cf_assignments: int = DEFAULT_MAX_CF_ASSIGNMENTS,
    max_memory: int | str | None = None,
    show_progress: bool | None = None,
) -> tuple[Tensor, dict[str, dict[str, Tensor]]]:
    """Relations of every influence for every input, as boolean tensors (the batched core of IDX).

    Args:
        bc: the classifier.
        inputs: anything :meth:`BayesianClassifier.encode` accepts (``B`` inputs).
        kits: any of ``"md"``, ``"sd"``, ``"cf"`` (the influence-based kits).
        rtol: relative tolerance under which posteriors tie (default ``64 * eps`` of the classifier's dtype).
        max_cf_assignments: refuse the counterfactual kit when it would enumerate more assignments.
        max_memory: budget of the chunked intermediates (default ``tx.settings.max_memory``).
        show_progress: tqdm bar over chunks (default ``tx.settings.show_progress``).

    Returns:
        ``(sigma, relations)``: decisions ``(B, n)`` long and ``relations[kit][name]`` bool ``(B, E)`` over
        ``bc.influences``.
    """
    kits = check_kits(kits)
    rtol = check_rtol(rtol)
    check_int(max_cf_assignments, "max_cf_assignments", 1, hint=f"e.g. {DEFAULT_MAX_CF_ASSIGNMENTS}")
    bc = check_classifier(bc).computing()
    with settings.using(max_memory=max_memory, show_progress=show_progress):
        result = evaluate(bc, bc.encode(inputs), kits, rtol, max_cf_assignments)
    return result.sigma, result.relations


def connected(
    bc: BayesianClassifier,
    relation_mask: Tensor,
    explanandum: str,
    pairs: Sequence[tuple[str, str]] | None = None,
) -> tuple[Tensor, Tensor]:
    """Def. 5 connected explanation, batched: which variables reach the explanandum through relations.

    Args:
        relation_mask: ``(B, P)`` bool, ``True`` where pair ``p`` is in some relation.
        explanandum: a classification of ``bc``.
        pairs: the ``(influencer, influencee)`` pairs of the columns (default ``bc.influences``).

    Returns:
        ``(relevant (B, n) bool, kept (B, P) bool)``: ``relevant`` holds the explanandum and every variable with a
        relation path to it; ``kept`` the relations whose influencee is relevant.
    """
    pairs = bc.influences if pairs is None else pairs
    src = [bc.index_of(x) for x, _ in pairs]
    dst = [bc.index_of(y) for _, y in pairs]
    mask = relation_mask.T  # (P, B): contiguous for the kernel's masks, so every pair's column is one row
    relevant = torch.zeros((len(bc.variables), mask.shape[1]), dtype=torch.bool, device=relation_mask.device)
    relevant[bc.index_of(explanandum)] = True
    for _ in range(len(bc.variables)):  # one sweep per level at most; in-place sweeps converge to the same set
        before = relevant.clone()
        for p, (x, y) in enumerate(zip(src, dst)):
            relevant[x] |= mask[p] & relevant[y]
        if torch.equal(before, relevant):
            break
    kept = mask & relevant[dst]
    return relevant.T, kept.T

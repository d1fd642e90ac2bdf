"""Family tables: every classification's decision and relations tabulated over the joint values of its influencers.

The decision of a classification ``y`` and the relations of its influences depend on an input only through the
joint value of ``y``'s influencers, a code ``sum_j v_j * stride_j`` below ``M_y = prod_j |V(x_j)|``. When
``M_y`` is small (at most :data:`MAX_FAMILY_TABLE`, and not much larger than the batch) the family is evaluated
once for every code and inputs only look their rows up; otherwise it is evaluated on the inputs' rows. Both
use :func:`~torchxplain.idx._properties.family_posteriors`, so they agree bit for bit; an input's relations cost
one gather per family. Tables are cached on the classifier
(:meth:`~torchxplain.idx._classifier.BayesianClassifier.cached`).

Kernels here work on decisions laid out variable-major, ``sig (n, B)``, so that every variable's values are
contiguous.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, rows_per_chunk
from torchxplain.idx._classifier import BayesianClassifier
from torchxplain.idx._logmath import safe_log_softmax
from torchxplain.idx._properties import family_posteriors, monotonic, stochastic

MAX_FAMILY_TABLE = 2**18
DIALECTICAL_NAMES = ("md.attack", "md.support", "sd.attack", "sd.support")


@dataclass(frozen=True)
class Family:
    """One classification and its influencers.

    Attributes:
        y: index of the classification in ``bc.variables``.
        children: indices of its influencers in ``bc.variables`` (slot order).
        first: index in ``bc.influences`` of its first influence; its influences are ``first .. first + m - 1``.
        cards: the number of values of each influencer.
        strides: ``(m,)`` long row-major strides of the joint-value code.
        size: ``M_y``, the number of joint values.
        chained: some influencer is a classification.
        stride_values: the strides as Python ints (no device round trip per batch).
    """

    y: int
    children: tuple[int, ...]
    first: int
    cards: tuple[int, ...]
    strides: Tensor
    size: int
    chained: bool
    stride_values: tuple[int, ...]

    @property
    def influences(self) -> slice:
        """The slice of ``bc.influences`` holding this family's influences."""
        return slice(self.first, self.first + len(self.children))

    def codes(self, sig: Tensor) -> Tensor:
        """Joint-value codes ``(B,)`` of the influencers' values in variable-major decisions ``sig (n, B)``."""
        strides = self.stride_values
        code = sig[self.children[0]] * strides[0]
        for child, stride in zip(self.children[1:], strides[1:]):
            code = code + sig[child] * stride
        return code

    def values(self, start: int, stop: int) -> Tensor:
        """Rows ``start..stop-1`` of the row-major enumeration of joint values: codes ``(stop - start, m)``."""
        code = torch.arange(start, stop, device=self.strides.device)
        cards = torch.tensor(self.cards, device=code.device)
        return torch.div(code[:, None], self.strides, rounding_mode="floor") % cards


def families(bc: BayesianClassifier) -> tuple[Family, ...]:
    """The families of every classification in bottom-up (level) order (cached)."""

    def build() -> tuple[Family, ...]:
        out = []
        for c in (c for level in bc.levels for c in level):
            cards = tuple(len(bc.value_names[x]) for x in bc.structure[c])
            # joint-value codes exist only below 2**62 (larger families are never tabulated)
            strides = [math.prod(cards[j + 1 :]) if math.prod(cards) < 2**62 else 0 for j in range(len(cards))]
            out.append(
                Family(
                    bc.index_of(c),
                    tuple(bc.index_of(x) for x in bc.structure[c]),
                    bc.family(c)[0],
                    cards,
                    torch.tensor(strides, device=bc.device),
                    math.prod(cards),
                    any(x in bc.structure for x in bc.structure[c]),
                    tuple(strides),
                )
            )
        return tuple(out)

    return bc.cached("families", build)


def tabulate(bc: BayesianClassifier, f: Family, batch: int, key: Hashable) -> bool:
    """Whether the table cached under ``key`` should serve a batch of ``batch`` rows of family ``f``.

    Yes when it fits :data:`MAX_FAMILY_TABLE` and is cached already or not much larger than the batch.
    """
    return f.size <= MAX_FAMILY_TABLE and (f.size <= 4 * batch or bc.is_cached(key))


def decide_rows(bc: BayesianClassifier, f: Family, values: Tensor) -> tuple[Tensor, Tensor]:
    """``(decision (R,), log P(decision) (R,))`` of family ``f`` for rows of influencer values ``(R, m)``."""
    logits = bc.family_logits(f.y, values)
    decision = logits.argmax(dim=-1)
    return decision, safe_log_softmax(logits, bc.value_mask[f.y]).gather(1, decision[:, None])[:, 0]


def decision_table(bc: BayesianClassifier, f: Family) -> tuple[Tensor, Tensor]:
    """``(decision (M,), log P(decision) (M,))`` of family ``f`` at every joint value (cached, chunked)."""

    def build() -> tuple[Tensor, Tensor]:
        rows = rows_per_chunk(8 * bc.log_prior.shape[1] * (len(f.cards) + 4), f.size)
        parts = [decide_rows(bc, f, f.values(s, e)) for s, e in chunk_bounds(f.size, rows)]
        return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])

    return bc.cached(("decision", f.y), build)


def family_relations(bc: BayesianClassifier, f: Family, values: Tensor, rtol: float | None) -> dict[str, Tensor]:
    """MD and SD relations ``(R, m)`` bool of family ``f`` for rows of influencer values ``(R, m)``.

    Keys :data:`DIALECTICAL_NAMES`, plus ``"decision"`` ``(R,)`` and ``"log_prob"`` ``(R,)``.
    """
    fp = family_posteriors(bc, f.y, values, rtol)
    md = monotonic(fp.diff, fp.alternative)
    sd = stochastic(bc.sd_weight[list(f.children)][None], fp.diff, fp.alternative)
    return {
        "md.attack": md["attack"],
        "md.support": md["support"],
        "sd.attack": sd["attack"],
        "sd.support": sd["support"],
        "decision": fp.decision,
        "log_prob": fp.log_posterior.gather(1, fp.decision[:, None])[:, 0],
    }


def dialectical_table(bc: BayesianClassifier, f: Family, rtol: float | None) -> dict[str, Tensor]:
    """The MD and SD relations ``(M, m)`` of ``f`` at every joint value (cached, chunked).

    The posteriors it computes also give the family's decision table: that is cached too (the same values
    :func:`decision_table` computes), so the classification's posterior is evaluated once per joint value.
    """

    def build() -> dict[str, Tensor]:
        n_values = bc.log_prior.shape[1]
        rows = rows_per_chunk(64 * len(f.cards) * n_values * n_values, f.size)
        parts = [family_relations(bc, f, f.values(s, e), rtol) for s, e in chunk_bounds(f.size, rows)]
        decisions = torch.cat([p["decision"] for p in parts]), torch.cat([p["log_prob"] for p in parts])
        bc.cached(("decision", f.y), lambda: decisions)
        return {k: torch.cat([p[k] for p in parts]) for k in DIALECTICAL_NAMES}

    return bc.cached(("dialectical", f.y, rtol), build)


def decide(bc: BayesianClassifier, codes: Tensor) -> Tensor:
    """The decision function on validated codes ``(B, |O|)`` through the family tables: ``sig (n, B)`` long.

    Equal to :meth:`BayesianClassifier.forward`'s decisions (transposed).
    """
    sig = torch.zeros((len(bc.variables), codes.shape[0]), dtype=torch.long, device=codes.device)
    sig[bc.observation_index] = codes.T
    for f in families(bc):
        if tabulate(bc, f, codes.shape[0], ("decision", f.y)):
            sig[f.y] = decision_table(bc, f)[0][f.codes(sig)]
        else:
            sig[f.y] = bc.family_logits(f.y, sig[list(f.children)].T).argmax(dim=-1)
    return sig

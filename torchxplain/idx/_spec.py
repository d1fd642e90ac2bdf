"""The specification of a Bayesian network classifier: variables, values, structure and probability tables.

A :class:`ClassifierSpec` is the validated, device-free source of truth a
:class:`~torchxplain.idx._classifier.BayesianClassifier` is built from (and saved as): every table is kept in
float64 exactly as given, so :meth:`ClassifierSpec.to_dict` / :meth:`ClassifierSpec.from_dict` round-trip bit
for bit through JSON and rebuild identical classifiers.

Variables are observations (inputs) or classifications (the keys of ``structure``). Every classification ``c``
is a naive Bayes model over its children ``structure[c]`` (its influencers), which may be observations or other
classifications; the structure must be a DAG.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import torch
from torch import Tensor

from torchxplain._core.saved_fields import SavedFieldError, SavedFields

CPT_TOLERANCE = 1e-4
FORMAT = "torchxplain-bayesian-classifier"
VERSION = 1


def as_probabilities(values: Any, name: str, shape: tuple[int, ...]) -> Tensor:
    """``values`` as a float64 tensor of ``shape`` holding finite probabilities >= 0 (rows need not sum to 1).

    Raises:
        ValueError: wrong shape, or a NaN, infinite or negative entry (named with its position).
    """
    try:
        t = (
            values.detach().double().cpu()
            if isinstance(values, Tensor)
            else torch.as_tensor(values, dtype=torch.float64)
        )
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(
            f"{name} must be a list, array or tensor of probabilities of shape {shape}, got {type(values).__name__}"
        ) from None
    if tuple(t.shape) != shape:
        raise ValueError(f"{name} must have shape {shape}, got {tuple(t.shape)}; give one probability per value")
    bad = ~torch.isfinite(t) | (t < 0)
    if bool(bad.any()):
        where = tuple(int(i) for i in bad.nonzero()[0])
        raise ValueError(
            f"{name} must hold finite probabilities >= 0, got {float(t[where])} at position {where}; fix that entry"
        )
    return t


def check_sums(p: Tensor, name: str, rows: Sequence[str] | None = None) -> None:
    """Raise ``ValueError`` unless every row of ``p`` (last axis) sums to 1 within :data:`CPT_TOLERANCE`."""
    sums = p.sum(dim=-1).reshape(-1)
    bad = (sums - 1).abs() > CPT_TOLERANCE
    if bool(bad.any()):
        i = int(bad.nonzero()[0, 0])
        where = f" row {rows[i]!r}" if rows is not None else ""
        raise ValueError(
            f"{name}{where} sums to {float(sums[i]):.6g}, expected 1 (tolerance {CPT_TOLERANCE}); "
            "normalise it (divide by its sum)"
        )


def _names(values: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
    if not isinstance(values, Mapping) or not values:
        raise TypeError(
            f"values must be a non-empty mapping variable name -> sequence of value names, got {type(values).__name__}"
        )
    out = {}
    for var, names in values.items():
        if isinstance(names, str) or not isinstance(names, Sequence):
            raise TypeError(f"values[{var!r}] must be a list of value names, got {type(names).__name__} {names!r}")
        kept = tuple(str(n) for n in names)
        if not kept or len(set(kept)) != len(kept):
            raise ValueError(f"values[{var!r}] must be a non-empty list of distinct names, got {kept}")
        out[str(var)] = kept
    return out


def _structure(structure: Mapping[str, Sequence[str]], variables: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    if not isinstance(structure, Mapping):
        raise TypeError(f"structure must be a mapping classification -> children, got {type(structure).__name__}")
    out = {}
    for c, children in structure.items():
        if c not in variables:
            raise ValueError(
                f"structure names unknown classification {c!r}; variables are {variables}; add it to values"
            )
        if isinstance(children, str) or not isinstance(children, Sequence):
            raise TypeError(f"structure[{c!r}] must be a list of children, got {type(children).__name__}")
        kids = tuple(str(x) for x in children)
        for x in kids:
            if x not in variables:
                raise ValueError(
                    f"structure[{c!r}] names unknown variable {x!r}; variables are {variables}; add it to values"
                )
            if x == c:
                raise ValueError(f"structure[{c!r}] lists {c!r} as its own child (a cycle); remove it")
        if not kids or len(set(kids)) != len(kids):
            raise ValueError(f"structure[{c!r}] must list distinct children, got {kids}")
        out[str(c)] = kids
    if not out:
        raise ValueError("structure must name at least one classification (a variable with children), got {}")
    return out


@dataclass(frozen=True)
class ClassifierSpec:
    """A validated Bayesian network classifier, independent of device and dtype.

    Attributes:
        values: variable name -> its value names, in order (a value's integer code is its position).
        structure: classification name -> its children (influencers); variables that are no key are observations.
        priors: variable name -> float64 prior ``(|V(v)|,)``; present for every classification.
        cpts: ``(c, x)`` -> float64 table ``P(x | c)`` of shape ``(|V(c)|, |V(x)|)`` for every edge.
        sd_weights: variable name -> float64 SD weights ``P(x_k)`` ``(|V(v)|,)`` (Def. 8), for every variable.
    """

    values: dict[str, tuple[str, ...]]
    structure: dict[str, tuple[str, ...]]
    priors: dict[str, Tensor]
    cpts: dict[tuple[str, str], Tensor]
    sd_weights: dict[str, Tensor]

    @classmethod
    def build(
        cls,
        values: Mapping[str, Sequence[str]],
        structure: Mapping[str, Sequence[str]],
        priors: Mapping[str, Any],
        cpts: Mapping[tuple[str, str], Any],
        sd_weights: Mapping[str, Any] | None = None,
    ) -> ClassifierSpec:
        """Validate user tables (see :class:`~torchxplain.idx._classifier.BayesianClassifier` for the arguments).

        SD weights default to ``priors`` where given and to uniform otherwise.

        Raises:
            TypeError, ValueError: naming the argument, the expected and received value, and the fix.
        """
        names = _names(values)
        variables = tuple(names)
        kids = _structure(structure, variables)
        for arg, given in (("priors", priors), ("cpts", cpts)):
            if not isinstance(given, Mapping):
                raise TypeError(f"{arg} must be a mapping, got {type(given).__name__}")
        unknown = sorted(set(priors) - set(variables))
        if unknown:
            raise ValueError(f"priors names unknown variables {unknown}; variables are {variables}")
        kept_priors = {}
        for var in variables:
            if var in priors:
                p = as_probabilities(priors[var], f"priors[{var!r}]", (len(names[var]),))
                check_sums(p, f"priors[{var!r}]")
                kept_priors[var] = p
            elif var in kids:
                raise ValueError(f"priors is missing the class prior of classification {var!r}; add priors[{var!r}]")
        edges = [(c, x) for c in variables if c in kids for x in kids[c]]
        kept_cpts = {}
        for c, x in edges:
            if (c, x) not in cpts:
                raise ValueError(f"cpts is missing the table P({x} | {c}) under key {(c, x)!r}; add it")
            table = as_probabilities(cpts[(c, x)], f"cpts[{(c, x)!r}]", (len(names[c]), len(names[x])))
            check_sums(table, f"cpts[{(c, x)!r}] (P({x} | {c}))", rows=names[c])
            kept_cpts[(c, x)] = table
        extra = sorted(set(cpts) - set(edges))
        if extra:
            raise ValueError(f"cpts has tables for pairs that are no edge of structure: {extra}; remove them")
        weights = kept_priors if sd_weights is None else sd_weights
        if not isinstance(weights, Mapping):
            raise TypeError(f"sd_weights must be a mapping variable -> weights, got {type(weights).__name__}")
        unknown = sorted(set(weights) - set(variables))
        if unknown:
            raise ValueError(f"sd_weights names unknown variables {unknown}; variables are {variables}")
        kept_weights = {
            v: (
                as_probabilities(weights[v], f"sd_weights[{v!r}]", (len(names[v]),))
                if v in weights
                else torch.full((len(names[v]),), 1.0 / len(names[v]), dtype=torch.float64)
            )
            for v in variables
        }
        spec = cls(names, kids, kept_priors, kept_cpts, kept_weights)
        spec.levels  # noqa: B018 - refuses cyclic structures now, at construction
        if not spec.observations:
            raise ValueError(
                "a classifier needs at least one observation (a variable that is no key of structure); every "
                f"variable {variables} has children"
            )
        return spec

    @cached_property
    def variables(self) -> tuple[str, ...]:
        """All variable names, in ``values`` order."""
        return tuple(self.values)

    @cached_property
    def classifications(self) -> tuple[str, ...]:
        """The variables with children, in ``values`` order."""
        return tuple(v for v in self.variables if v in self.structure)

    @cached_property
    def observations(self) -> tuple[str, ...]:
        """The variables without children (the inputs), in ``values`` order."""
        return tuple(v for v in self.variables if v not in self.structure)

    @cached_property
    def influences(self) -> tuple[tuple[str, str], ...]:
        """Every influence ``(x, c)`` (one per edge ``(c, x)``), classification-major in ``values`` order."""
        return tuple((x, c) for c in self.classifications for x in self.structure[c])

    @cached_property
    def levels(self) -> tuple[tuple[str, ...], ...]:
        """Classifications grouped so that each level needs only values of lower levels (children first).

        Raises:
            ValueError: the structure has a cycle (named).
        """
        done = set(self.observations)
        remaining = list(self.classifications)
        levels = []
        while remaining:
            ready = tuple(c for c in remaining if all(x in done for x in self.structure[c]))
            if not ready:
                raise ValueError(
                    f"structure has a cycle among the classifications {sorted(remaining)}; a classifier must be a "
                    "DAG: remove an edge so that no classification is (indirectly) its own child"
                )
            levels.append(ready)
            done.update(ready)
            remaining = [c for c in remaining if c not in ready]
        return tuple(levels)

    def with_sd_weights(self, weights: Mapping[str, Any] | str) -> ClassifierSpec:
        """A copy whose SD weights are replaced: a mapping variable -> weights (others keep theirs) or ``"uniform"``."""
        if isinstance(weights, str):
            if weights != "uniform":
                raise ValueError(f"weights must be a mapping or 'uniform', got {weights!r}")
            new = {v: torch.full((len(n),), 1.0 / len(n), dtype=torch.float64) for v, n in self.values.items()}
        elif isinstance(weights, Mapping):
            unknown = sorted(set(weights) - set(self.variables))
            if unknown:
                raise ValueError(f"weights names unknown variable(s) {unknown}; variables are {self.variables}")
            new = dict(self.sd_weights)
            for var, w in weights.items():
                new[var] = as_probabilities(w, f"weights[{var!r}]", (len(self.values[var]),))
        else:
            raise TypeError(f"weights must be a mapping or 'uniform', got {type(weights).__name__}")
        return ClassifierSpec(self.values, self.structure, self.priors, self.cpts, new)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (floats written with full precision, so :meth:`from_dict` restores them exactly)."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "values": {v: list(n) for v, n in self.values.items()},
            "structure": {c: list(k) for c, k in self.structure.items()},
            "priors": {v: p.tolist() for v, p in self.priors.items()},
            "cpts": [[c, x, t.tolist()] for (c, x), t in self.cpts.items()],
            "sd_weights": {v: w.tolist() for v, w in self.sd_weights.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClassifierSpec:
        """Rebuild a spec written by :meth:`to_dict`, every field checked as strictly as :meth:`build`'s arguments.

        Raises:
            ValueError: not a saved classifier, or another version.
            ValueError: a missing or malformed field (value names that are not strings, tables that are
                not numbers, NaN probabilities, rows that do not sum to 1, ...), named in the message.
        """
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise ValueError(f"data is not a saved Bayesian classifier (expected format {FORMAT!r})")
        if data.get("version") != VERSION:
            raise ValueError(f"saved classifier has version {data.get('version')!r}; this torchxplain reads {VERSION}")
        fields = SavedFields(data)
        values, structure = fields.section("values"), fields.section("structure")
        names = {v: values.names(v) for v in values.keys()}
        kids = {c: structure.names(c) for c in structure.keys()}
        tables = {}
        for arg in ("priors", "sd_weights"):
            section = fields.section(arg)
            tables[arg] = {v: section.numbers(v) for v in section.keys()}
        raw = fields.value("cpts")
        fields.require(
            isinstance(raw, list) and all(isinstance(e, list) and len(e) == 3 for e in raw),
            "cpts",
            "must be a list of [classification, child, table] triples",
        )
        cpts = {}
        for i, (c, x, table) in enumerate(raw):
            entry = SavedFields({"classification": c, "child": x, "table": table}, where=f"cpts[{i}]")
            cpts[(entry.choice("classification", list(kids)), entry.choice("child", list(names)))] = entry.numbers(
                "table"
            )
        try:
            return cls.build(names, kids, tables["priors"], cpts, tables["sd_weights"])
        except (TypeError, ValueError) as err:
            raise SavedFieldError(f"saved classifier: {err}") from None

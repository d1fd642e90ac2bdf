"""Bayesian network classifiers (naive and chain) held as padded log-probability tensors.

A classifier has observations (inputs) and classifications. Every classification ``c`` is a naive
Bayes classifier over its children in the network (its *influencers*), evaluated bottom-up: a child
that is itself a classification feeds in its predicted value (the paper's hard chain). A naive BC
(NBC) is the special case of one classification whose children are all observations.

Shapes used throughout: ``B`` inputs, ``n`` variables, ``V`` the largest number of values of any
variable, ``E`` influences (one per edge ``(c, x)`` of the network; the influence is ``(x, c)``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor, nn

CPT_TOLERANCE = 1e-4


def _as_probabilities(values: Any, name: str, shape: tuple[int, ...]) -> Tensor:
    t = torch.as_tensor(values, dtype=torch.float64) if not isinstance(values, Tensor) else values.double()
    if tuple(t.shape) != shape:
        raise ValueError(f"{name} must have shape {shape}, got {tuple(t.shape)}")
    if not bool(torch.isfinite(t).all()) or bool((t < 0).any()):
        raise ValueError(f"{name} must hold finite probabilities >= 0, got {t.tolist()}")
    return t


def safe_log_softmax(logits: Tensor, valid: Tensor) -> Tensor:
    """Log-normalise ``logits`` over the last axis; rows that are ``-inf`` everywhere become uniform.

    ``valid`` (broadcastable bool, last axis = values) marks the values that exist; a row whose
    unnormalised posterior is 0 for every value (0/0) gets the uniform distribution over valid values.
    """
    top = logits.amax(dim=-1, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    lse = top + torch.log(torch.exp(logits - top).sum(dim=-1, keepdim=True))
    out = logits - lse
    undefined = torch.isneginf(lse)
    if bool(undefined.any()):
        count = valid.sum(dim=-1, keepdim=True).to(logits.dtype)
        uniform = torch.where(valid, -torch.log(count), torch.full_like(count, -math.inf))
        out = torch.where(undefined, uniform.expand_as(out), out)
    return out


class BayesianClassifier(nn.Module):
    """A naive or chain Bayesian network classifier over categorical variables.

    Args:
        values: variable name -> its value names, in order (the integer code of a value is its position).
        structure: classification name -> its children in the network, i.e. its influencers
            (the inputs of its naive Bayes model). Variables that are no key are observations.
        priors: variable name -> prior probabilities ``P(x_i)`` over its values. Required for every
            classification (the class prior); for observations they are used as SD weights and default
            to uniform.
        cpts: ``(c, x)`` -> conditional table ``P(x | c)`` of shape ``(|V(c)|, |V(x)|)``, each row summing
            to 1, for every child ``x`` of every classification ``c``.
        sd_weights: optional variable name -> weights ``P(x_k)`` for the stochastically dialectical kit
            (Def. 8); defaults to ``priors``.
        dtype: floating dtype of the stored tables (``.to(torch.float32)`` converts later).

    Inputs to :meth:`predict_proba`/:meth:`decide` are integer codes ``(B, |O|)``, one column per
    observation in :attr:`observations` order; :meth:`encode` turns value names into codes.
    """

    def __init__(
        self,
        values: Mapping[str, Sequence[str]],
        structure: Mapping[str, Sequence[str]],
        priors: Mapping[str, Any],
        cpts: Mapping[tuple[str, str], Any],
        sd_weights: Mapping[str, Any] | None = None,
        dtype: torch.dtype = torch.float64,
    ) -> None:
        super().__init__()
        if not isinstance(values, Mapping) or not values:
            raise TypeError("values must be a non-empty mapping variable name -> sequence of value names")
        self.variables: tuple[str, ...] = tuple(str(v) for v in values)
        self.value_names: dict[str, tuple[str, ...]] = {}
        for var, names in values.items():
            names = tuple(str(n) for n in names)
            if len(names) < 1 or len(set(names)) != len(names):
                raise ValueError(f"values[{var!r}] must be a non-empty list of distinct names, got {names}")
            self.value_names[str(var)] = names
        index = {v: i for i, v in enumerate(self.variables)}
        self.structure: dict[str, tuple[str, ...]] = {}
        for c, children in structure.items():
            if c not in index:
                raise ValueError(f"structure names unknown classification {c!r}; variables are {self.variables}")
            kids = tuple(str(x) for x in children)
            for x in kids:
                if x not in index:
                    raise ValueError(f"structure[{c!r}] names unknown variable {x!r}; variables are {self.variables}")
                if x == c:
                    raise ValueError(f"structure[{c!r}] lists {c!r} as its own child (a cycle)")
            if not kids or len(set(kids)) != len(kids):
                raise ValueError(f"structure[{c!r}] must list distinct children, got {kids}")
            self.structure[str(c)] = kids
        if not self.structure:
            raise ValueError("structure must name at least one classification")
        self.classifications: tuple[str, ...] = tuple(v for v in self.variables if v in self.structure)
        self.observations: tuple[str, ...] = tuple(v for v in self.variables if v not in self.structure)
        if not self.observations:
            raise ValueError("a classifier needs at least one observation (a variable that is no key of structure)")
        self.levels: tuple[tuple[str, ...], ...] = self._levels()

        card = [len(self.value_names[v]) for v in self.variables]
        n_values = max(card)
        self.influences: tuple[tuple[str, str], ...] = tuple(
            (x, c) for c in self.classifications for x in self.structure[c]
        )
        log_prior = torch.full((len(card), n_values), -math.inf, dtype=torch.float64)
        weights = torch.zeros((len(card), n_values), dtype=torch.float64)
        sd_weights = priors if sd_weights is None else sd_weights
        for var in self.variables:
            k = card[index[var]]
            if var in priors:
                p = _as_probabilities(priors[var], f"priors[{var!r}]", (k,))
                self._check_sums(p, f"priors[{var!r}]")
                log_prior[index[var], :k] = torch.log(p)
            elif var in self.structure:
                raise ValueError(f"priors is missing the class prior of classification {var!r}")
            w = (
                _as_probabilities(sd_weights[var], f"sd_weights[{var!r}]", (k,))
                if var in sd_weights
                else torch.full((k,), 1.0 / k, dtype=torch.float64)
            )
            weights[index[var], :k] = w
        unknown = set(priors) - set(self.variables)
        if unknown:
            raise ValueError(f"priors names unknown variables {sorted(unknown)}")
        log_cpt = torch.full((len(self.influences), n_values, n_values), -math.inf, dtype=torch.float64)
        for e, (x, c) in enumerate(self.influences):
            if (c, x) not in cpts:
                raise ValueError(f"cpts is missing the table P({x} | {c}) under key {(c, x)!r}")
            shape = (card[index[c]], card[index[x]])
            table = _as_probabilities(cpts[(c, x)], f"cpts[{(c, x)!r}]", shape)
            self._check_sums(table, f"cpts[{(c, x)!r}] (P({x} | {c}))", rows=self.value_names[c])
            log_cpt[e, : shape[0], : shape[1]] = torch.log(table)
        extra = set(cpts) - {(c, x) for x, c in self.influences}
        if extra:
            raise ValueError(f"cpts has tables for pairs that are no edge of structure: {sorted(extra)}")

        slots = max(len(k) for k in self.structure.values())
        slot_influence = torch.full((len(card), slots), -1, dtype=torch.long)
        slot_of = torch.zeros(len(self.influences), dtype=torch.long)
        for e, (x, c) in enumerate(self.influences):
            j = self.structure[c].index(x)
            slot_influence[index[c], j] = e
            slot_of[e] = j
        self._index = index
        self.register_buffer("log_prior", log_prior.to(dtype))
        self.register_buffer("sd_weight", weights.to(dtype))
        self.register_buffer("log_cpt", log_cpt.to(dtype))
        # row e * V + k holds log P(x_e = k | y_e) over the values of y_e; a last row of zeros pads absent slots
        rows = torch.cat([log_cpt.transpose(1, 2).reshape(-1, n_values), torch.zeros(1, n_values, dtype=torch.float64)])
        self.register_buffer("cpt_rows", rows.to(dtype))
        self.register_buffer("cardinality", torch.tensor(card, dtype=torch.long))
        self.register_buffer("source", torch.tensor([index[x] for x, _ in self.influences], dtype=torch.long))
        self.register_buffer("target", torch.tensor([index[c] for _, c in self.influences], dtype=torch.long))
        self.register_buffer("slot_influence", slot_influence)
        self.register_buffer("slot", slot_of)
        self.register_buffer("observation_index", torch.tensor([index[o] for o in self.observations]))
        self.register_buffer("value_mask", torch.arange(n_values)[None, :] < torch.tensor(card)[:, None])
        self._level_index = [torch.tensor([index[c] for c in level]) for level in self.levels]
        self.bin_edges: dict[str, Any] = {}

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_pgmpy(cls, network: Any, observations: Sequence[str] | None = None, **kwargs: Any) -> BayesianClassifier:
        """Chain classifier from a pgmpy network (see :func:`torchxplain.idx.io.from_pgmpy`)."""
        from torchxplain.idx.io import from_pgmpy

        return from_pgmpy(network, observations, **kwargs)

    @classmethod
    def from_sklearn(cls, model: Any, feature_names: Sequence[str], **kwargs: Any) -> BayesianClassifier:
        """Naive BC from a fitted ``CategoricalNB`` (see :func:`torchxplain.idx.io.from_sklearn`)."""
        from torchxplain.idx.io import from_sklearn

        return from_sklearn(model, feature_names, **kwargs)

    @classmethod
    def fit(
        cls, frame: Any, structure: str | Mapping[str, Sequence[str]], alpha: float = 1.0, **kwargs: Any
    ) -> BayesianClassifier:
        """Naive or chain BC fitted from a DataFrame (see :func:`torchxplain.idx.io.fit`)."""
        from torchxplain.idx.io import fit

        return fit(frame, structure, alpha, **kwargs)

    def with_sd_weights(self, weights: Mapping[str, Any] | str) -> BayesianClassifier:
        """A copy whose SD weights (Def. 8's ``P(x_k)``) are replaced.

        Args:
            weights: variable name -> weights over its values (others keep theirs), or ``"uniform"``.
        """
        import copy

        out = copy.deepcopy(self)
        out.__dict__.pop("_cf_cache", None)
        if isinstance(weights, str):
            if weights != "uniform":
                raise ValueError(f"weights must be a mapping or 'uniform', got {weights!r}")
            out.sd_weight.copy_(self.value_mask.to(self.sd_weight.dtype) / self.cardinality[:, None])
            return out
        for var, w in weights.items():
            i = self.index_of(var)
            k = int(self.cardinality[i])
            t = _as_probabilities(w, f"weights[{var!r}]", (k,))
            out.sd_weight[i, :k] = t.to(out.sd_weight.dtype)
        return out

    # ------------------------------------------------------------------ structure
    @staticmethod
    def _check_sums(p: Tensor, name: str, rows: Sequence[str] | None = None) -> None:
        sums = p.sum(dim=-1).reshape(-1)
        bad = (sums - 1).abs() > CPT_TOLERANCE
        if bool(bad.any()):
            i = int(bad.nonzero()[0, 0])
            where = f" row {rows[i]!r}" if rows is not None else ""
            raise ValueError(f"{name}{where} sums to {float(sums[i]):.6g}, expected 1 (tolerance {CPT_TOLERANCE})")

    def _levels(self) -> tuple[tuple[str, ...], ...]:
        """Classifications grouped so that every level only needs values of lower levels (children first)."""
        done = set(self.observations)
        remaining = list(self.classifications)
        levels = []
        while remaining:
            ready = tuple(c for c in remaining if all(x in done for x in self.structure[c]))
            if not ready:
                raise ValueError(f"structure has a cycle among the classifications {sorted(remaining)}")
            levels.append(ready)
            done.update(ready)
            remaining = [c for c in remaining if c not in ready]
        return tuple(levels)

    @property
    def is_naive(self) -> bool:
        """True for a single classification whose children are all observations (an NBC)."""
        return len(self.classifications) == 1 and all(
            x in self.observations for x in self.influences_of(self.classifications[0])
        )

    def influences_of(self, y: str) -> tuple[str, ...]:
        """The influencers I(y) of classification ``y`` (its children in the network)."""
        return self.structure.get(y, ())

    def index_of(self, variable: str) -> int:
        """Position of ``variable`` in :attr:`variables` (raises ``ValueError`` for unknown names)."""
        if variable not in self._index:
            raise ValueError(f"unknown variable {variable!r}; variables are {self.variables}")
        return self._index[variable]

    def extra_repr(self) -> str:
        kind = "naive" if self.is_naive else "chain"
        return (
            f"{kind}, observations={list(self.observations)}, classifications={list(self.classifications)}, "
            f"influences={len(self.influences)}"
        )

    # ------------------------------------------------------------------ inputs
    def encode(self, inputs: Any) -> Tensor:
        """Integer codes ``(B, |O|)`` (long, on the classifier's device) from value names or codes.

        ``inputs`` may be a dict observation -> value name (one input), a list of such dicts, a pandas
        DataFrame whose columns include every observation (value names), or an integer tensor/array
        ``(B, |O|)`` of codes in :attr:`observations` column order.
        """
        device = self.cardinality.device
        if isinstance(inputs, Mapping):
            return self.encode([inputs])
        if _is_dataframe(inputs):
            missing = [o for o in self.observations if o not in inputs.columns]
            if missing:
                raise ValueError(f"inputs DataFrame lacks observation columns {missing}; it has {list(inputs.columns)}")
            frame = inputs[list(self.observations)]
            edges = {c: e for c, e in self.bin_edges.items() if c in frame.columns and frame[c].dtype.kind in "iuf"}
            if edges:
                from torchxplain.idx.io import apply_bins

                frame = apply_bins(frame, edges)
            return self.encode(frame.astype(str).to_dict("records"))
        if isinstance(inputs, (list, tuple)) and inputs and isinstance(inputs[0], Mapping):
            rows = []
            for r, row in enumerate(inputs):
                unknown = [k for k in row if k not in self._index]
                if unknown:
                    raise ValueError(
                        f"inputs[{r}] names unknown variables {unknown}; observations are {self.observations}"
                    )
                code = []
                for o in self.observations:
                    if o not in row:
                        raise ValueError(f"inputs[{r}] lacks a value for observation {o!r}")
                    name = str(row[o])
                    if name not in self.value_names[o]:
                        raise ValueError(
                            f"inputs[{r}][{o!r}] = {name!r} is not a value of {o!r}; values are {self.value_names[o]}"
                        )
                    code.append(self.value_names[o].index(name))
                rows.append(code)
            return torch.tensor(rows, dtype=torch.long, device=device)
        codes = torch.as_tensor(inputs) if not isinstance(inputs, Tensor) else inputs
        if codes.is_floating_point() or codes.is_complex() or codes.dtype == torch.bool:
            raise TypeError(f"integer-coded inputs must have an integer dtype, got {codes.dtype}")
        if codes.ndim != 2 or codes.shape[1] != len(self.observations):
            raise ValueError(
                f"integer-coded inputs must have shape (B, {len(self.observations)}) with columns "
                f"{self.observations}, got {tuple(codes.shape)}"
            )
        codes = codes.to(device=device, dtype=torch.long)
        card = self.cardinality[self.observation_index]
        bad = (codes < 0) | (codes >= card)
        if bool(bad.any()):
            r, col = (int(i) for i in bad.nonzero()[0])
            raise ValueError(
                f"inputs[{r}, {col}] = {int(codes[r, col])} is out of range for observation "
                f"{self.observations[col]!r}, expected 0..{int(card[col]) - 1}"
            )
        return codes

    def decode(self, sigma: Tensor) -> list[dict[str, str]]:
        """Value names of a ``(B, n)`` tensor of codes over all :attr:`variables`."""
        rows = sigma.tolist()
        return [{v: self.value_names[v][k] for v, k in zip(self.variables, row)} for row in rows]

    # ------------------------------------------------------------------ inference
    def _rows(self, sigma: Tensor, influence: Tensor) -> Tensor:
        """Row index into :attr:`cpt_rows` of ``log P(sigma(x_e) | y_e)`` for influences ``influence``
        (any shape, ``-1`` = absent, mapped to the zero row): shape ``(B, *influence.shape)``."""
        n_values = self.log_cpt.shape[2]
        safe = influence.clamp(min=0)
        values = sigma.index_select(1, self.source[safe].reshape(-1)).reshape(sigma.shape[0], *influence.shape)
        return torch.where(influence >= 0, safe * n_values + values, self.cpt_rows.shape[0] - 1)

    def _gather_rows(self, rows: Tensor) -> Tensor:
        """``cpt_rows[rows]`` as an embedding lookup: shape ``(*rows.shape, V)``."""
        return torch.nn.functional.embedding(rows, self.cpt_rows)

    def contributions(self, sigma: Tensor) -> Tensor:
        """``log P(sigma(x) | y)`` for every influence ``(x, y)``: ``(B, E, V)`` over the values of ``y``."""
        return self._gather_rows(self._rows(sigma, torch.arange(len(self.influences), device=sigma.device)))

    def _level_logits(self, sigma: Tensor, level: Tensor) -> Tensor:
        """Unnormalised log posteriors ``(B, |level|, V)`` of the classifications in ``level``.

        Children are summed in slot order, like the tabulated decisions of the counterfactual kit, so
        that both give the same decisions bit for bit.
        """
        logits = self.log_prior[level].unsqueeze(0)
        for j in range(self.slot_influence.shape[1]):
            logits = logits + self._gather_rows(self._rows(sigma, self.slot_influence[level, j]))
        return logits

    def forward(self, codes: Tensor) -> tuple[Tensor, Tensor]:
        """Bottom-up evaluation of the chain on validated codes ``(B, |O|)``.

        Returns ``(log_posterior (B, n, V), sigma (B, n))``: the log posterior of every variable (a point
        mass for observations) and the decision function sigma (first value wins ties).
        """
        n_rows = codes.shape[0]
        n_vars, n_values = self.log_prior.shape
        sigma = torch.zeros((n_rows, n_vars), dtype=torch.long, device=codes.device)
        sigma[:, self.observation_index] = codes
        log_post = torch.full((n_rows, n_vars, n_values), -math.inf, dtype=self.log_prior.dtype, device=codes.device)
        log_post.scatter_(2, sigma.unsqueeze(-1), 0.0)
        for level in self._level_index:
            level = level.to(codes.device)
            logits = self._level_logits(sigma, level)
            log_post[:, level] = safe_log_softmax(logits, self.value_mask[level])
            sigma[:, level] = logits.argmax(dim=-1)
        return log_post, sigma

    def predict_proba(self, inputs: Any) -> Tensor:
        """Posterior ``P(x_i | a)`` of every variable: ``(B, n, V)``, zero beyond each variable's values."""
        return self(self.encode(inputs))[0].exp()

    def decide(self, inputs: Any) -> Tensor:
        """The decision function sigma: value codes ``(B, n)`` of every variable (inputs for observations)."""
        return self(self.encode(inputs))[1]


def _is_dataframe(obj: Any) -> bool:
    return type(obj).__name__ == "DataFrame" and hasattr(obj, "columns") and hasattr(obj, "to_dict")

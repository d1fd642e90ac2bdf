"""Bayesian network classifiers (naive and chain) held as padded log-probability tensors.

A classifier has observations (inputs) and classifications. Every classification ``c`` is a naive Bayes
classifier over its children in the network (its *influencers*), evaluated bottom-up: a child that is itself a
classification feeds in its predicted value (the paper's hard chain). A naive BC (NBC) is the special case of
one classification whose children are all observations.

Shapes used throughout: ``B`` inputs, ``n`` variables, ``V`` the largest number of values of any variable,
``E`` influences (one per edge ``(c, x)`` of the network; the influence is ``(x, c)``), ``m`` the influencers
of one classification (its *family*).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import torch
from torch import Tensor, nn

from torchxplain._core import check_float_dtype, settings
from torchxplain._core.saved_fields import SavedFieldError, SavedFields
from torchxplain.idx._encoding import BinMethod, InputEncoder
from torchxplain.idx._io import spec_from_frame, spec_from_pgmpy, spec_from_sklearn
from torchxplain.idx._logmath import safe_log_softmax
from torchxplain.idx._spec import ClassifierSpec

T = TypeVar("T")


class BayesianClassifier(nn.Module):
    """A naive or chain Bayesian network classifier over categorical variables.

    Args:
        values: variable name -> its value names, in order (the integer code of a value is its position).
        structure: classification name -> its children in the network, i.e. its influencers (the inputs of its
            naive Bayes model). Variables that are no key are observations.
        priors: variable name -> prior probabilities ``P(x_i)`` over its values. Required for every
            classification (the class prior); for observations they are the default SD weights.
        cpts: ``(c, x)`` -> conditional table ``P(x | c)`` of shape ``(|V(c)|, |V(x)|)``, each row summing to 1,
            for every child ``x`` of every classification ``c``.
        sd_weights: optional variable name -> weights ``P(x_k)`` for the stochastically dialectical kit
            (Def. 8); defaults to ``priors`` where given, else uniform.
        dtype: floating dtype of the stored tables (``.to(torch.float32)`` converts later).
        bin_edges: numeric column -> bin edges, applied when a DataFrame holds numbers for that observation
            (set by :meth:`fit` with ``bins=``): at least two finite, strictly increasing edges per observation,
            whose bins ``"b0", "b1", ...`` are values of it.

    The tables are padded to the most values ``V`` of any variable (``2 (E + 1) V^2`` floats); a classifier whose
    padded tables would exceed ``tx.settings.max_memory`` is refused with the variable named.

    Inputs to :meth:`forward` are validated integer codes ``(B, |O|)``, one column per observation in
    :attr:`observations` order; :meth:`encode` turns any accepted input form into codes. Computations follow
    ``tx.settings.dtype_policy`` (:meth:`computing`): a float16 or bfloat16 classifier computes in float32.

    Attributes:
        spec: the validated float64 :class:`~torchxplain.idx.ClassifierSpec` the tables were built from.
        variables: every variable's name, classifications and observations, in the order of the tables.
        value_names: variable name -> its value names (a value's code is its position).
        structure: classification name -> its children (influencers).
        classifications: the classified variables, in ``variables`` order.
        observations: the observed variables, in the column order of coded inputs.
        influences: the ``(influencer, influencee)`` pairs, one per edge of the network.
        levels: the classifications grouped by how far they are from the observations (decided bottom-up).

    Example:
        >>> from torchxplain import idx
        >>> bc = idx.BayesianClassifier(
        ...     values={"sky": ["sun", "rain"], "plan": ["go", "stay"]},
        ...     structure={"plan": ["sky"]},
        ...     priors={"plan": [0.6, 0.4]},
        ...     cpts={("plan", "sky"): [[0.8, 0.2], [0.3, 0.7]]},  # P(sky | plan)
        ... )
        >>> bc.observations, bc.classifications
        (('sky',), ('plan',))
        >>> bc.decode(bc.decide(bc.encode({"sky": "rain"})))
        [{'sky': 'rain', 'plan': 'stay'}]
    """

    log_prior: Tensor
    sd_weight: Tensor
    log_cpt: Tensor
    cpt_rows: Tensor
    cardinality: Tensor
    source: Tensor
    target: Tensor
    slot_influence: Tensor
    slot: Tensor
    observation_index: Tensor
    value_mask: Tensor
    level_members: Tensor

    def __init__(
        self,
        values: Mapping[str, Sequence[str]],
        structure: Mapping[str, Sequence[str]],
        priors: Mapping[str, Any],
        cpts: Mapping[tuple[str, str], Any],
        sd_weights: Mapping[str, Any] | None = None,
        dtype: torch.dtype = torch.float64,
        bin_edges: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        check_float_dtype(dtype)
        self.spec = ClassifierSpec.build(values, structure, priors, cpts, sd_weights)
        spec = self.spec
        self.variables: tuple[str, ...] = spec.variables
        self.value_names: dict[str, tuple[str, ...]] = dict(spec.values)
        self.structure: dict[str, tuple[str, ...]] = dict(spec.structure)
        self.classifications: tuple[str, ...] = spec.classifications
        self.observations: tuple[str, ...] = spec.observations
        self.influences: tuple[tuple[str, str], ...] = spec.influences
        self.levels: tuple[tuple[str, ...], ...] = spec.levels
        self._index = {v: i for i, v in enumerate(self.variables)}
        self._families = {c: [self.influences.index((x, c)) for x in self.structure[c]] for c in self.classifications}
        self.encoder = InputEncoder(self.variables, self.observations, self.value_names, bin_edges)
        self._cache: dict[Hashable, Any] = {}

        card = [len(spec.values[v]) for v in self.variables]
        n_values = max(card)
        table_bytes = 8 * 2 * (len(self.influences) + 1) * n_values * n_values  # log_cpt and cpt_rows, float64
        if table_bytes > settings.max_memory.value():
            widest = self.variables[card.index(n_values)]
            raise ValueError(
                f"the classifier's padded tables need {table_bytes / 2**20:.0f} MiB ({len(self.influences)} influences "
                f"x {n_values}^2, {n_values} = the values of {widest!r}), above max_memory "
                f"({settings.max_memory.value() / 2**20:.0f} MiB); merge values of {widest!r} or raise "
                "tx.settings.max_memory"
            )
        log_prior = torch.full((len(card), n_values), -math.inf, dtype=torch.float64)
        weights = torch.zeros((len(card), n_values), dtype=torch.float64)
        for i, var in enumerate(self.variables):
            if var in spec.priors:
                log_prior[i, : card[i]] = torch.log(spec.priors[var])
            weights[i, : card[i]] = spec.sd_weights[var]
        log_cpt = torch.full((len(self.influences), n_values, n_values), -math.inf, dtype=torch.float64)
        for e, (x, c) in enumerate(self.influences):
            table = spec.cpts[(c, x)]
            log_cpt[e, : table.shape[0], : table.shape[1]] = torch.log(table)
        slots = max(len(k) for k in self.structure.values())
        slot_influence = torch.full((len(card), slots), -1, dtype=torch.long)
        slot_of = torch.zeros(len(self.influences), dtype=torch.long)
        for e, (x, c) in enumerate(self.influences):
            j = self.structure[c].index(x)
            slot_influence[self._index[c], j] = e
            slot_of[e] = j
        # row e * V + k holds log P(x_e = k | y_e) over the values of y_e; a last row of zeros pads absent slots
        rows = torch.cat([log_cpt.transpose(1, 2).reshape(-1, n_values), torch.zeros(1, n_values, dtype=torch.float64)])
        self.register_buffer("log_prior", log_prior.to(dtype))
        self.register_buffer("sd_weight", weights.to(dtype))
        self.register_buffer("log_cpt", log_cpt.to(dtype))
        self.register_buffer("cpt_rows", rows.to(dtype))
        self.register_buffer("cardinality", torch.tensor(card, dtype=torch.long))
        self.register_buffer("source", torch.tensor([self._index[x] for x, _ in self.influences], dtype=torch.long))
        self.register_buffer("target", torch.tensor([self._index[c] for _, c in self.influences], dtype=torch.long))
        self.register_buffer("slot_influence", slot_influence)
        self.register_buffer("slot", slot_of)
        self.register_buffer("observation_index", torch.tensor([self._index[o] for o in self.observations]))
        self.register_buffer("value_mask", torch.arange(n_values)[None, :] < torch.tensor(card)[:, None])
        members = [self._index[c] for level in self.levels for c in level]
        self.register_buffer("level_members", torch.tensor(members, dtype=torch.long))
        self._level_bounds = np.cumsum([0] + [len(level) for level in self.levels]).tolist()

    # ------------------------------------------------------------------ construction and persistence
    @classmethod
    def from_spec(
        cls, spec: ClassifierSpec, dtype: torch.dtype = torch.float64, bin_edges: Mapping[str, Any] | None = None
    ) -> BayesianClassifier:
        """The classifier of a validated :class:`~torchxplain.idx._spec.ClassifierSpec`."""
        return cls(spec.values, spec.structure, spec.priors, spec.cpts, spec.sd_weights, dtype, bin_edges)

    @classmethod
    def from_pgmpy(
        cls,
        network: Any,
        observations: Sequence[str] | None = None,
        dtype: torch.dtype = torch.float64,
        show_progress: bool | None = None,
    ) -> BayesianClassifier:
        """Chain classifier from a discrete pgmpy network.

        Every non-leaf node becomes a classification, a naive Bayes model over its children in the network, with
        ``P(c)`` the network marginal and ``P(x | c)`` the network conditional (the other parents of ``x``
        marginalised out), both by exact variable elimination; SD weights are the network marginals. Warns
        (:class:`~torchxplain.idx.ChainApproximationWarning`) unless the network already is a naive Bayes
        classifier: a general network becomes a chain of naive classifiers (the paper's semantics), whose
        posteriors can differ from the network's own inference.

        Args:
            network: a ``pgmpy`` ``DiscreteBayesianNetwork`` (or older ``BayesianNetwork``) with CPDs.
            observations: the observations; must be the leaves (the default), since every other node needs
                children to be classified from.
            dtype: floating dtype of the tables.
            show_progress: a progress bar over the network's nodes (default ``tx.settings.show_progress``).
        """
        with settings.using(show_progress=show_progress):
            return cls.from_spec(spec_from_pgmpy(network, observations), dtype)

    @classmethod
    def from_sklearn(
        cls,
        model: Any,
        feature_names: Any,
        class_name: str = "class",
        value_names: Any = None,
        class_names: Sequence[str] | None = None,
        sd_weights: Mapping[str, Any] | None = None,
        dtype: torch.dtype = torch.float64,
    ) -> BayesianClassifier:
        """Naive BC from a fitted ``sklearn.naive_bayes.CategoricalNB``.

        ``CategoricalNB`` sees integer codes ``0..n_categories_[i]-1`` per feature; the classifier's value names
        come from ``value_names``, else from the categories of a DataFrame passed as ``feature_names``, else they
        are the codes as strings ``"0", "1", ...``. SD weights default to the training frequency of each category.

        Args:
            model: the fitted ``CategoricalNB``.
            feature_names: the names of its features in column order, or the training DataFrame (its columns;
                categorical columns also name the values, in category order).
            class_name: the name of the classification variable.
            value_names: feature -> names of its codes in code order, or the fitted
                ``sklearn.preprocessing.OrdinalEncoder`` that made the codes (its ``categories_``).
            class_names: names of the classes (default: ``str`` of ``model.classes_``).
            sd_weights: variable -> SD weights (Def. 8), replacing the training frequencies.
            dtype: floating dtype of the tables.

        Example:
            >>> import numpy as np
            >>> from sklearn.naive_bayes import CategoricalNB
            >>> from sklearn.preprocessing import OrdinalEncoder
            >>> from torchxplain import idx
            >>> rows = np.array([["sun", "hot"], ["rain", "mild"], ["sun", "mild"], ["rain", "hot"]])
            >>> encoder = OrdinalEncoder().fit(rows)
            >>> nb = CategoricalNB().fit(encoder.transform(rows), ["go", "stay", "go", "stay"])
            >>> bc = idx.BayesianClassifier.from_sklearn(nb, ["sky", "heat"], "plan", value_names=encoder)
            >>> bc.value_names
            {'sky': ('rain', 'sun'), 'heat': ('hot', 'mild'), 'plan': ('go', 'stay')}
        """
        spec = spec_from_sklearn(model, feature_names, class_name, value_names, class_names, sd_weights)
        return cls.from_spec(spec, dtype)

    @classmethod
    def fit(
        cls,
        frame: Any,
        structure: str | Mapping[str, Sequence[str]],
        alpha: float = 1.0,
        class_prior: Mapping[str, Sequence[float]] | None = None,
        values: Mapping[str, Sequence[str]] | None = None,
        bins: int | Mapping[str, int] | None = None,
        method: BinMethod = "same_size",
        dtype: torch.dtype = torch.float64,
    ) -> BayesianClassifier:
        """Naive or chain BC fitted from a DataFrame of categorical (or binned numeric) columns.

        Each classification's naive Bayes model is fitted like ``CategoricalNB(alpha)``:
        ``P(x_v | c) = (n(x_v, c) + alpha) / (n(c) + alpha |V(x)|)`` with unsmoothed empirical class priors (or
        ``class_prior[c]``); observation priors (the SD weights) are the empirical frequencies.

        Args:
            frame: training rows; one column per variable. String, categorical, bool and integer columns are
                categorical (one value per distinct entry); floating columns must be binned (``bins=``) or
                declared categorical (``values=``); missing values are refused.
            structure: the class column for a naive classifier over all other columns, or classification ->
                its children (a chain).
            alpha: additive (Laplace/Lidstone) smoothing, > 0.
            class_prior: classification -> its prior, replacing the empirical one.
            values: optional value order per column (default: sorted distinct values; bins in bin order).
            bins: discretise numeric columns first: a number of bins for every numeric column, or column ->
                number of bins (bins are values ``"b0", "b1", ...``; new rows are binned with the same edges).
            method: ``"same_size"`` (quantile bins) or ``"same_length"`` (equal-width bins).
            dtype: floating dtype of the tables.
        """
        spec, edges = spec_from_frame(frame, structure, alpha, class_prior, values, bins, method)
        return cls.from_spec(spec, dtype, edges)

    def with_sd_weights(self, weights: Mapping[str, Any] | str) -> BayesianClassifier:
        """A copy (same dtype and device) whose SD weights (Def. 8's ``P(x_k)``) are replaced.

        Args:
            weights: variable name -> weights over its values (others keep theirs), or ``"uniform"``.
        """
        out = type(self).from_spec(self.spec.with_sd_weights(weights), self.dtype, self.bin_edges)
        return out.to(self.device)

    @property
    def bin_edges(self) -> dict[str, np.ndarray]:
        """Numeric column -> bin edges applied to numbers in DataFrame inputs (empty unless fitted with bins)."""
        return dict(self.encoder.bin_edges)

    @property
    def dtype(self) -> torch.dtype:
        """The floating dtype of the tables."""
        return self.log_prior.dtype

    @property
    def device(self) -> torch.device:
        """The device of the tables."""
        return self.cardinality.device

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of the specification, dtype and bin edges; :meth:`from_dict` rebuilds it exactly."""
        out = self.spec.to_dict()
        out["dtype"] = str(self.dtype).removeprefix("torch.")
        out["bin_edges"] = {c: e.tolist() for c, e in self.encoder.bin_edges.items()}
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BayesianClassifier:
        """Rebuild a classifier from :meth:`to_dict` output (on the CPU; identical tables and explanations).

        Every field is checked as strictly as the constructor's arguments (see
        :meth:`~torchxplain.idx._spec.ClassifierSpec.from_dict`); ``dtype`` must name a floating dtype and
        ``bin_edges`` hold finite, increasing edges of observations.

        Raises:
            ValueError: not a saved classifier or another version;
                a ``ValueError`` naming a bad field.
        """
        spec = ClassifierSpec.from_dict(data)
        fields = SavedFields(data)
        dtype = fields.dtype("dtype", default="float64")
        edges = fields.section("bin_edges") if fields.value("bin_edges", optional=True) is not None else None
        try:
            return cls.from_spec(spec, dtype, {c: edges.numbers(c) for c in edges.keys()} if edges else {})
        except (TypeError, ValueError) as err:
            if isinstance(err, SavedFieldError):
                raise
            raise SavedFieldError(f"saved classifier: {err}") from None

    def save(self, path: str | os.PathLike[str]) -> str:
        """Write :meth:`to_dict` as JSON to ``path`` (no pickle); returns the path."""
        path = os.fspath(path)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str], map_location: str | torch.device | None = None) -> BayesianClassifier:
        """Read a classifier written by :meth:`save` (onto ``map_location``, default CPU)."""
        with open(os.fspath(path), encoding="utf-8") as f:
            try:
                data = json.load(f)
            except (json.JSONDecodeError, UnicodeDecodeError) as err:
                raise ValueError(f"{os.fspath(path)!r} is not a saved Bayesian classifier (bad JSON: {err})") from None
        try:
            bc = cls.from_dict(data)
        except SavedFieldError as err:
            raise SavedFieldError(f"{os.fspath(path)!r}: {err}") from None
        return bc.to(map_location) if map_location is not None else bc

    # ------------------------------------------------------------------ caches
    def cached(self, key: Hashable, build: Callable[[], T]) -> T:
        """``build()`` memoised on this classifier under ``key`` (tables derived from its CPTs).

        The cache is emptied whenever the tensors move or change dtype (``.to()``, ``.double()``, ...).
        """
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def computing(self) -> BayesianClassifier:
        """This classifier in the dtype ``tx.settings.dtype_policy`` computes in: itself when its tables have it,
        else a cached copy rebuilt from the float64 :attr:`spec` (so half and bfloat16 classifiers compute in
        float32, never in half precision, and give float32's explanations). Every IDX entry point computes
        through it; results are in its dtype."""
        dt = settings.dtype_policy.compute_dtype(self.log_prior)
        if dt == self.dtype:
            return self
        return self.cached(
            ("computing", dt), lambda: type(self).from_spec(self.spec, dt, self.bin_edges).to(self.device)
        )

    def is_cached(self, key: Hashable) -> bool:
        """Whether :meth:`cached` holds a table under ``key``."""
        return key in self._cache

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> BayesianClassifier:
        self._cache = {}
        return super()._apply(fn, recurse)

    # ------------------------------------------------------------------ structure
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

    def family(self, y: str) -> list[int]:
        """Influence indices ``(m,)`` of ``y``'s influencers, in slot (children) order."""
        return list(self._families[y])

    def extra_repr(self) -> str:
        """Kind, observations, classifications and the number of influences (shown by ``repr``)."""
        kind = "naive" if self.is_naive else "chain"
        return (
            f"{kind}, observations={list(self.observations)}, classifications={list(self.classifications)}, "
            f"influences={len(self.influences)}"
        )

    # ------------------------------------------------------------------ inputs
    def encode(self, inputs: Any) -> Tensor:
        """Integer codes ``(B, |O|)`` (long, on the classifier's device) from value names or codes.

        ``inputs`` may be a dict observation -> value name (one input), a list of such dicts, a pandas DataFrame
        whose columns include every observation (value names; numbers for binned columns), or an integer
        tensor/array ``(B, |O|)`` of codes in :attr:`observations` column order.
        """
        return self.encoder.encode(inputs, self.device)

    def decode(self, sigma: Tensor) -> list[dict[str, str]]:
        """Value names of a ``(B, n)`` tensor of codes over all :attr:`variables`."""
        names = [self.value_names[v] for v in self.variables]
        return [{v: n[k] for v, n, k in zip(self.variables, names, row)} for row in sigma.cpu().numpy().tolist()]

    # ------------------------------------------------------------------ inference
    def family_logits(self, y: int, values: Tensor) -> Tensor:
        """Unnormalised log posterior ``(R, V)`` of classification ``y`` (index) given its influencers' codes.

        Args:
            y: index of a classification in :attr:`variables`.
            values: ``(R, m)`` codes of ``y``'s influencers in slot order.

        Children are added in slot order, as in :meth:`forward`, so both give the same decisions bit for bit.
        """
        n_values = self.log_prior.shape[1]
        logits = self.log_prior[y].expand(values.shape[0], n_values)
        for j, e in enumerate(self.family(self.variables[y])):
            logits = logits + self.cpt_rows[e * n_values + values[:, j]]
        return logits

    def _level_logits(self, sigma: Tensor, level: Tensor) -> Tensor:
        """Unnormalised log posteriors ``(B, |level|, V)`` of the classifications in ``level`` (slot order)."""
        n_values = self.log_prior.shape[1]
        logits = self.log_prior[level].unsqueeze(0)
        for j in range(self.slot_influence.shape[1]):
            infl = self.slot_influence[level, j]
            safe = infl.clamp(min=0)
            rows = torch.where(infl >= 0, safe * n_values + sigma[:, self.source[safe]], self.cpt_rows.shape[0] - 1)
            logits = logits + self.cpt_rows[rows]
        return logits

    def forward(self, codes: Tensor) -> tuple[Tensor, Tensor]:
        """Bottom-up evaluation of the chain on validated codes ``(B, |O|)``.

        Returns ``(log_posterior (B, n, V), sigma (B, n))``: the log posterior of every variable (a point mass for
        observations) and the decision function sigma (first value wins ties), computed in :meth:`computing`'s
        dtype.
        """
        model = self.computing()
        if model is not self:
            return model(codes)
        n_rows = codes.shape[0]
        n_vars, n_values = self.log_prior.shape
        sigma = torch.zeros((n_rows, n_vars), dtype=torch.long, device=codes.device)
        sigma[:, self.observation_index] = codes
        log_post = torch.full((n_rows, n_vars, n_values), -math.inf, dtype=self.dtype, device=codes.device)
        log_post.scatter_(2, sigma.unsqueeze(-1), 0.0)
        bounds = self._level_bounds
        for start, stop in zip(bounds[:-1], bounds[1:]):
            level = self.level_members[start:stop]
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


def check_classifier(bc: object, name: str = "bc") -> BayesianClassifier:
    """``bc`` if it is a :class:`BayesianClassifier` (the first check of every IDX entry point).

    Raises:
        TypeError: anything else, named, with where classifiers come from.
    """
    if not isinstance(bc, BayesianClassifier):
        raise TypeError(
            f"{name} must be an idx.BayesianClassifier (BayesianClassifier.fit, .from_sklearn, .from_pgmpy, "
            f".load or idx.datasets), got {type(bc).__name__}"
        )
    return bc

"""A tree ensemble as a Fourier explainer's source: :class:`Trees`, its input encoder and exact spectrum, or its
values from the leaves (:mod:`~torchxplain.fourier.sources._leaves`).

``FourierShap.from_trees(model, background, ...)`` is the sugar users know; its knobs (``encoding``, ``energy``,
``threshold``, ``route``) are the fields of :class:`Trees`. :func:`choose_route` decides between the spectrum and
the leaves.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Literal, cast

import torch
from torch import Tensor

from torchxplain._core.inputs import FeatureNames, check_feature_names, data_dtype, player_ids, rows
from torchxplain.fourier.encoding import BinaryEncoder, InputEncoder, ThresholdEncoder
from torchxplain.fourier.sources._base import Source
from torchxplain.fourier.sources._built import Built
from torchxplain.fourier.sources._leaves import leaf_built
from torchxplain.fourier.sources._outputs import Outputs
from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.trees import (
    LeafTable,
    TreeEncoding,
    TreeEnsemble,
    category_codec,
    extract,
    fitted_names,
    leaf_table,
    parse_model_outputs,
    prune,
    resolve_encoding,
    spectrum_terms,
)
from torchxplain.fourier.values import SupportFamilies

TreeRoute = Literal["auto", "spectrum", "leaves"]
ROUTES = ("auto", "spectrum", "leaves")
AUTO_MAX_TERMS = 1 << 11
"""``route="auto"`` keeps the spectrum up to this many Fourier terms (a small spectrum also gives interactions,
pruning and saving), and for oblivious trees up to :data:`AUTO_MAX_OBLIVIOUS` (one small table per tree serves
every row: measured 25× faster than the leaves at 10,000 rows on CatBoost's defaults); above, or with categorical
splits, the leaves (measured at least as fast as the spectrum on XGBoost, LightGBM, scikit-learn defaults)."""
AUTO_MAX_OBLIVIOUS = 1 << 16


def check_route(route: object) -> TreeRoute:
    """``route`` if it is one of :data:`ROUTES`.

    Raises:
        ValueError: anything else, naming the choices.
    """
    if not isinstance(route, str) or route not in ROUTES:
        raise ValueError(
            f"route must be one of {ROUTES} (the exact spectrum, the leaves, or the cheaper of the two), got "
            f"{str(route)[:40]!r}"
        )
    return cast(TreeRoute, route)


def choose_route(
    route: TreeRoute, ensembles: list[TreeEnsemble], tables: list[LeafTable], spectrum_only: list[str]
) -> Literal["spectrum", "leaves"]:
    """The route of ``from_trees``: ``route`` as asked, checked against what the model and the options need;
    ``"auto"``: the spectrum when it is small (:data:`AUTO_MAX_TERMS`, :data:`AUTO_MAX_OBLIVIOUS`) or a
    spectrum-only option is set, the leaves for categorical splits and everything else.

    Args:
        route: the argument.
        ensembles, tables: the parsed outputs and their leaf tables.
        spectrum_only: the options the caller set that only the spectrum serves (``"energy"``, ``"relaxed"``...).

    Raises:
        ValueError: ``route="leaves"`` with a spectrum-only option; ``route="spectrum"`` on categorical splits.
    """
    categorical = any(e.category_split is not None and bool((e.category_split >= 0).any()) for e in ensembles)
    if route == "leaves" and spectrum_only:
        raise ValueError(
            f"{', '.join(spectrum_only)} act on a Fourier spectrum; route='leaves' computes values from the leaves "
            "without one: drop them, or pass route='spectrum'"
        )
    if route == "spectrum" and categorical:
        raise ValueError(
            f"{ensembles[0].description} has categorical splits, which the Fourier spectrum does not represent; "
            "use route='leaves' (or 'auto'): exact Shapley and Banzhaf values from the leaves"
        )
    if route != "auto":
        return route
    if categorical:
        return "leaves"
    if spectrum_only:
        return "spectrum"
    oblivious = all(len(e.left) == 0 and e.oblivious for e in ensembles)
    cap = AUTO_MAX_OBLIVIOUS if oblivious else AUTO_MAX_TERMS
    terms = sum(spectrum_terms(t, cap) for t in tables)
    return "spectrum" if terms <= cap else "leaves"


def checked_outputs(ensembles: list[TreeEnsemble], raw: Tensor, names: FeatureNames | None) -> Outputs:
    """The explained outputs of the parsed ``ensembles``, once ``(B, p)`` background rows ``raw`` (with a
    DataFrame's column ``names``) are checked against the model's width and fit-time names.

    Raises:
        ValueError: a background of the wrong width, or with other columns (or another order) than the model's.
    """
    first = ensembles[0]
    if raw.shape[1] != first.n_features:
        raise ValueError(f"background has {raw.shape[1]} features, but {first.description} expects {first.n_features}")
    check_feature_names(first.feature_names, fitted_names(names, first.names), "background")
    return Outputs(tuple(e.target for e in ensembles), tuple(e.output or e.description for e in ensembles))


def tree_encoder(
    model: Any,
    raw: Tensor,
    target: int | None,
    encoding: Any,
    names: FeatureNames | None = None,
    ensembles: list[TreeEnsemble] | None = None,
) -> tuple[InputEncoder, list[FourierSpectrum], list[SupportFamilies], Outputs]:
    """The encoder of ``model``'s inputs, the exact float64 spectrum of each explained output with its support
    families, and the outputs.

    Args:
        model: a fitted tree model (see :func:`torchxplain.tree_spectrum`).
        raw: ``(B, p)`` validated background rows; decides ``"auto"`` (binary when 0/1 and every split separates
            0 from 1) and is checked against the chosen encoding.
        target: output index, or ``None`` for the default outputs (a regressor's output, a binary classifier's
            positive class, every class of a multiclass model).
        encoding: ``"auto"``, ``"binary"``, ``"thresholds"`` or a :class:`TreeEncoding`.
        names: the background DataFrame's columns, checked against the names the model was fitted with.
        ensembles: ``parse_model_outputs(model, target)`` when the caller has it already.

    Raises:
        TypeError / ValueError: unsupported model, unknown encoding, a background of the wrong width or with
            other columns (or another column order) than the model's, or non-binary rows under the binary encoding.
    """
    ensembles = parse_model_outputs(model, target) if ensembles is None else ensembles
    outputs = checked_outputs(ensembles, raw, names)
    # every output's splits: one encoding serves them all
    resolved = resolve_encoding(encoding, ensembles, lambda: TreeEncoding.from_ensembles(ensembles), raw)
    encoder: InputEncoder
    if resolved is None:
        encoder = BinaryEncoder(ensembles[0].n_features)
        encoder.check(raw, "background")
    else:
        encoder = ThresholdEncoder(resolved)
    extracted = [extract(e, resolved, dtype=torch.float64, device=raw.device) for e in ensembles]
    return encoder, [s for s, _ in extracted], [f for _, f in extracted], outputs


@dataclasses.dataclass(frozen=True)
class Trees(Source):
    """A fitted tree ensemble's exact spectrum, or its exact values from the leaves (``FourierShap.from_trees``).

    Args:
        encoding: ``"binary"`` (inputs in {0,1}), ``"thresholds"`` (continuous inputs; every split becomes a binary
            feature owned by the feature it splits), a :class:`~torchxplain.fourier.TreeEncoding`, or ``"auto"``
            (binary when the background is 0/1 and every split separates 0 from 1).
        energy, threshold: prune the non-constant spectrum (``energy=0.9995`` is the paper's setting).
        route: ``"spectrum"``, ``"leaves"`` or ``"auto"`` (the spectrum when it is small — at most 2,048 terms,
            65,536 for oblivious trees — or a spectrum-only option is set; the leaves otherwise and for categorical
            splits).
    """

    names: ClassVar[tuple[str, ...]] = ()
    title: ClassVar[str] = "tx.fourier.Trees (FourierShap.from_trees)"
    exact: ClassVar[bool] = True

    encoding: Any = "auto"
    energy: float | None = None
    threshold: float | None = None
    route: TreeRoute = "auto"

    def __post_init__(self) -> None:
        check_route(self.route)

    def build(self, model: Any, background: Any, target: int | None, relaxed: bool, groups: Any) -> Built:
        """Parse the model, choose the route; on the spectrum's: validate the background once, encode it once,
        extract (and optionally prune) the spectrum; on the leaves': their tables and the value provider."""
        ensembles = parse_model_outputs(model, target, background)
        asked = [n for n, v in (("energy", self.energy), ("threshold", self.threshold), ("relaxed", relaxed)) if v]
        if not (self.encoding is None or isinstance(self.encoding, str) and self.encoding == "auto"):
            asked.append("encoding")
        tables = [leaf_table(e) for e in ensembles]
        if choose_route(self.route, ensembles, tables, asked) == "leaves":
            return self._leaves(ensembles, background, tables, groups)
        converted = rows(background, "background")
        raw, names = converted.tensor, converted.feature_names
        encoder, spectra, extracted, outputs = tree_encoder(model, raw, target, self.encoding, names, ensembles)
        families: list[SupportFamilies | None] = list(extracted)
        if relaxed and not isinstance(encoder, BinaryEncoder):
            raise ValueError("relaxed=True applies to binary inputs; continuous inputs are explained exactly")
        bits = encoder.encode(raw, torch.float64)
        reports = []
        if self.energy is not None or self.threshold is not None:
            pruned = [prune(s, bits, self.energy, self.threshold, None, None, None, 1024, 0) for s in spectra]
            spectra, reports = [p[0] for p in pruned], [p[1] for p in pruned]
            families = [None] * len(spectra)  # pruning reorders the frequencies: the plans search their own
        dtype = data_dtype(raw, torch.get_default_dtype())
        spectra = [s.to(dtype) for s in spectra]
        pruning = None if not reports else reports[0] if len(reports) == 1 else tuple(reports)
        ids = player_ids(groups, encoder.n_inputs, "feature_groups", raw.device)
        return Built(
            encoder=encoder,
            background=raw,
            codes=bits.bool(),
            spectra=spectra,
            provider=None,
            outputs=outputs,
            groups=ids,
            names=names,
            pruning=pruning,
            families=families,
        )

    @staticmethod
    def _leaves(ensembles: list[TreeEnsemble], background: Any, tables: list[LeafTable], groups: Any) -> Built:
        """The leaf route: the background validated against the parsed outputs (a DataFrame's ``category``
        columns as the model's category ids), the leaf tables as the provider of values.

        Raises:
            ValueError: a background of the wrong width, with other columns than the model was fitted with, or a
                ``category`` column the model splits by threshold.
        """
        first = ensembles[0]
        codec = category_codec(ensembles, background, first.unseen_category)
        converted = rows(background if codec is None else codec.encode(background, "background"), "background")
        raw, names = converted.tensor, converted.feature_names
        outputs = checked_outputs(ensembles, raw, names)
        return leaf_built(ensembles, raw, names, outputs, groups, tables, codec)

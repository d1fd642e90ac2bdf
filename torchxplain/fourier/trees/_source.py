"""A tree ensemble as a Fourier explainer's source: its input encoder and exact spectrum."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from torchxplain._core.inputs import FeatureNames, check_feature_names, data_dtype, rows
from torchxplain.fourier.encoding._encoders import BinaryEncoder, InputEncoder, ThresholdEncoder
from torchxplain.fourier.explainer._outputs import Outputs
from torchxplain.fourier.spectrum._spectrum import FourierSpectrum
from torchxplain.fourier.trees._encoding import TreeEncoding, resolve_encoding
from torchxplain.fourier.trees._extraction import extract
from torchxplain.fourier.trees._pruning import PruningReport, prune
from torchxplain.fourier.trees.adapters._base import TreeEnsemble, fitted_names
from torchxplain.fourier.trees.adapters._dispatch import parse_model_outputs
from torchxplain.fourier.values._families import SupportFamilies


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
    outputs = Outputs(tuple(e.target for e in ensembles), tuple(e.output or e.description for e in ensembles))
    if raw.shape[1] != ensembles[0].n_features:
        raise ValueError(
            f"background has {raw.shape[1]} features, but {ensembles[0].description} expects {ensembles[0].n_features}"
        )
    check_feature_names(ensembles[0].feature_names, fitted_names(names, ensembles[0].names), "background")
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


@dataclass(frozen=True)
class TreeSource:
    """What a Fourier explainer of a tree model is built from.

    Attributes:
        encoder: the input encoder; spectra: the (pruned) spectrum of each output in the explainer's dtype;
        outputs: which outputs they are; background: ``(B, p)`` validated rows; bits: ``(B, n_binary)`` bool
        encoding of them; feature_names: the background DataFrame's columns; pruning: what pruning kept (``None``:
        not pruned; a tuple of one report per output for several outputs); families: the support families of
        each spectrum (rows aligned with its frequencies; ``None`` after pruning), for the value plans.
    """

    encoder: InputEncoder
    spectra: list[FourierSpectrum]
    outputs: Outputs
    background: Tensor
    bits: Tensor
    feature_names: FeatureNames | None
    pruning: PruningReport | tuple[PruningReport, ...] | None
    families: list[SupportFamilies | None]


def tree_source(
    model: Any,
    background: Any,
    target: int | None,
    encoding: Any,
    energy: float | None,
    threshold: float | None,
    relaxed: bool,
    ensembles: list[TreeEnsemble] | None = None,
) -> TreeSource:
    """Validate the background once, encode it once, extract (and optionally prune) the spectrum (of the parsed
    ``ensembles`` when given)."""
    converted = rows(background, "background")
    raw, names = converted.tensor, converted.feature_names
    encoder, spectra, extracted, outputs = tree_encoder(model, raw, target, encoding, names, ensembles)
    families: list[SupportFamilies | None] = list(extracted)
    if relaxed and not isinstance(encoder, BinaryEncoder):
        raise ValueError("relaxed=True applies to binary inputs; continuous inputs are explained exactly")
    bits = encoder.encode(raw, torch.float64)
    reports = []
    if energy is not None or threshold is not None:
        pruned = [prune(s, bits, energy, threshold, None, None, None, 1024, 0) for s in spectra]
        spectra, reports = [p[0] for p in pruned], [p[1] for p in pruned]
        families = [None] * len(spectra)  # pruning reorders the frequencies: the plans search their own
    dtype = data_dtype(raw, torch.get_default_dtype())
    spectra = [s.to(dtype) for s in spectra]
    pruning = None if not reports else reports[0] if len(reports) == 1 else tuple(reports)
    return TreeSource(encoder, spectra, outputs, raw, bits.bool(), names, pruning, families)

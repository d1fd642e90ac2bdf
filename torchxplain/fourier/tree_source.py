"""A tree ensemble as a Fourier explainer's source: its input encoder and exact spectrum."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from torchxplain._core.inputs import FeatureNames
from torchxplain.fourier.adapters import parse_model
from torchxplain.fourier.boundary import state_dtype, validated_background
from torchxplain.fourier.encoders import BinaryEncoder, InputEncoder, ThresholdEncoder
from torchxplain.fourier.pruning import PruningReport, prune_tree_spectrum
from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.trees import TreeEncoding, spectrum_of_ensemble, splits_binary_inputs

ENCODINGS = ("auto", "binary", "thresholds")


def tree_encoder(model: Any, raw: Tensor, target: int | None, encoding: Any) -> tuple[InputEncoder, FourierSpectrum]:
    """The encoder of ``model``'s inputs and its exact float64 spectrum on the encoded features.

    Args:
        model: a fitted tree model (see :func:`torchxplain.fourier.tree_spectrum`).
        raw: ``(B, p)`` validated background rows; decides ``"auto"`` (binary when 0/1 and every split separates
            0 from 1) and is checked against the chosen encoding.
        target: output index for multi-output models.
        encoding: ``"auto"``, ``"binary"``, ``"thresholds"`` or a :class:`TreeEncoding`.

    Raises:
        TypeError / ValueError: unsupported model, unknown encoding, a background of the wrong width, or
            non-binary rows under the binary encoding.
    """
    if isinstance(encoding, str) and encoding not in ENCODINGS:
        raise ValueError(f"encoding must be one of {ENCODINGS} or a TreeEncoding, got {encoding[:40]!r}")
    if not isinstance(encoding, (str, TreeEncoding)):
        raise TypeError(f"encoding must be a string or a TreeEncoding, got {type(encoding).__name__}")
    ensemble = parse_model(model, target)
    if raw.shape[1] != ensemble.n_features:
        raise ValueError(
            f"background has {raw.shape[1]} features, but {ensemble.description} expects {ensemble.n_features}"
        )
    if encoding == "auto":
        binary = bool(((raw == 0) | (raw == 1)).all()) and splits_binary_inputs(ensemble)
        encoding = "binary" if binary else "thresholds"
    if encoding == "thresholds":
        encoding = TreeEncoding.from_ensemble(ensemble)
    if isinstance(encoding, TreeEncoding):
        spectrum = spectrum_of_ensemble(ensemble, encoding, dtype=torch.float64, device=raw.device)
        return ThresholdEncoder(encoding), spectrum
    encoder = BinaryEncoder(ensemble.n_features)
    encoder.check(raw, "background")
    return encoder, spectrum_of_ensemble(ensemble, None, dtype=torch.float64, device=raw.device)


@dataclass(frozen=True)
class TreeSource:
    """What a Fourier explainer of a tree model is built from.

    Attributes:
        encoder: the input encoder; spectrum: the (pruned) spectrum in the explainer's dtype;
        background: ``(B, p)`` validated rows; bits: ``(B, n_binary)`` bool encoding of them;
        feature_names: the background DataFrame's columns; pruning: what pruning kept (``None``: not pruned).
    """

    encoder: InputEncoder
    spectrum: FourierSpectrum
    background: Tensor
    bits: Tensor
    feature_names: FeatureNames | None
    pruning: PruningReport | None


def tree_source(
    model: Any,
    background: Any,
    target: int | None,
    encoding: Any,
    energy: float | None,
    threshold: float | None,
    relaxed: bool,
) -> TreeSource:
    """Validate the background once, encode it once, extract (and optionally prune) the spectrum."""
    raw, names = validated_background(background, None)
    encoder, spectrum = tree_encoder(model, raw, target, encoding)
    if relaxed and not isinstance(encoder, BinaryEncoder):
        raise ValueError("relaxed=True applies to binary inputs; continuous inputs are explained exactly")
    bits = encoder.encode(raw, torch.float64)
    report = None
    if energy is not None or threshold is not None:
        spectrum, report = prune_tree_spectrum(spectrum, bits, energy=energy, threshold=threshold)
    spectrum = spectrum.to(state_dtype(raw, torch.get_default_dtype()))
    return TreeSource(encoder, spectrum, raw, bits.bool(), names, report)

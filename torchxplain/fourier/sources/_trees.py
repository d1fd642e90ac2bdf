"""A tree ensemble as a Fourier explainer's source: :class:`Trees`, its input encoder and exact spectrum.

``FourierShap.from_trees(model, background, ...)`` is the sugar users know; its knobs (``encoding``, ``energy``,
``threshold``) are the fields of :class:`Trees`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import torch
from torch import Tensor

from torchxplain._core.inputs import FeatureNames, check_feature_names, data_dtype, player_ids, rows
from torchxplain.fourier.encoding import BinaryEncoder, InputEncoder, ThresholdEncoder
from torchxplain.fourier.sources._base import Source
from torchxplain.fourier.sources._built import Built
from torchxplain.fourier.sources._outputs import Outputs
from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.trees import TreeEncoding, extract, fitted_names, parse_model_outputs, prune, resolve_encoding
from torchxplain.fourier.values import SupportFamilies


def tree_encoder(
    model: Any, raw: Tensor, target: int | None, encoding: Any, names: FeatureNames | None = None
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

    Raises:
        TypeError / ValueError: unsupported model, unknown encoding, a background of the wrong width or with
            other columns (or another column order) than the model's, or non-binary rows under the binary encoding.
    """
    ensembles = parse_model_outputs(model, target)
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


@dataclasses.dataclass(frozen=True)
class Trees(Source):
    """The exact spectrum of a fitted tree ensemble (``FourierShap.from_trees``).

    Args:
        encoding: ``"binary"`` (inputs in {0,1}), ``"thresholds"`` (continuous inputs; every split becomes a binary
            feature owned by the feature it splits), a :class:`~torchxplain.fourier.TreeEncoding`, or ``"auto"``
            (binary when the background is 0/1 and every split separates 0 from 1).
        energy, threshold: prune the non-constant spectrum (``energy=0.9995`` is the paper's setting).
    """

    names: ClassVar[tuple[str, ...]] = ()
    title: ClassVar[str] = "tx.fourier.Trees (FourierShap.from_trees)"
    exact: ClassVar[bool] = True

    encoding: Any = "auto"
    energy: float | None = None
    threshold: float | None = None

    def build(self, model: Any, background: Any, target: int | None, relaxed: bool, groups: Any) -> Built:
        """Validate the background once, encode it once, extract (and optionally prune) the spectrum."""
        converted = rows(background, "background")
        raw, names = converted.tensor, converted.feature_names
        encoder, spectra, extracted, outputs = tree_encoder(model, raw, target, self.encoding, names)
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

"""A known spectrum as a Fourier explainer's source: :class:`KnownSpectrum` (``FourierShap.from_spectrum``)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from torchxplain._core.inputs import player_ids, rows
from torchxplain.fourier.encoding import BinaryEncoder
from torchxplain.fourier.sources._base import Source
from torchxplain.fourier.sources._built import Built
from torchxplain.fourier.sources._outputs import single_output
from torchxplain.fourier.spectrum import FourierSpectrum


@dataclasses.dataclass(frozen=True)
class KnownSpectrum(Source):
    """A spectrum the user already has, explained against a binary background; it has no knobs of its own."""

    names: ClassVar[tuple[str, ...]] = ()
    title: ClassVar[str] = "tx.fourier.KnownSpectrum (FourierShap.from_spectrum)"
    exact: ClassVar[bool] = True

    def build(self, spectrum: FourierSpectrum, background: Any, groups: Any) -> Built:
        """Check the background against the spectrum's features (once) and hold both."""
        if not isinstance(spectrum, FourierSpectrum):
            raise TypeError(f"spectrum must be a FourierSpectrum, got {type(spectrum).__name__}")
        converted = rows(background, "background", n_features=spectrum.n_features)
        raw = converted.tensor
        encoder = BinaryEncoder(spectrum.n_features)
        encoder.check(raw, "background")
        return Built(
            encoder=encoder,
            background=raw,
            codes=raw.bool(),
            spectra=[spectrum],
            provider=None,
            outputs=single_output(None, "spectrum"),
            groups=player_ids(groups, spectrum.n_features, "groups", raw.device),
            names=converted.feature_names,
        )

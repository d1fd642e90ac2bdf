"""Input encoders: how a Fourier explainer turns the rows users pass into the binary features of its spectrum
(``_encoders``: binary rows, raw rows, thresholds of continuous features; ``_thresholds``: the threshold table).

The names imported here are this subpackage's interface to its siblings; public names are in
:mod:`torchxplain.fourier`.
"""

from torchxplain.fourier.encoding._encoders import (
    BinaryEncoder,
    InputEncoder,
    RawEncoder,
    ThresholdEncoder,
    encoder_from_fields,
)
from torchxplain.fourier.encoding._thresholds import ThresholdEncoding

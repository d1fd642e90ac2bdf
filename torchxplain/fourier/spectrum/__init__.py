"""Sparse Walsh–Hadamard spectra: :class:`~torchxplain.FourierSpectrum` (``_spectrum``), its differentiable
multilinear surrogate (``_surrogate``), the fast Walsh–Hadamard transform (``_fwht``) and distinct bit rows
(``_bitrows``).

The names imported here are this subpackage's interface to its siblings (they import from here, never from its
private modules); the public names are exported by :mod:`torchxplain`.
"""

from torchxplain.fourier.spectrum._bitrows import WORD_BITS, pack_rows, unique_rows
from torchxplain.fourier.spectrum._fwht import (
    EXACT_MAX_FEATURES,
    count_low_degree,
    exact_amplitudes,
    fwht,
    index_bits,
    index_to_bool,
    low_degree_index,
    signs,
)
from torchxplain.fourier.spectrum._spectrum import FourierSpectrum
from torchxplain.fourier.spectrum._surrogate import SparseFourierSurrogate

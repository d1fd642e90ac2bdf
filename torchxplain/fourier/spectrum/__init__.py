"""Sparse Walsh–Hadamard spectra: :class:`FourierSpectrum` (``_spectrum``), its differentiable multilinear surrogate
(``_surrogate``), the fast Walsh–Hadamard transform (``_fwht``) and distinct bit rows (``_bitrows``).

The public names are exported by :mod:`torchxplain` (``FourierSpectrum``, ``SparseFourierSurrogate``).
"""

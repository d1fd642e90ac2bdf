"""Sparse Walsh–Hadamard (Fourier) spectra of functions on the Boolean cube {0,1}^n."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from torchxplain._core import (
    check_binary,
    check_finite,
    check_int,
    check_number,
    chunk_bounds,
    parse_memory,
    rows_per_chunk,
)
from torchxplain._core.inputs import rows, to_tensor
from torchxplain._core.settings import dtype_policy


class FourierSpectrum:
    """A sparse spectrum ``h(x) = Σ_f a_f (-1)^{<f, x>}`` on ``x ∈ {0,1}^n``.

    The paper's ``1/sqrt(2^n)`` normalisation is absorbed into the amplitudes, so ``a_f`` is the mean of
    ``h(x) (-1)^{<f,x>}`` over the cube and ``a_0`` is the mean of ``h``.

    Args:
        frequencies: ``(k, n)`` bool (or 0/1) tensor, one frequency per row.
        amplitudes: ``(k,)`` floating tensor, in the units of the model output.

    Example:
        >>> import torch
        >>> import torchxplain as tx
        >>> frequencies = torch.tensor([[0, 0, 0], [1, 0, 0], [1, 1, 0]], dtype=torch.bool)
        >>> spec = tx.FourierSpectrum(frequencies, torch.tensor([1.0, 2.0, 0.5]))  # 1 + 2(-1)^x0 + 0.5(-1)^(x0+x1)
        >>> spec.evaluate(torch.tensor([[0.0, 0.0, 0.0], [1.0, 1.0, 0.0]]))
        tensor([ 3.5000, -0.5000])
    """

    def __init__(self, frequencies: Tensor, amplitudes: Tensor) -> None:
        if not isinstance(frequencies, Tensor) or not isinstance(amplitudes, Tensor):
            raise TypeError("frequencies and amplitudes must be torch tensors")
        if frequencies.ndim != 2:
            raise ValueError(f"frequencies must have shape (k, n), got {tuple(frequencies.shape)}")
        if amplitudes.ndim != 1 or amplitudes.shape[0] != frequencies.shape[0]:
            raise ValueError(
                f"amplitudes must have shape ({frequencies.shape[0]},) to match frequencies "
                f"{tuple(frequencies.shape)}, got {tuple(amplitudes.shape)}"
            )
        if frequencies.dtype != torch.bool:
            check_binary(frequencies, "frequencies")
            frequencies = frequencies.bool()
        if not amplitudes.is_floating_point():
            raise TypeError(f"amplitudes must be a floating tensor, got {amplitudes.dtype}")
        check_finite(amplitudes, "amplitudes")
        if frequencies.device != amplitudes.device:
            raise ValueError(
                f"frequencies are on {frequencies.device} but amplitudes on {amplitudes.device}; "
                "move both to the same device"
            )
        self.frequencies = frequencies
        self.amplitudes = amplitudes

    @classmethod
    def trusted(cls, frequencies: Tensor, amplitudes: Tensor) -> FourierSpectrum:
        """A spectrum from parts known to be valid (bool ``(k, n)`` frequencies, finite ``(k,)`` amplitudes on one
        device), without re-checking them: for transformations of an existing spectrum, which are valid by
        construction (validation happens once, at the boundary)."""
        spectrum = cls.__new__(cls)
        spectrum.frequencies = frequencies
        spectrum.amplitudes = amplitudes
        return spectrum

    @property
    def n_features(self) -> int:
        """Number of binary input features ``n``."""
        return self.frequencies.shape[1]

    @property
    def device(self) -> torch.device:
        return self.amplitudes.device

    @property
    def dtype(self) -> torch.dtype:
        return self.amplitudes.dtype

    def __len__(self) -> int:
        return self.frequencies.shape[0]

    def __repr__(self) -> str:
        return (
            f"FourierSpectrum(k={len(self)}, n={self.n_features}, degree={self.degree}, "
            f"dtype={self.dtype}, device={self.device})"
        )

    @property
    def degrees(self) -> Tensor:
        """``(k,)`` int64: the number of features in each frequency."""
        # sum() of a bool matrix materialises it as int64 (8·k·n bytes): chunk over rows
        step = rows_per_chunk(8 * max(1, self.n_features), len(self))
        parts = [self.frequencies[a:b].sum(dim=1) for a, b in chunk_bounds(len(self), step)]
        return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.int64, device=self.device)

    @property
    def degree(self) -> int:
        """The largest frequency degree (0 for an empty or constant spectrum)."""
        return int(self.degrees.max()) if len(self) else 0

    @property
    def energy(self) -> Tensor:
        """Scalar ``Σ_f a_f²`` (by Parseval, the mean of ``h(x)²`` over the cube)."""
        return (self.amplitudes**2).sum()

    def evaluate(self, x: Any, max_memory: int | str | None = None) -> Tensor:
        """Evaluate ``h`` on binary inputs.

        Args:
            x: ``(B, n)`` rows with entries in {0, 1} (tensor, numpy array, nested list or DataFrame).
            max_memory: memory budget for the ``(B, k)`` parity matrix (bytes or e.g. ``"1GB"``).

        Returns:
            ``(B,)`` tensor on ``x``'s device (the spectrum's for arrays and lists), in ``tx.settings.dtype_policy``'s
            dtype: the amplitudes' float32/float64, float32 for half-precision amplitudes.
        """
        x = rows(x, "x", n_features=self.n_features, device=self.device, values="binary").tensor
        return self.evaluate_unchecked(x, max_memory)

    def evaluate_unchecked(self, x: Tensor, max_memory: int | str | None = None) -> Tensor:
        """:meth:`evaluate` on inputs known to be valid ``(B, n)`` 0/1 tensors (internal callers, which validated
        them at the boundary)."""
        dtype = dtype_policy.compute_dtype(self.dtype)
        amp = self.amplitudes.to(device=x.device, dtype=dtype)
        xf = x.to(dtype)
        budget = max_memory if isinstance(max_memory, int) and not isinstance(max_memory, bool) else None
        budget = budget or parse_memory(max_memory)
        out = xf.new_zeros(x.shape[0])
        # blocks of frequencies (their float copy is (block, n)), then rows (the (rows, block) parity matrix)
        block = max(1, budget // 4 // max(1, self.n_features * xf.element_size()))
        for f0, f1 in chunk_bounds(len(self), block):
            freq = self.frequencies[f0:f1].to(device=x.device, dtype=dtype)
            step = rows_per_chunk((f1 - f0) * xf.element_size() * 2, x.shape[0], budget // 2)
            for start, stop in chunk_bounds(x.shape[0], step):
                parity = torch.remainder(xf[start:stop] @ freq.T, 2.0)
                out[start:stop] += (1.0 - 2.0 * parity) @ amp[f0:f1]
        return out

    def __call__(self, x: Any) -> Tensor:
        return self.evaluate(x)

    def coalesce(self) -> FourierSpectrum:
        """Merge duplicate frequencies by summing their amplitudes and drop exact zeros."""
        if len(self) == 0:
            return self
        uniq, inverse = torch.unique(self.frequencies, dim=0, return_inverse=True)
        amp = torch.zeros(uniq.shape[0], dtype=self.dtype, device=self.device)
        amp = amp.index_add(0, inverse, self.amplitudes)
        keep = amp != 0
        return FourierSpectrum.trusted(uniq[keep], amp[keep])

    def prune(
        self, k: int | None = None, threshold: float | None = None, energy: float | None = None
    ) -> FourierSpectrum:
        """Keep the largest-magnitude frequencies.

        Args:
            k: keep at most the ``k`` largest ``|a_f|``.
            threshold: drop frequencies with ``|a_f| < threshold``.
            energy: keep the fewest largest frequencies whose ``Σ a_f²`` reaches this fraction of
                the total energy (e.g. ``0.9995``, the paper's setting); must be in (0, 1].

        Returns:
            A new spectrum with frequencies sorted by decreasing ``|a_f|``.
        """
        k = check_int(k, "k", minimum=0, optional=True)
        if threshold is not None:  # NaN refused too: it would drop every term
            threshold = check_number(threshold, "threshold", at_least=0.0, hint="a non-negative amplitude")
        if energy is not None:
            energy = check_number(energy, "energy", greater_than=0.0, at_most=1.0, hint="a fraction of the energy")
        order = torch.argsort(self.amplitudes.detach().abs(), descending=True, stable=True)
        amp = self.amplitudes[order]
        keep = len(self)
        if k is not None:
            keep = min(keep, k)
        if threshold is not None:
            keep = min(keep, int((amp.detach().abs() >= threshold).sum()))
        if energy is not None and len(self):
            cum = torch.cumsum(amp.detach() ** 2, 0)
            needed = int(torch.searchsorted(cum, energy * cum[-1])) + 1
            keep = min(keep, needed)
        idx = order[:keep]
        return FourierSpectrum.trusted(self.frequencies[idx], self.amplitudes[idx])

    def to(self, *args: Any, **kwargs: Any) -> FourierSpectrum:
        """Move to a device and/or cast the amplitudes (``torch.Tensor.to`` arguments)."""
        amp = self.amplitudes.to(*args, **kwargs)
        return FourierSpectrum.trusted(self.frequencies.to(amp.device), amp)

    def to_dict(self) -> dict[str, Any]:
        """Plain, pickle-free form: ``{"n_features", "frequencies": (k, n) bool, "amplitudes": (k,)}``."""
        return {
            "n_features": self.n_features,
            "frequencies": self.frequencies.detach().cpu(),
            "amplitudes": self.amplitudes.detach().cpu(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FourierSpectrum:
        """Inverse of :meth:`to_dict` (also accepts nested lists for the tensors, e.g. from JSON).

        Raises:
            TypeError: ``data`` is not a mapping, or holds non-numeric entries.
            KeyError: ``frequencies`` or ``amplitudes`` is missing.
            ValueError: frequencies that are not 0/1 (never coerced to bool), or an ``n_features`` that disagrees
                with the frequencies' width.
        """
        if not isinstance(data, dict):
            raise TypeError(f"spectrum data must be a dict (as from to_dict()), got {type(data).__name__}")
        missing = {"frequencies", "amplitudes"} - set(data)
        if missing:
            raise KeyError(f"spectrum dict is missing {sorted(missing)}")
        freq = to_tensor(data["frequencies"], "frequencies").tensor
        amp = to_tensor(data["amplitudes"], "amplitudes").tensor
        if not amp.is_floating_point():
            amp = amp.to(torch.get_default_dtype())
        n = data.get("n_features")
        if n is not None:
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise ValueError(f"n_features must be a non-negative int, got {str(n)[:40]!r}")
            if freq.numel() == 0:
                freq = freq.reshape(0, n)
            elif freq.ndim == 2 and freq.shape[1] != n:
                raise ValueError(f"n_features is {n} but the frequencies have {freq.shape[1]} columns")
        return cls(freq, amp)

"""A differentiable torch module of a sparse Fourier spectrum (the multilinear extension)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from torchxplain._core import chunk_bounds, rows_per_chunk
from torchxplain._core.inputs import rows
from torchxplain.fourier.spectrum._spectrum import FourierSpectrum


class SparseFourierSurrogate(nn.Module):
    """``h(x) = Σ_f a_f Π_{i∈f} (1 - 2 x_i)`` on real ``x`` — equal to the spectrum on {0,1}^n.

    The amplitudes are a ``Parameter`` (fine-tune them with any torch optimiser); the frequencies are a
    buffer, stored as the ``(k, max_degree)`` feature indices of each frequency (padded with ``n``,
    which points at a constant-one column), so a forward pass costs ``O(B · k · degree)``. Several outputs (the
    classes of a classifier) share one frequency set: :meth:`from_outputs` holds ``(k, C)`` amplitudes and the
    forward pass returns ``(B, C)``.

    Args:
        spectrum: the spectrum to wrap (copied).
        max_memory: budget for the ``(B, k, degree)`` gathered factors (bytes or e.g. ``"1GB"``).
        support: the frequencies' ``(k, max_degree)`` feature indices (increasing, padded with ``n``) when known
            already — a tree extraction records them — instead of scanning the ``(k, n)`` frequencies for them
            (trusted: for callers that built them from the same frequencies).

    Example:
        >>> import torch
        >>> import torchxplain as tx
        >>> spec = tx.FourierSpectrum(torch.tensor([[0, 0], [1, 0]], dtype=torch.bool), torch.tensor([1.0, 2.0]))
        >>> surrogate = tx.SparseFourierSurrogate(spec)  # 1 + 2 (1 - 2 x0) on [0, 1]^2
        >>> surrogate(torch.tensor([[0.0, 1.0], [0.25, 0.0]]))
        tensor([3., 2.], grad_fn=<CatBackward0>)
    """

    def __init__(
        self, spectrum: FourierSpectrum, max_memory: int | str | None = None, support: Tensor | None = None
    ) -> None:
        super().__init__()
        if not isinstance(spectrum, FourierSpectrum):
            raise TypeError(f"spectrum must be a FourierSpectrum, got {type(spectrum).__name__}")
        self.n_features = spectrum.n_features
        self.max_memory = max_memory
        self.amplitudes = nn.Parameter(spectrum.amplitudes.detach().clone())
        self.register_buffer("frequencies", spectrum.frequencies.clone())
        if support is None or support.ndim != 2 or support.shape[0] != len(spectrum):
            support = self._support_indices(spectrum.frequencies)
        self.register_buffer("support", support.to(spectrum.frequencies.device), persistent=False)

    @classmethod
    def from_outputs(
        cls, spectra: list[FourierSpectrum], max_memory: int | str | None = None, support: Tensor | None = None
    ) -> SparseFourierSurrogate:
        """One surrogate of ``C`` spectra on the same ``n`` features: the union of their frequencies, ``(k, C)``
        amplitudes (zero where an output lacks a frequency). One spectrum gives a single-output surrogate
        (``support``: its feature indices, as for the constructor)."""
        if not spectra or any(not isinstance(s, FourierSpectrum) for s in spectra):
            raise TypeError("spectra must be a non-empty list of FourierSpectrum")
        if len({s.n_features for s in spectra}) != 1:
            raise ValueError(f"spectra must share n_features, got {sorted({s.n_features for s in spectra})}")
        if len(spectra) == 1:
            return cls(spectra[0], max_memory, support)
        freq = torch.cat([s.frequencies for s in spectra])
        union, inverse = torch.unique(freq, dim=0, return_inverse=True)
        amp = torch.zeros(union.shape[0], len(spectra), dtype=spectra[0].dtype, device=spectra[0].device)
        column = torch.cat([torch.full((len(s),), c, device=freq.device) for c, s in enumerate(spectra)])
        amp.index_put_((inverse, column), torch.cat([s.amplitudes.to(amp.dtype) for s in spectra]), accumulate=True)
        surrogate = cls(FourierSpectrum.trusted(union, amp[:, 0]), max_memory)
        surrogate.amplitudes = nn.Parameter(amp)
        return surrogate

    @property
    def n_outputs(self) -> int:
        """Number of outputs ``C`` (1 for a single spectrum)."""
        return 1 if self.amplitudes.ndim == 1 else int(self.amplitudes.shape[1])

    def output_spectrum(self, output: int) -> FourierSpectrum:
        """The (detached) spectrum of one output, without the frequencies it lacks."""
        if self.amplitudes.ndim == 1:
            return self.spectrum
        amp = self.amplitudes.detach()[:, output]
        keep = amp != 0
        return FourierSpectrum.trusted(self.frequencies[keep], amp[keep])

    def _support_indices(self, freq: Tensor) -> Tensor:
        # from the nonzeros (row-major, so features ascend within a row): O(k·degree) memory, not O(k·n)
        rows, cols = torch.nonzero(freq, as_tuple=True)
        degrees = torch.bincount(rows, minlength=freq.shape[0])
        width = int(degrees.max()) if freq.shape[0] else 0
        position = torch.arange(rows.numel(), device=rows.device) - (torch.cumsum(degrees, 0) - degrees)[rows]
        out = torch.full((freq.shape[0], width), self.n_features, dtype=torch.int64, device=freq.device)
        out[rows, position] = cols
        return out

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        key = prefix + "frequencies"
        if key in state_dict:
            self.frequencies = state_dict[key].clone()
            self.support = self._support_indices(self.frequencies)
            self.amplitudes = nn.Parameter(torch.empty_like(state_dict[prefix + "amplitudes"]))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    @property
    def spectrum(self) -> FourierSpectrum:
        """The current (detached) spectrum (single-output surrogates; else :meth:`output_spectrum`)."""
        if self.amplitudes.ndim != 1:
            raise ValueError(f"this surrogate has {self.n_outputs} outputs; use output_spectrum(c) for output c")
        return FourierSpectrum.trusted(self.frequencies, self.amplitudes.detach())

    def forward(self, x: Any) -> Tensor:
        """Evaluate the surrogate.

        Args:
            x: ``(B, n)`` real rows, usually in [0, 1] (a tensor, or a numpy array, nested list or DataFrame, placed
                on the amplitudes' device).

        Returns:
            ``(B,)`` tensor (``(B, C)`` for ``C`` outputs), differentiable in ``x`` and in the amplitudes.
        """
        device = self.amplitudes.device
        return self.evaluate_checked(
            rows(x, "x", n_features=self.n_features, device=device, values="finite", allow_empty=True).tensor
        )

    def evaluate_checked(self, x: Tensor) -> Tensor:
        """:meth:`forward` on ``(B, n)`` rows the caller has validated (finite, right width)."""
        x = x.to(self.amplitudes.dtype)
        ones = x.new_ones(x.shape[0], 1)
        factors = torch.cat([1.0 - 2.0 * x, ones], dim=1)
        k, degree = self.support.shape
        step = rows_per_chunk(max(k * max(degree, 1), 1) * x.element_size() * 2, x.shape[0], self.max_memory)
        out = []
        for start, stop in chunk_bounds(x.shape[0], step):
            gathered = factors[start:stop, self.support]  # (b, k, degree)
            out.append(gathered.prod(dim=2) @ self.amplitudes)
        return torch.cat(out) if out else x.new_zeros((0,) + tuple(self.amplitudes.shape[1:]))

    def extra_repr(self) -> str:
        return f"n_features={self.n_features}, k={self.frequencies.shape[0]}"

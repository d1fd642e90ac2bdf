"""A differentiable torch module of a sparse Fourier spectrum (the multilinear extension)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from torchxplain._core import check_finite, check_matrix, chunk_bounds, rows_per_chunk
from torchxplain.fourier.spectrum import FourierSpectrum


class SparseFourierSurrogate(nn.Module):
    """``h(x) = Σ_f a_f Π_{i∈f} (1 - 2 x_i)`` on real ``x`` — equal to the spectrum on {0,1}^n.

    The amplitudes are a ``Parameter`` (fine-tune them with any torch optimiser); the frequencies are a
    buffer, stored as the ``(k, max_degree)`` feature indices of each frequency (padded with ``n``,
    which points at a constant-one column), so a forward pass costs ``O(B · k · degree)``.

    Args:
        spectrum: the spectrum to wrap (copied).
        max_memory: budget for the ``(B, k, degree)`` gathered factors (bytes or e.g. ``"1GB"``).
    """

    def __init__(self, spectrum: FourierSpectrum, max_memory: int | str | None = None) -> None:
        super().__init__()
        if not isinstance(spectrum, FourierSpectrum):
            raise TypeError(f"spectrum must be a FourierSpectrum, got {type(spectrum).__name__}")
        self.n_features = spectrum.n_features
        self.max_memory = max_memory
        self.amplitudes = nn.Parameter(spectrum.amplitudes.detach().clone())
        self.register_buffer("frequencies", spectrum.frequencies.clone())
        self.register_buffer("support", self._support_indices(spectrum.frequencies), persistent=False)

    def _support_indices(self, freq: Tensor) -> Tensor:
        degree = int(freq.sum(1).max()) if freq.shape[0] else 0
        # stable sort puts each frequency's features first, in increasing index order
        order = torch.argsort((~freq).to(torch.int8), dim=1, stable=True)[:, :degree]
        on = torch.gather(freq, 1, order)
        return torch.where(on, order, torch.full_like(order, self.n_features))

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        key = prefix + "frequencies"
        if key in state_dict:
            self.frequencies = state_dict[key].clone()
            self.support = self._support_indices(self.frequencies)
            self.amplitudes = nn.Parameter(torch.empty_like(state_dict[prefix + "amplitudes"]))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    @property
    def spectrum(self) -> FourierSpectrum:
        """The current (detached) spectrum."""
        return FourierSpectrum.trusted(self.frequencies, self.amplitudes.detach())

    def forward(self, x: Tensor) -> Tensor:
        """Evaluate the surrogate.

        Args:
            x: ``(B, n)`` real tensor (usually in [0, 1]).

        Returns:
            ``(B,)`` tensor, differentiable in ``x`` and in the amplitudes.
        """
        check_matrix(x, "x", self.n_features, allow_empty=True)
        check_finite(x, "x")
        x = x.to(self.amplitudes.dtype)
        ones = x.new_ones(x.shape[0], 1)
        factors = torch.cat([1.0 - 2.0 * x, ones], dim=1)
        k, degree = self.support.shape
        step = rows_per_chunk(max(k * max(degree, 1), 1) * x.element_size() * 2, x.shape[0], self.max_memory)
        out = []
        for start, stop in chunk_bounds(x.shape[0], step):
            gathered = factors[start:stop, self.support]  # (b, k, degree)
            out.append(gathered.prod(dim=2) @ self.amplitudes)
        return torch.cat(out) if out else x.new_zeros(0)

    def extra_repr(self) -> str:
        return f"n_features={self.n_features}, k={self.frequencies.shape[0]}"

"""Random spectra, players and backgrounds shared by the Fourier tests (seeded, so every test sees the same case)."""

from __future__ import annotations

import numpy as np
import torch

from torchxplain import FourierSpectrum


def random_case(seed: int, n: int, k: int, n_bg: int, n_q: int, max_degree: int | None = None):
    rng = np.random.default_rng(seed)
    max_degree = n if max_degree is None else max_degree
    freq = np.zeros((k, n), dtype=bool)
    for row in freq:
        deg = rng.integers(0, max_degree + 1)
        row[rng.choice(n, size=deg, replace=False)] = True
    amp = rng.normal(size=k)
    bg = rng.integers(0, 2, size=(n_bg, n)).astype(float)
    xq = rng.integers(0, 2, size=(n_q, n)).astype(float)
    spec = FourierSpectrum(torch.tensor(freq), torch.tensor(amp, dtype=torch.float64))
    return spec, freq, amp, torch.tensor(xq), torch.tensor(bg)


def random_groups(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, n + 1))
    groups = np.concatenate([np.arange(m), rng.integers(0, m, size=n - m)])
    return rng.permutation(groups)


def small_support_case(seed: int, n: int, n_families: int, width: int, n_bg: int, n_q: int):
    """A spectrum whose frequencies are random subsets of a few random supports of ``width`` features."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n_families):
        support = rng.choice(n, size=min(width, n), replace=False)
        for _ in range(int(rng.integers(1, 2 ** len(support) + 1))):
            row = np.zeros(n, dtype=bool)
            row[support[rng.random(len(support)) < 0.5]] = True
            rows.append(row)
    freq = np.unique(np.array(rows), axis=0)
    amp = rng.normal(size=len(freq))
    spec = FourierSpectrum(torch.tensor(freq), torch.tensor(amp, dtype=torch.float64))
    bg = torch.tensor(rng.integers(0, 2, size=(n_bg, n)).astype(float))
    xq = torch.tensor(rng.integers(0, 2, size=(n_q, n)).astype(float))
    return spec, freq, amp, xq, bg

"""Sparse Walsh–Hadamard transform by hashing and peeling (Amrollahi et al. 2019, SPRIGHT-style robust).

For a hash matrix ``H ∈ {0,1}^{n×b}`` and a delay ``p ∈ {0,1}^n``, the ``2^b`` queries ``u(t) = h(H t ⊕ p)``
have the small WHT ``U_p(j) = Σ_{f : Hᵀf = j} a_f (-1)^{<f,p>}``: every frequency falls in one of ``2^b``
buckets, and across delays a bucket holding one frequency (a singleton) reads ``a_f`` times a known sign
pattern of ``f``. The frequency is decoded from the signs (per bit with ``p`` and ``p ⊕ e_i`` and a weighted
vote over several random base delays; or, with a degree cap, by matching against every low-degree frequency
that hashes into the bucket), checked (residual and hash consistency), and subtracted from every bucket of
every hash it falls in (peeling), which turns collisions into new singletons.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, progress, rows_per_chunk
from torchxplain.fourier.spectrum import fwht, index_bits, low_degree_index

Query = Callable[[Tensor], Tensor]


@dataclass(frozen=True)
class HashingPlan:
    """Sizes of one hashing run.

    Attributes:
        n_bits: ``b``; each hash has ``2**b`` buckets.
        n_hashes: number of independent hash matrices.
        n_delays: per-bit decoding: random base delays (each followed by its ``n`` one-bit flips);
            low-degree decoding: random delays (signature length).
        decoder: ``"bitwise"`` or ``"low-degree"``.
        n_refit: fresh uniform queries for the least-squares refit of the recovered support.
    """

    n_bits: int
    n_hashes: int
    n_delays: int
    decoder: str
    n_refit: int

    def delays_per_hash(self, n_features: int) -> int:
        """Number of delays (query sets of ``2**b`` rows) per hash."""
        return self.n_delays * (n_features + 1) if self.decoder == "bitwise" else self.n_delays

    def hashing_queries(self, n_features: int) -> int:
        """Queries spent on the hashes (without the refit)."""
        return self.n_hashes * self.delays_per_hash(n_features) << self.n_bits

    def total_queries(self, n_features: int) -> int:
        """All queries of the run: hashes plus refit."""
        return self.hashing_queries(n_features) + self.n_refit


def _bits_to_int(bits: Tensor) -> Tensor:
    """``(..., b)`` 0/1 -> ``(...,)`` int64 with bit ``l`` from column ``l``."""
    weights = 1 << torch.arange(bits.shape[-1], device=bits.device)
    return (bits.long() * weights).sum(-1)


def _parity(a: Tensor, b: Tensor) -> Tensor:
    """``(a @ bᵀ) mod 2`` for 0/1 matrices, as float64 0/1 (exact: entries are small integers)."""
    return torch.remainder(a.to(torch.float64) @ b.to(torch.float64).T, 2.0)


class _Buckets:
    """Per-hash bucket observations ``U[c] : (P, 2**b)`` and the hash and delay matrices."""

    def __init__(self, hashes: Tensor, delays: Tensor, values: Tensor) -> None:
        self.hashes = hashes  # (C, n, b) bool
        self.delays = delays  # (C, P, n) bool
        self.values = values  # (C, P, 2**b) float64

    def bucket_of(self, c: int, freqs: Tensor) -> Tensor:
        return _bits_to_int(_parity(freqs, self.hashes[c].T))

    def patterns(self, c: int, freqs: Tensor) -> Tensor:
        """``(P, K)`` signs ``(-1)^{<f, p>}`` of frequencies ``(K, n)`` under the delays of hash ``c``."""
        return 1.0 - 2.0 * _parity(self.delays[c], freqs)

    def subtract(self, freqs: Tensor, amps: Tensor) -> Tensor:
        """Remove ``Σ a_f (-1)^{<f,p>}`` from the buckets of every hash; returns the touched ``(C, 2**b)``."""
        touched = torch.zeros(self.values.shape[0], self.values.shape[2], dtype=torch.bool, device=self.values.device)
        for c in range(self.values.shape[0]):
            j = self.bucket_of(c, freqs)
            self.values[c].index_add_(1, j, -(self.patterns(c, freqs) * amps))
            touched[c, j] = True
        return touched


def _query_buckets(query: Query, hashes: Tensor, delays: Tensor, batch_size: int) -> Tensor:
    """Query ``h(H_c t ⊕ p)`` for every hash ``c``, delay ``p`` and ``t ∈ {0,1}^b`` and WHT over ``t``."""
    n_hash, n_delay = delays.shape[0], delays.shape[1]
    n_bits = hashes.shape[2]
    size = 1 << n_bits
    t = index_bits(torch.arange(size, device=hashes.device), n_bits)
    points = torch.stack([_parity(t, hashes[c]).bool() for c in range(n_hash)])  # (C, 2^b, n)
    total = n_hash * n_delay * size
    starts = range(0, total, batch_size)
    out = []
    for start in progress(starts, desc="sparse WHT: hashing queries", total=len(starts)):
        g = torch.arange(start, min(start + batch_size, total), device=hashes.device)
        c, p, j = g // (n_delay * size), (g // size) % n_delay, g % size
        out.append(query(points[c, j] ^ delays[c, p]))
    values = torch.cat(out).reshape(n_hash, n_delay, size)
    return fwht(values, dim=-1) / size


class _LowDegreeTable:
    """Every frequency of degree ``<= d`` grouped by bucket, per hash, for matched-filter decoding."""

    def __init__(self, n_features: int, max_degree: int, hashes: Tensor) -> None:
        self.n = n_features
        self.index = low_degree_index(n_features, max_degree, hashes.device)  # (N, w), padded with n
        self.tables = []
        size = 1 << hashes.shape[2]
        for c in range(hashes.shape[0]):
            row_ids = torch.cat((_bits_to_int(hashes[c]), hashes.new_zeros(1, dtype=torch.long)))
            bucket = row_ids[self.index[:, 0]]
            for col in range(1, self.index.shape[1]):
                bucket = bucket ^ row_ids[self.index[:, col]]
            order = torch.argsort(bucket, stable=True)
            counts = torch.bincount(bucket, minlength=size)
            starts = torch.cumsum(counts, 0) - counts
            sorted_bucket = bucket[order]
            pos = torch.arange(order.numel(), device=order.device) - starts[sorted_bucket]
            table = torch.full((size, int(counts.max())), -1, dtype=torch.long, device=order.device)
            table[sorted_bucket, pos] = order
            self.tables.append(table)

    def decode(self, c: int, buckets: Tensor, values: Tensor, delays: Tensor) -> Tensor:
        """Best-matching candidate per bucket: ``argmax_f |Σ_p U_p(j) (-1)^{<f,p>}|`` -> ``(A, n)`` bool."""
        table = self.tables[c][buckets]  # (A, L)
        delays_ext = torch.cat((delays.long(), delays.new_zeros(delays.shape[0], 1, dtype=torch.long)), dim=1)
        best = torch.empty(buckets.numel(), dtype=torch.long, device=buckets.device)
        step = rows_per_chunk(8 * table.shape[1] * delays.shape[0] * (self.index.shape[1] + 1), buckets.numel())
        for a, b in chunk_bounds(buckets.numel(), step):
            cand = self.index[table[a:b].clamp(min=0)]  # (a', L, w)
            bits = delays_ext[:, cand].sum(-1) % 2  # (P, a', L)
            score = torch.einsum("pa,pal->al", values[:, a:b], 1.0 - 2.0 * bits.to(torch.float64)).abs()
            score[table[a:b] < 0] = -1.0
            best[a:b] = table[a:b].gather(1, score.argmax(1, keepdim=True))[:, 0]
        out = torch.zeros(buckets.numel(), self.n + 1, dtype=torch.bool, device=buckets.device)
        out.scatter_(1, self.index[best], True)
        return out[:, : self.n]


def _decode_bitwise(values: Tensor, n_features: int, n_base: int) -> Tensor:
    """Per-bit decoding: ``f_i = 1`` iff ``Σ_r U_{p_r}(j) U_{p_r ⊕ e_i}(j) < 0`` -> ``(A, n)`` bool."""
    v = values.reshape(n_base, n_features + 1, -1)
    votes = (v[:, :1] * v[:, 1:]).sum(0)  # (n, A)
    return (votes < 0).T


def _coalesce(freqs: Tensor, amps: Tensor, reduce: str) -> tuple[Tensor, Tensor]:
    """Merge duplicate frequencies (``reduce`` = ``"sum"`` or ``"mean"`` of their amplitudes)."""
    uniq, inverse = torch.unique(freqs, dim=0, return_inverse=True)
    total = amps.new_zeros(uniq.shape[0]).index_add_(0, inverse, amps)
    if reduce == "mean":
        total = total / torch.bincount(inverse, minlength=uniq.shape[0]).to(amps.dtype)
    return uniq, total


def sparse_wht(
    query: Query,
    n_features: int,
    plan: HashingPlan,
    *,
    max_degree: int | None,
    generator: torch.Generator,
    device: torch.device,
    batch_size: int,
    singleton_tol: float = 0.3,
    zero_tol: float = 1e-9,
    max_rounds: int = 50,
) -> tuple[Tensor, Tensor, dict[str, object]]:
    """Recover the large Fourier coefficients of ``h`` by hashing and peeling (no refit).

    Args:
        query: maps ``(B, n)`` bool inputs to ``(B,)`` float64 outputs.
        n_features: ``n``.
        plan: sizes (see :class:`HashingPlan`).
        max_degree: drop decoded frequencies above this degree (``plan.decoder == "low-degree"`` only
            considers them in the first place).
        generator, device: randomness and placement of the hash matrices and delays.
        batch_size: rows per query batch.
        singleton_tol: a bucket is a singleton when its residual energy after fitting one frequency is at
            most this fraction of its energy.
        zero_tol: buckets with RMS below ``zero_tol × sqrt(total energy)`` are empty, and smaller amplitudes
            are not accepted.
        max_rounds: peeling rounds at most.

    Returns:
        ``(frequencies (K, n) bool, amplitudes (K,) float64, info)``; ``info`` holds ``rounds``.
    """
    n, b, c_count = n_features, plan.n_bits, plan.n_hashes
    hashes = torch.randint(0, 2, (c_count, n, b), generator=generator, device=device).bool()
    if plan.decoder == "bitwise":
        base = torch.randint(0, 2, (c_count, plan.n_delays, 1, n), generator=generator, device=device).bool()
        flips = torch.cat(
            (torch.zeros(1, n, dtype=torch.bool, device=device), torch.eye(n, dtype=torch.bool, device=device))
        )
        delays = (base ^ flips).reshape(c_count, plan.n_delays * (n + 1), n)
        table = None
    else:
        if max_degree is None:
            raise ValueError("the low-degree decoder needs max_degree")
        delays = torch.randint(0, 2, (c_count, plan.n_delays, n), generator=generator, device=device).bool()
        table = _LowDegreeTable(n, max_degree, hashes)
    buckets = _Buckets(hashes, delays, _query_buckets(query, hashes, delays, batch_size))

    energy = float(buckets.values.pow(2).sum(-1).mean())
    floor = zero_tol**2 * energy
    found_f = [torch.zeros(0, n, dtype=torch.bool, device=device)]
    found_a = [torch.zeros(0, dtype=torch.float64, device=device)]
    active = torch.ones(c_count, 1 << b, dtype=torch.bool, device=device)
    rounds = 0
    for _ in range(max_rounds):
        rounds += 1
        new_f, new_a = [], []
        for c in range(c_count):
            v_all = buckets.values[c]
            cand = (active[c] & (v_all.pow(2).mean(0) > floor)).nonzero()[:, 0]
            if cand.numel() == 0:
                continue
            v = v_all[:, cand]
            if table is None:
                freqs = _decode_bitwise(v, n, plan.n_delays)
            else:
                freqs = table.decode(c, cand, v, delays[c])
            s = buckets.patterns(c, freqs)
            amp = (v * s).mean(0)
            resid = (v - s * amp).pow(2).sum(0) / v.pow(2).sum(0)
            ok = (resid <= singleton_tol) & (amp.pow(2) > floor) & (buckets.bucket_of(c, freqs) == cand)
            if max_degree is not None:
                ok &= freqs.sum(1) <= max_degree
            new_f.append(freqs[ok])
            new_a.append(amp[ok])
        if not new_f or sum(f.shape[0] for f in new_f) == 0:
            break
        freqs, amps = _coalesce(torch.cat(new_f), torch.cat(new_a), "mean")
        active = buckets.subtract(freqs, amps)
        found_f.append(freqs)
        found_a.append(amps)
    freqs, amps = _coalesce(torch.cat(found_f), torch.cat(found_a), "sum")
    return freqs, amps, {"rounds": rounds}


def default_delays(decoder: str, n_candidates: int | None) -> int:
    """Default ``n_delays``: 3 base delays for the bitwise decoder; ``2 log2(candidates) + 4`` signatures."""
    if decoder == "bitwise":
        return 3
    return min(64, max(12, 2 * math.ceil(math.log2(max(n_candidates or 2, 2))) + 4))

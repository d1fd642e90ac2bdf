"""The blocked products behind GOALS on (ARD-)RBF kernels: local scores, S4 gaps and local variances.

Notation (per feature j; ``c_j`` a centre common to every row involved, ``k0`` a scalar):

* ``e_ij = 2 theta_j xi_j (x_ij - c_j)``, ``p_j = -theta_j xi_j^2``, ``ut = expm1(e)`` (``u - 1``),
  ``vt = expm1(-e)`` (``1/u - 1``).
* Local score of a row with kernel row ``k_q`` (``(N,)``) and posterior mean part ``m_q = k_q alpha``:
  ``delta_qj = m_q - e^{p_j} v_qj k_q (u_j o alpha) = -(m_q + G_qj) q_qj - G_qj`` with
  ``G = k_q (alpha o ut_j)`` and ``q_qj = expm1(p_j - e_qj)``.
* S4 gap ``c_j = (K - B^(j)) 1 = -(k + H_j) o r_j - H_j`` with ``k = K 1``, ``H = K vt``,
  ``r = expm1(p + e)``; the S4 variance of the global mean is ``(2 1^T c_j - ||L^{-1} c_j||^2) / N^2``.

Only the small parts (``ut``, ``vt``) enter the ``N x N x J`` products, and the kernel enters them centred,
``G = k0 1^T(alpha o ut) + (K - k0)(alpha o ut)``: the leading terms are exact identities, so float32
products lose little. Products run in the compute dtype; everything elementwise (the factors, and the
combinations above, whose terms partly cancel) runs in float64. Measured on the HS mice (N = 1,814,
J = 10,339) against the float64 path on the same data: local scores within 2.3e-6 of each feature's largest
score (median element 8e-8 relative), global means of the top 20 features within 2e-9 relative, S4
variances within 4e-9 relative. The variance error grows with the ratio of prior to posterior variance of
the global mean (about 1.1 there); float64 inputs (or ``tx.settings.dtype_policy("float64")``) compute
every product in float64.

Products are blocked over features (and over rows for queries) so that elementwise work stays in cache and
nothing of size ``N^2 J`` (or ``Q N J``) is formed; the blocks follow ``tx.settings.max_memory``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, parse_memory, progress, rows_per_chunk

# On CPUs, feature blocks whose working set is about this size keep the elementwise work in cache
# (16-64 MiB measured alike on the mice data; 512 MiB blocks were 1.3x slower). GPUs use the whole budget.
CPU_BLOCK_BYTES = 32 * 2**20
# Row blocks of the triangular products with an explicit inverse factor (larger blocks waste more flops on
# the zero upper triangle; smaller ones make narrower products).
TRIANGLE_ROWS = 256

SqNorms = Callable[[Tensor], Tensor]


def block_size(rows: int, cols: int, arrays: int, itemsize: int, device: torch.device) -> int:
    """Columns per block so that ``arrays`` arrays of ``rows x block`` elements fit the budget."""
    budget = parse_memory()
    if device.type == "cpu":
        budget = min(budget, CPU_BLOCK_BYTES)
    return rows_per_chunk(arrays * rows * itemsize, cols, budget)


def exponents(x: Tensor, theta: Tensor, xi: Tensor, centre: Tensor) -> Tensor:
    """``e = 2 theta xi (x - centre)`` in float64 for ``x`` ``(R, C)`` and per-column ``(C,)`` factors."""
    return (x.double() - centre).mul_(2.0 * theta * xi)


class ShiftFactors:
    """The factors of one block of feature columns at some rows, computed on use in float64:
    ``ut = expm1(e)``, ``vt = expm1(-e)``, ``expm1(p - e)`` and ``expm1(p + e)``.

    Args:
        x: ``(R, C)`` rows; theta, xi, centre: ``(C,)`` per-column factors.
    """

    def __init__(self, x: Tensor, theta: Tensor, xi: Tensor, centre: Tensor) -> None:
        self.e = exponents(x, theta, xi, centre)
        self.p = -theta * xi.square()

    @property
    def ut(self) -> Tensor:
        """``expm1(e)``, ``(R, C)`` (a new tensor on every call)."""
        return torch.expm1(self.e)

    @property
    def vt(self) -> Tensor:
        """``expm1(-e)``, ``(R, C)``."""
        return torch.neg(self.e).expm1_()

    def down(self) -> Tensor:
        """``expm1(p - e)``: the factor of the local scores."""
        return torch.sub(self.p, self.e).expm1_()

    def up(self) -> Tensor:
        """``expm1(p + e)``: the factor of the S4 gaps."""
        return torch.add(self.e, self.p).expm1_()


def centred_product(kc: Tensor, k0: float, rhs: Tensor) -> Tensor:
    """``K rhs`` in float64 from the centred kernel ``kc = K - k0``: ``rhs`` is cast to ``kc``'s dtype, the
    product ``kc rhs`` runs in it, and ``k0 1^T rhs`` (of the cast values) is added in float64."""
    rhs = rhs.to(kc.dtype)
    out = (kc @ rhs).double()
    if k0 != 0.0:
        out += k0 * rhs.sum(0, dtype=torch.float64)
    return out


def scores_from_products(m: Tensor, g: Tensor, q: Tensor) -> Tensor:
    """``delta = -(m + G) q - G = -(G (1 + q) + m q)`` for ``m`` ``(R,)`` and ``G``, ``q`` ``(R, C)``
    (float64)."""
    return torch.addcmul(g, g, q).addcmul_(m[:, None], q).neg_()


@dataclass(frozen=True)
class TrainingStats:
    """What one pass over the training rows gives, per feature.

    Attributes:
        local: ``(N, J)`` local scores at the training rows (``None`` when not requested).
        mean: ``(J,)`` their mean over rows, float64 accumulation.
        mean_abs: ``(J,)`` the mean of their magnitudes.
        gap_sum: ``(J,)`` ``1^T c_j`` (``None`` without variances).
        gap_sqnorm: ``(J,)`` ``||L^{-1} c_j||^2`` (``None`` without variances).
        extra_prior: ``(J,)`` ``1^T C^(j) 1 - 1^T K 1`` where ``C^(j)`` is the kernel between shifted rows
            (``None``: zero, as for every stationary kernel).

    The S4 variance of the global mean is ``(extra_prior + 2 gap_sum - gap_sqnorm) / N^2``.
    """

    local: Tensor
    mean: Tensor
    mean_abs: Tensor
    gap_sum: Tensor | None = None
    gap_sqnorm: Tensor | None = None
    extra_prior: Tensor | None = None

    def variance(self) -> Tensor | None:
        """``(J,)`` S4 posterior variances of the global means (float64), ``None`` without gap statistics."""
        if self.gap_sum is None or self.gap_sqnorm is None:
            return None
        n = self.local.shape[0]
        prior = 2.0 * self.gap_sum + (0.0 if self.extra_prior is None else self.extra_prior)
        return (prior - self.gap_sqnorm) / n**2


def training_pass(
    kc: Tensor,
    k0: float,
    krow: Tensor,
    m: Tensor,
    alpha: Tensor,
    x: Tensor,
    theta: Tensor,
    xi: Tensor,
    centre: Tensor,
    *,
    local: TrainingStats | None,
    sqnorms: SqNorms | None,
) -> TrainingStats:
    """Local scores and S4 gaps at the ``N`` training rows in one pass over feature blocks.

    Args:
        kc: ``(N, N)`` centred kernel ``K - k0`` in the compute dtype (products run in it).
        k0: scalar centring constant; ``krow`` ``(N,)``: ``K 1``; ``m`` ``(N,)``: ``K alpha``.
        alpha: ``(N,)`` representer weights; ``x``: ``(N, J)`` training inputs.
        theta, xi, centre: ``(J,)`` inverse squared lengthscales, shifts and column centres. Columns whose
            factorised update would overflow must have been given ``xi = 0`` (they come out as zeros).
        local: the statistics of an earlier pass whose local scores are reused (their products are not
            redone), or ``None``.
        sqnorms: ``c -> ||L^{-1} c||^2`` per column for the variances, or ``None`` for means only.

    Returns:
        :class:`TrainingStats`: ``(N, J)`` scores in the compute dtype, their means accumulated in float64
        before rounding and, with ``sqnorms``, the gap statistics.
    """
    dt, dev = kc.dtype, kc.device
    n, j = x.shape
    if local is not None and sqnorms is None:
        return local
    want_local = local is None
    out = torch.empty(n, j, dtype=dt, device=dev) if local is None else local.local
    mean = torch.empty(j, dtype=torch.float64, device=dev) if local is None else local.mean
    mean_abs = torch.empty(j, dtype=torch.float64, device=dev) if local is None else local.mean_abs
    gap_sum = torch.empty(j, dtype=torch.float64, device=dev)
    gap_sqnorm = torch.empty(j, dtype=torch.float64, device=dev)
    step = block_size(n, j, 12, 8, dev)
    for a, b in progress(chunk_bounds(j, step), desc="GOALS training pass"):
        f = ShiftFactors(x[:, a:b], theta[a:b], xi[a:b], centre[a:b])
        parts = ([f.ut.mul_(alpha[:, None])] if want_local else []) + ([f.vt] if sqnorms is not None else [])
        g = centred_product(kc, k0, parts[0] if len(parts) == 1 else torch.cat(parts, 1))
        width = b - a
        if want_local:
            block = scores_from_products(m, g[:, :width], f.down())
            out[:, a:b] = block
            mean[a:b] = block.sum(0).div_(n)
            mean_abs[a:b] = torch.linalg.vector_norm(block, 1, dim=0).div_(n)
        if sqnorms is not None:
            gaps = scores_from_products(krow, g[:, -width:], f.up())
            gap_sum[a:b] = gaps.sum(0)
            gap_sqnorm[a:b] = sqnorms(gaps)
    if sqnorms is None:
        return TrainingStats(out, mean, mean_abs)
    return TrainingStats(out, mean, mean_abs, gap_sum, gap_sqnorm)


def query_scores(
    cross: Callable[[Tensor], Tensor],
    k0: float,
    alpha: Tensor,
    x: Tensor,
    xq: Tensor,
    theta: Tensor,
    xi: Tensor,
    centre: Tensor,
) -> Tensor:
    """``(Q, J)`` local scores at query rows ``xq`` (compute dtype), blocked over rows and features.

    ``cross(rows)`` gives the ``(R, N)`` kernel rows of ``rows`` ``(R, J)`` against the training inputs ``x``
    ``(N, J)``; other arguments as in :func:`training_pass` (the centre is common to ``x`` and ``xq``).
    """
    dt, dev = xq.dtype, xq.device
    n, j = x.shape
    q_rows = xq.shape[0]
    # The right-hand side only enters products: kept in the compute dtype.
    w = exponents(x, theta, xi, centre).expm1_().mul_(alpha[:, None]).to(dt)
    out = torch.empty(q_rows, j, dtype=dt, device=dev)
    itemsize = torch.finfo(dt).bits // 8
    row_step = rows_per_chunk(itemsize * 3 * (n + j), q_rows)
    col_step = block_size(min(row_step, q_rows), j, 8, 8, dev)
    blocks = [(r, s) for r in chunk_bounds(q_rows, row_step) for s in chunk_bounds(j, col_step)]
    kq, m0, current = xq.new_empty(0), xq.new_empty(0), (-1, -1)
    for (r0, r1), (a, b) in progress(blocks, desc="GOALS local scores"):
        if current != (r0, r1):
            kq = cross(xq[r0:r1])
            m0 = kq.double() @ alpha
            kq -= k0
            current = (r0, r1)
        g = centred_product(kq, k0, w[:, a:b])
        f = ShiftFactors(xq[r0:r1, a:b], theta[a:b], xi[a:b], centre[a:b])
        out[r0:r1, a:b] = scores_from_products(m0, g, f.down())
    return out


def local_variance_pairs(
    kq: Tensor, ut: Tensor, q: Tensor, prior: Tensor, sqnorms: SqNorms
) -> Iterator[tuple[slice, slice, Tensor]]:
    """Yield ``(rows, cols, variances)`` blocks of the local posterior variances of the scores.

    For a query with kernel row ``k_q``, ``L^{-1} c_qj = -(L^{-1} k_q) q_qj - (1 + q_qj) L^{-1}(k_q o ut_j)``:
    the right-hand sides of one block of (query, feature) pairs are formed by products only (no per-pair
    kernel evaluations) and solved together.

    Args:
        kq: ``(Q, N)`` kernel rows of the queries; ``ut``: ``(N, J)`` ``expm1(e)`` at the training rows.
        q: ``(Q, J)`` ``expm1(p - e)`` at the queries; ``prior``: ``(J,)`` prior variance of each score.
        sqnorms: ``c -> ||L^{-1} c||^2`` per column.
    """
    n, j = ut.shape
    cols = block_size(n, j, 4, ut.element_size(), ut.device)
    rows = max(1, cols // j)
    if rows > 1:
        for r0, r1 in progress(chunk_bounds(kq.shape[0], rows), desc="GOALS local variances"):
            k = kq[r0:r1, :, None]  # (R, N, 1)
            rhs = -(k * q[r0:r1, None, :]) - (1.0 + q[r0:r1, None, :]) * (k * ut[None])
            norms = sqnorms(rhs.transpose(0, 1).reshape(n, -1)).reshape(r1 - r0, j)
            yield slice(r0, r1), slice(0, j), prior - norms
        return
    blocks = [(r, s) for r in range(kq.shape[0]) for s in chunk_bounds(j, cols)]
    for r, (a, b) in progress(blocks, desc="GOALS local variances"):
        k = kq[r, :, None]
        rhs = -(k * q[r, None, a:b]) - (1.0 + q[r, None, a:b]) * (k * ut[:, a:b])
        yield slice(r, r + 1), slice(a, b), (prior[a:b] - sqnorms(rhs))[None]


def inverse_factor_sqnorms(linv: Tensor) -> SqNorms:
    """``c -> ||linv c||^2`` per column for a lower-triangular ``linv`` ``(N, N)``: row blocks of products
    that skip the zero upper triangle, squares summed in float64."""

    def sqnorms(c: Tensor) -> Tensor:
        c = c.to(linv.dtype)
        out = torch.zeros(c.shape[1], dtype=torch.float64, device=c.device)
        for r0, r1 in chunk_bounds(linv.shape[0], TRIANGLE_ROWS):
            out += (linv[r0:r1, :r1] @ c[:r1]).square().sum(0, dtype=torch.float64)
        return out

    return sqnorms


def cholesky_sqnorms(chol: Tensor) -> SqNorms:
    """``c -> ||L^{-1} c||^2`` per column by a triangular solve with the lower Cholesky factor ``chol``."""

    def sqnorms(c: Tensor) -> Tensor:
        w = torch.linalg.solve_triangular(chol, c.to(chol.dtype), upper=False)
        return w.square().sum(0, dtype=torch.float64)

    return sqnorms

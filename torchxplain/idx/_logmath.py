"""Log-space arithmetic of the classifier's posteriors, bit-identical for any batch shape."""

from __future__ import annotations

import math

import torch
from torch import Tensor


def sum_last(x: Tensor) -> Tensor:
    """Sum over the last axis in a fixed left-to-right order (bit-identical for any batch shape)."""
    out = x[..., 0]
    for k in range(1, x.shape[-1]):
        out = out + x[..., k]
    return out


def safe_log_softmax(logits: Tensor, valid: Tensor) -> Tensor:
    """Log-normalise ``logits (..., V)`` over the last axis; rows that are ``-inf`` everywhere become uniform.

    ``valid`` (broadcastable bool, last axis = values) marks the values that exist; a row whose unnormalised
    posterior is 0 for every value (0/0) gets the uniform distribution over its valid values.
    """
    top = logits.amax(dim=-1, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    lse = top + torch.log(sum_last(torch.exp(logits - top)))[..., None]
    out = logits - lse
    count = valid.sum(dim=-1, keepdim=True).to(logits.dtype)
    uniform = torch.where(valid, -torch.log(count), torch.full_like(count, -math.inf))
    return torch.where(torch.isneginf(lse), uniform.expand_as(out), out)

"""Engine-agnostic pieces of "explain a whole dataset": one batch in, a dict of tensors out; shards merged by index.

Nothing here imports Lightning, so the same functions serve a Lightning ``predict_step``, a plain
``torchrun`` loop or a Ray Data ``map_batches`` callable (the recipe is in ``docs/guides/ray.md``).
"""

from __future__ import annotations

import glob
import itertools
import os
import pickle
from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor, nn

from torchxplain._core import check_int
from torchxplain._core.inputs import to_tensor
from torchxplain._core.saved_fields import SavedFieldError, SavedFields

SHARD_PATTERN = "shard-rank*-part*.pt"


def _device(explainer: Any) -> torch.device | None:
    """The device of the explainer's (or its model's) first parameter or buffer, if it has any."""
    for owner in (explainer, getattr(explainer, "forward_func", None)):
        if isinstance(owner, nn.Module):
            for tensor in itertools.chain(owner.parameters(), owner.buffers()):
                return tensor.device
    return None


def attribute_batch(explainer: Any, batch: Any, **attribute_kwargs: Any) -> dict[str, Tensor]:
    """Explain one batch, escaping ``torch.inference_mode``/``no_grad`` so gradient explainers work.

    Args:
        explainer: any Captum ``Attribution`` (a torchxplain explainer, ``IntegratedGradients``, ...).
        batch: the inputs ``(B, ...)`` (a tensor, numpy array, nested list or DataFrame; non-tensors are placed
            on the explainer's device); a tuple/list whose first item is the inputs (labels etc. are ignored); or
            a mapping with ``"inputs"`` and optionally ``"index"`` (``(B,)`` integer row ids), e.g. a Ray Data
            batch of numpy arrays.
        **attribute_kwargs: passed to ``explainer.attribute`` (e.g. ``target``, ``n_steps``).

    Returns:
        ``{"attributions": (B, ...) detached, shaped like the inputs}`` plus ``"index"`` when the batch had one.

    Example:
        >>> import torch
        >>> import torchxplain as tx
        >>> from torchxplain.integrations import attribute_batch
        >>> spec = tx.FourierSpectrum(torch.tensor([[0, 0, 0], [1, 0, 0]], dtype=torch.bool), torch.tensor([1.0, 2.0]))
        >>> explainer = tx.FourierShap.from_spectrum(spec, torch.zeros(1, 3))
        >>> out = attribute_batch(explainer, {"inputs": torch.ones(2, 3), "index": torch.tensor([7, 3])})
        >>> out["index"], out["attributions"]
        (tensor([7, 3]), tensor([[-4.,  0.,  0.],
                [-4.,  0.,  0.]]))
    """
    index = None
    if isinstance(batch, Mapping):
        if "inputs" not in batch:
            raise KeyError(f"a mapping batch needs an 'inputs' entry, got keys {sorted(batch)}")
        inputs, index = batch["inputs"], batch.get("index")
    elif isinstance(batch, (tuple, list)):
        if not batch:
            raise ValueError("batch is an empty sequence; expected (inputs, ...)")
        inputs = batch[0]
    else:
        inputs = batch
    inputs = to_tensor(inputs, "batch inputs", device=_device(explainer)).tensor
    if inputs.ndim < 1:
        raise ValueError("batch inputs must have a batch dimension (dim 0)")
    with torch.inference_mode(False), torch.enable_grad():
        # a clone made outside inference mode is a normal tensor that autograd may record
        attributions = explainer.attribute(inputs.clone(), **attribute_kwargs)
    if not isinstance(attributions, Tensor):
        raise TypeError(f"explainer.attribute returned {type(attributions).__name__}; expected one tensor")
    out = {"attributions": attributions.detach()}
    if index is not None:
        index = torch.as_tensor(index)
        if index.shape != (inputs.shape[0],):
            raise ValueError(f"batch 'index' must have shape ({inputs.shape[0]},), got {tuple(index.shape)}")
        out["index"] = index
    return out


def _read_shard(path: str) -> tuple[Tensor, Tensor]:
    """One shard's ``(R,)`` int64 indices and ``(R, ...)`` attributions, every field checked (one clear error each)."""
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except (RuntimeError, EOFError, OSError, ValueError, pickle.UnpicklingError) as err:
        raise ValueError(
            f"shard {path!r} is not readable (empty, truncated or not written by ExplanationWriter): {str(err)[:120]}"
        ) from None
    if not isinstance(data, dict) or not all(isinstance(v, Tensor) for v in data.values()):
        raise ValueError(
            f"shard {path!r} holds a {type(data).__name__}, not ExplanationWriter's dict of tensors "
            "{'index', 'attributions'}; remove it from the folder"
        )
    try:
        fields = SavedFields({}, data, fix="remove it from the folder, or explain its rows again")
        index = fields.tensor("index", ("R",), kind="int", minimum=0)
        attributions = fields.tensor("attributions", kind="float", finite=False)  # results: NaN is kept
        fields.require(attributions.ndim >= 1, "attributions", "must have a row dimension (R, ...)")
        fields.require(
            attributions.shape[0] == index.shape[0],
            "attributions",
            f"has {attributions.shape[0]} rows for {index.shape[0]} indices",
        )
    except SavedFieldError as err:
        raise ValueError(f"shard {path!r}: {err}") from None
    return index.long(), attributions


def merge_shards(directory: str | os.PathLike[str], expected_rows: int | None = None) -> dict[str, Tensor]:
    """Concatenate the shards written by ``ExplanationWriter`` and sort the rows by their dataset index.

    Args:
        directory: the writer's ``output_dir``.
        expected_rows: if given (an int >= 0), the indices must be exactly ``0 .. expected_rows - 1`` (no loss).

    Returns:
        ``{"index": (N,) int64 sorted, "attributions": (N, ...)}``.

    Raises:
        ValueError: on no shards, an unreadable or truncated shard, a shard that is not a dict of ``index``
            ``(R,)`` non-negative integers and floating ``attributions`` ``(R, ...)``, shards whose attributions
            differ in shape or dtype, a duplicated index, or (with ``expected_rows``) a missing one.
    """
    if expected_rows is not None:
        check_int(expected_rows, "expected_rows", 0, hint="the number of rows explained, or None")
    paths = sorted(glob.glob(os.path.join(os.fspath(directory), SHARD_PATTERN)))
    if not paths:
        raise ValueError(f"no shards matching {SHARD_PATTERN!r} in {os.fspath(directory)!r}")
    shards = [_read_shard(p) for p in paths]
    layout = [(tuple(a.shape[1:]), a.dtype) for _, a in shards]
    other = next((k for k, lay in enumerate(layout) if lay != layout[0]), None)
    if other is not None:
        raise ValueError(
            f"shards hold attributions of different row shapes or dtypes: {paths[0]!r} {layout[0]} and "
            f"{paths[other]!r} {layout[other]}; a folder must hold the shards of one run"
        )
    index = torch.cat([i for i, _ in shards])
    attributions = torch.cat([a for _, a in shards])
    order = torch.argsort(index, stable=True)
    index, attributions = index[order], attributions[order]
    duplicated = index[1:][index[1:] == index[:-1]]
    if duplicated.numel():
        raise ValueError(f"rows explained more than once: indices {duplicated.unique()[:10].tolist()}")
    if expected_rows is not None and not torch.equal(index, torch.arange(expected_rows)):
        missing = sorted(set(range(expected_rows)) - set(index.tolist()))
        beyond = bool(index.numel()) and int(index.max()) >= expected_rows
        raise ValueError(
            f"expected rows 0..{expected_rows - 1}; missing {missing[:10]} ({len(missing)} in all)"
            f"{', and indices beyond the range' if beyond else ''}"
        )
    return {"index": index, "attributions": attributions}

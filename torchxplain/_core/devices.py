"""Devices named by users (``device=``, ``map_location=``): checked to exist on this machine before any work."""

from __future__ import annotations

import torch


def check_device(device: object, name: str = "device") -> torch.device:
    """``device`` as a ``torch.device`` this machine has (a CUDA device gets its index).

    Args:
        device: a ``torch.device`` or a string such as ``"cpu"``, ``"cuda"``, ``"cuda:1"``.
        name: the argument's name, for messages.

    Raises:
        TypeError: not a device or a string.
        ValueError: an unknown device string, or CUDA / MPS / a CUDA index this machine does not have.
    """
    if not isinstance(device, torch.device | str):
        raise TypeError(
            f"{name} must be a torch.device or a string such as 'cpu' or 'cuda', got {type(device).__name__}"
        )
    try:
        resolved = torch.device(device)
    except RuntimeError:
        raise ValueError(
            f"{name} must name a torch device such as 'cpu', 'cuda' or 'cuda:0', got {device!r:.40}"
        ) from None
    fix = f"pass {name}='cpu', or run where the device is visible"
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"{name}={str(device)!r}, but CUDA is not available on this machine; {fix}")
        index = torch.cuda.current_device() if resolved.index is None else resolved.index
        if index >= torch.cuda.device_count():
            raise ValueError(
                f"{name}={str(device)!r}, but this machine has {torch.cuda.device_count()} CUDA device(s); {fix}"
            )
        return torch.device("cuda", index)
    if resolved.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"{name}={str(device)!r}, but MPS is not available on this machine; {fix}")
    return resolved

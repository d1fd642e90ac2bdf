"""The rows GOALS explains, checked once at the public boundary of a backend."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from torchxplain._core import check_finite, check_matrix, check_same_device
from torchxplain._core.inputs import to_tensor


def check_rows(x: Any, train_inputs: Tensor, name: str = "inputs") -> Tensor:
    """``x`` as a ``(Q, J)`` floating tensor matching the training inputs ``(N, J)``.

    Tensors stay on their device (which must be the training inputs'); arrays, lists and DataFrames are
    placed there, integer inputs promoted to the training dtype. Values must be finite (skipped under
    ``tx.settings.validation("shapes")``).

    Raises:
        TypeError: not array-like, complex, or not numeric.
        ValueError: wrong number of dimensions or features, NaN/inf values, another device.
    """
    # a real tensor (the explainer converted a frame already) is checked below, not converted again
    t = (
        x
        if isinstance(x, Tensor) and not x.is_complex()
        else to_tensor(x, name, device=train_inputs.device, ndim=2).tensor
    )
    if not t.is_floating_point():
        t = t.to(train_inputs.dtype)
    check_matrix(t, name, n_features=train_inputs.shape[1])
    check_same_device(**{name: t, "training inputs": train_inputs})
    return check_finite(t, name).detach()

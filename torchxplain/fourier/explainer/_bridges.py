"""Bridges to the explanation objects users already plot: ``shapiq.InteractionValues`` and ``shap.Explanation``.

Both libraries are optional and imported only when a converter is called (``pip install shapiq`` /
``pip install shap``; both are in the ``dev`` extra). Nothing here computes values: the converters reshape
tensors that the explainers produced.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

import numpy as np
import torch
from torch import Tensor

from torchxplain._core.inputs import to_tensor
from torchxplain.fourier.values import INDICES


def _optional(module: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(
            f"this converter needs the optional package {module!r}: pip install {module} "
            "(or pip install 'torchxplain[dev]')"
        ) from err


def _array(x: object, name: str) -> np.ndarray:
    """``x`` (a tensor, array, list, DataFrame or a real scalar) as a numpy array."""
    if isinstance(x, int | float | np.number) and not isinstance(x, bool):
        return np.asarray(x)
    return to_tensor(x, name).tensor.detach().cpu().numpy()


def _check_result(result: Mapping[int, Tensor]) -> tuple[int, int, int]:
    """Validate an ``interaction_values`` result; return ``(rows, players, largest order)``."""
    if not isinstance(result, Mapping) or 0 not in result or 1 not in result:
        raise ValueError("result must be the dict order -> tensor from interaction_values (orders 0 and 1 at least)")
    top = max(result)
    if sorted(result) != list(range(top + 1)):
        raise ValueError(f"result must hold every order 0..{top}, got orders {sorted(result)}")
    rows, m = result[1].shape
    for t, tensor in result.items():
        if tuple(tensor.shape) != (rows,) + (m,) * t:
            raise ValueError(f"result[{t}] must have shape {(rows,) + (m,) * t}, got {tuple(tensor.shape)}")
    return rows, m, top


def to_shapiq_values(
    result: Mapping[int, Tensor], index: str, baseline_value: object, max_order: int | None = None
) -> list[Any]:
    """One ``shapiq.InteractionValues`` per row of an :func:`~torchxplain.fourier.interaction_values` result.

    Args:
        result: ``{0: (Q,), 1: (Q, m), 2: (Q, m, m), ...}`` (symmetric tensors; each unordered subset of
            distinct players is read once).
        index: the shapiq index name the result was computed with (one of
            :data:`~torchxplain.fourier.INDICES`).
        baseline_value: ``v(∅)`` per row, ``(Q,)`` or a scalar (the model's mean output over the background).
            For ``"FBII"`` the baseline is the fit's intercept ``result[0]`` instead, as in shapiq's
            ``ExactComputer``.
        max_order: the order the result was computed for (default: its largest order); ``1`` for SV/BV.

    Returns:
        ``Q`` objects with ``n_players = m``, ``min_order = 0``, ``estimated = False``; shapiq's plots
        (``plot_network``, ``plot_upset``, ``plot_force``, ...) work on them.

    Example:
        >>> import torch
        >>> import torchxplain as tx
        >>> from torchxplain.fourier import to_shapiq_values
        >>> spec = tx.FourierSpectrum(torch.tensor([[0, 0], [1, 1]], dtype=torch.bool), torch.tensor([1.0, 0.5]))
        >>> x, background = torch.ones(1, 2), torch.zeros(1, 2)
        >>> iv = tx.fourier.interaction_values(spec, x, background, index="k-SII", max_order=2)
        >>> rows = to_shapiq_values(iv, "k-SII", baseline_value=1.5)  # one shapiq.InteractionValues per row
        >>> rows[0].index, rows[0].max_order, float(rows[0][(0, 1)])
        ('k-SII', 2, 2.0)
    """
    shapiq = _optional("shapiq")
    if index not in INDICES:
        raise ValueError(f"index must be one of {list(INDICES)}, got {str(index)[:40]!r}")
    rows, m, top = _check_result(result)
    order = top if max_order is None else max_order
    if isinstance(order, bool) or not isinstance(order, int) or not 1 <= order <= top:
        raise ValueError(f"max_order must be an int between 1 and the result's largest order {top}, got {order!r}")
    given = _array(result[0] if index == "FBII" else baseline_value, "baseline_value").astype(np.float64)
    if given.shape not in ((), (1,), (rows,)):
        raise ValueError(
            f"baseline_value must be a scalar or one value per row ({rows},), got shape {given.shape}; pass the "
            "model's mean output over the background (or each row's reference output)"
        )
    base = np.broadcast_to(given, (rows,))
    subsets: list[tuple[int, ...]] = [()]
    columns = [result[0].reshape(rows, 1)]
    for t in range(1, order + 1):
        combos = torch.combinations(torch.arange(m, device=result[t].device), r=t)  # (C, t), each sorted
        columns.append(result[t][(slice(None),) + tuple(combos.T)])
        subsets.extend(tuple(c) for c in combos.tolist())
    table = torch.cat(columns, 1).detach().to("cpu", torch.float64).numpy()
    lookup = {subset: position for position, subset in enumerate(subsets)}
    return [
        shapiq.InteractionValues(
            values=table[q],
            index=index,
            max_order=order,
            min_order=0,
            n_players=m,
            interaction_lookup=dict(lookup),
            estimated=False,
            baseline_value=float(base[q]),
        )
        for q in range(rows)
    ]


def to_shap_explanation(
    values: object,
    base_values: object,
    data: object = None,
    feature_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    display_data: np.ndarray | None = None,
    error_std: object = None,
) -> Any:
    """A ``shap.Explanation`` (values, base values, data, feature names) for shap's waterfall/beeswarm/force plots.

    Args:
        values: ``(Q, m)`` attributions, or ``(Q, m, C)`` for ``C`` outputs (shap's multi-output layout).
        base_values: the expected output ``v(∅)``: a scalar, ``(Q,)``, or ``(Q, C)`` / ``(C,)`` for ``C``
            outputs; ``values`` summed over players plus ``base_values`` is the model's output at each row.
        data: optional ``(Q, m)`` feature values shown next to the attributions (a DataFrame's columns become
            the feature names when ``feature_names`` is not given).
        feature_names: optional ``m`` names (default: shap's ``Feature 0`` ...).
        output_names: optional ``C`` names of the outputs.
        display_data: optional ``(Q, m)`` array of what ``data`` means, shown by shap's waterfall instead of the
            numbers (e.g. a categorical level's name).
        error_std: optional standard errors of ``values``, the same shape, in the values' units (estimated values);
            shap keeps them as ``.error_std``.

    Returns:
        ``shap.Explanation`` holding float64 numpy arrays.

    Example:
        >>> import torch
        >>> from torchxplain.fourier import to_shap_explanation
        >>> values = torch.tensor([[0.5, -1.0], [0.25, 0.0]])  # (Q, p) SHAP values of two rows
        >>> explanation = to_shap_explanation(values, 3.0, data=torch.ones(2, 2), feature_names=["a", "b"])
        >>> explanation.values.shape, explanation.feature_names, explanation.base_values.tolist()
        ((2, 2), ['a', 'b'], [3.0, 3.0])
    """
    shap = _optional("shap")
    vals = _array(values, "values").astype(np.float64)
    if vals.ndim not in (2, 3):
        raise ValueError(f"values must be (Q, m) or (Q, m, C), got shape {vals.shape}")
    rows, m = vals.shape[:2]
    out_shape = (rows,) + vals.shape[2:]
    base = _array(base_values, "base_values").astype(np.float64)
    try:
        base = np.broadcast_to(base, out_shape).copy()
    except ValueError:
        raise ValueError(f"base_values of shape {base.shape} do not broadcast to {out_shape}") from None
    frame_names = None
    if data is not None:
        converted = to_tensor(data, "data", ndim=2)
        frame_names = converted.feature_names
        data = converted.tensor.detach().cpu().numpy()
        if data.shape != (rows, m):
            raise ValueError(f"data must have shape {(rows, m)} to match values, got {data.shape}")
    names = list(feature_names) if feature_names is not None else (list(frame_names) if frame_names else None)
    if names is not None and len(names) != m:
        raise ValueError(f"feature_names must name the {m} players, got {len(names)} names")
    if output_names is not None and (vals.ndim != 3 or len(output_names) != vals.shape[2]):
        raise ValueError(f"output_names must name the {vals.shape[2] if vals.ndim == 3 else 0} outputs")
    if display_data is not None and (data is None or np.shape(display_data) != (rows, m)):
        raise ValueError(f"display_data must come with data and have shape {(rows, m)}, got {np.shape(display_data)}")
    errors = None if error_std is None else _array(error_std, "error_std").astype(np.float64)
    if errors is not None and errors.shape != vals.shape:
        raise ValueError(f"error_std must have the values' shape {vals.shape}, got {errors.shape}")
    return shap.Explanation(
        values=vals,
        base_values=base,
        data=data,
        display_data=display_data,
        feature_names=names,
        output_names=list(output_names) if output_names is not None else None,
        error_std=errors,
    )

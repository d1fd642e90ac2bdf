"""Where a fitted black box holds, and a word whenever it is asked about rows outside it.

A black box fitted on hybrids of ``data`` with the background (``FourierShap(model, background, data=...)``) has
seen, in each input column, only the values of those rows: its encoder holds their range
(:attr:`~torchxplain.fourier.encoding._encoders.InputEncoder.domain`). A value beyond it is encoded as the nearest
end of the range (a threshold code has no slot beyond its last value; a bit constant there has no fitted effect),
so the values of such a row follow the model at the moved row, not at the row itself. Nothing of this is silent:

* :func:`warn_outside_domain` raises a :class:`~torchxplain.fourier.FitQualityWarning` stating the share of entries
  outside the range and the measured effect — the model's change between those rows and the same rows moved into
  the range, which the values cannot show — every time values or predictions are asked for such rows;
* when the rows to be explained are known (``explain_after_fit`` has ``X_test``), the fit is held to them too
  (:func:`~torchxplain.fourier.sources._problem.covering_rows`), so their values are encoded honestly instead.
"""

from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Callable
from typing import Any, cast

import torch
from torch import Tensor

from torchxplain.fourier.explainer._forward_args import model_output
from torchxplain.fourier.fit import FitQualityWarning, model_placement

_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EFFECT_ROWS = 4096
"""Rows outside the range whose effect is measured (twice that many model queries at most)."""


def warn_outside_domain(explainer: Any, x: Tensor, reference: Tensor | None = None) -> None:
    """Warn (:class:`FitQualityWarning`) when checked rows ``x`` ``(N, n_inputs)`` or the call's ``reference``
    rows (``baselines``/``background``) hold entries outside the range the explainer's black box was fitted on,
    with their share and the model's change between those rows and the same rows moved into the range."""
    encoder = explainer.encoder
    if encoder.domain is None:
        return
    parts = []
    for label, rows in (("inputs", x), ("the reference rows", reference)):
        if rows is None or rows.shape[0] == 0:
            continue
        out = encoder.outside(rows)
        if bool(out.any()):
            parts.append((label, rows, out))
    if not parts:
        return
    shares = "; ".join(
        f"{float(out.double().mean()):.1%} of the entries of {label} ({int(out.any(1).sum())} of {rows.shape[0]} "
        f"rows, in columns {_columns(out, explainer.feature_names)})"
        for label, rows, out in parts
    )
    low, high = cast(Tensor, encoder.domain)
    moved = [rows[out.any(1)][:EFFECT_ROWS] for _, rows, out in parts]
    effect = _effect(explainer, torch.cat([m.double() for m in moved]), low, high)
    warnings.warn(
        f"{shares} lie outside the range the black box was fitted on (each column's range over data and "
        "background: fit_report.domain). The spectrum takes such a value as the nearest end of that range (a "
        f"column constant there: as that constant), so these values do not follow the model at those rows: {effect}"
        " Fit with those rows in data= (explain_after_fit does so with X_test), or use method='enumerate' for "
        "exact values through the model.",
        FitQualityWarning,
        stacklevel=_user_stacklevel(),
    )


def _effect(explainer: Any, rows: Tensor, low: Tensor, high: Tensor) -> str:
    """The measured effect: the model's change between ``rows`` and the same rows clamped into the range."""
    model = explainer.forward_func
    if explainer.owns_forward_func or explainer.fit_report is None:
        return (
            "the effect is not measured, as this explainer holds no model (pass it: FourierShap.load(path, "
            "forward_func=model))."
        )
    model = cast(Callable[..., Tensor], model)
    clamped = torch.minimum(torch.maximum(rows, low.to(rows.device)), high.to(rows.device))
    device, dtype = model_placement(model, explainer.background.device, None, explainer.background)
    args, target = explainer.additional_forward_args, explainer.outputs.targets[0]
    with torch.no_grad():
        change = model_output(model, torch.cat((rows, clamped)), args, target, device, dtype, EFFECT_ROWS)
        change = (change[: rows.shape[0]] - change[rows.shape[0] :]).abs()
        fitted = explainer.surrogate.evaluate_checked(explainer.background_bits.to(explainer.dtype))
    spread = float(fitted.double().std()) if fitted.shape[0] > 1 else 0.0
    return (
        f"the model changes by up to {float(change.max()):.4g} (mean {float(change.mean()):.4g}) between those rows "
        f"and the same rows moved into the range, a change the values cannot show (the fitted output's spread over "
        f"the background: std {spread:.4g})."
    )


def _columns(out: Tensor, names: Any) -> str:
    """The first few columns with entries outside the range, by name when known."""
    columns = out.any(0).nonzero()[:, 0].tolist()
    shown = [repr(names[c]) if names is not None else str(c) for c in columns[:6]]
    return ", ".join(shown) + (f", ... ({len(columns)} columns)" if len(columns) > 6 else "")


def _user_stacklevel() -> int:
    """The stack level of the first frame outside torchxplain (and Captum's logging wrapper): the user's call."""
    level = 1
    frame = inspect.currentframe()
    while frame is not None:
        name = os.path.abspath(frame.f_code.co_filename)
        if not name.startswith(_PACKAGE) and f"{os.sep}captum{os.sep}" not in name:
            return level - 1
        frame, level = frame.f_back, level + 1
    return level - 1

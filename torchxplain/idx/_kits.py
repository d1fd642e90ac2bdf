"""The explanation kits, their relation names, and the argument checks shared by IDX's public functions.

Every check raises at the public boundary with a message naming the argument, the expected and the received
value, and the fix; the kernels behind them assume valid arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, get_args

from torchxplain._core import check_number
from torchxplain.idx._classifier import BayesianClassifier

Kit = Literal["md", "sd", "cf", "lime", "shap"]
KITS: tuple[str, ...] = get_args(Kit)
RELATION_KITS = ("md", "sd", "cf")
ATTRIBUTION_KITS = ("lime", "shap")
RELATION_NAMES = {
    "md": ("attack", "support"),
    "sd": ("attack", "support"),
    "cf": ("critical", "potential"),
    "lime": ("attack", "support"),
    "shap": ("attack", "support"),
}


def check_kit(kit: Any) -> str:
    """One kit name (``explain`` explains with one kit; several kits at once go to ``explain_batch``)."""
    if isinstance(kit, str) and kit in KITS:
        return kit
    if isinstance(kit, (list, tuple, set)):
        raise ValueError(
            f"kit must be one kit name, one of {KITS}, got {type(kit).__name__} {list(kit)!r}; call explain once per "
            "kit, or pass kits=[...] to torchxplain.idx.explain_batch (several kits share one forward pass)"
        )
    raise ValueError(f"unknown kit {kit!r}; expected one of {KITS}")


def check_kits(kits: Any, allowed: Sequence[str] = RELATION_KITS) -> tuple[str, ...]:
    """A non-empty tuple of distinct kit names from ``allowed`` (a single name is accepted too)."""
    given = (kits,) if isinstance(kits, str) else tuple(kits) if isinstance(kits, (list, tuple)) else None
    if not given:
        raise ValueError(f"kits must be a kit name or a non-empty list of them from {tuple(allowed)}, got {kits!r}")
    for k in given:
        if k in ATTRIBUTION_KITS and k not in allowed:
            raise ValueError(
                f"kit {k!r} is attribution-based; use torchxplain.idx.explain(bc, inputs, kit={k!r}) or "
                f"torchxplain.idx.{k}_values, or pass kits from {tuple(allowed)}"
            )
        if k not in allowed:
            raise ValueError(f"unknown kit {k!r}; expected kits from {tuple(allowed)}")
    return tuple(dict.fromkeys(given))


def check_explanandum(bc: BayesianClassifier, explanandum: Any) -> str | None:
    """``None`` or the name of a classification of ``bc``."""
    if explanandum is not None and explanandum not in bc.classifications:
        raise ValueError(
            f"explanandum must be a classification {bc.classifications} (or None for every influence), got "
            f"{explanandum!r}"
        )
    return explanandum


def check_rtol(rtol: Any) -> float | None:
    """``None`` (the dtype's default tie tolerance) or a finite float >= 0."""
    if rtol is None:
        return None
    return check_number(rtol, "rtol", at_least=0, hint="a relative tie tolerance, or None for the default")


def check_choice(value: Any, name: str, options: Sequence[str]) -> str:
    """One of ``options``."""
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {tuple(options)}, got {value!r}")
    return value

"""Progress bars (tqdm) that the caller or ``TORCHXPLAIN_PROGRESS=0`` can turn off."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")


def progress_enabled(show: bool | None) -> bool:
    """Whether to show a bar: ``show`` if given, else on unless ``TORCHXPLAIN_PROGRESS=0``."""
    if os.environ.get("TORCHXPLAIN_PROGRESS", "1").strip().lower() in {"0", "false", "no", "off"}:
        return False
    return True if show is None else bool(show)


def progress(
    iterable: Iterable[T], show: bool | None = None, desc: str | None = None, total: int | None = None
) -> Iterator[T]:
    """Iterate over ``iterable`` with a tqdm bar when enabled (see :func:`progress_enabled`)."""
    if not progress_enabled(show):
        yield from iterable
        return
    yield from tqdm(iterable, desc=desc, total=total, leave=False)

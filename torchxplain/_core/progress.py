"""Progress bars (tqdm) that the caller, ``tx.settings.show_progress`` or ``TORCHXPLAIN_PROGRESS=0`` turn off.

Bars are shown where they can be seen (see ``tx.settings.show_progress``) and only for work that runs longer than
:data:`DELAY` seconds, so quick steps print nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm.auto import tqdm

from torchxplain._core.settings import show_progress

T = TypeVar("T")

DELAY = 1.0  # seconds of work before a bar appears


def progress_enabled(show: bool | None = None) -> bool:
    """Whether to show a bar: ``show`` if given, else ``tx.settings.show_progress`` (default: the environment)."""
    return show_progress.resolve(show)


def progress(
    iterable: Iterable[T], show: bool | None = None, desc: str | None = None, total: int | None = None
) -> Iterator[T]:
    """Iterate over ``iterable`` with a tqdm bar when enabled (see :func:`progress_enabled`)."""
    if not progress_enabled(show):
        yield from iterable
        return
    yield from tqdm(iterable, desc=desc, total=total, leave=False, delay=DELAY)

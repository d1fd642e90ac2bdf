"""Chunking work to the memory budget in force (:mod:`torchxplain.settings`)."""

from __future__ import annotations

from torchxplain._core.settings import DEFAULT_MAX_MEMORY, parse_memory


def rows_per_chunk(bytes_per_row: int, total_rows: int, max_memory: int | str | None = None) -> int:
    """How many rows of ``bytes_per_row`` bytes fit in the budget (at least 1, at most ``total_rows``).

    ``max_memory=None`` uses the budget in force (``tx.settings.max_memory``); an int is a budget already
    resolved by the caller (kernels pass sub-budgets such as cache-sized blocks, so no 1 MiB floor applies).
    """
    budget = (
        max_memory if isinstance(max_memory, int) and not isinstance(max_memory, bool) else parse_memory(max_memory)
    )
    return max(1, min(max(total_rows, 1), budget // max(bytes_per_row, 1)))


def chunk_bounds(total_rows: int, chunk_rows: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` covering ``range(total_rows)`` in chunks of ``chunk_rows``."""
    return [(s, min(s + chunk_rows, total_rows)) for s in range(0, total_rows, max(chunk_rows, 1))]


__all__ = ["DEFAULT_MAX_MEMORY", "chunk_bounds", "parse_memory", "rows_per_chunk"]

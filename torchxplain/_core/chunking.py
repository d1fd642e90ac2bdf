"""Chunking work to a memory budget."""

from __future__ import annotations

import re

DEFAULT_MAX_MEMORY = 512 * 2**20
_UNITS = {"": 1, "b": 1, "kb": 2**10, "kib": 2**10, "mb": 2**20, "mib": 2**20, "gb": 2**30, "gib": 2**30}


def parse_memory(max_memory: int | str | None) -> int:
    """Return a byte budget from an int (bytes), a string such as ``"2GB"``/``"512MiB"`` or ``None`` (default).

    Binary units are used for both spellings (1 GB = 2**30 bytes).
    """
    if max_memory is None:
        return DEFAULT_MAX_MEMORY
    if isinstance(max_memory, int):
        value = max_memory
    else:
        match = re.fullmatch(r"\s*([0-9.]+)\s*([a-zA-Z]*)\s*", str(max_memory))
        if not match or match.group(2).lower() not in _UNITS:
            raise ValueError(f"max_memory must be bytes or a string like '2GB' or '512MiB', got {max_memory!r}")
        value = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if value <= 0:
        raise ValueError(f"max_memory must be positive, got {max_memory!r}")
    return value


def rows_per_chunk(bytes_per_row: int, total_rows: int, max_memory: int | str | None = None) -> int:
    """How many rows of ``bytes_per_row`` bytes fit in the budget (at least 1, at most ``total_rows``)."""
    budget = parse_memory(max_memory)
    return max(1, min(max(total_rows, 1), budget // max(bytes_per_row, 1)))


def chunk_bounds(total_rows: int, chunk_rows: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` covering ``range(total_rows)`` in chunks of ``chunk_rows``."""
    return [(s, min(s + chunk_rows, total_rows)) for s in range(0, total_rows, max(chunk_rows, 1))]

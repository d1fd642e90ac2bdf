"""Shared machinery: the Captum-compatible base, validation, chunking, progress bars and seeding."""

from torchxplain._core import settings
from torchxplain._core.attribution import ExplainerBase, TensorOrTuple
from torchxplain._core.chunking import chunk_bounds, rows_per_chunk
from torchxplain._core.progress import progress, progress_enabled
from torchxplain._core.seeding import check_seed, make_generator, seed_everything
from torchxplain._core.settings import DEFAULT_MAX_MEMORY, parse_memory
from torchxplain._core.validation import (
    check_binary,
    check_finite,
    check_flag,
    check_float_dtype,
    check_int,
    check_matrix,
    check_number,
    check_same_device,
    float_dtype,
)

__all__ = [
    "DEFAULT_MAX_MEMORY",
    "ExplainerBase",
    "TensorOrTuple",
    "check_binary",
    "check_finite",
    "check_flag",
    "check_int",
    "check_float_dtype",
    "check_int",
    "check_matrix",
    "check_number",
    "check_same_device",
    "check_seed",
    "chunk_bounds",
    "float_dtype",
    "make_generator",
    "parse_memory",
    "progress",
    "progress_enabled",
    "rows_per_chunk",
    "seed_everything",
    "settings",
]

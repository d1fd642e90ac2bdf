"""Library-wide settings as context managers: memory budget, progress bars, validation level, dtype policy.

Example::

    import torchxplain as tx

    with tx.settings.max_memory("1GB"), tx.settings.show_progress(False):
        phi = explainer.attribute(x)
    tx.settings.max_memory.value()      # the budget in force, in bytes

Each setting's page says its values and default; an explicit argument of a function (``max_memory=...``,
``show_progress=...``) overrides the setting in force.
"""

from torchxplain._core.settings import (
    DEFAULT_MAX_MEMORY,
    MIN_MEMORY,
    DtypePolicy,
    ValidationLevel,
    dtype_policy,
    max_memory,
    parse_memory,
    show_progress,
    using,
    validation,
)

__all__ = [
    "DEFAULT_MAX_MEMORY",
    "MIN_MEMORY",
    "DtypePolicy",
    "ValidationLevel",
    "dtype_policy",
    "max_memory",
    "parse_memory",
    "show_progress",
    "using",
    "validation",
]

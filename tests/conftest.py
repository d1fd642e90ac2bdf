"""Suite-wide test options: tests that launch several processes (``distributed``) are also ``slow``, so
``python -m pytest -m "not slow"`` is the fast loop and the default run (and CI) runs everything."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("distributed") is not None:
            item.add_marker(pytest.mark.slow)

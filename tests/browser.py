"""Headless Chromium for the tests that look at pages as a browser renders them (the demo report, the docs)."""

from __future__ import annotations

import shutil
from pathlib import Path


def chromium(profile: Path) -> list[str] | None:
    """The command line of a headless, offline Chromium with its own profile folder; None when not installed."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        return None
    return [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--allow-file-access-from-files",
        "--virtual-time-budget=5000",
    ]

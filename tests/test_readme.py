"""Every code block of README.md runs as written and prints what the README shows.

The blocks are read from README.md itself (so the README cannot drift from what works): each ```python block runs
on its own, in a fresh namespace and an empty working directory, and its standard output is compared with the
```text block that follows it — words exactly, numbers to a tolerance that absorbs rounding on other CPUs and BLAS
builds. The quick-start commands are checked to be the project's two commands, as they were.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
from pathlib import Path

import pytest
import torch

README = Path(__file__).resolve().parents[1] / "README.md"
QUICK_START = [
    "pip install torch==2.13.0 . && torchxplain demo --quick",
    'pip install torch==2.13.0 -e ".[dev]" && python -m pytest -q',
]
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")


def examples() -> list[tuple[str, str, str]]:
    """(heading, code, shown output) of every ```python block, in README order."""
    text = README.read_text()
    found = []
    for match in re.finditer(r"```python\n(.*?)```\n\n```text\n(.*?)```", text, flags=re.S):
        heading = re.findall(r"^## (.+)$", text[: match.start()], flags=re.M)[-1]
        found.append((heading, match.group(1), match.group(2)))
    return found


def same_output(printed: str, shown: str, rel: float = 0.05, absolute: float = 0.02) -> bool:
    """Equal words, and numbers within ``rel`` (relative to the larger) or ``absolute``."""
    if NUMBER.sub("#", printed).split() != NUMBER.sub("#", shown).split():
        return False
    for a, b in zip(NUMBER.findall(printed), NUMBER.findall(shown)):
        x, y = float(a), float(b)
        if not math.isclose(x, y, rel_tol=rel, abs_tol=absolute):
            return False
    return True


def test_readme_is_short_and_starts_with_the_two_quick_start_commands():
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    first_bash = re.search(r"```bash\n(.*?)```", text, flags=re.S).group(1)
    assert first_bash.strip().splitlines() == QUICK_START
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == len(examples()) == 5, "every python block is followed by its printed output"
    first = blocks[0].strip().splitlines()
    assert len(first) <= 15 and "from_trees" in blocks[0], "the first block explains a real model in 15 lines"


@pytest.mark.parametrize("heading, code, shown", examples(), ids=lambda v: v if " " in v and "\n" not in v else "")
def test_readme_example_runs_as_written_and_prints_what_it_shows(heading, code, shown, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TORCHXPLAIN_PROGRESS", "0")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the examples' training loops are tiny: one thread is fastest on a loaded machine
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"README.md ({heading})", "exec"), {"__name__": "__readme__"})
    finally:
        torch.set_num_threads(threads)
    printed = out.getvalue()
    assert same_output(printed, shown), f"README ({heading}) shows:\n{shown}\nbut the code printed:\n{printed}"

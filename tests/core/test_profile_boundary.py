"""Each input is converted and checked once per public call, read off benchmarks/profile_boundary.py."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "profile_boundary.py"
_spec = importlib.util.spec_from_file_location("profile_boundary", _PATH)
profile = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(profile)

USER_ARGUMENTS = ("background", "inputs", "x", "data", "groups", "feature_mask", "baselines")


def _twice(counts) -> dict[str, int]:
    """Boundary calls made more than once on one of the user's arguments."""
    pattern = re.compile(rf"^(to_tensor|check_matrix|check_binary|check_finite)\(({'|'.join(USER_ARGUMENTS)})\)$")
    return {label: n for label, n in counts.items() if pattern.match(label) and n > 1}


@pytest.mark.parametrize(
    "path",
    [
        "trees_path",
        "binary_path",
        "black_box_path",
        "continuous_path",
        "value_function_paths",
        "idx_batch_path",
        "goals_path",
    ],
    ids=lambda p: p,
)
def test_each_user_input_is_converted_and_checked_once(path):
    for row, counts in getattr(profile, path)().items():
        assert not _twice(counts), f"{row}: {dict(counts)}"
        assert counts.get("player_ids", 0) <= 1, f"{row}: players resolved {counts['player_ids']} times"


def test_the_same_bad_players_are_refused_alike_on_every_path():
    outcomes = profile.same_rejection()
    normalized = {re.sub(r"^TypeError: \w+ must", "TypeError: <ids> must", text) for _, text in outcomes}
    assert len(normalized) == 1, outcomes
    assert normalized.pop().startswith("TypeError: <ids> must hold integer player ids")

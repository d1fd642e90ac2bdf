"""The robustness harness: a table of bad inputs per public entry point, each with the error it must raise.

A :class:`Case` names the public callable it exercises (``"torchxplain.fourier.shapley_values"``), builds the
bad call lazily, and states the exception type and a regular expression the message must match — always the
argument's name, usually the expected value or the fix too. A :class:`ResultCase` is an input that used to give a
wrong result (silently) or fail inside a dependency: its call computes the result and asserts it equals an
independent reference (brute force, another dtype, the right input). ``EXEMPT`` lists public names that take no user
data (result containers, constants, type aliases, modules) with the reason. ``test_harness.py`` runs every case
and checks that every name in ``torchxplain.__all__`` and in each subpackage's ``__all__`` has a case or an
exemption, so a new entry point cannot join the API without joining the harness.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Case:
    """One bad call of one public callable.

    Attributes:
        target: the public name, as ``module.name`` (``torchxplain.FourierShap`` also covers its methods).
        what: a short description of the bad input (the test id).
        call: builds the inputs and makes the call (lazily, at test time).
        error: the exception type the call must raise.
        match: a regular expression the message must match (it must name the argument).
    """

    target: str
    what: str
    call: Callable[[], Any]
    error: type[BaseException]
    match: str


@dataclass(frozen=True)
class ResultCase:
    """One input that must give the right result, checked against an independent reference.

    Attributes:
        target: the public name, as in :class:`Case`.
        what: a short description of the input (the test id).
        check: computes the result and the reference and asserts they agree (lazily, at test time).
    """

    target: str
    what: str
    check: Callable[[], None]


CASES: list[Case] = []
RESULT_CASES: list[ResultCase] = []
EXEMPT: dict[str, str] = {}


def case(target: str, what: str, error: type[BaseException], match: str) -> Callable[[Callable[[], Any]], Any]:
    """Decorator: register the decorated zero-argument function as a :class:`Case`."""

    def register(call: Callable[[], Any]) -> Callable[[], Any]:
        CASES.append(Case(target, what, call, error, match))
        return call

    return register


def result_case(target: str, what: str) -> Callable[[Callable[[], None]], Any]:
    """Decorator: register the decorated zero-argument check as a :class:`ResultCase`."""

    def register(check: Callable[[], None]) -> Callable[[], None]:
        RESULT_CASES.append(ResultCase(target, what, check))
        return check

    return register


def exempt(reason: str, *targets: str) -> None:
    """Record public names that take no user data (with the reason)."""
    for target in targets:
        EXEMPT[target] = reason

"""A cache of value plans (:class:`~torchxplain.fourier.values._plan.ValuePlan` s, or a provider's that
reuses them): one per players grouping and explainer state."""

from __future__ import annotations

from collections.abc import Callable, Hashable

from torchxplain.fourier.sources import Plan
from torchxplain.fourier.values import ValuePlan


class PlanCache:
    """Plans keyed by players, valid while the explainer's state is unchanged.

    The state key names what a plan depends on besides the players (the amplitudes' storage and in-place version,
    the background's storage, the dtype): any change — ``.to()``, ``load_state_dict``, an optimiser step on the
    amplitudes — empties the cache, so a stale plan is never used.
    """

    def __init__(self) -> None:
        self._state: Hashable = None
        self._plans: dict[Hashable, ValuePlan | Plan] = {}

    def get(self, state: Hashable, key: Hashable, build: Callable[[], ValuePlan | Plan]) -> ValuePlan | Plan:
        """The plan for ``key`` under ``state``, built by ``build()`` on a miss."""
        if state != self._state:
            self.clear()
            self._state = state
        if key not in self._plans:
            self._plans[key] = build()
        return self._plans[key]

    def clear(self) -> None:
        """Forget every plan."""
        self._plans.clear()
        self._state = None

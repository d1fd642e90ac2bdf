"""The contract every source of a spectrum (or of exact values) keeps, and the rule that a knob belongs to a source.

A *source* is a frozen dataclass whose fields are its knobs (as shapiq's approximators and scikit-learn's estimators
carry theirs): :class:`~torchxplain.fourier.Enumerate`, :class:`~torchxplain.fourier.Tabulate`,
:class:`~torchxplain.fourier.Fit`, :class:`~torchxplain.fourier.CubeFit` for a black box. ``build(problem)`` makes
what the explainer holds (:class:`~torchxplain.fourier.sources._built.Built`).

``FourierShap(model, background, method=..., **knobs)`` takes a source object, or a method name plus its knobs by
name; :func:`source_from` turns the name and knobs into the source, and refuses a knob that is not a field of it
with the name of the source(s) it belongs to — so no knob is ever silently ignored.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, ClassVar

from torchxplain._core.validation import check_float_dtype, check_int

if TYPE_CHECKING:
    from torchxplain.fourier.sources._built import Built
    from torchxplain.fourier.sources._problem import Problem


@dataclasses.dataclass(frozen=True)
class Source:
    """Base of the black-box sources: a frozen dataclass of knobs with a name and a title for messages."""

    names: ClassVar[tuple[str, ...]] = ()
    """The ``method=`` names that select this source."""
    title: ClassVar[str] = ""
    """How messages name it, e.g. ``"tx.fourier.Enumerate (method='enumerate')"``."""
    exact: ClassVar[bool] = False
    """Whether its values are exact (the router takes an exact source whenever it is the cheapest)."""
    summary: ClassVar[str] = ""
    """What it does, in a sentence for reports."""

    @classmethod
    def knobs(cls) -> tuple[str, ...]:
        """The knob names (the dataclass fields)."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_name(cls, name: str, knobs: dict[str, Any]) -> Source:
        """The source selected by ``method=name`` with these knobs (already checked against its fields)."""
        return cls(**knobs)

    def given(self) -> dict[str, Any]:
        """The knobs set to something other than their defaults."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) != f.default}


class BlackBoxSource(Source):
    """A source of a black box's spectrum or values: built from a validated problem by the router's choice."""

    def build(self, problem: Problem, reason: str) -> Built:
        """What the explainer holds for ``problem`` (``reason``: why the router chose this source)."""
        raise NotImplementedError


def check_queries(batch_size: object, dtype: object) -> None:
    """The query knobs every model-querying source has."""
    check_int(batch_size, "batch_size", minimum=1)
    if dtype is not None:
        check_float_dtype(dtype)


def owners(knob: str, sources: tuple[type[Source], ...]) -> list[type[Source]]:
    """The sources that take ``knob``."""
    return [s for s in sources if knob in s.knobs()]


def refuse_foreign(knobs: dict[str, Any], source: type[Source], sources: tuple[type[Source], ...]) -> None:
    """Refuse every knob that is not a field of ``source``, naming the source(s) it belongs to.

    Raises:
        TypeError: a knob of another source, or of none.
    """
    foreign = sorted(set(knobs) - set(source.knobs()))
    if not foreign:
        return
    parts = []
    for knob in foreign:
        belongs = owners(knob, sources)
        where = " or ".join(s.title for s in belongs) if belongs else "no source (unknown keyword)"
        parts.append(f"{knob}= is a knob of {where}")
    raise TypeError(
        f"{source.title} does not take {', '.join(k + '=' for k in foreign)}: {'; '.join(parts)}. "
        f"{source.title} takes {', '.join(source.knobs()) or 'no knobs'}; pick the source the knob belongs to "
        "(method=...) or drop it"
    )


def source_from(
    method: Any, knobs: dict[str, Any], sources: tuple[type[Source], ...], named: tuple[type[Source], ...]
) -> Source:
    """The source of ``method`` — a source object (then no knobs by name), or the name of one of ``sources`` with
    its knobs (a foreign knob's owners are named among ``named``).

    Raises:
        TypeError: knobs by name beside a source object, or a knob the named source does not take.
        ValueError: an unknown method name.
    """
    if isinstance(method, Source):
        if knobs:
            raise TypeError(
                f"method is the source object {method!r}; pass its knobs inside it, not by name "
                f"(got {', '.join(sorted(k + '=' for k in knobs))})"
            )
        return method
    by_name = {name: s for s in sources for name in s.names}
    if not isinstance(method, str) or method not in by_name:
        raise ValueError(
            f"method must be 'auto', one of {sorted(by_name)}, or a source object "
            f"({', '.join(s.title for s in sources)}); got {str(method)[:40]!r}"
        )
    cls = by_name[method]
    refuse_foreign(knobs, cls, named)
    return cls.from_name(method, knobs)

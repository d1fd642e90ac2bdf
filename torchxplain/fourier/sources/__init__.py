"""Where a spectrum (or exact values) comes from, and the router that picks one.

One module per source, each a frozen dataclass of its own knobs (``_base``: the contract, and the rule that a knob
belongs to a source): ``_enumerate`` (:class:`~torchxplain.fourier.Enumerate`: exact values through the model),
``_tabulate`` (:class:`~torchxplain.fourier.Tabulate`: the exact spectrum of a small level grid), ``_fit``
(:class:`~torchxplain.fourier.Fit` on hybrid points, binary or continuous, and :class:`~torchxplain.fourier.CubeFit`
on the cube), ``_trees`` (a tree ensemble's exact spectrum; or ``_leaves``, its values from the leaves) and
``_spectrum`` (a known spectrum). ``_problem`` validates a black box's inputs and finds its players once; ``_route``
is the one place that decides the route, priced in predicted seconds; ``_built`` is what a source hands the
explainer; ``_fit_sparse`` is :func:`~torchxplain.fit_sparse_fourier`; ``_outputs`` says which model outputs are
explained.

The names imported here are this subpackage's interface to its siblings (they import from here, never from its
private modules); public names are in :mod:`torchxplain.fourier`.
"""

from torchxplain.fourier.sources._base import Source, refuse_foreign
from torchxplain.fourier.sources._built import Built, Plan, Provider
from torchxplain.fourier.sources._correct import Correct, CorrectedValues
from torchxplain.fourier.sources._enumerate import Enumerate, ModelValues
from torchxplain.fourier.sources._fit import CubeFit, Fit
from torchxplain.fourier.sources._fit_sparse import fit_sparse_fourier
from torchxplain.fourier.sources._outputs import Outputs, single_output
from torchxplain.fourier.sources._problem import Players, Problem, black_box_problem
from torchxplain.fourier.sources._route import SOURCES, Candidate, Route, route
from torchxplain.fourier.sources._spectrum import KnownSpectrum
from torchxplain.fourier.sources._tabulate import TABULATE_LIMIT, Tabulate
from torchxplain.fourier.sources._trees import TreeRoute, Trees

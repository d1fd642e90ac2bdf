"""Plots shared by all methods, as Display objects in scikit-learn's style.

Each display holds the numbers to draw; ``Display(...).plot(ax=None)`` (or a ``from_...`` classmethod) draws
them on ``ax`` or a new figure and returns the display, which keeps ``figure_`` and ``ax_``. Nothing calls
``plt.show()`` and importing this package never changes the matplotlib backend. ``display.save(path)`` writes
a PNG and closes the figure.

* :class:`BarDisplay` — one importance number per feature (``from_attributions``: mean ``|attribution|``).
* :class:`BeeswarmDisplay` — every sample's attribution per feature, coloured low → high by feature value.
* :class:`InteractionHeatmapDisplay` — pairwise interactions.
* :class:`ImportanceDisplay` — global scores with intervals (GOALS; ``from_mean_std``).
* :class:`ManhattanDisplay` — a statistic along the genome (GOALS on genotypes).
* :class:`DriftDisplay` — importances across training epochs (the Lightning callback).
* :class:`ExplanationGraphDisplay` — an IDX explanation graph.
"""

from torchxplain.viz._attributions import BarDisplay, BeeswarmDisplay, InteractionHeatmapDisplay
from torchxplain.viz._base import Display, save
from torchxplain.viz._drift import DriftDisplay
from torchxplain.viz._graph import ExplanationGraphDisplay
from torchxplain.viz._importance import ImportanceDisplay, ManhattanDisplay

__all__ = [
    "BarDisplay",
    "BeeswarmDisplay",
    "Display",
    "DriftDisplay",
    "ExplanationGraphDisplay",
    "ImportanceDisplay",
    "InteractionHeatmapDisplay",
    "ManhattanDisplay",
    "save",
]

"""Bad inputs for the plots in ``torchxplain.viz``."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402

from tests.robustness.harness import case  # noqa: E402
from torchxplain import viz  # noqa: E402

V = "torchxplain.viz."


@case(
    V + "BarDisplay", "a (Q, n) matrix where one number per feature is expected", ValueError, "importance must be 1-D"
)
def _():
    viz.BarDisplay(np.zeros((3, 2)))


@case(V + "BarDisplay", "strings instead of numbers", TypeError, "importance must hold numbers")
def _():
    viz.BarDisplay(np.array(["a", "b"]))


@case(V + "BarDisplay", "no features to show", ValueError, "max_features must be a positive integer, got 0")
def _():
    viz.BarDisplay([1.0, 2.0]).plot(max_features=0)


@case(V + "BeeswarmDisplay", "features of another shape", ValueError, r"features must have the attributions' shape")
def _():
    viz.BeeswarmDisplay(np.zeros((4, 2)), np.zeros((4, 3)))


@case(V + "BeeswarmDisplay", "too few feature names", ValueError, "feature_names has 1 names for 2 features")
def _():
    viz.BeeswarmDisplay(np.zeros((4, 2)), feature_names=["a"])


@case(V + "InteractionHeatmapDisplay", "a non-square matrix", ValueError, r"interactions must be \(m, m\)")
def _():
    viz.InteractionHeatmapDisplay(np.zeros((2, 3)))


@case(V + "ImportanceDisplay", "a lower bound without an upper one", ValueError, "lower and upper must be given")
def _():
    viz.ImportanceDisplay([1.0], lower=[0.5])


@case(V + "ImportanceDisplay", "an interval that misses its score", ValueError, "lower <= score <= upper")
def _():
    viz.ImportanceDisplay([1.0, 2.0], lower=[0.5, 2.5], upper=[1.5, 3.0])


@case(V + "ManhattanDisplay", "one chromosome label for two features", ValueError, "chromosome has 1 labels")
def _():
    viz.ManhattanDisplay([1.0, 2.0], ["1"])


@case(V + "DriftDisplay", "importances for another number of epochs", ValueError, r"importance must be \(len\(epochs\)")
def _():
    viz.DriftDisplay([1, 2, 3], np.zeros((2, 4)))


@case(V + "ExplanationGraphDisplay", "a list instead of a graph", TypeError, "graph must be a networkx.DiGraph")
def _():
    viz.ExplanationGraphDisplay([("w", "o")])


@case(V + "ExplanationGraphDisplay", "an edge with an unknown relation", ValueError, r"graph edge \('w', 'o'\) needs")
def _():
    g = nx.DiGraph()
    g.add_node("w", kind="observation", value="l", explanandum=False)
    g.add_node("o", kind="classification", value="+", explanandum=True)
    g.add_edge("w", "o", relation="likes", symbol="?", score=None)
    viz.ExplanationGraphDisplay(g)


@case(V + "Display", "saving before plotting", RuntimeError, r"BarDisplay.save needs a figure: call .plot\(\) first")
def _():
    viz.BarDisplay([1.0]).save("never.png")


@case(V + "save", "a display where a figure is expected", TypeError, "figure must be a matplotlib Figure")
def _():
    viz.save(viz.BarDisplay([1.0]), "never.png")  # type: ignore[arg-type]

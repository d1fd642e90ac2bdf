"""Robustness cases of ``torchxplain.integrations``: the Lightning callback, predict module, writer, metric,
the pure batch functions and the Captum bridges."""

from __future__ import annotations

import numpy as np
import torch

from tests.robustness.harness import case

I = "torchxplain.integrations"  # noqa: E741


def _lightning():
    from torchxplain.integrations import lightning

    return lightning


@case(f"{I}.ExplanationCallback", "a probe with NaN rows", ValueError, r"probe rows \[1\] hold NaN")
def _():
    _lightning().ExplanationCallback(lambda m: None, torch.tensor([[0.0, 1.0], [float("nan"), 0.0]]))


@case(f"{I}.ExplanationCallback", "an unknown hook", ValueError, r"on must be 'validation' or 'train'")
def _():
    _lightning().ExplanationCallback(lambda m: None, np.zeros((2, 2)), on="test")


@case(f"{I}.ExplanationCallback", "names that collide as keys", ValueError, r"feature_names\[0\].*same logging key")
def _():
    _lightning().ExplanationCallback(lambda m: None, np.zeros((2, 2)), feature_names=["a/b", "a(b"])


@case(f"{I}.ExplanationCallback", "attribute_kwargs as a list", TypeError, r"attribute_kwargs must be a dict")
def _():
    _lightning().ExplanationCallback(lambda m: None, np.zeros((2, 2)), attribute_kwargs=[("target", 0)])


@case(f"{I}.ExplainModule", "an object without attribute()", TypeError, r"explainer must have an attribute\(\)")
def _():
    _lightning().ExplainModule(torch.nn.Linear(2, 1))


@case(f"{I}.ExplanationWriter", "rows_per_file=0", ValueError, r"rows_per_file must be a positive int")
def _():
    _lightning().ExplanationWriter("out", rows_per_file=0)


@case(f"{I}.ExplanationWriter", "a number as output_dir", TypeError, r"output_dir must be a path")
def _():
    _lightning().ExplanationWriter(3)


@case(f"{I}.MeanAbsAttribution", "n_features=True", TypeError, r"n_features must be a positive int, got bool")
def _():
    _lightning().MeanAbsAttribution(True)


@case(f"{I}.plot_drift", "importance of the wrong length", ValueError, r"importance must be \(len\(epochs\)=2, n\)")
def _():
    _lightning().plot_drift([0, 1], torch.zeros(3, 2))


@case(f"{I}.explain_module_class", "an unknown package", ValueError, r"package must be one of")
def _():
    _lightning().explain_module_class("lightning")


@case(f"{I}.explain_batch", "a mapping without inputs", KeyError, r"needs an 'inputs' entry")
def _():
    from torchxplain.integrations import explain_batch

    explain_batch(object(), {"x": np.zeros((2, 2))})


@case(f"{I}.explain_batch", "string inputs", TypeError, r"batch inputs must hold numbers")
def _():
    from torchxplain.integrations import explain_batch

    explain_batch(object(), [np.array([["a", "b"]])])


@case(f"{I}.merge_shards", "a folder without shards", ValueError, r"no shards matching")
def _():
    import tempfile

    from torchxplain.integrations import merge_shards

    with tempfile.TemporaryDirectory() as empty:
        merge_shards(empty)


@case(f"{I}.expand_to_inputs", "importance of another width", ValueError, r"importance of shape \(3,\) fits neither")
def _():
    from torchxplain.integrations import expand_to_inputs

    expand_to_inputs(np.ones(3), torch.zeros(4, 2))


@case(f"{I}.background_averaged", "a model returning NaN", ValueError, r"forward_func returned NaN .* input rows \[0\]")
def _():
    from torchxplain.integrations import background_averaged

    g = background_averaged(lambda z: z.sum(1) * float("nan"), np.zeros((3, 2)))
    g(torch.tensor([[1.0, -1e9]]))


@case(f"{I}.background_averaged", "a sentinel given as True", TypeError, r"sentinel must be a finite number, got bool")
def _():
    from torchxplain.integrations import background_averaged

    background_averaged(lambda z: z.sum(1), np.zeros((3, 2)), sentinel=True)


@case(f"{I}.BackgroundAveraged", "a 1-D background", ValueError, r"background must be 2-D")
def _():
    from torchxplain.integrations import BackgroundAveraged

    BackgroundAveraged(lambda z: z.sum(1), np.zeros(3))


@case(f"{I}.ExplanationCallback", "figures given as a string", TypeError, r"figures must be True or False, got str")
def _():
    _lightning().ExplanationCallback(lambda m: None, np.zeros((2, 2)), figures="no")


@case(
    f"{I}.ExplanationCallback", "a float every_n_epochs", TypeError, r"every_n_epochs must be a positive int, got float"
)
def _():
    _lightning().ExplanationCallback(lambda m: None, np.zeros((2, 2)), every_n_epochs=1.5)


@case(f"{I}.ExplanationWriter", "a float rows_per_file", TypeError, r"rows_per_file must be a positive int, got float")
def _():
    _lightning().ExplanationWriter("out", rows_per_file=2.0)


@case(f"{I}.background_averaged", "a NaN sentinel", ValueError, r"sentinel must be a finite number, got nan")
def _():
    from torchxplain.integrations import background_averaged

    background_averaged(lambda z: z.sum(1), np.zeros((3, 2)), sentinel=float("nan"))

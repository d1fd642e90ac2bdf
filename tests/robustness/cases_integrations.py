"""Robustness cases of ``torchxplain.integrations``: the Lightning callback, predict module, writer, metric,
the pure batch functions and the Captum bridges."""

from __future__ import annotations

import os
import tempfile
from typing import Any

import numpy as np
import torch

from tests.robustness.harness import case, result_case

I = "torchxplain.integrations"  # noqa: E741


def _lightning():
    """The integrations namespace (its Lightning names load Lightning on first use)."""
    from torchxplain import integrations

    return integrations


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


@case(f"{I}.ExplanationWriter", "rows_per_file=0", ValueError, r"rows_per_file must be >= 1, got 0")
def _():
    _lightning().ExplanationWriter("out", rows_per_file=0)


@case(f"{I}.ExplanationWriter", "a number as output_dir", TypeError, r"output_dir must be a path")
def _():
    _lightning().ExplanationWriter(3)


@case(f"{I}.MeanAbsAttribution", "n_features=True", TypeError, r"n_features must be an int, got bool")
def _():
    _lightning().MeanAbsAttribution(True)


@case(f"{I}.MeanAbsAttribution", "compute() before any update (NaNs)", ValueError, r"before any attribution rows")
def _():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torchmetrics' own 'compute before update' warning is not ours
        _lightning().MeanAbsAttribution(3).compute()


@result_case(f"{I}.MeanAbsAttribution", "compute() after updates: the mean |attribution| by hand, no warning")
def _():
    import warnings

    rows = torch.tensor([[1.0, -2.0, 0.0], [-3.0, 4.0, 0.5]])
    metric = _lightning().MeanAbsAttribution(3)
    metric.update(rows[:1])
    metric.update(rows[1:])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.testing.assert_close(metric.compute(), rows.abs().double().mean(0))
    assert metric.total_rows == 2


@result_case(f"{I}.ExplainModule", "pytorch_lightning.Trainer().predict(ExplainModule(...)) (failed inside Lightning)")
def _():
    import warnings

    import torchxplain as tx

    legacy = __import__("pytorch_lightning")
    bits = torch.randint(0, 2, (12, 4), generator=torch.Generator().manual_seed(0)).double()
    explainer = tx.FourierShap(lambda x: x.double()[:, 0] - 2 * x.double()[:, 1] * x.double()[:, 3], bits[:6])
    module = _lightning().ExplainModule(explainer)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(bits), batch_size=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Lightning's own advice (workers, logging) is not under test
        for trainer in (legacy.Trainer, __import__("lightning.pytorch").pytorch.Trainer, legacy.Trainer):
            quiet = {"logger": False, "enable_progress_bar": False, "enable_model_summary": False}
            out = trainer(accelerator="cpu", **quiet).predict(module, loader)
            got = torch.cat([batch["attributions"] for batch in out])
            torch.testing.assert_close(got, explainer.attribute(bits), rtol=0, atol=0)  # the explainer itself
            torch.testing.assert_close(module.global_importance, explainer.attribute(bits).abs().mean(0))


@case(f"{I}.plot_drift", "importance of the wrong length", ValueError, r"importance must be \(len\(epochs\)=2, n\)")
def _():
    _lightning().plot_drift([0, 1], torch.zeros(3, 2))


@case(f"{I}.explain_module_class", "an unknown package", ValueError, r"package must be one of")
def _():
    _lightning().explain_module_class("lightning")


@case(f"{I}.attribute_batch", "a mapping without inputs", KeyError, r"needs an 'inputs' entry")
def _():
    from torchxplain.integrations import attribute_batch

    attribute_batch(object(), {"x": np.zeros((2, 2))})


@case(f"{I}.attribute_batch", "string inputs", TypeError, r"batch inputs must hold numbers")
def _():
    from torchxplain.integrations import attribute_batch

    attribute_batch(object(), [np.array([["a", "b"]])])


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


@case(f"{I}.ExplanationCallback", "a float every_n_epochs", TypeError, r"every_n_epochs must be an int, got float")
def _():
    _lightning().ExplanationCallback(lambda m: None, np.zeros((2, 2)), every_n_epochs=1.5)


@case(f"{I}.ExplanationWriter", "a float rows_per_file", TypeError, r"rows_per_file must be an int, got float")
def _():
    _lightning().ExplanationWriter("out", rows_per_file=2.0)


@case(f"{I}.background_averaged", "a NaN sentinel", ValueError, r"sentinel must be a finite number, got nan")
def _():
    from torchxplain.integrations import background_averaged

    background_averaged(lambda z: z.sum(1), np.zeros((3, 2)), sentinel=float("nan"))


# ---------------------------------------------------------------- the callback's probe and checkpoint, shards
def _module(width: int = 3) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(width, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1), torch.nn.Flatten(0))


@case(
    f"{I}.ExplanationCallback", "a probe of the wrong width (at fit start)", ValueError, r"cannot take the probe of sh"
)
def _():
    _lightning().ExplanationCallback(lambda m: None, np.zeros((2, 5))).on_fit_start(None, _module(3))


@case(
    f"{I}.ExplanationCallback", "a float64 tensor probe on a float32 module", ValueError, r"probe is a torch.float64 t"
)
def _():
    _lightning().ExplanationCallback(lambda m: None, torch.zeros(2, 3, dtype=torch.float64)).on_fit_start(
        None, _module()
    )


@case(
    f"{I}.ExplanationCallback", "a checkpoint without importances", ValueError, r"saved field 'importance' is missing"
)
def _():
    callback = _lightning().ExplanationCallback(lambda m: None, np.zeros((2, 3)))
    callback.load_state_dict({"epochs": torch.tensor([0]), "steps": torch.tensor([3])})


@case(
    f"{I}.ExplanationCallback",
    "a checkpoint of another probe width",
    ValueError,
    r"'importance' must have shape \('T', 3\), got \(1, 4\); resume with the callback",
)
def _():
    callback = _lightning().ExplanationCallback(lambda m: None, np.zeros((2, 3)))
    callback.load_state_dict({"epochs": torch.tensor([0]), "steps": torch.tensor([3]), "importance": torch.zeros(1, 4)})


@case(
    f"{I}.ExplanationCallback", "a checkpoint with epochs and steps of other lengths", ValueError, r"'steps' has T = 2"
)
def _():
    callback = _lightning().ExplanationCallback(lambda m: None, np.zeros((2, 3)))
    callback.load_state_dict(
        {"epochs": torch.tensor([0]), "steps": torch.tensor([3, 4]), "importance": torch.zeros(1, 3)}
    )


def _merge(shards: dict, expected_rows: Any = None, raw: bytes | None = None) -> None:
    from torchxplain.integrations import merge_shards

    with tempfile.TemporaryDirectory() as folder:
        for part, shard in shards.items():
            torch.save(shard, os.path.join(folder, f"shard-rank00000-part{part:05d}.pt"))
        if raw is not None:
            with open(os.path.join(folder, "shard-rank00001-part00000.pt"), "wb") as f:
                f.write(raw)
        merge_shards(folder, expected_rows)


GOOD = {"index": torch.arange(3), "attributions": torch.ones(3, 2)}
SHARDS = {
    "a shard without an index": ({0: {"attributions": torch.ones(3, 2)}}, None, r"saved field 'index' is missing"),
    "a tensor instead of a dict": ({0: torch.ones(3, 2)}, None, r"holds a Tensor, not ExplanationWriter's dict"),
    "negative indices": ({0: {**GOOD, "index": torch.tensor([0, -1, 2])}}, None, r"'index' must hold values >= 0"),
    "float indices": ({0: {**GOOD, "index": torch.zeros(3)}}, None, r"'index' must be an integer tensor"),
    "rows unlike the indices": ({0: {**GOOD, "attributions": torch.ones(4, 2)}}, None, r"has 4 rows for 3 indices"),
    "shards of different widths": (
        {0: GOOD, 1: {"index": torch.arange(3, 5), "attributions": torch.ones(2, 5)}},
        None,
        r"different row shapes or dtypes: .*\(2,\).*\(5,\)",
    ),
    "negative expected rows": ({0: GOOD}, -3, r"expected_rows must be >= 0, got -3"),
}
for _what, (_shards, _expected, _match) in SHARDS.items():
    case(f"{I}.merge_shards", _what, ValueError, _match)(
        lambda shards=_shards, expected=_expected: _merge(shards, expected)
    )


@case(f"{I}.merge_shards", "expected rows as a float", TypeError, r"expected_rows must be an int, got float")
def _():
    _merge({0: GOOD}, 3.0)


@case(f"{I}.merge_shards", "a truncated shard", ValueError, r"is not readable \(empty, truncated")
def _():
    import io

    buffer = io.BytesIO()
    torch.save(GOOD, buffer)
    _merge({0: GOOD}, raw=buffer.getvalue()[:200])


@result_case(f"{I}.ExplanationCallback", "a float64 DataFrame probe on a float32 module, explained after an epoch")
def _():
    import pandas as pd
    from captum.attr import IntegratedGradients

    from tests.integration._lightning_setup import QUIET, data, loaders, regressor_class
    from torchxplain.integrations._lightning import _compat

    pl = _compat.package()
    x, y = data()
    frame = pd.DataFrame(x[:8].double().numpy(), columns=[f"f{j}" for j in range(x.shape[1])])  # what pandas gives
    callback = _lightning().ExplanationCallback(IntegratedGradients, frame, figures=False)
    model = regressor_class(pl)()
    with tempfile.TemporaryDirectory() as root:
        pl.Trainer(max_epochs=1, default_root_dir=root, callbacks=[callback], logger=False, **QUIET).fit(
            model, *loaders(x, y)
        )
    model.eval()
    reference = IntegratedGradients(model).attribute(x[:8].clone()).abs().mean(0)  # the float32 probe, directly
    torch.testing.assert_close(callback.history[-1]["importance"], reference, atol=1e-6, rtol=1e-5)

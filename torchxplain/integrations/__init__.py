"""Integrations with Lightning, Captum and other engines. Names load lazily: ``import torchxplain`` never imports
Lightning.

Lightning: explanations during training, and a whole dataset explained across processes.

Works with ``lightning.pytorch`` and with ``pytorch_lightning`` (either or both installed; see
``explain_module_class``).

* :class:`ExplanationCallback` explains a fixed probe batch every ``n`` epochs of a ``Trainer.fit``; scalars,
  figures and ``.pt`` records go to each logger's own run; the history is kept in the checkpoint.
* :class:`ExplainModule` + :class:`ExplanationWriter` turn ``Trainer.predict`` into "explain this dataset": with
  ``strategy="ddp"`` every process explains its own rows and writes one shard per rank with the rows' dataset
  indices; :func:`merge_shards` puts them back in dataset order.
* :class:`MeanAbsAttribution`: the dataset-level importance as a ``torchmetrics`` metric, all-reduced across ranks.
* :func:`attribute_batch` (one batch of a loader explained, rows kept with their dataset indices) and
  :func:`merge_shards` are pure torch, for other engines: ``docs/guides/ray.md`` has a Ray Data ``map_batches`` recipe.
* Captum: :func:`expand_to_inputs` (global importances shaped for ``captum.metrics``) and
  :func:`background_averaged` (Captum's KernelShap / ShapleyValueSampling against a background set).

Example (a script: ``strategy="ddp"`` re-launches it, so keep the ``__main__`` guard)::

    import lightning.pytorch as pl
    from torch.utils.data import DataLoader
    import torchxplain as tx
    from torchxplain.integrations import ExplainModule, ExplanationWriter, merge_shards

    if __name__ == "__main__":
        module = ExplainModule(tx.FourierShap.from_spectrum(spectrum, background))
        writer = ExplanationWriter("explanations/")
        pl.Trainer(accelerator="gpu", devices=8, strategy="ddp", callbacks=[writer], logger=False).predict(
            module, DataLoader(dataset, batch_size=4096), return_predictions=False)
        merged = merge_shards("explanations/")            # {"index": (N,), "attributions": (N, n)}
        # module.global_importance / explanations/importance.pt: (n,) mean |attribution| over all ranks

With a ``pytorch_lightning.Trainer`` while ``lightning`` is also installed, build the module with
``explain_module_class("pytorch_lightning")(explainer)``; the callbacks fit either Trainer as they are.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {  # name -> its private module
    "ExplanationCallback": "_lightning._callback",
    "plot_drift": "_lightning._callback",
    "ExplainModule": "_lightning._predict",
    "ExplanationWriter": "_lightning._predict",
    "explain_module_class": "_lightning._predict",
    "MeanAbsAttribution": "_lightning._metrics",
    "attribute_batch": "_batch",
    "merge_shards": "_batch",
    "expand_to_inputs": "_captum",
    "background_averaged": "_captum",
    "BackgroundAveraged": "_captum",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'torchxplain.integrations' has no attribute {name!r}")
    module = importlib.import_module(f"torchxplain.integrations.{_LAZY[name]}")
    return getattr(module, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

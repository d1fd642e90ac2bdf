"""Lightning integration: explanations during training, and a whole dataset explained across processes.

Works with ``lightning.pytorch`` and with ``pytorch_lightning`` (either or both installed; see
:mod:`~torchxplain.integrations.lightning._compat`).

* :class:`ExplanationCallback` (:mod:`.callback`) explains a fixed probe batch every ``n`` epochs of a
  ``Trainer.fit``; scalars, figures and ``.pt`` records go to each logger's own run (:mod:`.outputs`); the
  history is kept in the checkpoint.
* :class:`ExplainModule` + :class:`ExplanationWriter` (:mod:`.predict`) turn ``Trainer.predict`` into "explain
  this dataset": with ``strategy="ddp"`` every process explains its own rows and writes one shard per rank with
  the rows' dataset indices; :func:`merge_shards` puts them back in dataset order.
* :class:`MeanAbsAttribution` (:mod:`.metrics`): the dataset-level importance as a ``torchmetrics`` metric,
  all-reduced across ranks.
* :func:`explain_batch` and :func:`merge_shards` are pure torch (:mod:`torchxplain.integrations.batch`), for
  other engines: ``docs/ray.md`` has a Ray Data ``map_batches`` recipe.

Example (a script: ``strategy="ddp"`` re-launches it, so keep the ``__main__`` guard)::

    import lightning.pytorch as pl
    from torch.utils.data import DataLoader
    import torchxplain as tx
    from torchxplain.integrations.lightning import ExplainModule, ExplanationWriter, merge_shards

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

from torchxplain.integrations.batch import explain_batch, merge_shards
from torchxplain.integrations.lightning.callback import ExplanationCallback, plot_drift
from torchxplain.integrations.lightning.metrics import MeanAbsAttribution
from torchxplain.integrations.lightning.predict import ExplainModule, ExplanationWriter, explain_module_class

__all__ = [
    "ExplainModule",
    "ExplanationCallback",
    "ExplanationWriter",
    "MeanAbsAttribution",
    "explain_batch",
    "explain_module_class",
    "merge_shards",
    "plot_drift",
]

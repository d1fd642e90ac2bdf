"""Explain saved rows with a saved explainer through ``Trainer.predict`` (run as a script by the DDP test).

Usage: ``python ddp_explain.py EXPLAINER.pt ROWS.pt OUT_DIR DEVICES``. ``strategy="ddp"`` re-launches this file,
hence the ``__main__`` guard.
"""

from __future__ import annotations

import sys

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

from torchxplain import FourierShap
from torchxplain.integrations import ExplainModule, ExplanationWriter


def run(explainer_path: str, rows_path: str, out_dir: str, devices: int, batch_size: int = 64) -> None:
    explainer = FourierShap.load(explainer_path)
    rows = torch.load(rows_path, weights_only=True)
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=devices,
        strategy="ddp" if devices > 1 else "auto",
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[ExplanationWriter(out_dir)],
    )
    trainer.predict(
        ExplainModule(explainer), DataLoader(TensorDataset(rows), batch_size=batch_size), return_predictions=False
    )


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
    # gloo's threads abort the interpreter at exit ("terminate called without an active exception") now and
    # then unless the process group is torn down first
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()

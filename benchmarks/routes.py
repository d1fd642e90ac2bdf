"""The router's whole-call costs on a torch MLP right after training, as a new user runs it (one thread).

1. **explain_after_fit on the diabetes MLP** (10-64-64-1 ReLU, standardised ``load_diabetes``, 300 epochs of Adam;
   40 background rows, 50 rows to explain): CPU seconds of ``tx.explain_after_fit(net, X_train, X_test,
   n_background=40)`` beside ``tx.FourierShap(net, background, method="enumerate").attribute(X_test)`` on the same
   rows, their ratio (target < 3), the largest difference of the values (exact: float precision), and the route's
   reason with every candidate's predicted seconds.
2. **ExplanationCallback** explaining a 10-feature continuous MLP with ``lambda m: tx.FourierShap(m, bg, data=X)``
   (64 probe rows, 40 background rows) during ``Trainer.fit``: the CPU seconds each epoch adds over the same
   training without the callback (target <= 2 s), and the route the router picked.

Imports and first-call initialisation are paid before timing. Run: ``PYTHONPATH=. python benchmarks/routes.py``.
"""

from __future__ import annotations

import os
import tempfile
import time
import warnings

import numpy as np
import torch
from torch import nn

import torchxplain as tx


def diabetes() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    """The issue's MLP: ``(net, X_train (350, 10), X_test (50, 10))``, float32, standardised."""
    from sklearn.datasets import load_diabetes

    x, y = load_diabetes(return_X_y=True)
    perm = np.random.default_rng(0).permutation(len(x))
    x, y = (x - x.mean(0)) / x.std(0), (y - y.mean()) / y.std()
    xt, yt = torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)
    train, test = perm[:350], perm[350:400]
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    for _ in range(300):
        opt.zero_grad()
        loss = ((net(xt[train])[:, 0] - yt[train]) ** 2).mean()
        loss.backward()
        opt.step()
    return net.eval(), xt[train], xt[test]


def cpu(call: object) -> tuple[float, object]:
    start = time.process_time()
    out = call()  # type: ignore[operator]
    return time.process_time() - start, out


def after_fit() -> None:
    net, x_train, x_test = diabetes()
    tx.explain_after_fit(net, x_train, x_test[:2], n_background=40)  # imports and lazy initialisation
    seconds, result = cpu(lambda: tx.explain_after_fit(net, x_train, x_test, n_background=40))
    background = result.explainer.background
    exact_seconds, exact = cpu(lambda: tx.FourierShap(net, background, method="enumerate").attribute(x_test))
    diff = float((result.attributions.double() - exact.double()).abs().max())
    print("1. explain_after_fit, diabetes MLP 10-64-64-1, 40 background rows, 50 rows (CPU seconds, one thread)")
    print(
        f"   explain_after_fit {seconds:.3f} s; FourierShap(method='enumerate') {exact_seconds:.3f} s; ratio "
        f"{seconds / exact_seconds:.2f} (target < 3); route {result.explainer.fit_report.method!r}; "
        f"max |difference| {diff:.2e}"
    )
    print(f"   reason: {result.reason}")


def callback(epochs: int = 3) -> None:
    import lightning.pytorch as pl
    from torch.utils.data import DataLoader, TensorDataset

    from torchxplain.integrations import ExplanationCallback

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(2000, 10, generator=generator)
    y = torch.sin(x[:, 0]) + x[:, 1] * x[:, 2] + 0.1 * torch.randn(2000, generator=generator)
    train = DataLoader(TensorDataset(x, y), batch_size=256)

    class Regressor(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))

        def forward(self, z: torch.Tensor) -> torch.Tensor:
            return self.net(z)[:, 0]

        def training_step(self, batch: list[torch.Tensor], _: int) -> torch.Tensor:
            return nn.functional.mse_loss(self(batch[0]), batch[1])

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.Adam(self.parameters(), lr=1e-3)

    routes: list[str] = []

    def factory(module: nn.Module) -> tx.FourierShap:
        explainer = tx.FourierShap(module, x[:40], data=x)
        routes.append(explainer.fit_report.method)
        return explainer

    def run(with_callback: bool) -> float:
        torch.manual_seed(0)
        callbacks = [ExplanationCallback(factory, x[:64], on="train", figures=False)] if with_callback else []
        trainer = pl.Trainer(
            max_epochs=epochs,
            default_root_dir=tempfile.mkdtemp(prefix="torchxplain-routes-"),
            callbacks=callbacks,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
        )
        seconds, _ = cpu(lambda: trainer.fit(Regressor(), train))
        return seconds

    run(True)  # imports and first-call initialisation
    routes.clear()
    plain, explained = run(False), run(True)
    added = (explained - plain) / epochs
    print("2. ExplanationCallback(lambda m: tx.FourierShap(m, bg, data=X)), 10 features, 64 probe rows, 40 background")
    print(
        f"   training {plain / epochs:.3f} s per epoch; with the callback {explained / epochs:.3f} s; added "
        f"{added:.3f} s CPU per epoch (target <= 2); routes {sorted(set(routes))}"
    )


def main() -> None:
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    print(f"load average {os.getloadavg()}")
    after_fit()
    callback()


if __name__ == "__main__":
    main()

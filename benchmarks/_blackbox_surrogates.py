"""Which surrogate the correction should start from (issue 30, step 2), measured side by side.

Every candidate is fitted once on the case's pool rows; the correction (``fit/residual``, per-pair regression on,
no exact routes) then runs on the same explained rows at the same budget of model rows per row, and the candidates
are compared by what they leave to the correction and what they cost:

* ``rows for 0.999``: model rows per explained row the correction would need for R² 0.999 against exact values,
  ``mean_rows(Σ_i SE_i² · rows spent) / (0.001 · m · Var(values))`` (the variance per model row, from the standard
  errors: no reference needed, every candidate is unbiased);
* fit CPU seconds, the surrogate's own CPU µs per sample of the correction (its value at the hybrids: zero for an
  additive one, whose value there is a masked sum inside the correction), and CPU ms per row at the budget.

Candidates: none; the additive surrogate fitted on odd parts of pair games (the library's); the same basis fitted
by least squares on hybrid values (the plain fit); today's continuous fit (``FourierShap(model, background,
data=pool, n_queries=16384)``, stage one of its ladder) or today's binary hybrid fit (``n_queries=16384``); a
scikit-learn ``HistGradientBoostingRegressor`` fitted on 60,000 hybrid values (200 trees of 31 leaves; 100 trees of
15 leaves on 32 bins beyond 20 players, where the larger one's exact values took 21 GB on the tree path), its exact
values from our tree machinery (``FourierShap.from_trees``), its value at hybrids from ``predict`` (numpy at the
edge).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

import torchxplain as tx
from torchxplain.fourier.fit import AdditiveModel, CorrectionOptions, correct, fit_additive
from torchxplain.fourier.fit.residual._additive import ColumnBasis

SAMPLES = 16_384
HYBRIDS = 60_000


@dataclass
class Known:
    """A non-additive surrogate with exact values: ``g`` at rows and ``values`` at explained rows."""

    g: Callable[[Tensor], Tensor]
    values: Callable[[Tensor], Tensor]
    seconds: float = 0.0  # CPU seconds spent in g so far
    calls: int = 0

    def __call__(self, z: Tensor) -> Tensor:
        start = time.process_time()
        out = self.g(z).double().reshape(-1)
        self.seconds += time.process_time() - start
        self.calls += z.shape[0]
        return out

    def shapley(self, x: Tensor) -> Tensor:
        return self.values(x).double()


def hybrid_samples(pool: Tensor, background: Tensor, players: Tensor, count: int, seed: int) -> Tensor:
    """``count`` hybrids ``(x_S, b_{~S})`` with uniform coalition sizes (``x`` from the pool)."""
    gen = torch.Generator().manual_seed(seed)
    m = int(players.max()) + 1
    x = pool[torch.randint(0, pool.shape[0], (count,), generator=gen)]
    b = background[torch.randint(0, background.shape[0], (count,), generator=gen)]
    size = torch.randint(0, m + 1, (count, 1), generator=gen)
    inside = torch.rand(count, m, generator=gen).argsort(1).argsort(1) < size
    return torch.where(inside[:, players], x, b)


def plain_additive(f: Callable[[Tensor], Tensor], pool: Tensor, background: Tensor, players: Tensor) -> AdditiveModel:
    """The additive basis fitted by least squares on ``2 · SAMPLES`` hybrid values (with an intercept)."""
    m = int(players.max()) + 1
    basis = ColumnBasis.of(torch.cat((pool, background)))
    z = hybrid_samples(pool, background, players, 2 * SAMPLES, 0)
    design = torch.cat((basis(z), torch.ones(z.shape[0], 1, dtype=torch.float64)), 1)
    coefficients = torch.linalg.lstsq(design, f(z).double()[:, None], driver="gelsd").solution[:-1, 0]
    return AdditiveModel(basis, coefficients, players, m, float("nan"), 0.0, 2 * SAMPLES)


def candidates(case: object, binary: bool) -> dict[str, Callable[[], tuple[AdditiveModel | None, Known | None]]]:
    f, pool, background, players, m = case.f, case.pool, case.background, case.players, case.m  # type: ignore[attr-defined]
    module = case.module  # type: ignore[attr-defined]

    def today() -> tuple[None, Known]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = module if module is not None else f
            explainer = tx.FourierShap(
                model, background.float(), data=pool.float(), n_queries=SAMPLES, show_progress=False
            )
        return None, Known(lambda z: explainer.predict(z.float()), lambda x: explainer.attribute(x.float()))

    def trees() -> tuple[None, Known]:
        from sklearn.ensemble import HistGradientBoostingRegressor

        z = hybrid_samples(pool, background, players, HYBRIDS, 1)
        wide = m > 20  # the tree path's values of 200 trees x 31 leaves over 40 continuous columns took 21 GB
        proxy = HistGradientBoostingRegressor(
            max_iter=100 if wide else 200,
            max_leaf_nodes=15 if wide else 31,
            max_bins=32 if wide else 255,
            early_stopping=False,
            random_state=0,
        )
        proxy.fit(z.numpy(), f(z).numpy())
        explainer = tx.FourierShap.from_trees(proxy, background.numpy())

        def predict(rows: Tensor) -> Tensor:
            return torch.as_tensor(proxy.predict(rows.numpy()))

        return None, Known(predict, lambda x: explainer.attribute(x.to(background.dtype)))

    return {
        "none": lambda: (None, None),
        "additive, odd parts (ours)": lambda: (
            fit_additive(f, pool, background, players, m, samples=SAMPLES, seed=0),
            None,
        ),
        "additive, plain values": lambda: (plain_additive(f, pool, background, players), None),
        ("today's binary hybrid fit" if binary else "today's continuous fit"): today,
        "gradient-boosted trees": trees,
    }


def compare(case: object, rows: Tensor, budget: int, binary: bool) -> list[dict]:
    """One line per candidate (module docstring)."""
    f, background, players, m = case.f, case.background, case.players, case.m  # type: ignore[attr-defined]
    out = []
    for name, build in candidates(case, binary).items():
        start = time.process_time()
        try:
            additive, known = build()
        except Exception as err:  # a candidate that cannot be built is a result too
            out.append({"surrogate": name, "note": f"failed: {type(err).__name__}: {str(err)[:80]}"})
            continue
        fit_s = time.process_time() - start
        options = CorrectionOptions(budget=budget)
        start = time.process_time()
        estimate = correct(f, rows, background, players, m, additive=additive, surrogate=known, options=options)
        seconds = time.process_time() - start
        spread = float(estimate.values.var())
        per_row = (estimate.standard_errors.square().sum(1) * estimate.model_rows.double()).mean()
        need = float(per_row) / (1e-3 * m * max(spread, 1e-300))
        g_us = 0.0 if known is None or not known.calls else known.seconds / known.calls * 1e6
        out.append(
            {
                "surrogate": name,
                "rows_for_0.999": need,
                "fit_s": fit_s,
                "g_us_per_sample": g_us,
                "row_ms": seconds * 1e3 / rows.shape[0],
                "note": "",
            }
        )
    return out


def print_comparison(name: str, lines: list[dict], budget: int) -> None:
    print(f"\n--- surrogates on {name} (correction at {budget:,} model rows/row, per-pair regression on)")
    print("  surrogate                      rows/row for R² 0.999   fit CPU s   g CPU µs/sample   CPU ms/row")
    for line in lines:
        if "rows_for_0.999" not in line:
            print(f"  {line['surrogate']:<30} {line['note']}")
            continue
        print(
            f"  {line['surrogate']:<30} {line['rows_for_0.999']:>20,.0f}   {line['fit_s']:>9.2f}   "
            f"{line['g_us_per_sample']:>15.2f}   {line['row_ms']:>10.2f}"
        )

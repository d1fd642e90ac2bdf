"""ValuePlan: the cost model's kernel choice, its report, overrides, and the once-per-plan background work."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.fourier.cases import random_case, small_support_case
from torchxplain import FourierSpectrum
from torchxplain.fourier import precompute_background, shapley_values
from torchxplain.fourier.values._plan import ValuePlan
from torchxplain.fourier.values._weights import SPECS


def test_auto_picks_the_tables_for_a_small_support_spectrum_and_many_queries():
    spec, _, _, _, bg = small_support_case(0, 40, 30, 5, 50, 1)
    xq = torch.randint(0, 2, (3000, 40), generator=torch.Generator().manual_seed(0)).double()
    plan = ValuePlan(spec, bg, None, 40)
    phi = plan.shapley(xq)
    report = plan.describe()
    choice = report["choices"]["shapley"]
    assert choice["kernel"] == "small_support" and choice["queries"] == 3000
    predicted = choice["predicted_seconds"]
    assert predicted["gemm"] > predicted["small_support"] > 0
    assert report["tables_built"] == ["shapley"] and report["workload"]["families"] > 0
    json.dumps(report)  # JSON-able
    dense = ValuePlan(spec, bg, None, 40, kernel="gemm").shapley(xq[:100])
    torch.testing.assert_close(phi[:100], dense, atol=1e-12, rtol=0)


def test_auto_takes_the_dense_kernel_for_high_degree_and_forcing_the_tables_refuses():
    spec, _, _, xq, bg = random_case(1, 20, 30, 4, 3)  # random degrees up to 20
    assert spec.degree > 16
    plan = ValuePlan(spec, bg, None, 20)
    plan.shapley(xq)
    assert plan.describe()["choices"]["shapley"]["kernel"] == "gemm"
    assert "degree" in plan.describe()["choices"]["shapley"]["reason"]
    with pytest.raises(ValueError, match="kernel='gemm'"):
        ValuePlan(spec, bg, None, 20, kernel="small_support").shapley(xq)


def test_one_small_query_on_a_fresh_plan_takes_the_dense_kernel():
    spec, _, _, _, bg = small_support_case(2, 12, 4, 4, 5, 1)
    plan = ValuePlan(spec, bg, None, 12)
    plan.shapley(bg[:1])
    assert plan.describe()["choices"]["shapley"]["kernel"] == "gemm"
    assert plan.describe()["tables_built"] == []


def test_ski_rental_switches_to_the_tables_once_and_for_all():
    spec, _, _, _, bg = small_support_case(3, 30, 20, 4, 40, 1)
    plan, dense = ValuePlan(spec, bg, None, 30), ValuePlan(spec, bg, None, 30, kernel="gemm")
    gen = torch.Generator().manual_seed(1)
    kernels = []
    for _ in range(30):
        xq = torch.randint(0, 2, (8, 30), generator=gen).double()
        torch.testing.assert_close(plan.shapley(xq), dense.shapley(xq), atol=1e-12, rtol=0)
        kernels.append(plan.describe()["choices"]["shapley"]["kernel"])
    assert kernels[0] == "gemm" and kernels[-1] == "small_support"
    switch = kernels.index("small_support")
    assert all(k == "small_support" for k in kernels[switch:])


@pytest.mark.parametrize("kernel", ["gemm", "small_support"])
def test_forced_kernels_are_reported(kernel):
    spec, _, _, xq, bg = small_support_case(4, 10, 3, 4, 6, 5)
    plan = ValuePlan(spec, bg, None, 10, kernel=kernel)
    for method in (plan.shapley, plan.banzhaf, plan.interactions):
        method(xq)
    report = plan.describe()
    assert report["kernel"] == kernel
    assert {c["kernel"] for c in report["choices"].values()} == {kernel}
    assert report["tables_built"] == ([] if kernel == "gemm" else ["banzhaf", "interactions", "shapley"])


def test_a_precomputed_term_builds_its_tables_once():
    spec, _, _, xq, bg = small_support_case(5, 12, 5, 4, 8, 6)
    term = precompute_background(spec, bg)
    first = shapley_values(spec, xq, term, kernel="small_support")
    (plan,) = term.plans.values()
    tables = plan._tables[SPECS["shapley"]]
    second = shapley_values(spec, xq, term, kernel="small_support")
    assert term.plans[next(iter(term.plans))] is plan and plan._tables[SPECS["shapley"]] is tables
    torch.testing.assert_close(first, second)
    np.testing.assert_allclose(first.numpy(), shapley_values(spec, xq, bg, kernel="gemm").numpy(), atol=1e-12)


def test_families_can_be_shared_between_plans():
    spec, _, _, xq, bg = small_support_case(6, 12, 5, 4, 8, 6)
    first = ValuePlan(spec, bg, None, 12, kernel="small_support")
    other = ValuePlan(spec, bg[:3], None, 12, kernel="small_support", families=first.families)
    assert other.families is first.families
    torch.testing.assert_close(other.shapley(xq), shapley_values(spec, xq, bg[:3], kernel="gemm"), atol=1e-12, rtol=0)


def test_bad_kernel_name_is_refused():
    spec, _, _, xq, bg = small_support_case(7, 6, 2, 3, 4, 2)
    with pytest.raises(ValueError, match="kernel must be one of"):
        shapley_values(spec, xq, bg, kernel="fast")


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("kernel", ["small_support", "gemm"])
def test_mean_output_is_the_spectrum_averaged_over_the_background(grouped, kernel):
    """The base value from the layout's Walsh moments (small-support kernel) or the dense kernel's signed amplitudes
    equals the spectrum evaluated at every background row and averaged (the direct sum ``Σ_f a_f (-1)^{<f, b>}``),
    constant term included; ``None`` before a call has built either."""
    _, freq, amp, xq, bg = small_support_case(4, 24, 12, 5, 70, 6)
    freq = np.unique(np.vstack([freq, np.zeros((1, 24), dtype=bool)]), axis=0)  # with a constant term
    amp = np.random.default_rng(5).normal(size=len(freq))
    spec = FourierSpectrum(torch.tensor(freq), torch.tensor(amp, dtype=torch.float64))
    groups, m = (torch.arange(24) // 3, 8) if grouped else (None, 24)
    plan = ValuePlan(spec, bg, groups, m, kernel=kernel)
    assert plan.mean_output() is None
    plan.shapley(xq)
    parity = (bg @ torch.tensor(freq, dtype=torch.float64).T) % 2
    direct = ((1.0 - 2.0 * parity) * spec.amplitudes).sum(1).mean()
    torch.testing.assert_close(plan.mean_output(), direct, atol=1e-12, rtol=0)

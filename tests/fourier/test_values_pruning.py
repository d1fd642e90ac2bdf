"""Pruning to a stated accuracy on the hybrid rows SHAP evaluates (``prune_tree_spectrum(r2_target=...)``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.fourier.tree_cases import binary_data, fit
from torchxplain import FourierSpectrum, tree_spectrum
from torchxplain.fourier import prune_tree_spectrum, shapley_values
from torchxplain.fourier.trees._pruning import _prune_to_r2, sample_hybrids


def _r2(exact: torch.Tensor, approx: torch.Tensor) -> float:
    residual = (exact - approx) - (exact - approx).mean()
    return 1.0 - float((residual**2).sum() / ((exact - exact.mean()) ** 2).sum())


def _forest(n: int = 30, depth: int = 6):
    x, y = binary_data(n, rows=400, seed=2)
    model = fit("rf_reg", depth, x, y)
    return tree_spectrum(model), torch.from_numpy(x[:60]), torch.from_numpy(x[200:260])


@pytest.mark.parametrize("target", [0.99, 0.999])
def test_r2_target_is_reached_on_the_selection_sample_and_reported_on_a_fresh_one(target):
    spectrum, background, queries = _forest()
    pruned, report = prune_tree_spectrum(spectrum, background, r2_target=target, queries=queries, seed=5)
    assert report.r2_target == target and report.kept_terms == len(pruned) < report.total_terms
    constant = ~spectrum.frequencies.any(1)
    rest = FourierSpectrum(spectrum.frequencies[~constant], spectrum.amplitudes[~constant])
    selection = sample_hybrids(queries, background, None, 1024, 5)
    kept = _prune_to_r2(rest, selection, target)
    assert len(kept) + int(constant.sum()) == report.kept_terms
    assert _r2(rest.evaluate(selection), kept.evaluate(selection)) >= target
    fresh = sample_hybrids(queries, background, None, 512, 6)  # the report's independent sample
    assert report.hybrid_points == 512
    assert report.r2_hybrid == pytest.approx(_r2(spectrum.evaluate(fresh), pruned.evaluate(fresh)), abs=1e-9)
    assert report.r2_hybrid > target - 0.01  # an honest estimate: close to, not always above, the target


def test_higher_targets_keep_more_terms_and_shap_values_follow():
    spectrum, background, queries = _forest()
    exact = shapley_values(spectrum, queries, background)
    kept, errors = [], []
    for target in (0.9, 0.99, 0.9999):
        pruned, report = prune_tree_spectrum(spectrum, background, r2_target=target, queries=queries)
        kept.append(report.kept_terms)
        errors.append(1.0 - _r2(exact.flatten(), shapley_values(pruned, queries, background).flatten()))
    assert kept == sorted(kept) and kept[0] < kept[-1]
    assert errors[-1] < 1e-3 and errors == sorted(errors, reverse=True)


def test_terms_constant_on_the_hybrids_are_dropped_first():
    """Feature 3 is 0 in every query and background row: a term on it only shifts every value's baseline."""
    freq = torch.zeros(3, 5, dtype=torch.bool)
    freq[0, 0] = freq[1, 3] = freq[2, [0, 1]] = True
    spectrum = FourierSpectrum(freq, torch.tensor([1.0, 50.0, 0.5], dtype=torch.float64))
    rows = torch.tensor(np.random.default_rng(0).integers(0, 2, (40, 5)), dtype=torch.float64)
    rows[:, 3] = 0
    pruned, report = prune_tree_spectrum(spectrum, rows, r2_target=0.999)
    assert not bool(pruned.frequencies[:, 3].any())  # the largest amplitude, yet irrelevant to SHAP here
    torch.testing.assert_close(shapley_values(pruned, rows, rows), shapley_values(spectrum, rows, rows))
    assert report.r2_hybrid == pytest.approx(1.0)


def test_hybrids_take_whole_players_from_one_row():
    groups = torch.tensor([0, 0, 1, 1, 1, 2, 3, 3])
    ones, zeros = torch.ones(1, 8, dtype=torch.float64), torch.zeros(1, 8, dtype=torch.float64)
    hybrids = sample_hybrids(ones, zeros, groups, 500, seed=1)
    for g in range(4):
        block = hybrids[:, groups == g]
        assert bool((block == block[:, :1]).all())  # a player's bits all come from x or all from b
    taken = torch.stack([hybrids[:, groups == g][:, 0] for g in range(4)], 1).sum(1)
    assert bool(((taken >= 1) & (taken <= 3)).all())  # 0 < |S| < m
    counts = torch.bincount(taken.long(), minlength=4)[1:].double()
    # Shapley kernel sizes for m = 4: weights 3/3, 3/4, 3/3 -> 0.364, 0.273, 0.364
    assert float((counts / counts.sum() - torch.tensor([4, 3, 4]) / 11).abs().max()) < 0.08


def test_bad_pruning_arguments():
    spectrum, background, _ = _forest(10, 3)
    with pytest.raises(ValueError, match="r2_target must be in"):
        prune_tree_spectrum(spectrum, background, r2_target=1.5)
    with pytest.raises(ValueError, match="different pruning rules"):
        prune_tree_spectrum(spectrum, background, energy=0.99, r2_target=0.99)
    with pytest.raises(ValueError, match="n_hybrids"):
        prune_tree_spectrum(spectrum, background, energy=0.99, n_hybrids=0)


def test_energy_rule_reports_its_hybrid_accuracy():
    spectrum, background, queries = _forest()
    pruned, report = prune_tree_spectrum(spectrum, background, energy=0.99, queries=queries)
    assert report.r2_target is None and report.kept_energy >= 0.99
    fresh = sample_hybrids(queries, background, None, 512, 1)
    assert report.r2_hybrid == pytest.approx(_r2(spectrum.evaluate(fresh), pruned.evaluate(fresh)), abs=1e-9)

"""Captum interop: FourierShap inside NoiseTunnel and captum.metrics; Captum's samplers via background_averaged."""

from __future__ import annotations

import pytest
import torch
from captum.attr import KernelShap, NoiseTunnel, ShapleyValues, ShapleyValueSampling
from captum.metrics import infidelity, sensitivity_max
from torch import nn

from tests.integration._brute import interventional_shap
from torchxplain import FourierShap, FourierSpectrum, settings
from torchxplain.integrations import background_averaged, expand_to_inputs
from torchxplain.testing import tiny_memory_budget

N = 5


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(N, 12), nn.Tanh(), nn.Linear(12, 1), nn.Flatten(0)).double().eval()


def _binary(rows: int, seed: int) -> torch.Tensor:
    return (torch.rand(rows, N, generator=torch.Generator().manual_seed(seed)) < 0.5).double()


def _spectrum(degree_one: bool) -> FourierSpectrum:
    gen = torch.Generator().manual_seed(4)
    freq = torch.eye(N, dtype=torch.bool) if degree_one else torch.rand(12, N, generator=gen) < 0.4
    return FourierSpectrum(freq, torch.randn(freq.shape[0], generator=gen, dtype=torch.float64)).coalesce()


def test_background_averaged_shapley_values_equal_brute_force_and_fourier_shap():
    model = _model()
    x, background = _binary(6, 1), _binary(7, 2)
    truth = interventional_shap(model, x, background)
    g = background_averaged(model, background)
    exact = ShapleyValues(g).attribute(x, baselines=g.baselines(x), perturbations_per_eval=32)
    # Captum's Shapley methods accumulate in float32 (default dtype), hence the float32-level tolerance
    torch.testing.assert_close(exact.double(), truth, rtol=1e-5, atol=1e-6)
    fourier = FourierShap(model, background, k=2**N, method="exact").attribute(x)
    torch.testing.assert_close(fourier, truth, rtol=1e-7, atol=1e-9)
    # without the wrapper a single sentinel-free baseline gives baseline SHAP, which differs
    single = ShapleyValues(model).attribute(x, baselines=background[:1], perturbations_per_eval=32)
    assert (single - truth).abs().max() > 1e-3


@pytest.mark.parametrize("method", ["kernel", "sampling"])
def test_captum_samplers_agree_with_fourier_shap_within_sampling_error(method):
    model = _model()
    x, background = _binary(4, 3), _binary(6, 5)
    fourier = FourierShap(model, background, k=2**N, method="exact").attribute(x)
    g = background_averaged(model, background)
    estimates = []
    for seed in range(4):
        torch.manual_seed(seed)
        if method == "kernel":
            est = KernelShap(g).attribute(x, baselines=g.baselines(x), n_samples=300, perturbations_per_eval=300)
        else:
            est = ShapleyValueSampling(g).attribute(
                x, baselines=g.baselines(x), n_samples=15, perturbations_per_eval=32
            )
        estimates.append(est.double())
    stacked = torch.stack(estimates)
    mean, sem = stacked.mean(0), stacked.std(0) / len(estimates) ** 0.5
    scale = fourier.abs().max()
    # within 5 standard errors of the (independent-seed) Monte Carlo mean, with a floor at 1% of the scale
    assert bool(((mean - fourier).abs() <= 5 * sem + 0.01 * scale).all()), (mean - fourier).abs().max()
    if method == "sampling":  # Shapley value sampling is unbiased per permutation: efficiency holds exactly
        torch.testing.assert_close(stacked.sum(-1), fourier.sum(-1).expand(4, -1), rtol=1e-5, atol=1e-6)


def test_background_averaged_validation_and_extra_args():
    background = _binary(3, 0)
    with pytest.raises(ValueError, match="sentinel"):
        background_averaged(lambda z: z.sum(1), background, sentinel=1.0)
    with pytest.raises(ValueError, match="not finite"):
        background_averaged(lambda z: z.sum(1), background.half(), sentinel=-1e9)
    with pytest.raises(TypeError):
        background_averaged("model", background)
    with pytest.raises(TypeError, match="sentinel must be a finite number, got"):
        background_averaged(lambda z: z.sum(1), background, sentinel=True)
    with pytest.raises(ValueError, match="max_memory must be at least 1 MiB"):
        background_averaged(lambda z: z.sum(1), background, max_memory=1)
    with pytest.raises(ValueError, match="background contains NaN"):
        background_averaged(lambda z: z.sum(1), torch.tensor([[0.0, float("nan")]]))
    with tiny_memory_budget(64):
        g = background_averaged(lambda z, w: z @ w[0], background)
    z = torch.tensor([[1.0, -1e9, 0.0, -1e9, 1.0]], dtype=torch.float64)
    w = torch.arange(1.0, N + 1, dtype=torch.float64)
    expected = torch.stack([torch.where(z[0] == -1e9, b, z[0]) @ w for b in background]).mean()
    torch.testing.assert_close(g(z, w[None]), expected[None])


def test_fourier_shap_in_noise_tunnel_is_unbiased():
    """SHAP values of a multilinear extension are multilinear in x, so zero-mean noise leaves their mean unchanged."""
    spectrum = _spectrum(degree_one=False)
    background = _binary(5, 6)
    explainer = FourierShap.from_spectrum(spectrum, background, relaxed=True)
    x = torch.rand(3, N, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    torch.manual_seed(0)
    smooth = NoiseTunnel(explainer).attribute(x, nt_type="smoothgrad", nt_samples=64, stdevs=0.1)
    exact = explainer.attribute(x)
    gen = torch.Generator().manual_seed(8)
    draws = torch.stack(
        [explainer.attribute(x + 0.1 * torch.randn(x.shape, generator=gen, dtype=x.dtype)) for _ in range(128)]
    )
    sem = draws.std(0) / 64**0.5
    assert smooth.shape == x.shape
    assert bool(((smooth - exact).abs() <= 5 * sem + 1e-12).all())
    assert (smooth - exact).abs().max() > 0  # noise was really added


def test_infidelity_is_zero_for_exact_shap_of_an_additive_model():
    spectrum = _spectrum(degree_one=True)
    baseline = _binary(1, 9)
    explainer = FourierShap.from_spectrum(spectrum, baseline)
    x = _binary(8, 10)
    attributions = explainer.attribute(x)

    def drop_random_subset(inputs):
        mask = (torch.rand(inputs.shape, dtype=inputs.dtype) < 0.5).to(inputs.dtype)
        return mask, inputs * (1 - mask) + baseline * mask  # I = indicator; x - I puts S at the baseline

    torch.manual_seed(0)
    ours = infidelity(spectrum.evaluate, drop_random_subset, x, attributions, n_perturb_samples=16)
    torch.manual_seed(0)
    shuffled = infidelity(
        spectrum.evaluate, drop_random_subset, x, attributions[:, torch.randperm(N)], n_perturb_samples=16
    )
    assert ours.shape == (8,)
    assert float(ours.max()) < 1e-20  # additive model: sum_{i in S} phi_i = f(x) - f(x_S -> baseline) exactly
    assert float(shuffled.mean()) > 1e-3


def test_infidelity_accepts_expanded_global_importance():
    spectrum = _spectrum(degree_one=True)
    baseline = _binary(1, 9)
    x = _binary(8, 10)
    explainer = FourierShap.from_spectrum(spectrum, baseline)
    global_importance = explainer.attribute(x).abs().mean(0)  # (n,)
    model = explainer.surrogate  # the multilinear extension accepts the continuous perturbed inputs
    with pytest.raises(AssertionError):
        infidelity(model, lambda t: (t * 0.1, t * 0.9), x, global_importance)
    expanded = expand_to_inputs(global_importance, x)
    assert expanded.shape == x.shape and torch.equal(expanded[3], global_importance)
    value = infidelity(model, lambda t: (t * 0.1, t * 0.9), x, expanded, n_perturb_samples=2)
    assert value.shape == (8,) and bool(torch.isfinite(value).all())
    with pytest.raises(ValueError, match="fits neither"):
        expand_to_inputs(torch.ones(N + 1, dtype=torch.float64), x)
    with pytest.raises(ValueError, match="structure"):
        expand_to_inputs(global_importance, (x, x))
    pair = expand_to_inputs((global_importance, global_importance[:2]), (x, x[:, :2]))
    assert [t.shape for t in pair] == [x.shape, (8, 2)]


def test_sensitivity_max_is_bounded_for_a_linear_explanation():
    """Additive spectrum, one baseline row: phi(x) = -2 a * (x - b), so a perturbation of radius r moves phi by at
    most 2 r ||a||_2, and sensitivity_max <= 2 r ||a||_2 / ||phi(x)||_2."""
    spectrum = _spectrum(degree_one=True)
    baseline = _binary(1, 11)
    explainer = FourierShap.from_spectrum(spectrum, baseline, relaxed=True)
    x = 1 - baseline.expand(6, -1).clone()  # every feature differs from the baseline: phi(x) != 0
    x[:, 0] = 0.3
    amplitudes = torch.zeros(N, dtype=torch.float64)
    amplitudes[spectrum.frequencies.float().argmax(1)] = spectrum.amplitudes
    torch.manual_seed(0)
    radius = 0.05
    sens = sensitivity_max(explainer.attribute, x, perturb_radius=radius, n_perturb_samples=8)
    phi = explainer.attribute(x)
    torch.testing.assert_close(phi, -2 * amplitudes * (x - baseline))
    bound = 2 * radius * amplitudes.norm() / phi.norm(dim=1)
    assert sens.shape == (6,)
    assert bool((sens > 0).all()) and bool((sens <= bound * (1 + 1e-9)).all())


def test_background_averaged_reports_nan_model_rows_and_takes_numpy_and_pandas():
    pd = pytest.importorskip("pandas")
    background = _binary(4, 12)
    assert background[:, 1].any() and not background[:, 1].all()  # row 0 below fails for some background rows
    z = torch.tensor([[1.0, -1e9, 0.0, 1.0, 0.0], [1.0, 1.0, -1e9, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0]]).double()

    def model(rows):  # NaN (0/0 or inf) wherever the second feature is 1
        return rows.sum(1) * 0 / (1 - rows[:, 1])

    first_bad = int((background[:, 1] == 1).nonzero()[0])
    with pytest.raises(
        ValueError, match=rf"input rows \[0, 1\] \(first: input row 0 filled from background row {first_bad}\)"
    ):
        background_averaged(model, background)(z)
    with tiny_memory_budget(64):  # one input row per chunk: the failing chunk's rows keep their place in the call
        with pytest.raises(ValueError, match=r"input rows \[1\] \(first: input row 1 filled from background row 0\)"):
            background_averaged(model, background)(z[[2, 1]])
    with settings.validation("shapes"):  # value scans off: the NaN average comes back, as asked
        assert torch.isnan(background_averaged(model, background)(z)[:2]).all()

    weights = torch.arange(1.0, N + 1, dtype=torch.float64)
    reference = background_averaged(lambda r: r @ weights, background)(z)
    for converted in (background.numpy(), pd.DataFrame(background.numpy()), background.tolist()):
        g = background_averaged(lambda r: r @ weights, converted)
        torch.testing.assert_close(g(z), reference)
        torch.testing.assert_close(g(z.numpy()), reference)
        assert torch.equal(g.baselines(z.numpy()), g.baselines(z))
    expanded = expand_to_inputs(weights.numpy(), z)
    assert torch.equal(expanded, weights.expand(3, N))

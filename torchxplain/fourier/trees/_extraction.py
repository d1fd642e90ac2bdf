"""``tree_spectrum``: the exact Fourier spectrum of a fitted tree ensemble, extracted under the memory budget.

Continuous features: every distinct split ``(feature, threshold, missing-value side)`` becomes one binary
feature ("goes right at this split"), so the ensemble is an exact function of the binary features and the
thresholds of one original feature form one player group (:class:`~torchxplain.fourier.TreeEncoding`). Shapley
values with those groups equal interventional TreeSHAP values per original feature.

The extraction also records what the value kernels would otherwise search for again: the support families of
the frequencies and each frequency's features, in one ``SupportFamilies``.

Memory: terms are generated in chunks and merged by key in a buffer sized to ``tx.settings.max_memory``
(:mod:`~torchxplain.fourier.trees._terms`); what can exceed the budget is only the result itself — the
``(k, n)`` bool frequencies, and the merged terms when there are more distinct ones than the buffer holds.
"""

from __future__ import annotations

from typing import Any, Literal, overload

import torch
from torch import Tensor

from torchxplain._core import check_float_dtype, chunk_bounds, parse_memory, rows_per_chunk, settings
from torchxplain.fourier.encoding import ThresholdEncoding
from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.trees._encoding import TreeEncoding, resolve_encoding
from torchxplain.fourier.trees._expansion import Expansion
from torchxplain.fourier.trees._families import assign_families
from torchxplain.fourier.trees._intervals import FeatureGroups
from torchxplain.fourier.trees._splits import binary_split_features, check_ensemble, encoded_split_features
from torchxplain.fourier.trees._terms import TermBuffer
from torchxplain.fourier.trees.adapters._base import TreeEnsemble
from torchxplain.fourier.trees.adapters._dispatch import parse_model
from torchxplain.fourier.values import MAX_FAMILY_SIZE, KeyLayout, SupportFamilies, from_cover, support_families

DEFAULT_MAX_TERMS = 50_000_000
EncodingArg = ThresholdEncoding | Literal["auto", "binary", "thresholds"] | None


@overload
def tree_spectrum(
    model: Any,
    target: int | None = ...,
    *,
    encoding: EncodingArg = ...,
    dtype: torch.dtype = ...,
    device: torch.device | str | None = ...,
    max_memory: int | str | None = ...,
    max_terms: int = ...,
    show_progress: bool | None = ...,
    return_families: Literal[False] = ...,
) -> FourierSpectrum: ...


@overload
def tree_spectrum(
    model: Any,
    target: int | None = ...,
    *,
    encoding: EncodingArg = ...,
    dtype: torch.dtype = ...,
    device: torch.device | str | None = ...,
    max_memory: int | str | None = ...,
    max_terms: int = ...,
    show_progress: bool | None = ...,
    return_families: Literal[True],
) -> tuple[FourierSpectrum, SupportFamilies]: ...


def tree_spectrum(
    model: Any,
    target: int | None = None,
    *,
    encoding: EncodingArg = "auto",
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
    max_memory: int | str | None = None,
    max_terms: int = DEFAULT_MAX_TERMS,
    show_progress: bool | None = None,
    return_families: bool = False,
) -> FourierSpectrum | tuple[FourierSpectrum, SupportFamilies]:
    """Exact Fourier spectrum of a fitted tree ensemble.

    The spectrum lives on the model's ``n_features`` inputs when every split separates 0 from 1 (binary
    inputs), else on the binary split features of ``TreeEncoding.from_model(model)``: evaluate it on
    ``encoding.transform(x)``. ``spectrum.evaluate`` then equals the explained output exactly.

    Outputs: regressors'
    ``predict``; scikit-learn tree/forest classifiers' ``predict_proba[:, c]``; boosted classifiers' raw score
    (log-odds when binary); ``target=None`` is the positive class of a binary classifier, and a multiclass
    model needs ``target=``. ``parse_model(model, target).output`` states the output and its scale.

    Args:
        model: scikit-learn ``DecisionTree*``/``ExtraTree*``/``RandomForest*``/``ExtraTrees*``/
            ``GradientBoosting*``/``HistGradientBoosting*``, XGBoost ``Booster``/``XGBModel``, LightGBM
            ``Booster``/``LGBMModel``, or CatBoost ``CatBoost*`` (float features).
        target: output/class index; ``None`` for single-output models and binary classifiers.
        encoding: ``"auto"`` (default; ``None`` is the same), ``"binary"`` (inputs in {0,1}),
            ``"thresholds"`` (``TreeEncoding.from_model(model)``) or a prebuilt
            :class:`~torchxplain.fourier.TreeEncoding`.
        dtype, device: of the returned amplitudes (extraction runs in float64 on ``device``; default CPU).
        max_memory: budget for the extraction's intermediates (default ``tx.settings.max_memory``).
        max_terms: refuse expansions above this many terms (they grow as ``4^depth`` per tree).
        show_progress: a progress bar over the expansion (default ``tx.settings.show_progress``).
        return_families: also return the support families of the frequencies (used by the value kernels).

    Returns:
        :class:`FourierSpectrum` with ``k`` distinct frequencies over ``n = n_features`` (or
        ``encoding.n_binary``), and its support families when ``return_families``.

    Raises:
        TypeError: unsupported model type (the message lists the supported ones and the black-box route).
        ValueError: multiclass model without ``target``, ``encoding="binary"`` on continuous splits, an
            encoding that does not match the model, or an expansion above ``max_terms``.

    Example:
        >>> import torch
        >>> import torchxplain as tx
        >>> from sklearn.tree import DecisionTreeRegressor
        >>> stump = DecisionTreeRegressor(max_depth=1).fit([[0.0], [1.0], [2.0]], [0.0, 0.0, 3.0])
        >>> spec = tx.tree_spectrum(stump)  # h(b) = 1.5 - 1.5 (-1)^b on the split feature b = [x > 1.5]
        >>> spec.frequencies.int().tolist(), spec.amplitudes.tolist()
        ([[0], [1]], [1.5, -1.5])
        >>> spec.evaluate(tx.fourier.TreeEncoding.from_model(stump).transform(torch.tensor([[0.5], [2.5]])))
        tensor([0., 3.], dtype=torch.float64)
    """
    ensemble = parse_model(model, target)
    spectrum, families = extract(
        ensemble,
        resolve_encoding(encoding, [ensemble], lambda: TreeEncoding.from_model(model)),
        dtype=dtype,
        device=device,
        max_memory=max_memory,
        max_terms=max_terms,
        show_progress=show_progress,
    )
    return (spectrum, families) if return_families else spectrum


def spectrum_of_ensemble(
    ensemble: TreeEnsemble,
    encoding: ThresholdEncoding | None = None,
    *,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
    max_memory: int | str | None = None,
    max_terms: int = DEFAULT_MAX_TERMS,
    show_progress: bool | None = None,
) -> FourierSpectrum:
    """:func:`tree_spectrum` of an already parsed ensemble (one element of ``parse_model_outputs``).

    ``encoding=None`` means binary inputs (every split must separate 0 from 1); otherwise the spectrum lives
    on ``encoding``'s binary features (an encoding of all outputs serves each of them).
    """
    return extract(
        ensemble,
        encoding,
        dtype=dtype,
        device=device,
        max_memory=max_memory,
        max_terms=max_terms,
        show_progress=show_progress,
    )[0]


def extract(
    ensemble: TreeEnsemble,
    encoding: ThresholdEncoding | None = None,
    *,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
    max_memory: int | str | None = None,
    max_terms: int = DEFAULT_MAX_TERMS,
    show_progress: bool | None = None,
) -> tuple[FourierSpectrum, SupportFamilies]:
    """:func:`spectrum_of_ensemble` and the :class:`SupportFamilies` of its frequencies (with their features).

    Returns:
        ``(spectrum, families)``.
    """
    check_ensemble(ensemble)
    if encoding is not None and not isinstance(encoding, ThresholdEncoding):
        raise TypeError(f"encoding must be a TreeEncoding or None, got {type(encoding).__name__}")
    check_float_dtype(dtype)
    if isinstance(max_terms, bool) or not isinstance(max_terms, int) or max_terms < 1:
        raise ValueError(f"max_terms must be a positive int (default {DEFAULT_MAX_TERMS:,}), got {max_terms!r}")
    with settings.using(max_memory=max_memory, show_progress=show_progress):
        return _extract(ensemble, encoding, dtype, device, max_terms)


def _extract(
    ensemble: TreeEnsemble,
    encoding: ThresholdEncoding | None,
    dtype: torch.dtype,
    device: torch.device | str | None,
    max_terms: int,
) -> tuple[FourierSpectrum, SupportFamilies]:
    dev = torch.device(device) if device is not None else torch.device("cpu")
    if encoding is None:
        split_feature, swap = binary_split_features(ensemble)
        n = ensemble.n_features
    else:
        split_feature, swap, n = encoded_split_features(ensemble, encoding), None, encoding.n_binary
    layout = KeyLayout.create(n, ensemble.max_depth)
    groups = None if encoding is None else FeatureGroups.from_encoding(encoding, dev)
    expansion = Expansion(ensemble, split_feature, swap, layout, dev, groups)
    if expansion.n_terms > max_terms:
        raise ValueError(
            f"{ensemble.description} expands to {expansion.n_terms} Fourier terms (trees of depth "
            f"{ensemble.max_depth}), above max_terms={max_terms}; limit the trees' depth (spectra grow as "
            "4^depth) or raise max_terms"
        )
    family_keys = assign_families(expansion)
    budget = parse_memory()
    row_bytes = 8 * layout.n_words + 24
    capacity = max(16, int(0.6 * budget) // (2 * row_bytes + 40))
    generate = max(4, min(capacity // 2, int(0.25 * budget) // (48 * layout.width + 96)))
    buffer = TermBuffer(layout.n_words, min(capacity, expansion.n_terms + 1), dev)
    for words, amp, scale, family in expansion.chunks(generate):
        buffer.add(words, amp, scale, family)
    words, amp, scale, family = buffer.result()
    keep = amp.abs() > 64 * torch.finfo(torch.float64).eps * scale
    words, amp, family = words[keep], amp[keep], family[keep]
    del buffer
    _check_output_fits(ensemble, len(amp), n, dev)
    features = layout.unpack(words)
    degrees = (features >= 0).sum(1)
    features = torch.where(features >= 0, features, n)[:, : int(degrees.max()) if degrees.numel() else 0]
    spectrum = FourierSpectrum(_dense(features, n), amp.to(dtype))
    if family_keys is not None:
        supports = layout.unpack(family_keys)
        cover = from_cover(supports, (supports >= 0).sum(1), family, degrees, features.contiguous())
    elif features.shape[1] <= MAX_FAMILY_SIZE:
        cover = support_families(spectrum.frequencies, (features.contiguous(), degrees))
    else:  # a frequency too wide for the tables: the dense kernel serves it, no cover is needed
        empty = features.new_zeros(0, 0)
        cover = SupportFamilies(empty, empty.new_zeros(0), torch.full_like(degrees, -1), features.contiguous())
    return spectrum, cover


def _check_output_fits(ensemble: TreeEnsemble, k: int, n: int, device: torch.device) -> None:
    """Refuse clearly, before allocating, when the spectrum could exhaust memory: the spectrum is the result, not a
    chunked intermediate (``max_memory`` bounds those), so its dense ``(k, n)`` frequencies — about three copies of
    them and of the per-term arrays once an explainer and its value plans hold it — are priced against half the
    free CPU memory, leaving the rest to the process and its neighbours."""
    try:
        import psutil  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - psutil is optional
        return
    need = 3 * k * (n + 64)
    free = psutil.virtual_memory().available
    if device.type == "cpu" and need > free // 2:
        raise MemoryError(
            f"{ensemble.description} has {k:,} distinct Fourier terms on {n:,} binary split features: its spectrum "
            f"and the explainer's copies need about {need / 2**30:.1f} GiB, more than half the {free / 2**30:.1f} "
            "GiB free. Explain it without a spectrum: FourierShap.from_trees(model, background) takes the leaf "
            "route for such models (route='leaves'; spectra grow as 2^depth per leaf); or use fewer or shallower trees"
        )


def _dense(features: Tensor, n: int) -> Tensor:
    """``(k, d)`` feature lists (padded with ``n``) -> ``(k, n)`` bool frequencies (contiguous), written in chunks."""
    out = torch.zeros(features.shape[0], n, dtype=torch.bool, device=features.device)
    flat = out.view(-1)
    step = rows_per_chunk(max(features.shape[1], 1) * 32, features.shape[0])
    for start, stop in chunk_bounds(features.shape[0], step):
        part = features[start:stop]
        rows = torch.arange(start, stop, device=features.device)[:, None] * n
        flat[(rows + part)[part < n]] = True
    return out

"""Exact Fourier spectra of tree ensembles (scikit-learn, XGBoost, LightGBM).

A tree on binary features is ``t(x) = (1+χ_i)/2 · t_left(x) + (1-χ_i)/2 · t_right(x)`` with
``χ_i = (-1)^{x_i}`` (``x_i = 1`` goes right). Expanding the product along every root-to-leaf path and
grouping terms by the deepest split they use gives, for each internal node ``u`` at depth ``k`` and each
subset ``A`` of its ``k`` ancestors,

    frequency  e_{i_u} ⊕ (⊕_{a∈A} e_{i_a}),    amplitude  (M(left u) - M(right u)) · Π_{a∈A} s_a,

where ``s_a = +1`` if the path to ``u`` leaves ``a`` to the left and ``-1`` otherwise, and
``M(w) = Σ_{leaves l under w} v_l 2^{-depth(l)}``; the constant term is ``Σ_trees M(root)``. This is the
recursion of the seed paper (Kushilevitz & Mansour) unrolled one depth at a time: every step is a batched
tensor operation over all nodes of that depth in all trees, and duplicate frequencies are merged at the end.
A tree of depth ``d`` yields at most ``Σ_{k<d} 2^k·2^k < 4^d/3`` terms.

Continuous features: every distinct split ``(feature, threshold, missing-value side)`` becomes one binary
feature ("goes right at this split"), so the ensemble is an exact function of the binary features and the
thresholds of one original feature form one player group (:class:`TreeEncoding`). Shapley values with those
groups equal interventional TreeSHAP values per original feature.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from torchxplain._core import as_tensor, check_matrix, chunk_bounds, parse_memory, rows_per_chunk
from torchxplain.fourier.adapters import TreeEnsemble, parse_model
from torchxplain.fourier.spectrum import FourierSpectrum

_BITS = 63  # bits used per int64 word of a packed frequency (the sign bit stays clear)
DEFAULT_MAX_TERMS = 50_000_000


class TreeEncoding:
    """The binary split features of a tree ensemble and the map from raw inputs to them.

    Binary feature ``b`` is 1 exactly when a sample goes right at every split keyed
    ``(feature[b], threshold[b], nan_right[b], zero_is_missing[b])``: ``x > threshold`` (``x >= threshold``
    for XGBoost's ``x < threshold`` splits) after casting ``x`` to the library's input precision; missing
    values (NaN, and zero where the library treats zero as missing) go right when ``nan_right``.

    Build it with :meth:`from_model`; pass it to :func:`tree_spectrum` (``encoding=``), encode inputs with
    :meth:`transform`, and use :attr:`groups` as the player groups of the Shapley values, so that values come
    per original feature. An encoding built from one model may serve another that splits on a subset of its
    splits (e.g. the per-class trees of one classifier).

    Attributes:
        feature: ``(n_binary,)`` int64 original feature of each binary feature (= :attr:`groups`).
        threshold: ``(n_binary,)`` float64 thresholds, in the units of the inputs.
        nan_right: ``(n_binary,)`` bool, where missing values go.
        zero_is_missing: ``(n_binary,)`` bool, whether zero counts as missing (LightGBM ``missing_type``
            ``'Zero'``).
        strict: ``True`` when the split sends ``x >= threshold`` right (XGBoost).
        input_dtype: the precision inputs are cast to before comparing (float32 or float64).
        n_features: number of original input features.
    """

    def __init__(
        self,
        feature: Tensor,
        threshold: Tensor,
        nan_right: Tensor,
        zero_is_missing: Tensor,
        strict: bool,
        input_dtype: torch.dtype,
        n_features: int,
    ) -> None:
        self.feature = feature.long()
        self.threshold = threshold.double()
        self.nan_right = nan_right.bool()
        self.zero_is_missing = zero_is_missing.bool()
        self.strict = bool(strict)
        self.input_dtype = input_dtype
        self.n_features = int(n_features)

    @classmethod
    def from_model(cls, model: Any, target: int | None = None) -> TreeEncoding:
        """One binary feature per distinct split of ``model`` (for output ``target``), sorted by feature
        and threshold. Raises like :func:`tree_spectrum` for unsupported models or a missing ``target``."""
        return cls.from_ensemble(parse_model(model, target))

    @classmethod
    def from_ensemble(cls, ensemble: TreeEnsemble) -> TreeEncoding:
        """One binary feature per distinct split of a parsed :class:`TreeEnsemble`."""
        keys = np.unique(_split_keys(ensemble)[~ensemble.is_leaf], axis=0)
        return cls(
            feature=torch.from_numpy(keys[:, 0].astype(np.int64)),
            threshold=torch.from_numpy(keys[:, 1].copy()),
            nan_right=torch.from_numpy(keys[:, 2] > 0),
            zero_is_missing=torch.from_numpy(keys[:, 3] > 0),
            strict=ensemble.strict,
            input_dtype=torch.float32 if ensemble.input_dtype == np.float32 else torch.float64,
            n_features=ensemble.n_features,
        )

    @property
    def n_binary(self) -> int:
        """Number of binary split features (the spectrum's ``n``)."""
        return int(self.feature.shape[0])

    @property
    def groups(self) -> Tensor:
        """``(n_binary,)`` int64 player id of each binary feature: its original feature index."""
        return self.feature

    def transform(self, x: Tensor, max_memory: int | str | None = None) -> Tensor:
        """Encode raw inputs as binary split features.

        Args:
            x: ``(N, n_features)`` real tensor; NaN marks a missing value.
            max_memory: budget for the ``(N, n_binary)`` intermediates.

        Returns:
            ``(N, n_binary)`` tensor of 0/1 in ``x``'s floating dtype (float32 for integer inputs), on its
            device.
        """
        x = check_matrix(as_tensor(x, "x"), "x", self.n_features, allow_empty=True)
        out_dtype = x.dtype if x.is_floating_point() else torch.float32
        feature = self.feature.to(x.device)
        threshold = self.threshold.to(x.device)
        nan_right = self.nan_right.to(x.device)
        zero_missing = self.zero_is_missing.to(x.device)
        step = rows_per_chunk(self.n_binary * 24, x.shape[0], max_memory)
        parts = []
        for start, stop in chunk_bounds(x.shape[0], step):
            v = x[start:stop].to(self.input_dtype).double()[:, feature]
            right = v >= threshold if self.strict else v > threshold
            missing = torch.isnan(v) | (zero_missing & (v.abs() <= 1e-35))
            parts.append(torch.where(missing, nan_right, right).to(out_dtype))
        return torch.cat(parts) if parts else x.new_zeros((0, self.n_binary), dtype=out_dtype)

    def __repr__(self) -> str:
        return f"TreeEncoding(n_features={self.n_features}, n_binary={self.n_binary}, strict={self.strict})"


def _split_keys(ensemble: TreeEnsemble) -> np.ndarray:
    """``(N, 4)`` float64 rows ``(feature, threshold, nan_right, zero_is_missing)`` identifying each split."""
    columns = (ensemble.feature, ensemble.threshold, ensemble.nan_right, ensemble.zero_is_missing)
    return np.stack([c.astype(np.float64) for c in columns], axis=1)


def _binary_sides(ensemble: TreeEnsemble) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(internal nodes, 0 goes right, 1 goes right)`` for every internal node."""
    internal = np.flatnonzero(~ensemble.is_leaf)
    return (
        internal,
        ensemble.goes_right(np.zeros(len(internal)), internal),
        ensemble.goes_right(np.ones(len(internal)), internal),
    )


def splits_binary_inputs(ensemble: TreeEnsemble) -> bool:
    """Whether every split of the ensemble separates input value 0 from 1."""
    _, zero_right, one_right = _binary_sides(ensemble)
    return bool((zero_right != one_right).all())


def _binary_split_features(ensemble: TreeEnsemble) -> tuple[np.ndarray, np.ndarray]:
    """Map every internal node to its input feature for inputs in {0, 1}.

    Returns ``(node_feature (N,), swap (N,))``: ``swap`` marks splits that send 0 right and 1 left.

    Raises:
        ValueError: a split sends 0 and 1 the same way, so it is not a split on a binary feature.
    """
    internal, zero_right, one_right = _binary_sides(ensemble)
    constant = zero_right == one_right
    if constant.any():
        node = internal[np.flatnonzero(constant)[0]]
        raise ValueError(
            f"{ensemble.description} splits feature {ensemble.feature[node]} at threshold "
            f"{ensemble.threshold[node]:.6g}, which sends both 0 and 1 the same way, so the model is not a "
            "function of binary inputs; pass encoding=TreeEncoding.from_model(model) for continuous inputs"
        )
    node_feature = ensemble.feature.copy()
    swap = np.zeros(len(node_feature), dtype=bool)
    swap[internal] = zero_right
    return node_feature, swap


def _encoded_split_features(ensemble: TreeEnsemble, encoding: TreeEncoding) -> np.ndarray:
    """Map every internal node to the index of its split in ``encoding`` (``-1`` at leaves)."""
    if encoding.n_features != ensemble.n_features:
        raise ValueError(
            f"encoding has {encoding.n_features} features but {ensemble.description} expects "
            f"{ensemble.n_features}; build it with TreeEncoding.from_model(model)"
        )
    if encoding.strict != ensemble.strict:
        raise ValueError("encoding was built for a library with different split semantics (< versus <=)")
    table = np.stack(
        [
            encoding.feature.numpy().astype(np.float64),
            encoding.threshold.numpy(),
            encoding.nan_right.numpy().astype(np.float64),
            encoding.zero_is_missing.numpy().astype(np.float64),
        ],
        axis=1,
    )
    internal = np.flatnonzero(~ensemble.is_leaf)
    keys = _split_keys(ensemble)[internal]
    both, inverse = np.unique(np.concatenate([table, keys]), axis=0, return_inverse=True)
    position = np.full(len(both), -1, dtype=np.int64)
    position[inverse[: len(table)]] = np.arange(len(table))
    found = position[inverse[len(table) :]]
    if (found < 0).any():
        node = internal[np.flatnonzero(found < 0)[0]]
        raise ValueError(
            f"{ensemble.description} splits feature {ensemble.feature[node]} at "
            f"{ensemble.threshold[node]:.6g}, a split the encoding does not have; build it from this model"
        )
    node_feature = np.full(len(ensemble.left), -1, dtype=np.int64)
    node_feature[internal] = found
    return node_feature


def _pack(features: Tensor, n_words: int) -> Tensor:
    """``(r,)`` feature indices -> ``(r, n_words)`` int64 words with that one bit set."""
    words = torch.zeros(features.shape[0], n_words, dtype=torch.int64, device=features.device)
    bit = torch.bitwise_left_shift(torch.ones_like(features), features % _BITS)
    return words.scatter_(1, (features // _BITS)[:, None], bit[:, None])


def _unpack(words: Tensor, n: int) -> Tensor:
    """``(k, n_words)`` int64 -> ``(k, n)`` bool frequencies."""
    shifts = torch.arange(_BITS, device=words.device)
    bits = torch.bitwise_and(torch.bitwise_right_shift(words[:, :, None], shifts), 1)
    return bits.reshape(words.shape[0], -1)[:, :n].bool()


def _coalesce(words: Tensor, amp: Tensor, scale: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Merge duplicate packed frequencies, summing amplitudes and their absolute contributions."""
    # Dense row ids one word at a time with 1-D sorts (torch.unique(dim=0) is far slower on CPU).
    inverse = torch.zeros(words.shape[0], dtype=torch.int64, device=words.device)
    for j in range(words.shape[1]):
        _, rank = torch.unique(words[:, j], return_inverse=True)
        _, inverse = torch.unique(inverse * (int(rank.max()) + 1) + rank, return_inverse=True)
    size = int(inverse.max()) + 1
    uniq = words.new_zeros(size, words.shape[1]).index_copy_(0, inverse, words)  # duplicates are equal rows
    merged_amp = amp.new_zeros(size).index_add_(0, inverse, amp)
    merged_scale = scale.new_zeros(size).index_add_(0, inverse, scale)
    return uniq, merged_amp, merged_scale


def ensemble_spectrum(
    ensemble: TreeEnsemble,
    node_feature: np.ndarray,
    n: int,
    *,
    swap: np.ndarray | None = None,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
    max_memory: int | str | None = None,
    max_terms: int = DEFAULT_MAX_TERMS,
) -> FourierSpectrum:
    """Exact spectrum of a parsed ensemble whose internal node ``i`` splits on binary ``node_feature[i]``.

    Args:
        ensemble: the parsed trees (leaf values already weighted) and the constant offset.
        node_feature: ``(N,)`` binary feature index of each internal node (ignored at leaves).
        n: number of binary features of the spectrum.
        swap: ``(N,)`` bool, nodes where feature value 1 goes left.
        dtype, device: of the returned amplitudes (the computation runs in float64 on ``device``).
        max_memory: budget for the packed terms held before merging duplicates.
        max_terms: refuse ensembles whose expansion has more terms than this (deep trees grow as ``4^depth``).

    Returns:
        The coalesced spectrum, without frequencies whose merged amplitude is zero up to rounding.
    """
    dev = torch.device(device) if device is not None else torch.device("cpu")
    left = torch.from_numpy(ensemble.left).to(dev)
    right = torch.from_numpy(ensemble.right).to(dev)
    if swap is not None:
        flip = torch.from_numpy(swap).to(dev)
        left, right = torch.where(flip, right, left), torch.where(flip, left, right)
    feat = torch.from_numpy(np.where(ensemble.left >= 0, node_feature, 0).astype(np.int64)).to(dev)
    value = torch.from_numpy(ensemble.value).to(dev)
    n_words = max(1, -(-n // _BITS))

    # Walk down one depth at a time: nodes, ancestor split features and the side taken at each ancestor.
    levels: list[tuple[Tensor, Tensor, Tensor]] = []
    nodes = torch.from_numpy(ensemble.roots).to(dev)
    path_feat = torch.zeros(len(nodes), 0, dtype=torch.int64, device=dev)
    path_sign = torch.zeros(len(nodes), 0, dtype=torch.float64, device=dev)
    depth = torch.zeros(len(ensemble.left), dtype=torch.int64, device=dev)
    while len(nodes):
        depth[nodes] = len(levels)
        internal = left[nodes] >= 0
        nodes, path_feat, path_sign = nodes[internal], path_feat[internal], path_sign[internal]
        levels.append((nodes, path_feat, path_sign))
        step_feat = torch.cat([path_feat, feat[nodes, None]], dim=1)
        ones = torch.ones(len(nodes), 1, dtype=torch.float64, device=dev)
        nodes = torch.cat([left[nodes], right[nodes]])
        path_feat = torch.cat([step_feat, step_feat])
        path_sign = torch.cat([torch.cat([path_sign, ones], 1), torch.cat([path_sign, -ones], 1)])

    n_terms = sum(len(u) * 2**k for k, (u, _, _) in enumerate(levels))
    if n_terms > max_terms:
        raise ValueError(
            f"{ensemble.description} expands to {n_terms} Fourier terms (trees of depth {len(levels)}), "
            f"above max_terms={max_terms}; limit the trees' depth (spectra grow as 4^depth) or raise it"
        )

    # M(w): the leaf values under w, each weighted by 2^-depth; filled bottom-up.
    mass = torch.where(left < 0, value * torch.pow(2.0, -depth.double()), torch.zeros_like(value))
    for u, _, _ in reversed(levels):
        mass[u] = mass[left[u]] + mass[right[u]]

    root_mass = mass[torch.from_numpy(ensemble.roots).to(dev)].sum() + ensemble.offset
    words = torch.zeros(1, n_words, dtype=torch.int64, device=dev)
    amp = root_mass.reshape(1)
    scale = amp.abs()
    held: list[tuple[Tensor, Tensor, Tensor]] = [(words, amp, scale)]
    held_rows = 1
    budget_rows = max(1, parse_memory(max_memory) // (8 * n_words + 16) // 4)
    for k, (u, pf, ps) in enumerate(levels):
        step = rows_per_chunk((8 * n_words + 16) * 2**k * 3, len(u), max_memory)
        for start, stop in chunk_bounds(len(u), step):
            nodes_c = u[start:stop]
            w = _pack(feat[nodes_c], n_words)[:, None, :]
            a = (mass[left[nodes_c]] - mass[right[nodes_c]])[:, None]
            for j in range(k):  # each ancestor doubles the subsets: without it, and with it (sign s_j)
                w = torch.cat([w, w ^ _pack(pf[start:stop, j], n_words)[:, None, :]], dim=1)
                a = torch.cat([a, a * ps[start:stop, j, None]], dim=1)
            held.append((w.reshape(-1, n_words), a.reshape(-1), a.reshape(-1).abs()))
            held_rows += a.numel()
            if held_rows > budget_rows:
                held = [_coalesce(*(torch.cat(part) for part in zip(*held)))]
                held_rows = held[0][1].numel()
                budget_rows = max(budget_rows, 2 * held_rows)  # many distinct terms: merge less often
    words, amp, scale = _coalesce(*(torch.cat(part) for part in zip(*held)))
    keep = amp.abs() > 64 * torch.finfo(torch.float64).eps * scale
    return FourierSpectrum(_unpack(words[keep], n), amp[keep].to(dtype))


def tree_spectrum(
    model: Any,
    target: int | None = None,
    *,
    encoding: TreeEncoding | None = None,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
    max_memory: int | str | None = None,
    max_terms: int = DEFAULT_MAX_TERMS,
) -> FourierSpectrum:
    """Exact Fourier spectrum of a fitted tree ensemble.

    Without ``encoding`` the model must be a function of binary inputs (every split separates 0 from 1) and
    the spectrum lives on the model's ``n_features`` inputs. With a :class:`TreeEncoding` it lives on the
    encoding's binary split features; evaluate it on ``encoding.transform(x)``.

    Outputs explained: regressors' prediction; scikit-learn forest/tree classifiers'
    ``predict_proba[:, target]``; gradient-boosting classifiers' raw score (scikit-learn
    ``decision_function``, XGBoost margin, LightGBM raw score; ``target`` picks the class of a multiclass
    model). Leaf weights, learning rates, averaging and base scores are included, so ``spectrum.evaluate(x)``
    equals that output.

    Args:
        model: scikit-learn ``DecisionTree*``/``ExtraTree*``/``RandomForest*``/``ExtraTrees*``/
            ``GradientBoosting*``, XGBoost ``Booster``/``XGBModel``, or LightGBM ``Booster``/``LGBMModel``.
        target: output index (required for multi-output models).
        encoding: binary split features for continuous inputs (see :class:`TreeEncoding`).
        dtype, device: of the returned spectrum's amplitudes (computed in float64).
        max_memory: memory budget for the expansion (bytes or e.g. ``"1GB"``).
        max_terms: refuse expansions larger than this many terms (they grow as ``4^depth`` per tree).

    Returns:
        :class:`FourierSpectrum` with ``k`` distinct frequencies over ``n = n_features`` (or
        ``encoding.n_binary``).

    Raises:
        TypeError: unsupported model type (the message lists the supported ones).
        ValueError: multi-output model without ``target``, a split that is not binary without an encoding,
            an encoding that does not match the model, or an expansion above ``max_terms``.
    """
    if encoding is not None and not isinstance(encoding, TreeEncoding):
        raise TypeError(f"encoding must be a TreeEncoding or None, got {type(encoding).__name__}")
    return spectrum_of_ensemble(
        parse_model(model, target), encoding, dtype=dtype, device=device, max_memory=max_memory, max_terms=max_terms
    )


def spectrum_of_ensemble(
    ensemble: TreeEnsemble, encoding: TreeEncoding | None = None, **options: Any
) -> FourierSpectrum:
    """:func:`tree_spectrum` of an already parsed ensemble (``options`` as :func:`ensemble_spectrum`)."""
    if encoding is None:
        node_feature, swap = _binary_split_features(ensemble)
        return ensemble_spectrum(ensemble, node_feature, ensemble.n_features, swap=swap, **options)
    return ensemble_spectrum(ensemble, _encoded_split_features(ensemble, encoding), encoding.n_binary, **options)

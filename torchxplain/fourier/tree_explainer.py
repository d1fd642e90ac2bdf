"""``FourierShap.from_trees``: exact interventional SHAP of tree ensembles from their Fourier spectrum.

Example::

    import torch, torchxplain as tx
    from sklearn.datasets import load_diabetes
    from sklearn.ensemble import RandomForestRegressor

    x, y = load_diabetes(return_X_y=True)
    model = RandomForestRegressor(n_estimators=20, max_depth=5).fit(x, y)
    explainer = tx.FourierShap.from_trees(model, torch.tensor(x[:100]))   # continuous: thresholds grouped
    phi = explainer.attribute(torch.tensor(x[100:110]))                   # (10, 10) per original feature
    pairs = explainer.interactions(torch.tensor(x[100:110]))              # (10, 10, 10)
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from torchxplain._core import as_tensor, check_binary, check_matrix
from torchxplain.fourier.adapters import parse_model
from torchxplain.fourier.explainers import FourierShap
from torchxplain.fourier.pruning import prune_tree_spectrum
from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.trees import TreeEncoding, spectrum_of_ensemble, splits_binary_inputs
from torchxplain.fourier.values import banzhaf_values, shapley_interactions, shapley_values

ENCODINGS = ("auto", "binary", "thresholds")


class TreeFourierShap(FourierShap):
    """FourierSHAP of a tree ensemble on continuous inputs, explained per original feature.

    Inputs are encoded into the ensemble's binary split features (:class:`TreeEncoding`); the players are
    the original features (or the groups of ``feature_groups``), each owning all of its thresholds, so the
    values equal interventional TreeSHAP's. Built by :meth:`FourierShap.from_trees`; ``forward_func`` is the
    exact model output on raw inputs (``predict``).

    Args:
        spectrum: exact (or pruned) spectrum on ``encoding.n_binary`` features.
        encoding: the split features.
        background: ``(B, p)`` raw background rows.
        feature_groups: optional ``(p,)`` integer player id per original feature.
        target: the model output the spectrum was built for (``attribute(target=...)`` must match).
        max_memory: budget for chunked intermediates.
    """

    def __init__(
        self,
        spectrum: FourierSpectrum,
        encoding: TreeEncoding,
        background: Tensor,
        feature_groups: Tensor | None = None,
        target: int | None = None,
        max_memory: int | str | None = None,
    ) -> None:
        background = check_matrix(as_tensor(background, "background"), "background", encoding.n_features)
        if not background.is_floating_point():
            background = background.to(spectrum.dtype)
        players = self._original_players(feature_groups, encoding.n_features, background.device)
        # Renumber to the players that own at least one split; the others get a zero value.
        used, binary_groups = torch.unique(players[encoding.feature.to(players.device)], return_inverse=True)
        slot = torch.full((int(players.max()) + 1,), len(used), dtype=torch.long, device=players.device)
        slot[used] = torch.arange(len(used), device=players.device)
        super().__init__(
            None,
            encoding.transform(background, max_memory),
            groups=binary_groups,
            spectrum=spectrum,
            max_memory=max_memory,
        )
        self.encoding = encoding
        self.target = target
        self.register_buffer("feature_slot", slot[players])
        self.__dict__["forward_func"] = self.predict
        self.owns_forward_func = True

    @staticmethod
    def _original_players(feature_groups: Tensor | None, n_features: int, device: torch.device) -> Tensor:
        if feature_groups is None:
            return torch.arange(n_features, device=device)
        groups = as_tensor(feature_groups, "feature_groups")
        if groups.is_floating_point() or groups.dtype == torch.bool or groups.shape != (n_features,):
            raise ValueError(
                f"feature_groups must be an integer tensor of shape ({n_features},) (one player id per original "
                f"feature), got dtype {groups.dtype} and shape {tuple(groups.shape)}"
            )
        if n_features and int(groups.min()) < 0:
            raise ValueError(f"feature_groups must hold non-negative ids, found {int(groups.min())}")
        return groups.long().to(device)

    @property
    def n_features(self) -> int:
        """Number of original (raw) input features."""
        return self.encoding.n_features

    def predict(self, inputs: Tensor) -> Tensor:
        """The explained model output on raw inputs ``(B, p)`` -> ``(B,)`` (exact for an unpruned spectrum)."""
        x = check_matrix(as_tensor(inputs, "inputs"), "inputs", self.n_features)
        dtype = self.background.dtype
        return self.spectrum.evaluate(self.encoding.transform(x, self.max_memory).to(dtype), self.max_memory)

    # --- the three kinds of values, on encoded inputs, mapped back to the original features ----------
    def _encode(
        self, inputs: tuple[Tensor, ...], feature_mask: tuple[Tensor, ...] | None
    ) -> tuple[Tensor, Tensor, Tensor, list[torch.Size]]:
        shapes = [t.shape for t in inputs]
        if len({t.shape[0] for t in inputs}) != 1 or any(t.ndim < 2 for t in inputs):
            raise ValueError(
                f"inputs must be tensors (Q, ...) with the same Q, got shapes {[tuple(s) for s in shapes]}"
            )
        x = torch.cat([t.reshape(t.shape[0], -1) for t in inputs], dim=1)
        check_matrix(x, "inputs", self.n_features)
        if x.device != self.background.device:
            raise ValueError(
                f"inputs are on {x.device} but the explainer is on {self.background.device}; call .to(device)"
            )
        xb = self.encoding.transform(x, self.max_memory).to(self.background.dtype)
        if feature_mask is None:
            return xb, self.groups, self.feature_slot, shapes
        flat = []
        for mask, shape in zip(feature_mask, shapes):
            full = torch.broadcast_to(mask, shape).reshape(shape[0], -1)
            if not bool((full == full[:1]).all()):
                raise ValueError("feature_mask must be the same for every row (one grouping of players per call)")
            flat.append(full[0])
        players = torch.unique(torch.cat(flat), return_inverse=True)[1].to(x.device)
        used, groups = torch.unique(players[self.encoding.feature.to(x.device)], return_inverse=True)
        slot = torch.full((int(players.max()) + 1,), len(used), dtype=torch.long, device=x.device)
        slot[used] = torch.arange(len(used), device=x.device)
        return xb, groups, slot[players], shapes

    def _background_term(self, baselines: Any) -> Tensor:
        if baselines is None:
            return self.background
        if not isinstance(baselines, Tensor):
            raise TypeError("baselines must be None or a (B, p) tensor of raw background rows")
        check_matrix(baselines, "baselines", self.n_features)
        return self.encoding.transform(baselines, self.max_memory).to(self.background.dtype)

    @staticmethod
    def _per_feature(values: Tensor, slot: Tensor) -> Tensor:
        """``(Q, m_used)`` player values -> ``(Q, p)``: each feature gets its player's value (0 if no split)."""
        return torch.cat([values, values.new_zeros(values.shape[0], 1)], dim=1)[:, slot]

    def _attribute(
        self,
        inputs: tuple[Tensor, ...],
        *,
        baselines: Any,
        target: Any,
        additional_forward_args: Any,
        feature_mask: tuple[Tensor, ...] | None,
        show_progress: bool,
        **kwargs: Any,
    ) -> tuple[Tensor, ...]:
        if kwargs:
            raise TypeError(f"FourierShap.attribute got unexpected arguments {sorted(kwargs)}")
        if additional_forward_args is not None:
            raise ValueError("FourierShap explains the tree spectrum; additional_forward_args are not used")
        self._check_target(target)
        xb, groups, slot, shapes = self._encode(inputs, feature_mask)
        phi = shapley_values(
            self.spectrum, xb, self._background_term(baselines), groups=groups, max_memory=self.max_memory
        )
        return self._unflatten(self._per_feature(phi, slot), inputs, shapes)

    def banzhaf(
        self,
        inputs: Tensor | tuple[Tensor, ...],
        feature_mask: Tensor | tuple[Tensor, ...] | None = None,
        baselines: Tensor | None = None,
    ) -> Tensor | tuple[Tensor, ...]:
        """Interventional Banzhaf values, shaped like ``inputs`` (each feature gets its player's value)."""
        inputs_t = inputs if isinstance(inputs, tuple) else (inputs,)
        mask = feature_mask if feature_mask is None or isinstance(feature_mask, tuple) else (feature_mask,)
        xb, groups, slot, shapes = self._encode(inputs_t, mask)
        beta = banzhaf_values(
            self.spectrum, xb, self._background_term(baselines), groups=groups, max_memory=self.max_memory
        )
        out = self._unflatten(self._per_feature(beta, slot), inputs_t, shapes)
        return out if isinstance(inputs, tuple) else out[0]

    def interactions(
        self,
        inputs: Tensor | tuple[Tensor, ...],
        feature_mask: Tensor | tuple[Tensor, ...] | None = None,
        baselines: Tensor | None = None,
    ) -> Tensor:
        """Pairwise Shapley interaction index between original features.

        Returns:
            ``(Q, p, p)``: entry ``[q, i, j]`` is the interaction of the players owning features ``i`` and ``j``
            (zero on the diagonal, within a player, and for features the trees never split on).
        """
        inputs_t = inputs if isinstance(inputs, tuple) else (inputs,)
        mask = feature_mask if feature_mask is None or isinstance(feature_mask, tuple) else (feature_mask,)
        xb, groups, slot, _ = self._encode(inputs_t, mask)
        phi = shapley_interactions(
            self.spectrum, xb, self._background_term(baselines), groups=groups, max_memory=self.max_memory
        )
        padded = torch.nn.functional.pad(phi, (0, 1, 0, 1))
        return padded[:, slot][:, :, slot]


def from_trees(
    cls: type[FourierShap],
    model: Any,
    background: Tensor,
    target: int | None = None,
    *,
    encoding: str | TreeEncoding = "auto",
    feature_groups: Tensor | None = None,
    energy: float | None = None,
    threshold: float | None = None,
    relaxed: bool = False,
    max_memory: int | str | None = None,
) -> FourierShap:
    """Build a :class:`FourierShap` on the exact spectrum of a tree ensemble (``FourierShap.from_trees``).

    Args:
        cls: the explainer class (binary inputs build ``cls.from_spectrum``).
        model: a fitted scikit-learn, XGBoost or LightGBM tree model (see :func:`tree_spectrum`).
        background: ``(B, p)`` background rows (the interventional reference), binary or raw.
        target: output index for multi-output models (class of a classifier).
        encoding: ``"binary"`` (inputs in {0,1}; players are the inputs or ``feature_groups``),
            ``"thresholds"`` (continuous inputs; every split becomes a binary feature and the players are the
            original features), a prebuilt :class:`TreeEncoding`, or ``"auto"`` (binary when the background is
            0/1 and every split separates 0 from 1).
        feature_groups: optional ``(p,)`` integer player id per input feature (e.g. one-hot blocks).
        energy, threshold: prune the non-constant spectrum (``energy=0.9995`` is the paper's setting); the
            explainer's ``pruning`` attribute is a :class:`PruningReport` (``None`` without pruning).
        relaxed: binary encoding only: accept real-valued queries on the multilinear extension.
        max_memory: budget for chunked intermediates.

    Returns:
        A ``FourierShap`` (binary) or :class:`TreeFourierShap` (continuous) whose ``attribute`` gives the
        interventional SHAP values of the model output in the background's float dtype (float32 for
        integer backgrounds).
    """
    background = check_matrix(as_tensor(background, "background"), "background")
    dtype = background.dtype if background.is_floating_point() else torch.get_default_dtype()
    if isinstance(encoding, str) and encoding not in ENCODINGS:
        raise ValueError(f"encoding must be one of {ENCODINGS} or a TreeEncoding, got {encoding!r}")
    if not isinstance(encoding, (str, TreeEncoding)):
        raise TypeError(f"encoding must be a string or a TreeEncoding, got {type(encoding).__name__}")
    ensemble = parse_model(model, target)
    if background.shape[1] != ensemble.n_features:
        raise ValueError(
            f"background has {background.shape[1]} features, but {ensemble.description} expects {ensemble.n_features}"
        )
    if encoding == "auto":
        binary = bool(((background == 0) | (background == 1)).all()) and splits_binary_inputs(ensemble)
        encoding = "binary" if binary else "thresholds"
    if encoding == "thresholds":
        encoding = TreeEncoding.from_ensemble(ensemble)
    tree_encoding = encoding if isinstance(encoding, TreeEncoding) else None
    spectrum = spectrum_of_ensemble(
        ensemble, tree_encoding, dtype=torch.float64, device=background.device, max_memory=max_memory
    )
    if tree_encoding is not None:
        bin_background = tree_encoding.transform(background.to(torch.float64), max_memory)
    else:
        check_binary(background, "background")
        bin_background = background
    report = None
    if energy is not None or threshold is not None:
        spectrum, report = prune_tree_spectrum(spectrum, bin_background, energy=energy, threshold=threshold)
    spectrum = spectrum.to(dtype)
    if tree_encoding is not None:
        if relaxed:
            raise ValueError("relaxed=True applies to binary inputs; continuous inputs are explained exactly")
        explainer: FourierShap = TreeFourierShap(
            spectrum, tree_encoding, background.to(dtype), feature_groups, target=target, max_memory=max_memory
        )
    else:
        groups = None
        if feature_groups is not None:
            groups = torch.unique(
                as_tensor(feature_groups, "feature_groups").to(background.device), return_inverse=True
            )[1]
        explainer = cls.from_spectrum(
            spectrum, bin_background.to(dtype), groups=groups, relaxed=relaxed, max_memory=max_memory
        )
        explainer.target = target
    explainer.pruning = report
    return explainer

"""Map every split of a parsed ensemble to the binary feature it tests (binary inputs, or an encoding)."""

from __future__ import annotations

import numpy as np

from torchxplain.fourier.encoding import ThresholdEncoding
from torchxplain.fourier.trees.adapters._base import TreeEnsemble


def _binary_sides(ensemble: TreeEnsemble) -> tuple[np.ndarray, np.ndarray]:
    """``(0 goes right, 1 goes right)`` at every split of :meth:`TreeEnsemble.split_table`."""
    splits = np.arange(len(ensemble.split_table()))
    return ensemble.goes_right(np.zeros(len(splits)), splits), ensemble.goes_right(np.ones(len(splits)), splits)


def check_ensemble(ensemble: object) -> TreeEnsemble:
    """``ensemble`` if it is a parsed :class:`TreeEnsemble`.

    Raises:
        TypeError: anything else (a fitted model, or the list :func:`parse_model_outputs` returns).
    """
    if not isinstance(ensemble, TreeEnsemble):
        raise TypeError(
            f"ensemble must be a parsed TreeEnsemble, got {type(ensemble).__name__}; pass "
            "tx.fourier.parse_model(model, target=...), or call "
            "tree_spectrum(model) on the fitted model"
        )
    return ensemble


def splits_binary_inputs(ensemble: TreeEnsemble) -> bool:
    """Whether every split of the ensemble separates input value 0 from 1."""
    check_ensemble(ensemble)
    zero_right, one_right = _binary_sides(ensemble)
    return bool((zero_right != one_right).all())


def binary_split_features(ensemble: TreeEnsemble) -> tuple[np.ndarray, np.ndarray]:
    """The input feature of every split for inputs in {0, 1}.

    Returns:
        ``(feature (S,), swap (S,))`` over the rows of :meth:`TreeEnsemble.split_table`; ``swap`` marks splits
        that send 0 right and 1 left.

    Raises:
        ValueError: a split sends 0 and 1 the same way, so the model is not a function of binary inputs.
    """
    table = ensemble.split_table()
    zero_right, one_right = _binary_sides(ensemble)
    constant = np.flatnonzero(zero_right == one_right)
    if len(constant):
        feature, threshold = int(table[constant[0], 0]), table[constant[0], 1]
        raise ValueError(
            f"{ensemble.description} splits feature {feature} at threshold {threshold:.6g}, which sends both 0 "
            "and 1 the same way, so the model is not a function of binary inputs; use encoding='thresholds' "
            "(or TreeEncoding.from_model(model)) for continuous inputs"
        )
    return table[:, 0].astype(np.int64), zero_right.astype(bool)


def encoded_split_features(ensemble: TreeEnsemble, encoding: ThresholdEncoding) -> np.ndarray:
    """The index in ``encoding`` of every split (rows of :meth:`TreeEnsemble.split_table`).

    Raises:
        ValueError: the encoding was built for another feature count or split semantics, or lacks a split.
    """
    if encoding.n_features != ensemble.n_features:
        raise ValueError(
            f"encoding has {encoding.n_features} features but {ensemble.description} expects "
            f"{ensemble.n_features}; build it with TreeEncoding.from_model(model)"
        )
    if encoding.strict != ensemble.strict:
        raise ValueError(
            "encoding was built for a library with different split semantics (x < t versus x <= t); build it "
            "with TreeEncoding.from_model(model)"
        )
    table = encoding.split_table()
    keys = ensemble.split_table()
    both, inverse = np.unique(np.concatenate([table, keys]), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    position = np.full(len(both), -1, dtype=np.int64)
    position[inverse[: len(table)]] = np.arange(len(table))
    found = position[inverse[len(table) :]]
    if (found < 0).any():
        row = keys[np.flatnonzero(found < 0)[0]]
        raise ValueError(
            f"{ensemble.description} splits feature {int(row[0])} at {row[1]:.6g}, a split the encoding does "
            "not have; build the encoding from this model (TreeEncoding.from_model(model))"
        )
    return found

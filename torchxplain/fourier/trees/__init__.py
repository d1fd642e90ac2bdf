"""Exact Fourier spectra of tree ensembles (scikit-learn, XGBoost, LightGBM, CatBoost).

:func:`~torchxplain.tree_spectrum` (``_extraction``) reads a fitted model through ``adapters/``, maps its splits to
binary features (``_splits``: the inputs themselves, or a :class:`~torchxplain.fourier.TreeEncoding` of thresholds,
``_encoding``, for continuous inputs; leaf slots in ``_intervals``), expands every tree exactly (``_expansion``),
merges duplicate frequencies under the memory budget (``_terms``) and records support families (``_families``).
``_pruning`` prunes an exact spectrum where SHAP evaluates it.

The leaf route computes values without a spectrum, for trees of any depth and native categorical splits:
``_leaves`` (the node table, players' slots, fail patterns of rows), ``_leaf_games`` (one leaf's game in closed form),
``_leaf_values`` (``LeafPlan``: dense tables per leaf or per unit, ``_leaf_units``, or the pair form, ``_leaf_pairs``),
and ``_categories`` (a DataFrame's ``category`` columns as the model's category ids); the value provider of this
route is :mod:`torchxplain.fourier.sources._leaves`.

The names imported here are this subpackage's interface to its siblings (they import from here, never from its
private modules); public names are in :mod:`torchxplain.fourier`.
"""

from torchxplain.fourier.trees._categories import CategoryCodec, category_codec
from torchxplain.fourier.trees._encoding import TreeEncoding, resolve_encoding
from torchxplain.fourier.trees._extraction import extract, tree_spectrum
from torchxplain.fourier.trees._leaf_paired import paired_leaf_values
from torchxplain.fourier.trees._leaf_values import LeafPlan, leaf_outputs
from torchxplain.fourier.trees._leaves import LeafTable, leaf_table, slots, spectrum_terms
from torchxplain.fourier.trees._pruning import PruningReport, prune, prune_tree_spectrum
from torchxplain.fourier.trees._splits import splits_binary_inputs
from torchxplain.fourier.trees.adapters._base import TreeEnsemble, fitted_names
from torchxplain.fourier.trees.adapters._dispatch import SUPPORTED_MODELS, parse_model, parse_model_outputs, supports

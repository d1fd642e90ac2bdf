"""Exact Fourier spectra of tree ensembles (scikit-learn, XGBoost, LightGBM, CatBoost).

:func:`~torchxplain.tree_spectrum` (``_extraction``) reads a fitted model through ``adapters/``, maps its splits to
binary features (``_splits``: the inputs themselves, or a :class:`~torchxplain.fourier.TreeEncoding` of thresholds,
``_encoding``, for continuous inputs; leaf slots in ``_intervals``), expands every tree exactly (``_expansion``),
merges duplicate frequencies under the memory budget (``_terms``) and records support families (``_families``).
``_pruning`` prunes an exact spectrum where SHAP evaluates it; ``_source`` is a tree model as an explainer's source.

The leaf route computes values without a spectrum, for trees of any depth and native categorical splits:
``_leaves`` (the node table, players' slots, fail patterns of rows), ``_leaf_games`` (one leaf's game in closed form),
``_leaf_values`` (``LeafPlan``: dense tables per leaf or per unit, ``_leaf_units``, or the pair form, ``_leaf_pairs``),
``_categories`` (a DataFrame's ``category`` columns as the model's category ids) and ``_leaf_source`` (the route
choice and the explainer's value provider).
"""

"""IDX: influence-driven explanations of Bayesian network classifiers (Rago et al., PRICAI 2021).

Layout, bottom to top: ``spec`` (the validated tables), ``encoding`` (inputs -> codes), ``io`` (specs from
pgmpy/sklearn/DataFrames), ``classifier`` (the torch module), ``properties`` (Defs. 7-8 per family), ``tables``
and ``counterfactual`` (family tables, Def. 9), ``relations`` (the batched kernel), ``shap``/``lime``/``attribution``
(Def. 10), ``explanation`` (batched results and views), ``explain`` (the entry points), ``stats``, ``datasets``.
"""

from torchxplain.idx import datasets, stats
from torchxplain.idx._attribution import attribution_relations
from torchxplain.idx._classifier import BayesianClassifier
from torchxplain.idx._counterfactual import CounterfactualTables, cf_relations, counterfactual_tables
from torchxplain.idx._explain import explain, explain_batch
from torchxplain.idx._explanation import Explanation, ExplanationBatch
from torchxplain.idx._io import ChainApproximationWarning
from torchxplain.idx._lime import lime_values
from torchxplain.idx._properties import ModifiedPosteriors, md_relations, modified_posteriors, sd_relations
from torchxplain.idx._relations import connected, relation_tensors
from torchxplain.idx._shap import shap_values
from torchxplain.idx._spec import ClassifierSpec

__all__ = [
    "BayesianClassifier",
    "ChainApproximationWarning",
    "ClassifierSpec",
    "CounterfactualTables",
    "Explanation",
    "ExplanationBatch",
    "ModifiedPosteriors",
    "attribution_relations",
    "cf_relations",
    "connected",
    "counterfactual_tables",
    "datasets",
    "explain",
    "explain_batch",
    "lime_values",
    "md_relations",
    "modified_posteriors",
    "relation_tensors",
    "sd_relations",
    "shap_values",
    "stats",
]

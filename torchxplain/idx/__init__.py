"""IDX: influence-driven explanations of Bayesian network classifiers (Rago et al., PRICAI 2021)."""

from torchxplain.idx import datasets, stats
from torchxplain.idx.attribution import attribution_relations, lime_values, shap_values
from torchxplain.idx.classifier import BayesianClassifier
from torchxplain.idx.explain import Explanation, connected, explain, relation_tensors
from torchxplain.idx.properties import (
    CounterfactualTables,
    ModifiedPosteriors,
    cf_relations,
    counterfactual_tables,
    md_relations,
    modified_posteriors,
    sd_relations,
)

__all__ = [
    "BayesianClassifier",
    "attribution_relations",
    "lime_values",
    "shap_values",
    "stats",
    "CounterfactualTables",
    "Explanation",
    "ModifiedPosteriors",
    "cf_relations",
    "connected",
    "counterfactual_tables",
    "datasets",
    "explain",
    "md_relations",
    "modified_posteriors",
    "relation_tensors",
    "sd_relations",
]

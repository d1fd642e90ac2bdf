"""FourierSHAP: Walsh–Hadamard (Fourier) representations and the closed-form game values built on them.

Every public name of the Fourier family lives here (the headline ones, :class:`~torchxplain.FourierShap`,
:class:`~torchxplain.FourierSpectrum`, :class:`~torchxplain.SparseFourierSurrogate`,
:func:`~torchxplain.fit_sparse_fourier` and :func:`~torchxplain.tree_spectrum`, at the top of the package).
The code is arranged by concept; each subpackage's modules are private:

* ``spectrum/`` — the spectrum, its differentiable surrogate, the fast Walsh–Hadamard transform, bit rows;
* ``sources/`` — where a spectrum (or exact values) comes from: one module per source, each with its own knobs
  (:class:`Enumerate`, :class:`Tabulate`, :class:`Correct`, :class:`Fit`, :class:`CubeFit`, :class:`Trees`,
  :class:`KnownSpectrum`),
  and the one router that picks a black box's source, priced in predicted seconds;
* ``fit/`` — the fitting engines: the report, the oracle, tabulation and enumeration, uniform fits on the cube
  (``cube/``), fits on hybrid points (``hybrid/``) and on threshold codes of continuous columns (``continuous/``),
  values to a stated accuracy with standard errors (``residual/``);
* ``encoding/`` — input encoders: binary rows, thresholds of continuous features;
* ``trees/`` — exact spectra of tree ensembles: adapters per library, extraction, pruning;
* ``values/`` — the closed forms: value plan and cost model, the dense and small-support kernels, players,
  the interaction-index family (``interactions/``);
* ``explainer/`` — :class:`~torchxplain.FourierShap`, its value path and one result object per call
  (:class:`FourierExplanation`, whose views are Captum's tensor, per-player values and the shap/shapiq objects),
  what each input is explained against (Captum's per-row ``baselines`` or a ``background`` set), persistence and the
  shap/shapiq bridges.
"""

from torchxplain.fourier.encoding._encoders import BinaryEncoder, InputEncoder, ThresholdEncoder
from torchxplain.fourier.encoding._thresholds import ThresholdEncoding
from torchxplain.fourier.explainer._bridges import to_shap_explanation, to_shapiq_values
from torchxplain.fourier.explainer._player_values import PlayerValues
from torchxplain.fourier.explainer._result import FourierExplanation
from torchxplain.fourier.fit._options import FitOptions
from torchxplain.fourier.fit._report import FitQualityWarning, FitReport
from torchxplain.fourier.sources._correct import Correct
from torchxplain.fourier.sources._enumerate import Enumerate
from torchxplain.fourier.sources._fit import CubeFit, Fit
from torchxplain.fourier.sources._route import Candidate, Route
from torchxplain.fourier.sources._spectrum import KnownSpectrum
from torchxplain.fourier.sources._tabulate import Tabulate
from torchxplain.fourier.sources._trees import Trees
from torchxplain.fourier.trees._encoding import TreeEncoding
from torchxplain.fourier.trees._pruning import PruningReport, prune_tree_spectrum
from torchxplain.fourier.trees.adapters._base import TreeEnsemble
from torchxplain.fourier.trees.adapters._dispatch import SUPPORTED_MODELS, parse_model
from torchxplain.fourier.values._background import BackgroundTerm
from torchxplain.fourier.values._public import (
    banzhaf_values,
    precompute_background,
    shapley_interactions,
    shapley_values,
    value_plan,
)
from torchxplain.fourier.values.interactions._api import interaction_values
from torchxplain.fourier.values.interactions._weights import INDICES

__all__ = [
    "INDICES",
    "SUPPORTED_MODELS",
    "BackgroundTerm",
    "BinaryEncoder",
    "Candidate",
    "CubeFit",
    "Correct",
    "Enumerate",
    "Fit",
    "FitOptions",
    "FitQualityWarning",
    "FitReport",
    "FourierExplanation",
    "InputEncoder",
    "KnownSpectrum",
    "PlayerValues",
    "PruningReport",
    "Route",
    "Tabulate",
    "ThresholdEncoder",
    "ThresholdEncoding",
    "TreeEncoding",
    "TreeEnsemble",
    "Trees",
    "banzhaf_values",
    "interaction_values",
    "parse_model",
    "precompute_background",
    "prune_tree_spectrum",
    "shapley_interactions",
    "shapley_values",
    "to_shap_explanation",
    "to_shapiq_values",
    "value_plan",
]

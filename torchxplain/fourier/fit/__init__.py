"""Fitting engines: a black box's spectrum from queries, on validated inputs, by the route the router chose.

* ``_api``: :func:`fit_validated` (the hybrid regime — tabulation and the sparse fit on hybrid samples — and the
  cube), ``_options`` (:class:`~torchxplain.fourier.FitOptions`), ``_report``
  (:class:`~torchxplain.fourier.FitReport`), ``_oracle`` (the model's queries in batches on its device);
* the players' observed levels, the reference-coded basis (``_levels``), term keys (``_keys``) and the exact map of
  products of level indicators to Walsh terms (``_walsh``); one-hot blocks found in the data (``_one_hot``);
* the exact engines: tabulation of a small level grid (``_tabulate``) and enumeration of coalitions through the
  model, the library's reference (``_enumerate``);
* ``cube/`` — fits on uniform inputs of the cube; ``hybrid/`` — fits where SHAP looks (samples, sparse design,
  regression, ladder, held-out check); ``continuous/`` — the same on threshold codes of continuous columns;
  ``residual/`` — values to a stated accuracy: an additive surrogate fitted once and an unbiased per-row Monte
  Carlo correction with standard errors.

The names imported here are this subpackage's interface to its siblings (they import from here, never from its
private modules); public names are in :mod:`torchxplain.fourier`.
"""

from torchxplain.fourier.fit._api import (
    DEFAULT_QUERIES,
    METHODS,
    UNIFORM_DEFAULT_K,
    HybridRows,
    Method,
    fit_validated,
    hybrid_rows,
)
from torchxplain.fourier.fit._enumerate import MAX_DIFFERING, EnumerationPlan, enumeration_queries, pair_sizes
from torchxplain.fourier.fit._levels import PlayerLevels
from torchxplain.fourier.fit._one_hot import FoundPlayers, find_one_hot_blocks
from torchxplain.fourier.fit._options import FitOptions, binary_rows, fit_options_from
from torchxplain.fourier.fit._oracle import Oracle, model_placement
from torchxplain.fourier.fit._report import (
    FitQualityWarning,
    FitReport,
    TargetMetric,
    domain_note,
    enumeration_report,
    fitted_range,
    r2_score,
)
from torchxplain.fourier.fit._tabulate import check_tabulation, tabulation_bytes
from torchxplain.fourier.fit.continuous._api import fit_continuous
from torchxplain.fourier.fit.continuous._ladder import STAGES as CONTINUOUS_STAGES
from torchxplain.fourier.fit.cube._regression import LS_MAX_COLUMNS
from torchxplain.fourier.fit.cube._uniform import AUTO_EXACT_MAX_FEATURES, regression_sizes
from torchxplain.fourier.fit.residual._additive import AdditiveModel, fit_additive
from torchxplain.fourier.fit.residual._estimate import CorrectionOptions, Estimate, correct
from torchxplain.fourier.fit.residual._plan import PILOT_ROUNDS, PILOT_ROWS, CorrectedPlan, PlanReport

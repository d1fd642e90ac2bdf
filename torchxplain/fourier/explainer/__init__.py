"""The Fourier explainer: :class:`~torchxplain.FourierShap` (``_fourier_shap``: a source's sugar constructors and
persistence), the value path every source shares (``_core``), one call's result and its views (``_result``), what
each input is explained against (``_references``: Captum's per-row ``baselines`` or a ``background`` set), a black
box's extra model arguments (``_forward_args``), one value per player with names (``_player_values``), the plan
cache (``_plan_cache``), persistence (``_persistence``) and the bridges to shap and shapiq objects (``_bridges``).

The names imported here are this subpackage's interface to the rest of the library; public names are in
:mod:`torchxplain` and :mod:`torchxplain.fourier`.
"""

from torchxplain.fourier.explainer._fourier_shap import FourierShap

"""The Fourier explainer: :class:`~torchxplain.FourierShap` (``_fourier_shap``), the value path every source shares
(``_core``), which outputs it explains (``_outputs``), its plan cache (``_plan_cache``), persistence
(``_persistence``) and the bridges to shap and shapiq objects (``_bridges``)."""

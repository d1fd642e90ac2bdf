"""The Fourier explainer: :class:`~torchxplain.FourierShap` (``_fourier_shap``), the value path every source shares
(``_core``), what each input is explained against (``_references``: Captum's per-row ``baselines`` or a
``background`` set) and the paired kernel of per-row baselines (``_paired``), a black box's extra model arguments
(``_forward_args``), which outputs it explains (``_outputs``), one value per player with names (``_player_values``),
its plan cache (``_plan_cache``), persistence (``_persistence``) and the bridges to shap and shapiq objects
(``_bridges``)."""

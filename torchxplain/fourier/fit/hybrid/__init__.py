"""Fits on hybrid points ``(x_S, b_~S)``, where interventional SHAP evaluates a model: the sampler (``_sampler``),
the identifiable player basis and its map to Walsh terms (``_basis``), regression in that basis (``_regression``),
the escalation ladder held to a target (``_ladder``) and the held-out checks (``_checks``)."""

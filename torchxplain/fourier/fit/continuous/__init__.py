"""Fitting a black box on continuous (or mixed) inputs where SHAP looks: ``_levels`` (each player's
levels on raw rows, fine and coarse), ``_blocks`` (the one-hot-per-block design of main effects and coarse
interactions), ``_solve`` (least squares on it), ``_screen`` (which interactions), ``_expand`` (tables to
Walsh terms on the thermometer codes), ``_ladder`` (the escalation ladder), ``_api`` (the route end to end:
held-out rows, thresholds, ladder, report). Public names are in
:mod:`torchxplain.fourier`."""

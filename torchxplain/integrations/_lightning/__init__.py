"""The Lightning integration (``lightning.pytorch`` or ``pytorch_lightning``, see ``_compat``): the callback
(``_callback``), the predict module and writer (``_predict``), the loggers' outputs (``_outputs``), the probe
(``_probe``) and the all-reduced importance metric (``_metrics``). Public names are in
:mod:`torchxplain.integrations`."""

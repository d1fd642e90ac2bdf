"""The interaction-index family of a sparse spectrum in closed form (shapiq's indices, exact, batched): the public
entry point (``_api``), the batched kernel (``_kernel``) and the per-term weight tables (``_weights``)."""

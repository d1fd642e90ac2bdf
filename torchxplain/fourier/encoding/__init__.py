"""Input encoders: how a Fourier explainer turns the rows users pass into the binary features of its spectrum
(``_encoders``: binary rows, thresholds of continuous features). Public names are in :mod:`torchxplain.fourier`."""

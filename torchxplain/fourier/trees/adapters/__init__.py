"""Adapters that read tree ensembles from scikit-learn, XGBoost, LightGBM and CatBoost into one flat form
(``_base``): one private module per library, each importing its library lazily so that XGBoost, LightGBM and
CatBoost stay optional (``pip install torchxplain[trees]``); ``_dispatch`` picks the adapter and ``_targets`` says
which output each parsed ensemble explains. Public names are in :mod:`torchxplain.fourier`."""

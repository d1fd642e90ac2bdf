"""Black-box values to a stated accuracy: an additive surrogate fitted once for all rows, and per row an unbiased
Monte Carlo correction of what it misses, with a standard error on every value.

* ``_design`` — paired coalitions of one (row, background row) pair per model row, their weights, the hybrids;
* ``_hashing`` — counter-based draws (a row's design depends on its values, the seed, the round and the slot);
* ``_additive`` — the additive surrogate, fitted on the odd part of pair games;
* ``_estimate`` — the rounds over all rows: control variates refined per pair, tolerance, budget, standard errors;
* ``_plan`` — the value provider: fit, pilot, tolerance from a target R², values with standard errors.

What siblings use is exported by :mod:`torchxplain.fourier.fit` (one place).
"""

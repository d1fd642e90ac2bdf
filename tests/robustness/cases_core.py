"""Bad inputs for the settings, the testing helpers and the top-level entry points."""

from __future__ import annotations

import numpy as np
import torch

import torchxplain as tx
from tests.robustness.harness import case, exempt
from torchxplain import testing

S, T = "torchxplain.settings.", "torchxplain.testing."
exempt("a constant", S + "DEFAULT_MAX_MEMORY", S + "MIN_MEMORY")
exempt("a typing.Literal alias", S + "DtypePolicy", S + "ValidationLevel")
exempt(
    "a subpackage (its own names are covered)",
    *(f"torchxplain.{m}" for m in ("fourier", "goals", "idx", "settings", "viz")),
)


@case(S + "max_memory", "a float budget", TypeError, "max_memory must be a number of bytes")
def _():
    tx.settings.max_memory(2.5e9)


@case(S + "parse_memory", "an unbounded string is not echoed", ValueError, r"like '2GB'.*'x{40}'$")
def _():
    tx.settings.parse_memory("x" * 10_000)


@case(S + "show_progress", "a string flag", TypeError, "show_progress must be True or False")
def _():
    tx.settings.show_progress("no")


@case(S + "validation", "an unknown level", ValueError, r"validation must be one of \['full', 'shapes'\]")
def _():
    tx.settings.validation("off")


@case(S + "dtype_policy", "an unknown policy", ValueError, r"dtype_policy must be one of")
def _():
    tx.settings.dtype_policy("float16")


@case(S + "using", "a budget under 1 MiB", ValueError, "max_memory must be at least 1 MiB")
def _():
    with tx.settings.using(max_memory=512):
        pass


@case(T + "tiny_memory_budget", "zero bytes", ValueError, "n_bytes must be a positive int")
def _():
    with testing.tiny_memory_budget(0):
        pass


@case(T + "ExplainerTestCase", "an explainer without make_explainer", NotImplementedError, "make_explainer")
def _():
    testing.ExplainerTestCase().make_explainer(torch.float32)


for name in (
    "check_batch_invariance",
    "check_captum_contract",
    "check_captum_metrics",
    "check_noise_tunnel",
    "check_shape_and_structure",
    "check_state_dict_is_own",
    "check_user_model_untouched",
):

    @case(T + name, "an object that is not an explainer", AssertionError, f"{name}: object is not an explainer")
    def _(name=name):
        check = getattr(testing, name)
        args = {"check_batch_invariance": (object(), torch.zeros(2, 2), 0.0)}.get(name, (object(), torch.zeros(2, 2)))
        if name == "check_captum_metrics":
            args = (object(), torch.zeros(2, 2), lambda x: x.sum(1))
        if name in ("check_captum_contract", "check_state_dict_is_own", "check_user_model_untouched"):
            args = (object(),)
        check(*args)


@case("torchxplain.explain_after_fit", "an unknown method", ValueError, r"method must be one of")
def _():
    tx.explain_after_fit(lambda x: x.sum(1), np.zeros((4, 2)), np.zeros((2, 2)), method="magic")


@case("torchxplain.explain_after_fit", "X_test of another width", ValueError, r"X_train has 3 features.*expected 2")
def _():
    tx.explain_after_fit(lambda x: x.sum(1), np.zeros((4, 3)), np.zeros((2, 2)))


@case("torchxplain.explain_after_fit", "a negative n_background", ValueError, r"n_background must be a positive")
def _():
    tx.explain_after_fit(lambda x: x.sum(1), np.zeros((4, 2)), np.zeros((2, 2)), n_background=-1)


@case("torchxplain.explain_after_fit", "a float seed", TypeError, r"seed must be a non-negative int")
def _():
    tx.explain_after_fit(lambda x: x.sum(1), np.zeros((4, 2)), np.zeros((2, 2)), seed=1.7)

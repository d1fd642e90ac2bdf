"""Test helpers shipped with the package: the explainer contract mixin and its check functions."""

from torchxplain.testing.explainer_test_case import (
    ExplainerTestCase,
    check_batch_invariance,
    check_captum_contract,
    check_captum_metrics,
    check_noise_tunnel,
    check_shape_and_structure,
    check_state_dict_is_own,
    check_user_model_untouched,
)

__all__ = [
    "ExplainerTestCase",
    "check_batch_invariance",
    "check_captum_contract",
    "check_captum_metrics",
    "check_noise_tunnel",
    "check_shape_and_structure",
    "check_state_dict_is_own",
    "check_user_model_untouched",
]

"""Test helpers shipped with the package: the explainer contract mixin, its check functions, tiny budgets."""

from torchxplain._core.settings import unchecked_max_memory as tiny_memory_budget
from torchxplain.testing._explainer_test_case import (
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
    "tiny_memory_budget",
]

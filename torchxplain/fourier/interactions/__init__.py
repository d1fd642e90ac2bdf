"""The interaction-index family of a sparse spectrum in closed form (shapiq's indices, exact, batched)."""

from torchxplain.fourier.interactions.api import check_index, interaction_values
from torchxplain.fourier.interactions.weights import INDICES, Index

__all__ = ["INDICES", "Index", "check_index", "interaction_values"]

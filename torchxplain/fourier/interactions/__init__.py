"""The interaction-index family of a sparse spectrum in closed form (shapiq's indices, exact, batched)."""

from torchxplain.fourier.interactions.api import interaction_values
from torchxplain.fourier.interactions.weights import INDICES, Index

__all__ = ["INDICES", "Index", "interaction_values"]

"""GOALS (GlObal And Local Score): local and global variable importance with posterior uncertainty."""

from torchxplain.goals.bnn import BNNBackend, LastLayerBNN
from torchxplain.goals.bnn_rate import bnn_rate
from torchxplain.goals.explainers import Goals
from torchxplain.goals.gp import GPBackend
from torchxplain.goals.importance import GlobalImportance
from torchxplain.goals.kernels import median_lengthscale
from torchxplain.goals.rate import rate, rate_kld

__all__ = [
    "BNNBackend",
    "LastLayerBNN",
    "bnn_rate",
    "GPBackend",
    "GlobalImportance",
    "Goals",
    "median_lengthscale",
    "rate",
    "rate_kld",
]

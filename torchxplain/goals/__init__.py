"""GOALS (GlObal And Local Score): local and global variable importance with posterior uncertainty."""

from torchxplain.goals.bnn import BNNBackend, LastLayerBNN, PyroHead, bnn_rate
from torchxplain.goals.explainers import Goals
from torchxplain.goals.gp import GPBackend
from torchxplain.goals.importance import GlobalImportance
from torchxplain.goals.kernels import median_lengthscale
from torchxplain.goals.rate import rate, rate_kld

__all__ = [
    "BNNBackend",
    "GPBackend",
    "GlobalImportance",
    "Goals",
    "LastLayerBNN",
    "PyroHead",
    "bnn_rate",
    "median_lengthscale",
    "rate",
    "rate_kld",
]

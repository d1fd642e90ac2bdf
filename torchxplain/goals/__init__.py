"""GOALS (GlObal And Local Score): local and global variable importance with posterior uncertainty.

The explainer is :class:`torchxplain.Goals`; this namespace holds its backends, the Bayesian last-layer network
(``bnn/``), the global-importance result and the RATE baseline. Modules are private.
"""

from torchxplain.goals._gp import GPBackend
from torchxplain.goals._importance import GlobalImportance
from torchxplain.goals._kernels import median_lengthscale
from torchxplain.goals._rate import rate, rate_kld
from torchxplain.goals.bnn._backend import BNNBackend
from torchxplain.goals.bnn._model import LastLayerBNN
from torchxplain.goals.bnn._pyro_head import PyroHead
from torchxplain.goals.bnn._rate import bnn_rate

__all__ = [
    "BNNBackend",
    "GPBackend",
    "GlobalImportance",
    "LastLayerBNN",
    "PyroHead",
    "bnn_rate",
    "median_lengthscale",
    "rate",
    "rate_kld",
]

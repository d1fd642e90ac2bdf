"""GOALS on networks with a Bayesian last layer: the model (:class:`LastLayerBNN`), the backend and RATE."""

from torchxplain.goals.bnn.backend import BNNBackend
from torchxplain.goals.bnn.model import LastLayerBNN
from torchxplain.goals.bnn.pyro_head import PyroHead
from torchxplain.goals.bnn.rate import bnn_rate

__all__ = ["BNNBackend", "LastLayerBNN", "PyroHead", "bnn_rate"]

"""Small built-in data sets and seeded generators."""

from torchxplain.data._landscapes import GB1_RESIDUES, GB1_SITES, load_entacmaea, load_gb1
from torchxplain.data._simulation import SimulatedData, simulate_goals_design

__all__ = [
    "GB1_RESIDUES",
    "GB1_SITES",
    "SimulatedData",
    "load_entacmaea",
    "load_gb1",
    "simulate_goals_design",
]

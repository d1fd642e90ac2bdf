"""Small built-in data sets and seeded generators."""

from torchxplain.data.simulation import SimulatedData, simulate_goals_design  # noqa: F401

"""torchxplain: FourierSHAP, GOALS and IDX as Captum-compatible torch modules."""

__version__ = "0.1.0"

__all__: list[str] = []

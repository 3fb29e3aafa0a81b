"""What learns: networks, distributions, losses and the update rule for one batch.

``agents`` imports no environment family and nothing from ``training``.
"""

from hordax.agents.types import Agent

__all__ = ["Agent"]

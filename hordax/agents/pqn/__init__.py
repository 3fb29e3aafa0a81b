"""PQN (parallelised Q-network): config and agent; the loop is ``hordax.training.trainers.pqn``."""

from hordax.agents.pqn.agent import (
    TRACED_HPARAMS,
    PQNAgent,
    PQNBatch,
    PQNState,
    QNetwork,
    make_agent,
)
from hordax.agents.pqn.config import PQNConfig, QNetworkConfig, validate_pqn

__all__ = [
    "TRACED_HPARAMS",
    "PQNAgent",
    "PQNBatch",
    "PQNConfig",
    "PQNState",
    "QNetwork",
    "QNetworkConfig",
    "make_agent",
    "validate_pqn",
]

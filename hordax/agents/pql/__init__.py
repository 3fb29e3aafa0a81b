"""PQL (parallel Q-learning): config and agent math; the loop: ``hordax.training.trainers.pql``."""

from hordax.agents.pql.agent import (
    TRACED_HPARAMS,
    CriticBatch,
    PQLAgent,
    PQLState,
    categorical_projection,
    exploration_stds,
    make_agent,
)
from hordax.agents.pql.config import PQLConfig, validate_pql

__all__ = [
    "TRACED_HPARAMS",
    "CriticBatch",
    "PQLAgent",
    "PQLConfig",
    "PQLState",
    "categorical_projection",
    "exploration_stds",
    "make_agent",
    "validate_pql",
]

"""PPO: config, losses and the agent (math only; the loop lives in ``hordax.training``)."""

from hordax.agents.ppo.agent import (
    TRACED_HPARAMS,
    PPOAgent,
    PPOBatch,
    PPOState,
    RecurrentPPOBatch,
    make_agent,
)
from hordax.agents.ppo.config import IPPOConfig, MAPPOConfig, PPOConfig, validate_ppo

__all__ = [
    "TRACED_HPARAMS",
    "IPPOConfig",
    "MAPPOConfig",
    "PPOAgent",
    "PPOBatch",
    "PPOConfig",
    "PPOState",
    "RecurrentPPOBatch",
    "make_agent",
    "validate_ppo",
]

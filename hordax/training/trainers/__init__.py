"""Trainers: PPO, PQN and PQL (each imports only ``core`` and ``config``), populations and
mixed ensembles over them, the one algorithm registry, and the full check of a run config.

    trainer = make_trainer(cfg, env, env_params, validate(cfg))
    state, metrics = jax.jit(trainer.train)(trainer.init_key(cfg.seed))
"""

from hordax.training.trainers.build import make_train, make_trainer, validate
from hordax.training.trainers.mixed import MixedTrainer, agent_config, validate_mixed
from hordax.training.trainers.population import PopulationTrainer, member_keys
from hordax.training.trainers.ppo import PPOTrainer
from hordax.training.trainers.pql import PQLTrainer
from hordax.training.trainers.pqn import PQNTrainer
from hordax.training.trainers.registry import ALGORITHMS, algorithm

__all__ = [
    "ALGORITHMS",
    "MixedTrainer",
    "PPOTrainer",
    "PQLTrainer",
    "PQNTrainer",
    "PopulationTrainer",
    "agent_config",
    "algorithm",
    "make_train",
    "make_trainer",
    "member_keys",
    "validate",
    "validate_mixed",
]

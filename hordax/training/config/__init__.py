"""The run configuration: the hydra schemas with the checks that need no algorithm beside
them (the algorithms' own checks live with their agents in ``hordax.agents`` and are joined
by ``hordax.training.trainers.validate``)."""

from hordax.training.config.ensemble import (
    EnsembleConfig,
    apply_members,
    group_sizes,
    is_mixed,
    validate_ensemble,
)
from hordax.training.config.mesh import MeshConfig, validate_mesh
from hordax.training.config.population import PopulationConfig, validate_population
from hordax.training.config.train import (
    CheckpointConfig,
    ConfigError,
    EnvConfig,
    LoggerConfig,
    TrainConfig,
    TrainerConfig,
    resolve,
    validate_run,
    validate_seed,
    validate_trainer,
)
from hordax.training.core.types import Resolved

__all__ = [
    "CheckpointConfig",
    "ConfigError",
    "EnsembleConfig",
    "EnvConfig",
    "LoggerConfig",
    "MeshConfig",
    "PopulationConfig",
    "Resolved",
    "TrainConfig",
    "TrainerConfig",
    "apply_members",
    "group_sizes",
    "is_mixed",
    "resolve",
    "validate_ensemble",
    "validate_mesh",
    "validate_population",
    "validate_run",
    "validate_seed",
    "validate_trainer",
]

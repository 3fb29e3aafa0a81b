"""The population schema (hydra key ``population``) and its checks; populations are trained
by ``hordax.training.trainers.population``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class PopulationConfig:
    """Population of training runs (hydra group key ``population``)."""

    size: int = 1
    """Members trained together in one vmapped program (1 = a plain run)."""
    hparams: dict[str, list[float]] = field(default_factory=dict)
    """Per-member hyperparameters, e.g. {learning_rate: [1e-4, 3e-4]} (one value per member);
    members without a listed value use the agent config. Allowed names: the agent's traced
    hyperparameters (PPO: learning_rate, ent_coef, vf_coef, clip_eps, gae_lambda)."""


def validate_population(cfg: PopulationConfig, traced: tuple[str, ...]) -> None:
    """Host-side checks; ``ValueError`` names the key, the value and what is allowed
    (``traced``: the agent's traced hyperparameter names)."""
    if int(cfg.size) < 1:
        raise ValueError(f"population.size={cfg.size}: must be an integer >= 1")
    for name, values in cfg.hparams.items():
        if name not in traced:
            raise ValueError(
                f"population.hparams.{name}: unknown; allowed names are {list(traced)}"
            )
        values = list(values)
        if len(values) != cfg.size:
            raise ValueError(
                f"population.hparams.{name}={values}: needs population.size={cfg.size} values,"
                f" got {len(values)}"
            )
        if not all(isinstance(v, int | float) and math.isfinite(v) for v in values):
            raise ValueError(f"population.hparams.{name}={values}: values must be finite numbers")

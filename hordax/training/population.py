"""Populations: several training runs (seeds and/or hyperparameter settings) in one program.

Member ``i`` of a population of size ``P`` is the run with seed ``seed + i`` and the
hyperparameters of column ``i`` of ``population.hparams`` (``{name: [P values]}``, names
from :data:`hordax.agents.ppo.TRACED_HPARAMS`); every member's state gets a leading
``[P]`` axis and the trainer's init and chunk functions are ``jax.vmap``-ed over it, so
member ``i`` computes what a separate run with those settings computes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp


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
    """Host-side checks; ``ValueError`` names the key, the value and what is allowed."""
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


def member_keys(seed: int, size: int) -> jax.Array:
    """``key[P]``: member ``i`` gets ``jax.random.key(seed + i)``."""
    return jnp.stack([jax.random.key(seed + i) for i in range(size)])


def member_hparams(cfg: PopulationConfig) -> dict[str, jax.Array]:
    """``{name: f32[P]}`` of the hyperparameters that vary across members."""
    return {k: jnp.asarray(v, jnp.float32) for k, v in cfg.hparams.items()}


def vmapped_init(init: Any) -> Any:
    """``init(key) -> state`` to ``init(keys [P], hparams {name: [P]}) -> state [P]``."""

    def one(key: jax.Array, hparams: dict) -> Any:
        state = init(key)
        agent = state.agent.replace(hparams={**state.agent.hparams, **hparams})
        return state.replace(agent=agent)

    return jax.vmap(one)


def vmapped_chunk(run_chunk: Any, num_updates: int) -> Any:
    """``run_chunk(state, n)`` over a leading member axis."""
    return jax.vmap(lambda state: run_chunk(state, num_updates))

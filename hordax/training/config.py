"""Typed run configuration (the hydra schemas) and host-side validation.

The CLI composes YAML from ``hordax/configs/`` onto these dataclasses, so a typo or a wrong type
fails at start-up naming the key; :func:`validate` then checks ranges and relations and
:func:`resolve` computes derived sizes. Library code receives these dataclasses, never a
hydra ``DictConfig``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

from hordax.agents.ppo import TRACED_HPARAMS, PPOConfig, validate_ppo
from hordax.training.ensemble import EnsembleConfig, validate_ensemble
from hordax.training.population import PopulationConfig, validate_population
from hordax.training.sharding import MeshConfig, validate_mesh
from hordax.validation import need


class ConfigError(ValueError):
    """A configuration value is out of range; the message names key, value and the rule."""


@dataclass
class EnvConfig:
    id: str = "CartPole-v1"
    """Registered env id (hordax or gymnax)."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    """Constructor arguments (static config: sizes, modes)."""
    params: dict[str, Any] = field(default_factory=dict)
    """Overrides of fields of the env's default params."""


@dataclass
class OnPolicyTrainerConfig:
    name: str = "on_policy"
    num_envs: int = 4
    """Parallel environments (the batch axis)."""
    rollout_length: int = 128
    """Steps per env per update."""
    total_env_steps: int = 500_000
    """Env steps in the run, rounded up to whole updates and then to whole chunks (the
    summary's ``env_steps`` is what ran; see :func:`resolve`)."""
    num_chunks: int = 20
    """Host round-trips: progress, logging and checkpoints happen between chunks (fewer if
    the run has fewer updates; see :func:`resolve`)."""
    reset_pool: int = -1
    """Fresh resets computed per env step (VecEnv's pool): -1 auto (ceil(num_envs / 64)),
    0 off (reset_env for every env every step, gymnax's in-step path), k >= 1 that many."""


@dataclass
class LoggerConfig:
    name: str = "stdout"
    """'stdout' (local files only) or 'wandb'."""
    project: str = "hordax"
    """wandb project."""
    mode: str = "offline"
    """wandb mode: offline (default, no network), online or disabled."""


@dataclass
class CheckpointConfig:
    every: int = 0
    """Write a checkpoint every this many chunks (and after the last); 0 = never."""
    keep: int = 2
    """Keep the newest this many checkpoints (>= 1)."""


@dataclass
class TrainConfig:
    env: EnvConfig = field(default_factory=EnvConfig)
    agent: Any = field(default_factory=PPOConfig)
    """PPOConfig, PQNConfig or PQLConfig (the ``agent`` group's schema picks it)."""
    trainer: OnPolicyTrainerConfig = field(default_factory=OnPolicyTrainerConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    mesh: MeshConfig = field(default_factory=MeshConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    population: PopulationConfig = field(default_factory=PopulationConfig)
    ensemble: EnsembleConfig = field(default_factory=EnsembleConfig)
    seed: int = 0
    """Seed of the run's single ``jax.random.key``."""
    run_dir: str = ""
    """Where the run writes config, metrics and params ('' = no files)."""
    progress: bool = True
    """Show a live progress bar on stderr."""
    resume: str = ""
    """Run directory of a checkpointed run to continue ('' = start fresh)."""
    overwrite: bool = False
    """Start fresh in a run directory that already holds a run, removing that run's files
    first (without it such a directory is refused)."""
    distributed: bool = False
    """Multi-host: call jax.distributed.initialize() first (coordinator, process count and
    id from the environment, e.g. JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID)."""


@dataclass(frozen=True)
class Resolved:
    """Sizes derived from a validated config."""

    num_updates: int
    chunk_updates: int
    num_chunks: int
    steps_per_update: int

    @property
    def env_steps(self) -> int:
        return self.num_updates * self.steps_per_update


AGENTS = ("ppo", "pqn", "pql")
LOGGERS = ("stdout", "wandb")


_need = functools.partial(need, error=ConfigError)


def validate(cfg: TrainConfig) -> Resolved:
    """Check ranges and relations on the host; return the derived sizes."""
    _need(
        cfg.agent.name in AGENTS, "agent.name", cfg.agent.name, f"allowed values are {list(AGENTS)}"
    )
    tr = cfg.trainer
    rnn_size = int(getattr(getattr(cfg.agent, "network", None), "rnn_size", 0))  # PPO's GRU
    _need(tr.num_envs >= 1, "trainer.num_envs", tr.num_envs, "must be an integer >= 1")
    _need(
        tr.rollout_length >= 1,
        "trainer.rollout_length",
        tr.rollout_length,
        "must be an integer >= 1",
    )
    _need(tr.num_chunks >= 1, "trainer.num_chunks", tr.num_chunks, "must be an integer >= 1")
    _need(
        tr.reset_pool >= -1,
        "trainer.reset_pool",
        tr.reset_pool,
        "must be -1 (auto), 0 (off: in-step reset of every env) or an integer >= 1",
    )
    steps_per_update = tr.num_envs * tr.rollout_length
    _need(
        tr.total_env_steps >= steps_per_update,
        "trainer.total_env_steps",
        tr.total_env_steps,
        f"must be >= one update, num_envs * rollout_length = {steps_per_update}",
    )
    _need(
        cfg.logger.name in LOGGERS,
        "logger.name",
        cfg.logger.name,
        f"allowed values are {list(LOGGERS)}",
    )
    _need(
        cfg.logger.mode in ("offline", "online", "disabled"),
        "logger.mode",
        cfg.logger.mode,
        "allowed values are ['offline', 'online', 'disabled']",
    )
    try:
        validate_mesh(cfg.mesh)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    ck = cfg.checkpoint
    _need(ck.every >= 0, "checkpoint.every", ck.every, "must be an integer >= 0 (0 = never)")
    _need(ck.keep >= 1, "checkpoint.keep", ck.keep, "must be an integer >= 1")
    try:
        validate_population(cfg.population, _traced_hparams(cfg.agent.name))
    except ValueError as e:
        raise ConfigError(str(e)) from None
    try:
        validate_ensemble(cfg.ensemble)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    if cfg.ensemble.enabled and list(cfg.ensemble.algorithms):  # mixed-algorithm ensemble
        from hordax.training.mixed import validate_mixed

        try:
            validate_mixed(cfg)
        except ValueError as e:
            raise ConfigError(str(e)) from None
    _need(
        not cfg.ensemble.enabled or bool(cfg.ensemble.algorithms) or cfg.population.size >= 2,
        "ensemble.members",
        cfg.ensemble.members,
        "agent=ensemble needs at least 2 members (ensemble.members or population.size)",
    )
    _need(
        not cfg.ensemble.enabled or rnn_size == 0,
        "agent.network.rnn_size",
        rnn_size,
        "agent=ensemble combines feed-forward PPO members only (rnn_size=0)",
    )
    _need(
        cfg.seed >= 0 and cfg.seed + cfg.population.size <= 2**63,
        "seed",
        cfg.seed,
        "must be an integer in [0, 2**63 - population.size]",
    )
    try:
        _validate_agent(cfg, steps_per_update)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    if cfg.agent.name == "pql" and cfg.agent.mode == "parallel":
        _validate_pql_parallel(cfg)
    if rnn_size:  # recurrent PPO: minibatches are whole env sequences
        _need(
            tr.num_envs % cfg.agent.num_minibatches == 0,
            "agent.num_minibatches",
            cfg.agent.num_minibatches,
            f"must divide trainer.num_envs = {tr.num_envs} with a recurrent network "
            "(minibatches are whole env sequences)",
        )
    return resolve(cfg)


def _traced_hparams(agent: str) -> tuple[str, ...]:
    if agent == "pqn":
        from hordax.agents import pqn

        return pqn.TRACED_HPARAMS
    if agent == "pql":
        from hordax.agents import pql

        return pql.TRACED_HPARAMS
    return TRACED_HPARAMS


def _validate_agent(cfg: TrainConfig, steps_per_update: int) -> None:
    """The agent's own checks (ValueError naming the key)."""
    name = cfg.agent.name
    if name == "pqn":
        from hordax.agents.pqn import validate_pqn

        validate_pqn(cfg.agent, batch_size=steps_per_update)
    elif name == "pql":
        from hordax.agents.pql import validate_pql

        validate_pql(cfg.agent, cfg.trainer.num_envs, cfg.trainer.rollout_length)
    else:
        validate_ppo(cfg.agent, batch_size=steps_per_update)


def _validate_pql_parallel(cfg: TrainConfig) -> None:
    """What PQL's parallel mode does not support (it is not one jitted program)."""
    rule = "agent.mode=parallel does not support {}; use agent.mode=sync"
    _need(cfg.population.size == 1, "population.size", cfg.population.size,
          rule.format("populations (population.size must be 1)"))  # fmt: skip
    _need(cfg.checkpoint.every == 0, "checkpoint.every", cfg.checkpoint.every,
          rule.format("checkpoints (checkpoint.every must be 0)"))  # fmt: skip
    _need(not cfg.resume, "resume", cfg.resume, rule.format("resume"))
    _need(not cfg.distributed, "distributed", cfg.distributed, rule.format("multi-host runs"))


def resolve(cfg: TrainConfig) -> Resolved:
    """Derive update and chunk counts (no device queries here).

    The budget is rounded up, never down: ``ceil(total_env_steps / (num_envs *
    rollout_length))`` updates, split into ``min(num_chunks, updates)`` chunks of equal
    size, rounded up to whole chunks. E.g. 40,000 steps with 256 envs x 16 steps: 10
    updates (40,960 steps), in 10 chunks of one update for ``num_chunks=20``.
    """
    tr = cfg.trainer
    steps_per_update = tr.num_envs * tr.rollout_length
    requested = max(1, -(-tr.total_env_steps // steps_per_update))  # ceil, exact for ints
    chunk_updates = math.ceil(requested / min(tr.num_chunks, requested))
    num_chunks = math.ceil(requested / chunk_updates)
    return Resolved(chunk_updates * num_chunks, chunk_updates, num_chunks, steps_per_update)

"""Typed run configuration (the hydra schemas of ``hordax train``) and the host-side checks
that need no algorithm.

The CLI composes YAML from ``hordax/configs/`` onto these dataclasses, so a typo or a wrong type
fails at start-up naming the key; :func:`validate_run` checks ranges and relations of the
run (the full check, with the algorithm's own, is ``hordax.training.trainers.validate``) and
:func:`resolve` computes derived sizes. Library code receives these dataclasses, never a
hydra ``DictConfig``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

from hordax.agents.ppo.config import PPOConfig
from hordax.training.config.curriculum import CurriculumConfig
from hordax.training.config.ensemble import EnsembleConfig
from hordax.training.config.mesh import MeshConfig, validate_mesh
from hordax.training.config.population import PopulationConfig
from hordax.training.core.types import Resolved
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
class TrainerConfig:
    """Batch and budget sizes of every trainer (hydra group ``trainer``)."""

    name: str = "on_policy"
    """The preset's name (``hordax/configs/trainer/on_policy.yaml``): documentation only."""
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
    stagger_starts: bool = False
    """Start each env slot's first episode at a random step counter in
    ``[0, max_steps_in_episode)`` so that the slots' episodes end at different steps
    (``VecEnv(stagger=True)``): on a fixed-length task every update then sees every phase of
    the episode, not the one its rollout window covers. For envs whose dynamics do not read
    the step counter; one that reads it is refused (docs/env_protocol.md, "Staggered
    starts")."""


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
class TrainEvalConfig:
    """Evaluation during training (``eval.*``; ``hordax eval`` for a finished run)."""

    episodes: int = 16
    """Fresh episodes (per member) after the last chunk; 0 = no evaluation."""
    every: int = 0
    """Also evaluate after every this many chunks (0 = only at the end)."""
    deterministic: bool = True
    """Greedy / mean actions (false: sample PPO's policy)."""
    seed: int = -1
    """Evaluation seed (-1: the run's seed, in the evaluation seed space)."""


@dataclass
class TrainConfig:
    env: EnvConfig = field(default_factory=EnvConfig)
    agent: Any = field(default_factory=PPOConfig)
    """The agent config of a registered algorithm (``PPOConfig``, ``PQNConfig``, ``PQLConfig``;
    the ``agent`` group's schema picks it)."""
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    mesh: MeshConfig = field(default_factory=MeshConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    population: PopulationConfig = field(default_factory=PopulationConfig)
    ensemble: EnsembleConfig = field(default_factory=EnsembleConfig)
    eval: TrainEvalConfig = field(default_factory=TrainEvalConfig)
    curriculum: CurriculumConfig = field(default_factory=CurriculumConfig)
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


LOGGERS = ("stdout", "wandb")


_need = functools.partial(need, error=ConfigError)


def validate_trainer(tr: TrainerConfig) -> None:
    """The checks of the batch and budget sizes (``ConfigError`` naming ``trainer.<key>``)."""
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


def validate_run(cfg: TrainConfig) -> None:
    """The checks of the trainer sizes, logger, mesh and checkpoint settings (``ConfigError``
    naming the key)."""
    validate_trainer(cfg.trainer)
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
    ev = cfg.eval
    _need(ev.episodes >= 0, "eval.episodes", ev.episodes, "must be an integer >= 0 (0 = off)")
    _need(ev.every >= 0, "eval.every", ev.every, "must be an integer >= 0 (0 = only at the end)")
    _need(
        -1 <= ev.seed < 2**63, "eval.seed", ev.seed, "must be -1 (the run's seed) or in [0, 2**63)"
    )
    ck = cfg.checkpoint
    _need(ck.every >= 0, "checkpoint.every", ck.every, "must be an integer >= 0 (0 = never)")
    _need(ck.keep >= 1, "checkpoint.keep", ck.keep, "must be an integer >= 1")


def validate_seed(cfg: TrainConfig) -> None:
    """Member ``i`` of a population has seed ``seed + i``: all must be valid seeds."""
    _need(
        cfg.seed >= 0 and cfg.seed + cfg.population.size <= 2**63,
        "seed",
        cfg.seed,
        "must be an integer in [0, 2**63 - population.size]",
    )


def resolve(cfg: TrainConfig | TrainerConfig) -> Resolved:
    """Derive update and chunk counts from ``cfg.trainer`` (or a :class:`TrainerConfig`; no
    device queries here).

    The budget is rounded up, never down: ``ceil(total_env_steps / (num_envs *
    rollout_length))`` updates, split into ``min(num_chunks, updates)`` chunks of equal
    size, rounded up to whole chunks. E.g. 40,000 steps with 256 envs x 16 steps: 10
    updates (40,960 steps), in 10 chunks of one update for ``num_chunks=20``.
    """
    tr = getattr(cfg, "trainer", cfg)
    steps_per_update = tr.num_envs * tr.rollout_length
    requested = max(1, -(-tr.total_env_steps // steps_per_update))  # ceil, exact for ints
    chunk_updates = math.ceil(requested / min(tr.num_chunks, requested))
    num_chunks = math.ceil(requested / chunk_updates)
    return Resolved(chunk_updates * num_chunks, chunk_updates, num_chunks, steps_per_update)

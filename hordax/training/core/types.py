"""The types every trainer and the host loop share: the run's sizes, the train state, the
:class:`Trainer` protocol (what the host loop calls) and the :class:`Algorithm` entry of the
registry (``hordax.training.trainers.registry``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import jax
from flax import struct


@dataclass(frozen=True)
class Resolved:
    """Sizes derived from a validated config (``hordax.training.config.resolve``)."""

    num_updates: int
    chunk_updates: int
    num_chunks: int
    steps_per_update: int

    @property
    def env_steps(self) -> int:
        return self.num_updates * self.steps_per_update


@struct.dataclass
class TrainState:
    """Everything a run carries between updates (a pytree; checkpointable)."""

    agent: Any  # agent state (params, optimizer state)
    env_state: Any  # batch env state, wrapper statistics included
    obs: Any  # [B, *obs_shape] current observations
    key: jax.Array
    update_idx: jax.Array  # i32 []: updates done
    # Recurrent agents only (``{}`` / ``None`` otherwise): the GRU carries ``[B, H]`` and
    # whether the current observation starts an episode ``bool[B]``.
    carry: Any = None
    reset: Any = None
    # Multi-agent trainers only: bool[B, n_agents], the agents active on ``obs``.
    agent_mask: Any = None


class Trainer(Protocol):
    """What the host loop (``hordax.training.host.loop``) calls; every method but
    :meth:`chunk_row`, :meth:`check_finite` and :meth:`summary` is pure and jittable.

    Single-agent trainers get all of it but ``init`` and ``update`` from
    :class:`~hordax.training.core.trainer.UpdateLoop`; a population
    (``trainers.population``) and a mixed ensemble (``trainers.mixed``) wrap trainers.
    """

    resolved: Resolved
    #: Members trained side by side in one state (1 for a single run).
    members: int
    #: Whether every state leaf has a leading ``[members]`` axis (populations).
    member_axis: bool
    #: The mesh's ``seed`` axis must divide this (1: no member axis to split).
    seed_axis: int
    #: How the host drives it: ``"jit"`` (jitted init and chunk programs) or a driver the
    #: host registers for a trainer that is not one program (``"pql_parallel"``).
    driver: str

    def init_key(self, seed: int) -> Any:
        """The argument of :meth:`init` for a run with seed ``seed``."""

    def init(self, key: Any) -> Any:
        """The initial state."""

    def run_chunk(self, state: Any, num_updates: int | None = None) -> tuple[Any, dict]:
        """``num_updates`` updates (default: one chunk, ``resolved.chunk_updates``) in one
        scan; metrics stacked ``[num_updates]`` (``[members, num_updates]``)."""

    def train(self, key: Any) -> tuple[Any, dict]:
        """The whole run, ``run_chunk(init(key), resolved.num_updates)``."""

    def saved_agent(self, state: Any) -> dict:
        """What ``params.msgpack`` holds: ``{"params", "normalizer"}`` (normalizer
        statistics the saved policy needs to act: ``obs_stats``, ``return_stats``)."""

    def label(self) -> str:
        """Suffix of the progress bar's description (``""``, ``" x4"``, ...)."""

    def chunk_row(self, metrics: dict) -> dict:
        """The ``metrics.jsonl`` fields of one chunk's host metrics (after ``chunk``,
        ``env_steps``, ``wall_s``, ``sps``)."""

    def check_finite(self, metrics: dict, first_update: int) -> None:
        """The NaN guard: raise ``NonFiniteError`` naming the first bad quantity."""

    def summary(self, saved: dict, row: dict) -> dict:
        """Fields this trainer adds to (or replaces in) the run's summary, from the saved
        agent (on the host) and the last chunk row."""


@dataclass(frozen=True)
class Algorithm:
    """One entry of the algorithm registry: everything that differs by ``agent.name``.

    Attributes:
        name: ``agent.name`` (``ppo``, ``pqn``, ``pql``).
        config: the agent config dataclass (the hydra schema of ``agent=<name>``).
        validate: ``validate(agent_cfg, trainer_cfg)``: the agent's own checks
            (``ValueError`` naming ``agent.<key>``).
        traced_hparams: hyperparameters held in the agent state (``f32[]``), which a
            population may vary per member.
        make_agent: ``make_agent(agent_cfg, obs_shape, action_space, num_updates) -> agent``.
        inference_state: ``inference_state(params) -> agent state`` enough for
            ``agent.act_greedy`` (a saved agent's parameters, no optimizer state).
        trainer: ``trainer(trainer_cfg, agent_cfg, env, env_params, resolved) -> Trainer``.
        action_space: ``"discrete"``, ``"continuous"`` or ``"any"`` (a mixed ensemble
            checks its algorithms against the env's).
        validate_run: ``validate_run(agent_cfg, train_cfg)``: checks that involve the rest of
            the run config (e.g. what PQL's parallel mode does not support); optional.
        check_member: ``check_member(agent_cfg)``: whether this agent may be an ensemble
            member (``ValueError`` naming the key); optional.
    """

    name: str
    config: type
    validate: Callable[[Any, Any], None]
    traced_hparams: tuple[str, ...]
    make_agent: Callable[..., Any]
    inference_state: Callable[[Any], Any]
    trainer: Callable[..., Trainer]
    action_space: str = "any"
    validate_run: Callable[[Any, Any], None] | None = None
    check_member: Callable[[Any], None] | None = None

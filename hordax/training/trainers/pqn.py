"""The PQN trainer: online Q(lambda) over vectorized envs (no replay, no target network).

    update = rollout scan (epsilon-greedy) -> max_a Q(next_obs) -> Q(lambda) targets
             -> agent.update (epochs x minibatches)

Same state layout (:class:`~hordax.training.core.types.TrainState`), chunking, metrics and
NaN flags as the PPO trainer, so the host loop drives it unchanged.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from hordax.agents.pqn import (
    TRACED_HPARAMS,
    PQNBatch,
    PQNConfig,
    PQNState,
    make_agent,
    validate_pqn,
)
from hordax.training.config import TrainerConfig
from hordax.training.core.estimators import compute_q_lambda
from hordax.training.core.metrics import episode_metrics, finiteness
from hordax.training.core.rollout import rollout
from hordax.training.core.trainer import UpdateLoop
from hordax.training.core.types import Algorithm, Resolved, TrainState


class PQNTrainer(UpdateLoop):
    """PQN on a single-agent env with a ``Discrete`` action space.

    Args:
        trainer_cfg: batch and budget sizes (``trainer.num_envs``, ``rollout_length``, ...).
        agent_cfg: :class:`~hordax.agents.pqn.PQNConfig`.
        env, env_params: the raw environment and its params (wrapped here).
        resolved: derived sizes (from ``hordax.training.trainers.validate``).
    """

    name = "PQN"

    def __init__(
        self,
        trainer_cfg: TrainerConfig,
        agent_cfg: Any,
        env: Any,
        env_params: Any,
        resolved: Resolved,
    ):
        super().__init__(trainer_cfg, agent_cfg, env, env_params, resolved)
        self.agent = make_agent(agent_cfg, self.obs_shape, self.action_space, resolved.num_updates)

    def init(self, key: jax.Array) -> TrainState:
        key, key_agent, key_env = jax.random.split(key, 3)
        obs, env_state = self.env.reset(key_env, self.env_params)
        return TrainState(self.agent.init(key_agent), env_state, obs, key, jnp.int32(0))

    def targets(self, agent_state: Any, tr: Any) -> jax.Array:
        """Q(lambda) targets ``f32[T, B]`` of a rollout, bootstrapping from ``next_obs``."""
        T, B = tr.reward.shape
        flat_next = tr.next_obs.reshape((T * B, *tr.next_obs.shape[2:]))
        next_q_max = jnp.max(self.agent.q_values(agent_state, flat_next), axis=-1).reshape((T, B))
        return compute_q_lambda(
            tr.reward * self.agent_cfg.reward_scale,
            next_q_max,
            tr.terminated,
            tr.truncated,
            self.agent_cfg.gamma,
            agent_state.hparams["q_lambda"],
        )

    def update(self, state: TrainState) -> tuple[TrainState, dict]:
        key, key_rollout, key_update = jax.random.split(state.key, 3)
        env_state, obs, tr = rollout(
            self.env,
            self.env_params,
            self.agent,
            state.agent,
            state.env_state,
            state.obs,
            key_rollout,
            self.cfg.rollout_length,
        )
        T, B = tr.reward.shape
        target = self.targets(state.agent, tr)
        flat = lambda x: x.reshape((T * B, *x.shape[2:]))  # noqa: E731
        batch = PQNBatch(flat(tr.obs), flat(tr.action), flat(target))
        agent_state, losses = self.agent.update(state.agent, batch, key_update)
        metrics = {**losses, **episode_metrics(tr.info), **finiteness(losses, agent_state)}
        return TrainState(agent_state, env_state, obs, key, state.update_idx + 1), metrics


def validate(agent_cfg: PQNConfig, trainer_cfg: TrainerConfig) -> None:
    validate_pqn(agent_cfg, batch_size=trainer_cfg.num_envs * trainer_cfg.rollout_length)


ALGORITHM = Algorithm(
    name="pqn",
    config=PQNConfig,
    validate=validate,
    traced_hparams=TRACED_HPARAMS,
    make_agent=make_agent,
    inference_state=lambda params: PQNState(params, None, {}, jnp.int32(0), jnp.int32(0)),
    trainer=PQNTrainer,
    action_space="discrete",
)

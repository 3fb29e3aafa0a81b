"""The PQN trainer: online Q(lambda) over vectorized envs (no replay, no target network).

    update = rollout scan (epsilon-greedy) -> max_a Q(next_obs) -> Q(lambda) targets
             -> agent.update (epochs x minibatches)

Same state layout (:class:`~hordax.training.on_policy.TrainState`), chunking, metrics and
NaN flags as the PPO trainer, so ``hordax.training.run`` drives it unchanged.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from hordax.agents.pqn import PQNBatch, make_agent
from hordax.envs.core import is_multi_agent
from hordax.training.config import OnPolicyTrainerConfig, Resolved
from hordax.training.estimators import compute_q_lambda
from hordax.training.on_policy import TrainState, episode_metrics, finiteness, make_env_stack
from hordax.training.rollout import rollout


class PQNTrainer:
    """PQN on a single-agent env with a ``Discrete`` action space.

    Args:
        trainer_cfg: batch and budget sizes (``trainer.num_envs``, ``rollout_length``, ...).
        agent_cfg: :class:`~hordax.agents.pqn.PQNConfig`.
        env, env_params: the raw environment and its params (wrapped here).
        resolved: derived sizes (from :func:`hordax.training.config.validate`).
    """

    def __init__(
        self,
        trainer_cfg: OnPolicyTrainerConfig,
        agent_cfg: Any,
        env: Any,
        env_params: Any,
        resolved: Resolved,
    ):
        if is_multi_agent(env):
            raise NotImplementedError("the PQN trainer supports single-agent envs")
        self.cfg, self.agent_cfg, self.resolved = trainer_cfg, agent_cfg, resolved
        self.env_params = env_params
        self.env = make_env_stack(env, agent_cfg, trainer_cfg.num_envs, trainer_cfg.reset_pool)
        self.agent = make_agent(
            agent_cfg,
            env.observation_space(env_params).shape,
            env.action_space(env_params),
            resolved.num_updates,
        )

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

    def run_chunk(self, state: TrainState, num_updates: int) -> tuple[TrainState, dict]:
        return jax.lax.scan(lambda s, _: self.update(s), state, None, length=num_updates)

    def train(self, key: jax.Array) -> tuple[TrainState, dict]:
        return self.run_chunk(self.init(key), self.resolved.num_updates)

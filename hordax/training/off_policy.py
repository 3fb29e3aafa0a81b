"""The PQL trainer, synchronous mode: one jitted schedule that realizes the ratios exactly.

    update = rollout (T steps of B envs, mixed exploration)
             -> n-step transitions (bootstrap through truncation from final_observation,
                none after termination) -> replay buffer (in the train state)
             -> repeat Na = Nc / beta_pv times: beta_pv critic updates, then 1 actor update

with ``Nc = beta_av * T`` critic updates per trainer update (``beta_av`` critic updates
per collection step of all envs) and ``beta_pv`` critic updates per actor update. The
parallel mode (learners on separate devices, asynchronous) is not implemented.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from hordax.agents.pql import CriticBatch, make_agent
from hordax.envs.core import is_multi_agent
from hordax.training import replay
from hordax.training.config import OnPolicyTrainerConfig, Resolved
from hordax.training.estimators import compute_n_step
from hordax.training.on_policy import episode_metrics, make_env_stack
from hordax.training.rollout import rollout


@struct.dataclass
class OffPolicyState:
    """:class:`~hordax.training.on_policy.TrainState` plus the replay buffer."""

    agent: Any
    env_state: Any
    obs: Any
    key: jax.Array
    update_idx: jax.Array
    buffer: replay.ReplayBuffer


def n_step_transitions(tr: Any, gamma: float, n: int, reward_scale: float = 1.0) -> CriticBatch:
    """Flat ``[T * B]`` n-step transitions of a rollout (see ``compute_n_step``)."""
    T, B = tr.reward.shape
    ret, disc, last = compute_n_step(
        tr.reward * reward_scale, tr.terminated, tr.truncated, gamma, n
    )
    boot = tr.next_obs[last, jnp.arange(B)[None, :]]  # [T, B, ...] next_obs at `last`
    flat = lambda x: x.reshape((T * B, *x.shape[2:]))  # noqa: E731
    return CriticBatch(
        flat(tr.obs).astype(jnp.float32),
        flat(tr.extras["unit_action"]),
        flat(ret),
        flat(boot).astype(jnp.float32),
        flat(disc),
    )


class PQLTrainer:
    """PQL (synchronous schedule) on a single-agent env with a bounded ``Box`` action space."""

    def __init__(
        self,
        trainer_cfg: OnPolicyTrainerConfig,
        agent_cfg: Any,
        env: Any,
        env_params: Any,
        resolved: Resolved,
    ):
        if is_multi_agent(env):
            raise NotImplementedError("the PQL trainer supports single-agent envs")
        self.cfg, self.agent_cfg, self.resolved = trainer_cfg, agent_cfg, resolved
        self.env_params = env_params
        self.env = make_env_stack(env, agent_cfg, trainer_cfg.num_envs)
        self.obs_shape = tuple(env.observation_space(env_params).shape)
        self.agent = make_agent(agent_cfg, self.obs_shape, env.action_space(env_params))
        self.critic_updates = round(agent_cfg.beta_av * trainer_cfg.rollout_length)
        self.actor_updates = self.critic_updates // agent_cfg.beta_pv

    def init(self, key: jax.Array) -> OffPolicyState:
        key, key_agent, key_env = jax.random.split(key, 3)
        obs, env_state = self.env.reset(key_env, self.env_params)
        d = self.agent.action_dim
        row = CriticBatch(
            jnp.zeros(self.obs_shape, jnp.float32),
            jnp.zeros((d,), jnp.float32),
            jnp.float32(0),
            jnp.zeros(self.obs_shape, jnp.float32),
            jnp.float32(0),
        )
        buffer = replay.init_buffer(row, self.agent_cfg.buffer_size)
        agent_state = self.agent.init(key_agent)
        return OffPolicyState(agent_state, env_state, obs, key, jnp.int32(0), buffer)

    def learn(self, agent_state: Any, buffer: replay.ReplayBuffer, key: jax.Array):
        """The synchronous schedule: ``actor_updates`` x (``beta_pv`` critic, 1 actor)."""
        acfg, agent = self.agent_cfg, self.agent

        def critic_step(st, k):
            k_sample, k_noise = jax.random.split(k)
            batch = replay.sample(buffer, k_sample, acfg.batch_size)
            return agent.critic_update(st, batch, k_noise)

        def group(st, k):
            k_critic, k_actor = jax.random.split(k)
            st, cm = jax.lax.scan(critic_step, st, jax.random.split(k_critic, acfg.beta_pv))
            obs = replay.sample(buffer, k_actor, acfg.batch_size).obs
            st, am = agent.actor_update(st, obs)
            return st, {**jax.tree.map(jnp.mean, cm), **am}

        st, m = jax.lax.scan(group, agent_state, jax.random.split(key, self.actor_updates))
        return st, jax.tree.map(jnp.mean, m)

    def update(self, state: OffPolicyState) -> tuple[OffPolicyState, dict]:
        acfg = self.agent_cfg
        key, key_rollout, key_learn = jax.random.split(state.key, 3)
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
        rows = n_step_transitions(tr, acfg.gamma, acfg.n_step, acfg.reward_scale)
        buffer = replay.add(state.buffer, rows)
        agent_state, losses = self.learn(state.agent, buffer, key_learn)
        agent_state = agent_state.replace(update=agent_state.update + 1)
        params_ok = jnp.all(
            jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(agent_state.params)])
        )
        loss = losses["critic_loss"] + losses["actor_loss"]
        grad = losses["critic_grad_norm"] + losses["actor_grad_norm"]
        metrics = {
            **losses,
            **episode_metrics(tr.info),
            "critic_updates": agent_state.critic_updates.astype(jnp.float32),
            "actor_updates": agent_state.actor_updates.astype(jnp.float32),
            "buffer_size": buffer.size.astype(jnp.float32),
            "nonfinite/loss": ~jnp.isfinite(loss),
            "nonfinite/gradient": ~jnp.isfinite(grad),
            "nonfinite/parameters": ~params_ok,
        }
        new_state = OffPolicyState(agent_state, env_state, obs, key, state.update_idx + 1, buffer)
        return new_state, metrics

    def run_chunk(self, state: OffPolicyState, num_updates: int):
        return jax.lax.scan(lambda s, _: self.update(s), state, None, length=num_updates)

    def train(self, key: jax.Array):
        return self.run_chunk(self.init(key), self.resolved.num_updates)

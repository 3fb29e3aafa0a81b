"""The PQL trainer, synchronous mode: one jitted schedule that realizes the ratios exactly.

    update = rollout (T steps of B envs, mixed exploration)
             -> n-step transitions (bootstrap through truncation from final_observation,
                none after termination) -> replay buffer (in the train state)
             -> repeat Na = Nc / beta_pv times: beta_pv critic updates, then 1 actor update

with ``Nc = beta_av * T`` critic updates per trainer update (``beta_av`` critic updates
per collection step of all envs) and ``beta_pv`` critic updates per actor update. The
parallel mode (actor, V-learner and P-learner concurrently) is
:mod:`hordax.training.pql_parallel`.

Observation normalization (``agent.normalize_obs``): the buffer stores RAW observations;
the running statistics (:class:`~hordax.envs.wrappers.RunningStats`, the same code as the
``NormalizeObservation`` wrapper) live in the train state (``OffPolicyState.obs_stats``)
and are merged with every rollout's observations; the actor acts on observations
normalized with the current statistics, and every sampled batch is normalized at sample
time with the statistics current at that update, so no buffer row goes stale.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from hordax.agents.pql import CriticBatch, make_agent
from hordax.envs.core import is_multi_agent
from hordax.envs.wrappers import RunningStats
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
    obs_stats: RunningStats | None = None  # running obs statistics (None: normalize_obs off)


#: Clip and epsilon of the normalized observations: those of ``NormalizeObservation``
#: (and of ``hordax.training.ensemble.greedy_policy``).
OBS_CLIP, OBS_EPS = 10.0, 1e-8


def normalize(obs: jax.Array, stats: RunningStats | None) -> jax.Array:
    """``clip((obs - mean) / sqrt(var + eps), -10, 10)`` as ``f32``; ``obs`` unchanged
    (cast to ``f32``) when ``stats`` is None (normalization off)."""
    obs = obs.astype(jnp.float32)
    if stats is None:
        return obs
    return jnp.clip((obs - stats.mean) / jnp.sqrt(stats.var + OBS_EPS), -OBS_CLIP, OBS_CLIP)


def normalize_batch(batch: CriticBatch, stats: RunningStats | None) -> CriticBatch:
    """A sampled batch with ``obs`` and ``next_obs`` normalized with ``stats``."""
    return batch.replace(obs=normalize(batch.obs, stats), next_obs=normalize(batch.next_obs, stats))


def update_stats(stats: RunningStats | None, tr: Any, obs: jax.Array) -> RunningStats | None:
    """Merge the observations a rollout's steps returned into the running statistics.

    ``tr.obs[1:]`` and ``obs`` (``[B, ...]``, the observation after the rollout's last
    step) are every observation the envs handed back, first observations of new episodes
    (after an auto-reset) included, as the ``NormalizeObservation`` wrapper merges them;
    the reset observations are merged at ``init``. Final observations of ended episodes
    (only in ``tr.next_obs``) are not, as in the wrapper.
    """
    if stats is None:
        return None
    T, B = tr.reward.shape
    seen = jnp.concatenate([tr.obs[1:], obs[None]], axis=0)
    return stats.update(seen.reshape((T * B, *seen.shape[2:])))


class NormalizedPolicy:
    """``agent.act`` on observations normalized with ``stats`` (what ``rollout`` calls)."""

    def __init__(self, agent: Any, stats: RunningStats | None):
        self.agent, self.stats = agent, stats

    def act(self, agent_state: Any, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, dict]:
        return self.agent.act(agent_state, normalize(obs, self.stats), key)


def n_step_transitions(tr: Any, gamma: float, n: int, reward_scale: float = 1.0) -> CriticBatch:
    """Flat ``[T * B]`` n-step transitions of a rollout (see ``compute_n_step``); the
    observations are those of the rollout (raw env observations in the PQL trainers)."""
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
        # No NormalizeObservation wrapper: the buffer keeps raw observations and the trainer
        # normalizes with the current statistics (see the module docstring).
        self.env = make_env_stack(env, None, trainer_cfg.num_envs, trainer_cfg.reset_pool)
        self.normalize_obs = bool(agent_cfg.normalize_obs)
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
        stats = None
        if self.normalize_obs:
            stats = RunningStats.create(self.obs_shape).update(obs)
        return OffPolicyState(agent_state, env_state, obs, key, jnp.int32(0), buffer, stats)

    def critic_batch(self, buffer: replay.ReplayBuffer, stats: Any, key: jax.Array):
        """A critic batch sampled from the buffer, normalized with ``stats``."""
        return normalize_batch(replay.sample(buffer, key, self.agent_cfg.batch_size), stats)

    def actor_obs(self, buffer: replay.ReplayBuffer, stats: Any, key: jax.Array):
        """Actor observations sampled from the buffer, normalized with ``stats``."""
        return normalize(replay.sample(buffer, key, self.agent_cfg.batch_size).obs, stats)

    def learn(self, agent_state: Any, buffer: replay.ReplayBuffer, stats: Any, key: jax.Array):
        """The synchronous schedule: ``actor_updates`` x (``beta_pv`` critic, 1 actor);
        batches normalized with ``stats`` (the statistics current at this update)."""
        acfg, agent = self.agent_cfg, self.agent

        def critic_step(st, k):
            k_sample, k_noise = jax.random.split(k)
            return agent.critic_update(st, self.critic_batch(buffer, stats, k_sample), k_noise)

        def group(st, k):
            k_critic, k_actor = jax.random.split(k)
            st, cm = jax.lax.scan(critic_step, st, jax.random.split(k_critic, acfg.beta_pv))
            st, am = agent.actor_update(st, self.actor_obs(buffer, stats, k_actor))
            return st, {**jax.tree.map(jnp.mean, cm), **am}

        st, m = jax.lax.scan(group, agent_state, jax.random.split(key, self.actor_updates))
        return st, jax.tree.map(jnp.mean, m)

    def update(self, state: OffPolicyState) -> tuple[OffPolicyState, dict]:
        acfg = self.agent_cfg
        key, key_rollout, key_learn = jax.random.split(state.key, 3)
        env_state, obs, tr = rollout(
            self.env,
            self.env_params,
            NormalizedPolicy(self.agent, state.obs_stats),
            state.agent,
            state.env_state,
            state.obs,
            key_rollout,
            self.cfg.rollout_length,
        )
        rows = n_step_transitions(tr, acfg.gamma, acfg.n_step, acfg.reward_scale)
        buffer = replay.add(state.buffer, rows)
        stats = update_stats(state.obs_stats, tr, obs)
        agent_state, losses = self.learn(state.agent, buffer, stats, key_learn)
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
        new_state = OffPolicyState(
            agent_state, env_state, obs, key, state.update_idx + 1, buffer, stats
        )
        return new_state, metrics

    def run_chunk(self, state: OffPolicyState, num_updates: int):
        return jax.lax.scan(lambda s, _: self.update(s), state, None, length=num_updates)

    def train(self, key: jax.Array):
        return self.run_chunk(self.init(key), self.resolved.num_updates)

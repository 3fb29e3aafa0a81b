"""The on-policy (PPO) trainer: ``train(key)`` is one jit of nested scans.

    update = rollout scan -> V(true next states) -> GAE -> agent.update (epochs x minibatches)
    train(key) = lax.scan(update, init(key), length=num_updates)

The host may instead call :meth:`OnPolicyTrainer.run_chunk` repeatedly (same result) to
show progress and log between chunks.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from hordax.agents.ppo import PPOBatch, RecurrentPPOBatch, make_agent
from hordax.envs.core import is_multi_agent
from hordax.envs.wrappers import (
    ClipAction,
    LogEpisode,
    NormalizeObservation,
    NormalizeReward,
    VecEnv,
)
from hordax.training.config import OnPolicyTrainerConfig, Resolved, resolve
from hordax.training.estimators import compute_gae
from hordax.training.rollout import recurrent_rollout, rollout


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


def make_env_stack(env: Any, agent_cfg: Any, num_envs: int, reset_pool: int = -1) -> Any:
    """The canonical wrapper stack for training (see ``hordax.envs.wrappers``), shared by
    every trainer; normalization as the agent config asks (fields absent = off);
    ``reset_pool`` as ``VecEnv`` takes it (``trainer.reset_pool``: -1 auto, 0 off)."""
    batch_env = VecEnv(LogEpisode(ClipAction(env)), num_envs, reset_pool=reset_pool)
    if getattr(agent_cfg, "normalize_obs", False):
        batch_env = NormalizeObservation(batch_env)
    if getattr(agent_cfg, "normalize_reward", False):
        batch_env = NormalizeReward(batch_env, gamma=agent_cfg.gamma)
    return batch_env


def episode_metrics(info: dict) -> dict[str, jax.Array]:
    """Sums over a rollout of finished-episode statistics (mean = sum / count on the host)."""
    log = info["log"]
    done = log["episode_done"]
    out = {
        "episode_count": jnp.sum(done.astype(jnp.float32)),
        "episode_return_sum": jnp.sum(jnp.where(done, log["episode_return"], 0.0)),
        "episode_length_sum": jnp.sum(jnp.where(done, log["episode_length"], 0)).astype(
            jnp.float32
        ),
    }
    for name, value in info.get("metrics", {}).items():
        out[f"task/{name}_sum"] = jnp.sum(jnp.where(done, value, 0.0)).astype(jnp.float32)
    return out


def finiteness(losses: dict, agent_state: Any) -> dict[str, jax.Array]:
    """``nonfinite/<quantity>`` flags (``bool[]``) read by the host's NaN guard.

    ``loss`` and ``grad_norm`` are minibatch means, so one non-finite minibatch shows.
    """
    params_ok = jnp.all(
        jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(agent_state.params)])
    )
    return {
        "nonfinite/loss": ~jnp.isfinite(losses["loss"]),
        "nonfinite/gradient": ~jnp.isfinite(losses["grad_norm"]),
        "nonfinite/parameters": ~params_ok,
    }


class OnPolicyTrainer:
    """PPO on a (single-agent) environment.

    Args:
        trainer_cfg: batch and budget sizes.
        agent_cfg: PPO hyperparameters.
        env, env_params: the raw environment and its params (wrapped here).
        resolved: derived sizes; computed from ``trainer_cfg`` when omitted.
    """

    def __init__(
        self,
        trainer_cfg: OnPolicyTrainerConfig,
        agent_cfg: Any,
        env: Any,
        env_params: Any,
        resolved: Resolved | None = None,
    ):
        if is_multi_agent(env):
            raise NotImplementedError("the PPO trainer supports single-agent envs for now")
        self.cfg = trainer_cfg
        self.agent_cfg = agent_cfg
        self.resolved = resolved or _resolve_sizes(trainer_cfg)
        self.env_params = env_params
        self.env = make_env_stack(env, agent_cfg, trainer_cfg.num_envs, trainer_cfg.reset_pool)
        obs_shape = env.observation_space(env_params).shape
        self.agent = make_agent(
            agent_cfg, obs_shape, env.action_space(env_params), self.resolved.num_updates
        )

    def init(self, key: jax.Array) -> TrainState:
        key, key_agent, key_env = jax.random.split(key, 3)
        obs, env_state = self.env.reset(key_env, self.env_params)
        state = TrainState(self.agent.init(key_agent), env_state, obs, key, jnp.int32(0))
        if self.agent.recurrent:
            n = self.cfg.num_envs
            state = state.replace(carry=self.agent.initial_carry(n), reset=jnp.ones((n,), bool))
        return state

    def update(self, state: TrainState) -> tuple[TrainState, dict]:
        """One rollout and one PPO update."""
        cfg, acfg, agent = self.cfg, self.agent_cfg, self.agent
        key, key_rollout, key_update = jax.random.split(state.key, 3)
        carry, reset = state.carry, state.reset
        if agent.recurrent:
            env_state, obs, carry, reset, tr = recurrent_rollout(
                self.env, self.env_params, agent, state.agent, state.env_state, state.obs,
                carry, reset, key_rollout, cfg.rollout_length,
            )  # fmt: skip
            next_value = tr.extras["next_value"]
        else:
            env_state, obs, tr = rollout(
                self.env, self.env_params, agent, state.agent, state.env_state, state.obs,
                key_rollout, cfg.rollout_length,
            )  # fmt: skip
        T, B = tr.reward.shape
        flat = lambda x: x.reshape((T * B, *x.shape[2:]))  # noqa: E731
        if not agent.recurrent:
            next_value = bootstrap_values(
                lambda o: agent.value(state.agent, o), tr.extras["value"], tr.next_obs, obs,
                tr.truncated,
            )  # fmt: skip
        advantage, target = compute_gae(
            tr.reward,
            tr.extras["value"],
            next_value,
            tr.terminated,
            tr.truncated,
            acfg.gamma,
            state.agent.hparams["gae_lambda"],
        )
        seq = (tr.obs, tr.action, tr.extras["log_prob"], tr.extras["value"], advantage, target)
        if agent.recurrent:
            batch = RecurrentPPOBatch(*seq, reset=tr.extras["reset"], carry0=state.carry)
        else:
            batch = PPOBatch(*(flat(x) for x in seq))
        agent_state, losses = agent.update(state.agent, batch, key_update)
        metrics = {**losses, **episode_metrics(tr.info), **finiteness(losses, agent_state)}
        new_state = TrainState(agent_state, env_state, obs, key, state.update_idx + 1, carry, reset)
        return new_state, metrics

    def run_chunk(self, state: TrainState, num_updates: int) -> tuple[TrainState, dict]:
        """``num_updates`` updates in one scan; metrics stacked ``[num_updates]``."""
        return jax.lax.scan(lambda s, _: self.update(s), state, None, length=num_updates)

    def train(self, key: jax.Array) -> tuple[TrainState, dict]:
        """The whole run: pure, jittable and vmappable over keys."""
        return self.run_chunk(self.init(key), self.resolved.num_updates)


def bootstrap_values(
    value_fn: Any,
    value: jax.Array,
    next_obs: Any,
    last_obs: Any,
    truncated: jax.Array,
) -> jax.Array:
    """``V(s_{t+1})`` ``f32[T, B]`` of a rollout's true next states, without a forward pass
    over every ``final_observation``.

    Where the episode goes on, ``s_{t+1}`` is the next row's observation, whose value the
    rollout already computed (``value[t + 1]``); after the last step it is ``last_obs [B]``
    (the batch's current observations: one pass over ``B`` rows). Only where ``truncated``
    is ``s_{t+1}`` the episode's ``final_observation`` (``next_obs [T, B, ...]``): those rows
    are evaluated ``B`` at a time, in as many rounds as there are truncations (usually
    one or none), rather than all ``T * B`` rows. Terminated rows keep the shifted value,
    which GAE multiplies by 0. Equal to ``value_fn`` on every ``next_obs`` row up to float
    rounding (the same network on the same inputs, in other batch sizes).
    """
    T, B = value.shape
    n = T * B
    shifted = jnp.concatenate([value[1:], value_fn(last_obs)[None]], axis=0).reshape(n)
    rows = jax.tree.map(lambda x: x.reshape((n, *x.shape[2:])), next_obs)
    trunc = truncated.reshape(n)
    rank = jnp.cumsum(trunc, dtype=jnp.int32) - 1
    # order[i]: the row of the i-th truncation; n (dropped) past the last
    order = (
        jnp.full((n,), n, jnp.int32)
        .at[jnp.where(trunc, rank, n)]
        .set(jnp.arange(n, dtype=jnp.int32), mode="drop")
    )
    count = rank[-1] + 1

    def one_round(c: tuple) -> tuple:
        r, out = c
        slots = jax.lax.dynamic_slice_in_dim(order, r * B, B)  # ascending; n = unused
        src = jnp.minimum(slots, n - 1)
        v = value_fn(jax.tree.map(lambda x: x[src], rows))
        return r + 1, out.at[slots].set(v, mode="drop", indices_are_sorted=True)

    _, out = jax.lax.while_loop(lambda c: c[0] * B < count, one_round, (jnp.int32(0), shifted))
    return out.reshape((T, B))


def _resolve_sizes(trainer_cfg: OnPolicyTrainerConfig) -> Resolved:
    from hordax.training.config import TrainConfig

    return resolve(TrainConfig(trainer=trainer_cfg))


def make_train(trainer_cfg: OnPolicyTrainerConfig, agent_cfg: Any, env: Any, env_params: Any):
    """``train(key) -> (final TrainState, metrics [num_updates])`` (PureJaxRL shape)."""
    return OnPolicyTrainer(trainer_cfg, agent_cfg, env, env_params).train

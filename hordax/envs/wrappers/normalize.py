"""Running observation and reward normalization over a batch of environments.

Both wrappers wrap a :class:`~hordax.envs.wrappers.VecEnv` (or another batch wrapper)
and keep one set of running statistics for the whole batch in their state, so the
statistics are saved and restored with the agent and, under sharding, reduced across
devices by XLA. Everything is jittable.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from hordax.envs.core import is_multi_agent
from hordax.envs.wrappers.base import Wrapper

#: Default clip and epsilon of normalized observations.
OBS_CLIP, OBS_EPS = 10.0, 1e-8


def normalize(
    obs: jax.Array, mean: jax.Array, var: jax.Array, clip: float = OBS_CLIP, eps: float = OBS_EPS
) -> jax.Array:
    """``clip((obs - mean) / sqrt(var + eps), -clip, clip)`` as ``f32`` (the one formula of
    observation normalization: this wrapper, PQL's sample-time normalization and the frozen
    statistics of saved agents use it). ``obs [..., *S]``, ``mean``, ``var`` ``f32 S``."""
    z = (obs.astype(jnp.float32) - mean) / jnp.sqrt(var + eps)
    return jnp.clip(z, -clip, clip).astype(jnp.float32)


@struct.dataclass
class RunningStats:
    """Mean and variance of a stream of arrays of shape ``S`` (float32)."""

    mean: jax.Array  # f32 S
    var: jax.Array  # f32 S
    count: jax.Array  # f32 []: samples seen (starts at a small epsilon)

    @classmethod
    def create(cls, shape: tuple[int, ...]) -> RunningStats:
        return cls(jnp.zeros(shape, jnp.float32), jnp.ones(shape, jnp.float32), jnp.float32(1e-4))

    def update(self, batch: jax.Array, weight: jax.Array | None = None) -> RunningStats:
        """Merge a batch ``[N, *S]`` (parallel-variance formula of Chan et al.).

        ``weight`` (``bool[N]`` or ``f32[N]``, optional): rows with weight 0 are left out
        exactly (a batch of all-zero weights changes nothing), e.g. masked agents.
        """
        batch = batch.astype(jnp.float32)
        if weight is None:
            b_mean = jnp.mean(batch, axis=0)
            b_var = jnp.var(batch, axis=0)
            b_count = jnp.float32(batch.shape[0])
        else:
            w = weight.astype(jnp.float32).reshape((-1,) + (1,) * (batch.ndim - 1))
            b_count = jnp.sum(w)
            safe = jnp.maximum(b_count, 1e-12)
            b_mean = jnp.sum(jnp.where(w > 0, w * batch, 0.0), axis=0) / safe
            dev = jnp.where(w > 0, w * jnp.square(batch - b_mean), 0.0)
            b_var = jnp.sum(dev, axis=0) / safe
        delta = b_mean - self.mean
        total = self.count + b_count
        mean = self.mean + delta * b_count / total
        m2 = self.var * self.count + b_var * b_count + delta**2 * self.count * b_count / total
        return RunningStats(mean, m2 / total, total)


def create_stats(obs: jax.Array, team_index: tuple[int, ...] | None) -> RunningStats:
    """Fresh statistics for a batch of observations ``[B, *S]``; multi-agent (``obs
    [B, n, *S]`` with ``team_index`` per slot): one set per team, ``[K, *S]``."""
    if team_index is None:
        return RunningStats.create(obs.shape[1:])
    teams = max(team_index) + 1
    return jax.tree.map(
        lambda x: jnp.broadcast_to(x, (teams, *x.shape)).copy(),
        RunningStats.create(obs.shape[2:]),
    )


def update_stats(
    stats: RunningStats, obs: jax.Array, mask: jax.Array | None, team_index: tuple | None
) -> RunningStats:
    """Merge ``obs [B, *S]`` (``[B, n, *S]`` multi-agent: each team's active rows,
    ``mask bool[B, n]``, into its own statistics)."""
    if team_index is None:
        return stats.update(obs)
    index = np.asarray(team_index)
    per_team = []
    for k in range(stats.mean.shape[0]):
        slots = np.nonzero(index == k)[0]
        rows = obs[:, slots].reshape((-1, *obs.shape[2:]))
        one = jax.tree.map(lambda x, k=k: x[k], stats)
        per_team.append(one.update(rows, mask[:, slots].reshape(-1)))
    return jax.tree.map(lambda *xs: jnp.stack(xs), *per_team)


def slot_stats(stats: RunningStats, team_index: tuple | None) -> tuple[jax.Array, jax.Array]:
    """``(mean, var)`` to normalize with: as kept, or each agent slot's team's ``[n, *S]``."""
    if team_index is None:
        return stats.mean, stats.var
    index = np.asarray(team_index)
    return stats.mean[index], stats.var[index]


@struct.dataclass
class NormalizeObservationState:
    env_state: Any
    obs_stats: RunningStats


class NormalizeObservation(Wrapper):
    """Normalize observations to ``clip((obs - mean) / sqrt(var + eps), -clip, clip)``.

    Statistics are updated with every reset/step batch *before* normalizing (so the
    first observations are already scaled) unless ``update_stats=False`` (evaluation).
    ``info["final_observation"]`` is normalized with the same statistics, so a critic
    bootstrapping through truncation sees the same scale as for ``obs``.

    Observations may be an array or a dict of arrays (``{"actor", "critic"}`` of a
    ``VecEnv(critic_obs=True)``): each entry keeps its own statistics (``obs_stats`` is then
    a dict of them). Multi-agent envs (``[B, n, *S]``): one set of statistics per team
    (``[K, *S]``), merged from the active agents only (``VecEnv``'s
    ``info["next_agent_mask"]``; at reset ``env.agent_mask``), so padding and finished
    agents leave them unchanged.
    """

    wraps_state = True

    def __init__(
        self, env: Any, clip: float = OBS_CLIP, eps: float = OBS_EPS, update_stats: bool = True
    ):
        super().__init__(env)
        if not clip > 0:
            raise ValueError(f"clip={clip}: must be > 0")
        self.clip, self.eps, self.update_stats = float(clip), float(eps), bool(update_stats)
        inner = self.unwrapped
        self._teams = tuple(inner.team_index) if is_multi_agent(inner) else None

    def _normalize(self, obs: Any, stats: Any) -> Any:
        def one(x: jax.Array, st: RunningStats) -> jax.Array:
            mean, var = slot_stats(st, self._teams)
            return normalize(x, mean, var, self.clip, self.eps)

        return jax.tree.map(one, obs, stats, is_leaf=lambda x: isinstance(x, RunningStats))

    def _update(self, stats: Any, obs: Any, mask: Any) -> Any:
        if not self.update_stats:
            return stats
        return jax.tree.map(
            lambda st, x: update_stats(st, x, mask, self._teams),
            stats,
            obs,
            is_leaf=lambda x: isinstance(x, RunningStats),
        )

    def reset(
        self, key: jax.Array, params: Any = None
    ) -> tuple[jax.Array, NormalizeObservationState]:
        obs, env_state = self._env.reset(key, params)
        stats = jax.tree.map(lambda x: create_stats(x, self._teams), obs)
        mask = None if self._teams is None else self._env.agent_mask(env_state, params)
        stats = self._update(stats, obs, mask)
        return self._normalize(obs, stats), NormalizeObservationState(env_state, stats)

    def step(
        self, key: jax.Array, state: NormalizeObservationState, action: Any, params: Any = None
    ) -> tuple[jax.Array, NormalizeObservationState, jax.Array, jax.Array, jax.Array, dict]:
        obs, env_state, reward, terminated, truncated, info = self._env.step(
            key, state.env_state, action, params
        )
        mask = None if self._teams is None else info["next_agent_mask"]
        stats = self._update(state.obs_stats, obs, mask)
        info = {**info, "final_observation": self._normalize(info["final_observation"], stats)}
        new_state = NormalizeObservationState(env_state, stats)
        return self._normalize(obs, stats), new_state, reward, terminated, truncated, info


@struct.dataclass
class NormalizeRewardState:
    env_state: Any
    discounted_return: jax.Array  # f32 [B]: running discounted return, 0 after an episode end
    return_stats: RunningStats  # of the discounted return, shape []


class NormalizeReward(Wrapper):
    """Scale rewards by the running std of the discounted return (no mean shift).

    ``G_t = gamma * G_{t-1} * (1 - done_{t-1}) + r_t``; reward ``r_t / sqrt(var(G) + eps)``,
    then clipped to ``[-clip, clip]``. Episode logging placed *inside* this wrapper
    (``LogEpisode``) still sees the raw rewards. Multi-agent envs: one return per agent
    slot (``[B, n]``), one variance over the returns of the agents active on the step.
    """

    wraps_state = True

    def __init__(self, env: Any, gamma: float = 0.99, clip: float = 10.0, eps: float = 1e-8):
        super().__init__(env)
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma={gamma}: must be in [0, 1]")
        self.gamma, self.clip, self.eps = float(gamma), float(clip), float(eps)

    def reset(self, key: jax.Array, params: Any = None) -> tuple[Any, NormalizeRewardState]:
        obs, env_state = self._env.reset(key, params)
        batch = jax.tree.leaves(obs)[0].shape[: 2 if is_multi_agent(self.unwrapped) else 1]
        state = NormalizeRewardState(
            env_state, jnp.zeros(batch, jnp.float32), RunningStats.create(())
        )
        return obs, state

    def step(
        self, key: jax.Array, state: NormalizeRewardState, action: Any, params: Any = None
    ) -> tuple[Any, NormalizeRewardState, jax.Array, jax.Array, jax.Array, dict]:
        obs, env_state, reward, terminated, truncated, info = self._env.step(
            key, state.env_state, action, params
        )
        discounted = self.gamma * state.discounted_return + reward
        done = jnp.logical_or(terminated, truncated)
        if discounted.ndim > 1:  # multi-agent [B, n]: active agents' returns only
            active = self._env.agent_mask(state.env_state, params)  # who acted this step
            stats = state.return_stats.update(discounted.reshape(-1), active.reshape(-1))
            done = done[:, None]
        else:
            stats = state.return_stats.update(discounted)
        scaled = jnp.clip(reward / jnp.sqrt(stats.var + self.eps), -self.clip, self.clip)
        new_state = NormalizeRewardState(env_state, jnp.where(done, 0.0, discounted), stats)
        return obs, new_state, scaled.astype(jnp.float32), terminated, truncated, info

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
from flax import struct

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

    def update(self, batch: jax.Array) -> RunningStats:
        """Merge a batch ``[N, *S]`` (parallel-variance formula of Chan et al.)."""
        batch = batch.astype(jnp.float32)
        b_mean = jnp.mean(batch, axis=0)
        b_var = jnp.var(batch, axis=0)
        b_count = jnp.float32(batch.shape[0])
        delta = b_mean - self.mean
        total = self.count + b_count
        mean = self.mean + delta * b_count / total
        m2 = self.var * self.count + b_var * b_count + delta**2 * self.count * b_count / total
        return RunningStats(mean, m2 / total, total)


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
    Requires array observations (not dict observations).
    """

    def __init__(
        self, env: Any, clip: float = OBS_CLIP, eps: float = OBS_EPS, update_stats: bool = True
    ):
        super().__init__(env)
        if not clip > 0:
            raise ValueError(f"clip={clip}: must be > 0")
        self.clip, self.eps, self.update_stats = float(clip), float(eps), bool(update_stats)

    def _normalize(self, obs: jax.Array, stats: RunningStats) -> jax.Array:
        return normalize(obs, stats.mean, stats.var, self.clip, self.eps)

    def reset(
        self, key: jax.Array, params: Any = None
    ) -> tuple[jax.Array, NormalizeObservationState]:
        obs, env_state = self._env.reset(key, params)
        stats = RunningStats.create(obs.shape[1:])
        if self.update_stats:
            stats = stats.update(obs)
        return self._normalize(obs, stats), NormalizeObservationState(env_state, stats)

    def step(
        self, key: jax.Array, state: NormalizeObservationState, action: Any, params: Any = None
    ) -> tuple[jax.Array, NormalizeObservationState, jax.Array, jax.Array, jax.Array, dict]:
        obs, env_state, reward, terminated, truncated, info = self._env.step(
            key, state.env_state, action, params
        )
        stats = state.obs_stats.update(obs) if self.update_stats else state.obs_stats
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
    (``LogEpisode``) still sees the raw rewards.
    """

    def __init__(self, env: Any, gamma: float = 0.99, clip: float = 10.0, eps: float = 1e-8):
        super().__init__(env)
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma={gamma}: must be in [0, 1]")
        self.gamma, self.clip, self.eps = float(gamma), float(clip), float(eps)

    def reset(self, key: jax.Array, params: Any = None) -> tuple[Any, NormalizeRewardState]:
        obs, env_state = self._env.reset(key, params)
        batch = jax.tree.leaves(obs)[0].shape[0]
        state = NormalizeRewardState(
            env_state, jnp.zeros((batch,), jnp.float32), RunningStats.create(())
        )
        return obs, state

    def step(
        self, key: jax.Array, state: NormalizeRewardState, action: Any, params: Any = None
    ) -> tuple[Any, NormalizeRewardState, jax.Array, jax.Array, jax.Array, dict]:
        obs, env_state, reward, terminated, truncated, info = self._env.step(
            key, state.env_state, action, params
        )
        discounted = self.gamma * state.discounted_return + reward
        stats = state.return_stats.update(discounted)
        done = jnp.logical_or(terminated, truncated)
        scaled = jnp.clip(reward / jnp.sqrt(stats.var + self.eps), -self.clip, self.clip)
        new_state = NormalizeRewardState(env_state, jnp.where(done, 0.0, discounted), stats)
        return obs, new_state, scaled.astype(jnp.float32), terminated, truncated, info

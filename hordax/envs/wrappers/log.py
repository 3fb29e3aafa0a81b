"""Episode return/length logging that stays correct under gymnax's auto-reset."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from hordax.envs.core import is_multi_agent, step_no_reset
from hordax.envs.wrappers.base import Wrapper


@struct.dataclass
class LogEpisodeState:
    """State of :class:`LogEpisode`; ``R`` is ``[]`` or ``[n_agents]``."""

    env_state: Any
    episode_return: jax.Array  # f32 R: return so far in the running episode
    episode_length: jax.Array  # i32 []: steps so far in the running episode


class LogEpisode(Wrapper):
    """Adds ``info["log"]`` = ``{"episode_return", "episode_length", "episode_done"}``.

    On the step that ends an episode (terminated or truncated), ``episode_done`` is True
    and ``episode_return``/``episode_length`` hold that *finished* episode's totals,
    including the final reward; on other steps they hold the running totals. The
    counters restart at 0 for the fresh episode that auto-reset began. Task metrics in
    ``info["metrics"]`` on an ``episode_done`` step are that episode's final metrics.
    """

    def _zero_return(self) -> jax.Array:
        shape = (self.unwrapped.num_agents,) if is_multi_agent(self._env) else ()
        return jnp.zeros(shape, jnp.float32)

    def reset(self, key: jax.Array, params: Any = None) -> tuple[Any, LogEpisodeState]:
        obs, env_state = self._env.reset(key, params)
        return obs, LogEpisodeState(env_state, self._zero_return(), jnp.int32(0))

    def step(
        self, key: jax.Array, state: LogEpisodeState, action: jax.Array, params: Any = None
    ) -> tuple[Any, LogEpisodeState, jax.Array, jax.Array, jax.Array, dict]:
        return self._log(state, self._env.step(key, state.env_state, action, params))

    def step_no_reset(
        self, key: jax.Array, state: LogEpisodeState, action: jax.Array, params: Any = None
    ) -> tuple[Any, LogEpisodeState, jax.Array, jax.Array, jax.Array, dict]:
        """``step`` minus the auto-reset: the counters restart at 0 on a done step all the
        same, as ``reset`` starts them, so a batch-level reset of the slot agrees."""
        return self._log(state, step_no_reset(self._env, key, state.env_state, action, params))

    def _log(
        self, state: LogEpisodeState, out: tuple
    ) -> tuple[Any, LogEpisodeState, jax.Array, jax.Array, jax.Array, dict]:
        obs, env_state, reward, terminated, truncated, info = out
        done = jnp.logical_or(terminated, truncated)
        episode_return = state.episode_return + reward.astype(jnp.float32)
        episode_length = state.episode_length + 1
        new_state = LogEpisodeState(
            env_state=env_state,
            episode_return=jnp.where(done, jnp.zeros_like(episode_return), episode_return),
            episode_length=jnp.where(done, 0, episode_length).astype(jnp.int32),
        )
        info = {
            **info,
            "log": {
                "episode_return": episode_return,
                "episode_length": episode_length,
                "episode_done": done,
            },
        }
        return obs, new_state, reward, terminated, truncated, info

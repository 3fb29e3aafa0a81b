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
    # Multi-agent envs only (None otherwise): bool[n_agents], the agent was active at the
    # running episode's start (False for padding slots).
    agent_present: Any = None


class LogEpisode(Wrapper):
    """Adds ``info["log"]`` = ``{"episode_return", "episode_length", "episode_done"}``.

    On the step that ends an episode (terminated or truncated), ``episode_done`` is True
    and ``episode_return``/``episode_length`` hold that *finished* episode's totals,
    including the final reward; on other steps they hold the running totals. The
    counters restart at 0 for the fresh episode that auto-reset began. Task metrics in
    ``info["metrics"]`` on an ``episode_done`` step are that episode's final metrics.

    Multi-agent envs: ``episode_return`` is ``f32[n_agents]`` and sums an agent's reward only
    on steps it was active on (``env.agent_mask`` of the state it acted in), so padding and
    finished agents add nothing; ``info["log"]["agent_present"]`` (``bool[n_agents]``) says
    which agents were active at the episode's start (episode metrics average over those).
    """

    wraps_state = True

    def _zero_return(self) -> jax.Array:
        shape = (self.unwrapped.num_agents,) if is_multi_agent(self._env) else ()
        return jnp.zeros(shape, jnp.float32)

    def _present(self, env_state: Any, params: Any) -> Any:
        if not is_multi_agent(self._env):
            return None
        params = self._env.default_params if params is None else params
        return self._env.agent_mask(env_state, params)

    def reset(self, key: jax.Array, params: Any = None) -> tuple[Any, LogEpisodeState]:
        obs, env_state = self._env.reset(key, params)
        present = self._present(env_state, params)
        return obs, LogEpisodeState(env_state, self._zero_return(), jnp.int32(0), present)

    def step(
        self, key: jax.Array, state: LogEpisodeState, action: jax.Array, params: Any = None
    ) -> tuple[Any, LogEpisodeState, jax.Array, jax.Array, jax.Array, dict]:
        return self._log(state, self._env.step(key, state.env_state, action, params), params)

    def step_no_reset(
        self, key: jax.Array, state: LogEpisodeState, action: jax.Array, params: Any = None
    ) -> tuple[Any, LogEpisodeState, jax.Array, jax.Array, jax.Array, dict]:
        """``step`` minus the auto-reset: the counters restart at 0 on a done step all the
        same, as ``reset`` starts them, so a batch-level reset of the slot agrees."""
        out = step_no_reset(self._env, key, state.env_state, action, params)
        return self._log(state, out, params)

    def _log(
        self, state: LogEpisodeState, out: tuple, params: Any
    ) -> tuple[Any, LogEpisodeState, jax.Array, jax.Array, jax.Array, dict]:
        obs, env_state, reward, terminated, truncated, info = out
        done = jnp.logical_or(terminated, truncated)
        reward = reward.astype(jnp.float32)
        present = state.agent_present
        if present is not None:  # an agent's reward counts on steps it was active on
            reward = jnp.where(self._present(state.env_state, params), reward, 0.0)
            # After an in-step auto-reset ``env_state`` is the new episode's first state.
            present = jnp.where(done, self._present(env_state, params), present)
        episode_return = state.episode_return + reward
        episode_length = state.episode_length + 1
        new_state = LogEpisodeState(
            env_state=env_state,
            episode_return=jnp.where(done, jnp.zeros_like(episode_return), episode_return),
            episode_length=jnp.where(done, 0, episode_length).astype(jnp.int32),
            agent_present=present,
        )
        log = {"episode_return": episode_return, "episode_length": episode_length}
        log["episode_done"] = done
        if present is not None:
            log["agent_present"] = state.agent_present
        info = {**info, "log": log}
        return obs, new_state, reward, terminated, truncated, info

"""The wrapper base: gymnax's ``GymnaxWrapper`` (``_env`` plus attribute proxy)."""

from __future__ import annotations

from typing import Any

from gymnax.wrappers.purerl import GymnaxWrapper

from hordax.envs.core import innermost, step_no_reset


class Wrapper(GymnaxWrapper):
    """Base wrapper; ``unwrapped`` reaches the innermost environment.

    A wrapper that overrides ``step`` also overrides ``step_no_reset`` (the same step minus
    gymnax's auto-reset, see :func:`hordax.envs.core.step_no_reset`) so that
    :class:`~hordax.envs.wrappers.VecEnv` can amortize fresh resets through it; one that does
    not is stepped with in-step resets (:func:`hordax.envs.core.supports_step_no_reset`).
    """

    #: Whether this wrapper's state holds the inner env's state in a field ``env_state``
    #: (stateful wrappers) rather than being that state itself (stateless ones).
    wraps_state = False

    def inner_state(self, state: Any) -> Any:
        """The wrapped env's state inside this wrapper's ``state``."""
        return state.env_state if self.wraps_state else state

    def map_env_state(self, state: Any, fn: Any) -> Any:
        """``state`` with the *innermost* env's state ``s`` replaced by ``fn(s)`` (through
        every wrapper below this one; the wrappers' own fields unchanged)."""
        inner = map_env_state(self._env, self.inner_state(state), fn)
        return state.replace(env_state=inner) if self.wraps_state else inner

    def critic_observation(self, state: Any, params: Any = None) -> Any:
        """The innermost env's ``critic_observation`` of the state inside ``state`` (see
        ``docs/env_protocol.md``, "Critic observations")."""
        return self._env.critic_observation(self.inner_state(state), params)

    def agent_mask(self, state: Any, params: Any = None) -> Any:
        """The innermost multi-agent env's ``agent_mask`` of the state inside ``state``."""
        return self._env.agent_mask(self.inner_state(state), params)

    def step_no_reset(
        self, key: Any, state: Any, action: Any, params: Any = None
    ) -> tuple[Any, Any, Any, Any, Any, dict]:
        """Pass-through for wrappers that leave ``step`` alone."""
        return step_no_reset(self._env, key, state, action, params)

    @property
    def unwrapped(self) -> Any:
        return innermost(self._env)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._env!r})"


def map_env_state(env: Any, state: Any, fn: Any) -> Any:
    """``env``'s ``state`` with its innermost env state ``s`` replaced by ``fn(s)``: through
    :meth:`Wrapper.map_env_state` for a wrapper, ``fn(state)`` for a bare env."""
    return env.map_env_state(state, fn) if isinstance(env, Wrapper) else fn(state)

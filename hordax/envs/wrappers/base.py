"""The wrapper base: gymnax's ``GymnaxWrapper`` (``_env`` plus attribute proxy)."""

from __future__ import annotations

from typing import Any

from gymnax.wrappers.purerl import GymnaxWrapper

from hordax.envs.core import step_no_reset


class Wrapper(GymnaxWrapper):
    """Base wrapper; ``unwrapped`` reaches the innermost environment.

    A wrapper that overrides ``step`` also overrides ``step_no_reset`` (the same step minus
    gymnax's auto-reset, see :func:`hordax.envs.core.step_no_reset`) so that
    :class:`~hordax.envs.wrappers.VecEnv` can amortize fresh resets through it; one that does
    not is stepped with in-step resets (:func:`hordax.envs.core.supports_step_no_reset`).
    """

    def step_no_reset(
        self, key: Any, state: Any, action: Any, params: Any = None
    ) -> tuple[Any, Any, Any, Any, Any, dict]:
        """Pass-through for wrappers that leave ``step`` alone."""
        return step_no_reset(self._env, key, state, action, params)

    @property
    def unwrapped(self) -> Any:
        inner = self._env
        while hasattr(inner, "_env"):
            inner = inner._env
        return inner

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._env!r})"

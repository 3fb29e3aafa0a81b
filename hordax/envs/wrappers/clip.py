"""Clip actions into the action space, with documented handling of NaN and inf."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from gymnax.environments import spaces

from hordax.envs.wrappers.base import Wrapper


def clip_action(action: jax.Array, space: spaces.Space) -> jax.Array:
    """Map any action into ``space`` (works inside jit).

    - ``Box``: ``+inf`` -> ``high``, ``-inf`` -> ``low``, ``NaN`` -> the midpoint
      ``(low + high) / 2`` (0 for symmetric bounds), then clip to ``[low, high]``.
    - ``Discrete(n)``: cast to int32 and clip to ``[0, n - 1]``.
    """
    if isinstance(space, spaces.Discrete):
        return jnp.clip(jnp.asarray(action).astype(jnp.int32), 0, space.n - 1)
    if isinstance(space, spaces.Box):
        low = jnp.asarray(space.low, jnp.float32)
        high = jnp.asarray(space.high, jnp.float32)
        action = jnp.asarray(action, jnp.float32)
        mid = jnp.where(jnp.isfinite(low) & jnp.isfinite(high), (low + high) / 2, 0.0)
        action = jnp.where(jnp.isnan(action), mid, action)
        return jnp.clip(action, low, high).astype(space.dtype)
    raise TypeError(f"ClipAction supports Box and Discrete action spaces, got {space!r}")


class ClipAction(Wrapper):
    """Clip every action into ``action_space(params)`` before the env sees it.

    Stateless: the wrapped state is the env's own. See :func:`clip_action` for the
    NaN/inf rule.
    """

    def step(
        self, key: jax.Array, state: Any, action: jax.Array, params: Any = None
    ) -> tuple[Any, Any, jax.Array, jax.Array, jax.Array, dict]:
        params = self._env.default_params if params is None else params
        action = clip_action(action, self._env.action_space(params))
        return self._env.step(key, state, action, params)

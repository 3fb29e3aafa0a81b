"""Clip actions into the action space, with documented handling of NaN and inf."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from gymnax.environments import spaces

from hordax.envs.core import check_action_shape, step_no_reset
from hordax.envs.spaces import MultiDiscrete
from hordax.envs.wrappers.base import Wrapper


def clip_action(action: jax.Array, space: spaces.Space) -> jax.Array:
    """Map any action into ``space`` (works inside jit).

    - ``Box``: ``+inf`` -> ``high``, ``-inf`` -> ``low``, ``NaN`` -> the midpoint
      ``(low + high) / 2`` (0 for symmetric bounds), then clip to ``[low, high]``.
    - ``Discrete(n)``: cast to int32 and clip to ``[0, n - 1]``.
    - ``MultiDiscrete(nvec)``: cast to int32 and clip entry ``i`` to ``[0, nvec[i] - 1]``.

    A float discrete action is cast by XLA's rule (toward zero, saturating, NaN -> 0), so NaN
    becomes action 0, ``+inf`` the last action and ``-inf`` action 0.
    """
    if isinstance(space, MultiDiscrete):
        high = jnp.asarray(space.nvec, jnp.int32) - 1
        return jnp.clip(jnp.asarray(action).astype(jnp.int32), 0, high)
    if isinstance(space, spaces.Discrete):
        return jnp.clip(jnp.asarray(action).astype(jnp.int32), 0, space.n - 1)
    if isinstance(space, spaces.Box):
        low = jnp.asarray(space.low, jnp.float32)
        high = jnp.asarray(space.high, jnp.float32)
        action = jnp.asarray(action, jnp.float32)
        mid = jnp.where(jnp.isfinite(low) & jnp.isfinite(high), (low + high) / 2, 0.0)
        action = jnp.where(jnp.isnan(action), mid, action)
        return jnp.clip(action, low, high).astype(space.dtype)
    raise TypeError(
        f"ClipAction supports Box, Discrete and MultiDiscrete action spaces, got {space!r}"
    )


class ClipAction(Wrapper):
    """Clip every action into ``action_space(params)`` before the env sees it.

    Stateless: the wrapped state is the env's own. See :func:`clip_action` for the
    NaN/inf rule. An action whose shape is not the space's raises ``ValueError`` when the
    step is traced (:func:`~hordax.envs.core.check_action_shape`), rather than being
    broadcast against the bounds; this covers gymnax's own envs too.
    """

    def step(
        self, key: jax.Array, state: Any, action: jax.Array, params: Any = None
    ) -> tuple[Any, Any, jax.Array, jax.Array, jax.Array, dict]:
        params, action = self._checked(action, params)
        return self._env.step(key, state, action, params)

    def step_no_reset(
        self, key: jax.Array, state: Any, action: jax.Array, params: Any = None
    ) -> tuple[Any, Any, jax.Array, jax.Array, jax.Array, dict]:
        """``step`` minus the auto-reset (:func:`hordax.envs.core.step_no_reset`)."""
        params, action = self._checked(action, params)
        return step_no_reset(self._env, key, state, action, params)

    def _checked(self, action: jax.Array, params: Any) -> tuple[Any, jax.Array]:
        """``(params, clipped action)``: default params filled in, the action's static shape
        checked against the space (trace time), then clipped into it."""
        params = self._env.default_params if params is None else params
        space = self._env.action_space(params)
        check_action_shape(action, space, "ClipAction")
        return params, clip_action(action, space)

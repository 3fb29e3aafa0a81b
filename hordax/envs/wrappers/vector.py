"""``VecEnv``: the batch view of an environment (``vmap`` over a leading env axis)."""

from __future__ import annotations

from typing import Any

import jax

from hordax.envs.wrappers.base import Wrapper


class VecEnv(Wrapper):
    """Run ``num_envs`` copies of ``env`` with one call.

    ``reset(key, params) -> (obs [B, ...], state [B])``;
    ``step(key, state [B], action [B, ...], params) -> (obs, state, reward [B], terminated [B],
    truncated [B], info [B, ...])``. One key is split into ``num_envs`` keys inside.

    Args:
        env: a (possibly wrapped) single environment.
        num_envs: batch size ``B``.
        params_batched: False when one params instance serves every env (default); True
            when params carry a leading ``[B]`` axis (domain randomization: ``vmap`` over
            params).
    """

    def __init__(self, env: Any, num_envs: int, params_batched: bool = False):
        super().__init__(env)
        if int(num_envs) < 1:
            raise ValueError(f"num_envs={num_envs}: must be an integer >= 1")
        self.num_envs = int(num_envs)
        self._params_axis = 0 if params_batched else None

    def reset(self, key: jax.Array, params: Any = None) -> tuple[Any, Any]:
        params = self._env.default_params if params is None else params
        keys = jax.random.split(key, self.num_envs)
        return jax.vmap(self._env.reset, in_axes=(0, self._params_axis))(keys, params)

    def step(
        self, key: jax.Array, state: Any, action: Any, params: Any = None
    ) -> tuple[Any, Any, jax.Array, jax.Array, jax.Array, dict]:
        params = self._env.default_params if params is None else params
        keys = jax.random.split(key, self.num_envs)
        return jax.vmap(self._env.step, in_axes=(0, 0, 0, self._params_axis))(
            keys, state, action, params
        )

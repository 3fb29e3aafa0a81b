"""Gymnasium adapters: hordax/gymnax envs for agents written outside JAX (numpy in, numpy out).

gymnax's own Gymnasium wrappers return jax arrays and fail gymnasium's ``check_env``, so this
is hordax's thin numpy layer (DESIGN.md):

- :class:`GymnasiumEnv`: one env as a ``gymnasium.Env``. ``reset(seed=...)`` seeds through
  ``super().reset`` (``self.np_random``), from which every JAX key is drawn, so a seed fixes
  the whole episode. ``step`` does **not** auto-reset (gymnasium's single-env contract):
  ``terminated`` comes from the env, ``truncated`` from its time limit.
- :class:`GymnasiumVectorEnv`: ``num_envs`` envs in one jitted, vmapped call, auto-resetting
  in the same step (``metadata["autoreset_mode"] = AutoresetMode.SAME_STEP``): where an
  episode ended, ``obs`` is the new episode's first observation and the true last one is in
  ``info["final_obs"]`` (an object array, ``None`` elsewhere, mask ``info["_final_obs"]``), as
  gymnasium's own ``SyncVectorEnv`` does.

Actions are validated on the host: a wrong shape, a non-numeric or (for ``Discrete``)
non-integer dtype, or an out-of-range discrete action raises ``ValueError`` naming the
expected and the given value. Continuous actions out of the box are clipped by the env as
documented (``hordax.envs.wrappers.ClipAction``).
"""

from __future__ import annotations

from typing import Any

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space
from gymnax.environments.spaces import gymnax_space_to_gym_space

from hordax.envs.wrappers.clip import ClipAction, clip_action


def _resolve(env: Any, params: Any, make_kwargs: dict) -> tuple[Any, Any]:
    if isinstance(env, str):
        from hordax.envs.registry import make

        return make(env, **make_kwargs)
    if make_kwargs:
        raise ValueError(f"make kwargs {sorted(make_kwargs)} need an env id, not an env object")
    return env, (env.default_params if params is None else params)


def _to_numpy(tree: Any) -> Any:
    return jax.tree.map(np.asarray, jax.device_get(tree))


def check_action(action: Any, space: gymnasium.spaces.Space, batch: int | None = None) -> Any:
    """Validate a host action against ``space`` (batched: leading ``batch`` axis); return it as
    a numpy array of the space's dtype, or raise ``ValueError`` naming the problem."""
    arr = np.asarray(action)
    shape = space.shape if batch is None else (batch, *space.shape)
    what = "action" if batch is None else "actions"
    if arr.shape != tuple(shape):
        raise ValueError(f"{what} has shape {arr.shape}, expected {tuple(shape)} for {space}")
    if isinstance(space, gymnasium.spaces.Discrete):
        if not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"{what} has dtype {arr.dtype}, expected an integer dtype for {space}")
        if arr.size and (arr.min() < space.start or arr.max() >= space.start + space.n):
            raise ValueError(
                f"{what} {arr.tolist()} outside {space} (allowed {space.start}.."
                f"{space.start + space.n - 1})"
            )
        return arr.astype(np.int32)
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"{what} has dtype {arr.dtype}, expected a real dtype for {space}")
    return arr.astype(space.dtype)


class GymnasiumEnv(gymnasium.Env):
    """One hordax or gymnax env as a ``gymnasium.Env`` (no auto-reset; numpy arrays).

    Args:
        env: an env id (made with ``hordax.make(env, **make_kwargs)``) or an env object.
        params: env params (default: the env's, or those ``make`` returns).
        render_mode: ``None`` or ``"rgb_array"`` (needs the env's ``render``).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(
        self, env: Any, params: Any = None, render_mode: str | None = None, **make_kwargs: Any
    ):
        self.env, self.params = _resolve(env, params, make_kwargs)
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode={render_mode!r}: allowed values are None, 'rgb_array'")
        self.render_mode = render_mode
        self.observation_space = gymnax_space_to_gym_space(self.env.observation_space(self.params))
        self.action_space = gymnax_space_to_gym_space(self.env.action_space(self.params))

        def step(key, state, action, params):
            action = clip_action(action, self.env.action_space(params))
            obs, state, reward, terminated, info = self.env.step_env(key, state, action, params)
            return obs, state, reward, terminated, self.env.is_truncated(state, params), info

        self._reset = jax.jit(self.env.reset)
        self._step = jax.jit(step)
        self._state = None
        self._key = None

    def _next_key(self) -> jax.Array:
        self._key, key = jax.random.split(self._key)
        return key

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._key = jax.random.key(int(self.np_random.integers(0, 2**31 - 1)))
        obs, self._state = self._reset(self._next_key(), self.params)
        return np.asarray(obs), {}

    def step(self, action: Any):
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        action = check_action(action, self.action_space)
        obs, self._state, reward, terminated, truncated, info = self._step(
            self._next_key(), self._state, jnp.asarray(action), self.params
        )
        return (
            np.asarray(obs),
            float(reward),
            bool(terminated),
            bool(truncated),
            _to_numpy(info),
        )

    def render(self):
        if self.render_mode != "rgb_array" or self._state is None:
            return None
        return np.asarray(self.env.render(self._state, self.params))


class GymnasiumVectorEnv(gymnasium.vector.VectorEnv):
    """``num_envs`` hordax/gymnax envs in one jitted ``vmap``; same-step auto-reset.

    Args:
        env: an env id or env object (as :class:`GymnasiumEnv`).
        num_envs: batch size.
        params: env params shared by all envs (default: the env's).
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, env: Any, num_envs: int, params: Any = None, **make_kwargs: Any):
        if int(num_envs) < 1:
            raise ValueError(f"num_envs={num_envs}: must be an integer >= 1")
        self.env, self.params = _resolve(env, params, make_kwargs)
        self.num_envs = int(num_envs)
        gx_action = self.env.action_space(self.params)
        self.single_observation_space = gymnax_space_to_gym_space(
            self.env.observation_space(self.params)
        )
        self.single_action_space = gymnax_space_to_gym_space(gx_action)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        wrapped = ClipAction(self.env)
        n = self.num_envs
        self._reset = jax.jit(
            lambda key, params: jax.vmap(wrapped.reset, in_axes=(0, None))(
                jax.random.split(key, n), params
            )
        )
        self._step = jax.jit(
            lambda key, state, action, params: jax.vmap(wrapped.step, in_axes=(0, 0, 0, None))(
                jax.random.split(key, n), state, action, params
            )
        )
        self._state = None
        self._key = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None or self._key is None:
            self._key = jax.random.key(int(self.np_random.integers(0, 2**31 - 1)))
        self._key, key = jax.random.split(self._key)
        obs, self._state = self._reset(key, self.params)
        return np.asarray(obs), {}

    def step(self, actions: Any):
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        actions = check_action(actions, self.single_action_space, batch=self.num_envs)
        self._key, key = jax.random.split(self._key)
        obs, self._state, reward, terminated, truncated, info = self._step(
            key, self._state, jnp.asarray(actions), self.params
        )
        terminated, truncated = np.asarray(terminated), np.asarray(truncated)
        ended = terminated | truncated
        final = np.asarray(info["final_observation"])
        info_out: dict[str, Any] = {
            k: _to_numpy(v) for k, v in info.items() if k in ("metrics", "reward_terms")
        }
        if ended.any():
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i in np.nonzero(ended)[0]:
                final_obs[i] = final[i]
            info_out["final_obs"], info_out["_final_obs"] = final_obs, ended
        return np.asarray(obs), np.asarray(reward, np.float64), terminated, truncated, info_out


def to_gymnasium(
    env: Any, num_envs: int = 1, seed: int | None = None, params: Any = None, **make_kwargs: Any
) -> GymnasiumVectorEnv:
    """A :class:`GymnasiumVectorEnv` of ``num_envs`` copies of ``env`` (an id or an env),
    reset once with ``seed`` if given."""
    venv = GymnasiumVectorEnv(env, num_envs, params=params, **make_kwargs)
    if seed is not None:
        venv.reset(seed=seed)
    return venv

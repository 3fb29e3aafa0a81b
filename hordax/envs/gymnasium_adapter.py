"""Gymnasium adapters: hordax/gymnax envs for agents written outside JAX (numpy in, numpy out).

gymnax's own Gymnasium wrappers return jax arrays and fail gymnasium's ``check_env``, so this
is hordax's thin numpy layer (DESIGN.md):

- :class:`GymnasiumEnv`: one env as a ``gymnasium.Env``. ``reset(seed=...)`` seeds through
  ``super().reset`` (``self.np_random``), from which every JAX key is drawn, so a seed fixes
  the whole episode. ``step`` does **not** auto-reset (gymnasium's single-env contract):
  ``terminated`` comes from the env, ``truncated`` from its time limit.
- :class:`GymnasiumVectorEnv`: ``num_envs`` envs in one jitted, vmapped call, auto-resetting
  in the same step (``metadata["autoreset_mode"] = AutoresetMode.SAME_STEP``), as gymnasium
  1.x's ``SyncVectorEnv(..., autoreset_mode=AutoresetMode.SAME_STEP)`` does: where an episode
  ended, ``obs`` is the new episode's first observation, the true last one is in
  ``info["final_obs"]`` (an object array, ``None`` elsewhere, mask ``info["_final_obs"]``) and
  the ended step's info in ``info["final_info"]`` (mask ``info["_final_info"]``).
  ``reset(seed=...)`` takes an int (env ``i`` gets ``seed + i``) or one seed per env, and
  ``options={"reset_mask": mask}`` resets only the masked envs, as gymnasium's vector envs do.

Multi-agent ids are refused (use :class:`hordax.envs.pettingzoo_adapter.PettingZooParallelEnv`),
and so is ``render_mode="rgb_array"`` for an env without ``render`` (gymnax's own envs).

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

from hordax.envs.core import is_multi_agent
from hordax.envs.spaces import MultiDiscrete
from hordax.envs.wrappers.clip import ClipAction, clip_action


def to_gym_space(space: Any) -> gymnasium.spaces.Space:
    """A gymnax (or hordax ``MultiDiscrete``) space as the equivalent gymnasium space."""
    if isinstance(space, MultiDiscrete):
        return gymnasium.spaces.MultiDiscrete(np.asarray(space.nvec, np.int64), dtype=np.int32)
    return gymnax_space_to_gym_space(space)


def _resolve(
    env: Any, params: Any, make_kwargs: dict, multi_agent: bool = False
) -> tuple[Any, Any]:
    """``(env, params)`` from an id or an env object; multi-agent envs are refused."""
    name = env if isinstance(env, str) else type(env).__name__
    if isinstance(env, str):
        from hordax.envs.registry import make

        env, made = make(env, **make_kwargs)
        params = made if params is None else params
    elif make_kwargs:
        raise ValueError(f"make kwargs {sorted(make_kwargs)} need an env id, not an env object")
    if is_multi_agent(env) and not multi_agent:
        raise ValueError(
            f"env={name!r} is multi-agent (arrays with an agent axis): use "
            "hordax.envs.pettingzoo_adapter.PettingZooParallelEnv, not a Gymnasium adapter"
        )
    return env, (env.default_params if params is None else params)


def _to_numpy(tree: Any) -> Any:
    """Writable numpy copies of ``tree``'s arrays (``np.asarray`` of a jax array is a
    read-only view; gymnasium's envs hand out arrays the caller owns)."""
    return jax.tree.map(np.array, jax.device_get(tree))


def check_action(action: Any, space: gymnasium.spaces.Space, batch: int | None = None) -> Any:
    """Validate a host action against ``space`` (batched: leading ``batch`` axis); return it as
    a numpy array of the space's dtype, or raise ``ValueError`` naming the problem."""
    arr = np.asarray(action)
    shape = space.shape if batch is None else (batch, *space.shape)
    what = "action" if batch is None else "actions"
    if arr.shape != tuple(shape):
        raise ValueError(f"{what} has shape {arr.shape}, expected {tuple(shape)} for {space}")
    if isinstance(space, gymnasium.spaces.MultiDiscrete):
        if not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"{what} has dtype {arr.dtype}, expected an integer dtype for {space}")
        if arr.size and (np.any(arr < space.start) or np.any(arr >= space.start + space.nvec)):
            raise ValueError(
                f"{what} {arr.tolist()} outside {space} (entry i allowed "
                f"{space.start.tolist()}..{(space.start + space.nvec - 1).tolist()})"
            )
        return arr.astype(np.int32)
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


def as_space_dtype(obs: Any, space: gymnasium.spaces.Space) -> Any:
    """``obs`` as a numpy array of ``space``'s dtype (a ``Discrete`` space's: an ``np.int64``
    scalar, as gymnasium's checker wants): some gymnax envs return another dtype than their
    space declares (Catch-bsuite float32 boards in an int32 Box, FourRooms-misc int32
    positions in a float32 Box, FrozenLake-misc 0-d int32 arrays), which gymnasium's
    ``check_env`` and ``space.contains`` reject or warn about."""
    obs = np.array(obs, dtype=space.dtype)  # a writable copy, not a view of a jax buffer
    return obs[()] if isinstance(space, gymnasium.spaces.Discrete) else obs


def _batched_info(info: dict, mask: np.ndarray) -> dict:
    """gymnasium's vector-info layout of the envs in ``mask``: every key ``k`` beside a bool
    mask ``_k``, nested dicts alike, zeros where masked out (as ``VectorEnv._add_info``
    builds it env by env); ``{}`` when no env is in ``mask``."""
    if not mask.any():
        return {}
    out: dict[str, Any] = {}
    for key, value in info.items():
        if isinstance(value, dict):
            out[key] = _batched_info(value, mask)
        else:
            where = mask.reshape(-1, *([1] * (value.ndim - 1)))
            out[key] = np.where(where, value, np.zeros_like(value))
        out[f"_{key}"] = mask.copy()
    return out


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
        can_render = callable(getattr(self.env, "render", None))
        if not can_render:  # gymnax's own envs do not draw
            self.metadata = {**self.metadata, "render_modes": []}
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode={render_mode!r}: allowed values are None, 'rgb_array'")
        if render_mode is not None and not can_render:
            raise ValueError(
                f"render_mode={render_mode!r}: {type(self.env).__name__} has no render() "
                "(gymnax's own envs do not draw); allowed here: None"
            )
        self.render_mode = render_mode
        self.observation_space = to_gym_space(self.env.observation_space(self.params))
        self.action_space = to_gym_space(self.env.action_space(self.params))

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

    def _obs_out(self, obs: Any) -> np.ndarray:
        return as_space_dtype(obs, self.observation_space)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._key = jax.random.key(int(self.np_random.integers(0, 2**31 - 1)))
        obs, self._state = self._reset(self._next_key(), self.params)
        return self._obs_out(obs), {}

    def step(self, action: Any):
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        action = check_action(action, self.action_space)
        obs, self._state, reward, terminated, truncated, info = self._step(
            self._next_key(), self._state, jnp.asarray(action), self.params
        )
        return (
            self._obs_out(obs),
            float(reward),
            bool(terminated),
            bool(truncated),
            _to_numpy(info),
        )

    def render(self):
        if self.render_mode != "rgb_array" or self._state is None:
            return None
        return np.array(self.env.render(self._state, self.params))


class GymnasiumVectorEnv(gymnasium.vector.VectorEnv):
    """``num_envs`` hordax/gymnax envs in one jitted ``vmap``; same-step auto-reset.

    Behaves as gymnasium 1.x's ``SyncVectorEnv`` in ``AutoresetMode.SAME_STEP`` (checked
    against it in the tests): ``info["final_obs"]``/``info["final_info"]`` with their masks
    where an episode ended, per-env seeds, ``options={"reset_mask": mask}``, and an error
    after ``close()``. ``info["metrics"]`` and ``info["reward_terms"]`` are batched as
    gymnasium batches infos (each key beside its ``_key`` mask): for an env that ended they
    are masked out, its last step's values being in ``final_info``.

    Args:
        env: an env id or env object (as :class:`GymnasiumEnv`; not multi-agent).
        num_envs: batch size, an integer >= 1.
        params: env params shared by all envs (default: the env's).
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, env: Any, num_envs: int, params: Any = None, **make_kwargs: Any):
        if isinstance(num_envs, bool) or not isinstance(num_envs, int | np.integer):
            raise ValueError(f"num_envs={num_envs!r}: must be an integer >= 1")
        if num_envs < 1:
            raise ValueError(f"num_envs={num_envs}: must be an integer >= 1")
        self.env, self.params = _resolve(env, params, make_kwargs)
        self.num_envs = int(num_envs)
        gx_action = self.env.action_space(self.params)
        self.single_observation_space = to_gym_space(self.env.observation_space(self.params))
        self.single_action_space = to_gym_space(gx_action)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        wrapped = ClipAction(self.env)

        reset_all = jax.vmap(wrapped.reset, in_axes=(0, None))

        def reset_some(keys, mask, obs, state, params):
            """Fresh episodes where ``mask``; the others keep their ``obs`` and ``state``."""

            def pick(new, old):
                return jnp.where(mask.reshape(-1, *([1] * (new.ndim - 1))), new, old)

            return jax.tree.map(pick, reset_all(keys, params), (obs, state))

        n = self.num_envs
        self._reset_all = jax.jit(reset_all)
        self._reset_some = jax.jit(reset_some)
        self._step = jax.jit(
            lambda key, state, action, params: jax.vmap(wrapped.step, in_axes=(0, 0, 0, None))(
                jax.random.split(key, n), state, action, params
            )
        )
        self._obs = None
        self._state = None
        self._key = None

    def _check_open(self) -> None:
        if self.closed:
            raise gymnasium.error.ClosedEnvironmentError(
                f"{type(self).__name__} was closed: make a new one to step or reset"
            )

    def _seeds(self, seed: int | list | None) -> list:
        """One seed (or None) per env, as ``SyncVectorEnv``: an int ``s`` -> ``s + i``."""
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, int | np.integer) and not isinstance(seed, bool):
            return [int(seed) + i for i in range(self.num_envs)]
        if (
            isinstance(seed, list | tuple | np.ndarray)
            and len(seed) == self.num_envs
            and all(s is None or (isinstance(s, int | np.integer) and s >= 0) for s in seed)
        ):
            return [None if s is None else int(s) for s in seed]
        raise ValueError(
            f"seed={seed!r}: must be None, an integer, or a list of num_envs={self.num_envs} "
            "integers >= 0 (or None)"
        )

    def reset(self, *, seed: int | list | None = None, options: dict | None = None):
        self._check_open()
        seeds = self._seeds(seed)
        given = [s for s in seeds if s is not None]
        if given:  # the step keys follow from the seeds too, so a seed fixes the whole run
            super().reset(seed=int(np.random.SeedSequence(given).generate_state(1)[0]))
        mask = np.ones(self.num_envs, bool)
        options = dict(options or {})
        if "reset_mask" in options:
            mask = options.pop("reset_mask")
            if not (
                isinstance(mask, np.ndarray)
                and mask.dtype == np.bool_
                and mask.shape == (self.num_envs,)
            ):
                raise ValueError(
                    f"options['reset_mask']={mask!r}: must be a numpy bool array of shape "
                    f"({self.num_envs},)"
                )
            if self._state is None:
                raise RuntimeError("call reset() without a reset_mask before resetting some envs")
        if options:
            raise ValueError(f"options keys {sorted(options)}: only 'reset_mask' is supported")
        # env i's key depends on its own seed only (as SyncVectorEnv's env i on seeds[i])
        draws = self.np_random.integers(0, 2**31 - 1, size=self.num_envs + 1)
        words = [
            d if s is None else np.random.SeedSequence(s).generate_state(1)[0]
            for s, d in zip(seeds, draws[:-1], strict=True)
        ]
        keys = jax.vmap(jax.random.key)(jnp.asarray(np.array(words, np.uint32)))
        if given or self._key is None:
            self._key = jax.random.key(int(draws[-1]))
        if mask.all():
            self._obs, self._state = self._reset_all(keys, self.params)
        else:
            self._obs, self._state = self._reset_some(
                keys, jnp.asarray(mask), self._obs, self._state, self.params
            )
        return as_space_dtype(self._obs, self.observation_space), {}

    def step(self, actions: Any):
        self._check_open()
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        actions = check_action(actions, self.single_action_space, batch=self.num_envs)
        self._key, key = jax.random.split(self._key)
        obs, self._state, reward, terminated, truncated, info = self._step(
            key, self._state, jnp.asarray(actions), self.params
        )
        self._obs = obs
        terminated, truncated = np.array(terminated), np.array(truncated)
        ended = terminated | truncated
        info_np = {k: _to_numpy(v) for k, v in info.items() if k in ("metrics", "reward_terms")}
        # SAME_STEP as SyncVectorEnv: an env that ended reports its step's info under
        # final_info; at the top level it has its reset's info (empty, so masked out).
        info_out = _batched_info(info_np, ~ended)
        if ended.any():
            final = as_space_dtype(info["final_observation"], self.observation_space)
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i in np.nonzero(ended)[0]:
                final_obs[i] = final[i]
            info_out.update(
                final_obs=final_obs,
                _final_obs=ended.copy(),
                final_info=_batched_info(info_np, ended),
                _final_info=ended.copy(),
            )
        obs = as_space_dtype(obs, self.observation_space)
        return obs, np.array(reward, np.float64), terminated, truncated, info_out


def to_gymnasium(
    env: Any, num_envs: int = 1, seed: int | None = None, params: Any = None, **make_kwargs: Any
) -> GymnasiumVectorEnv:
    """A :class:`GymnasiumVectorEnv` of ``num_envs`` copies of ``env`` (an id or an env),
    reset once with ``seed`` if given."""
    venv = GymnasiumVectorEnv(env, num_envs, params=params, **make_kwargs)
    if seed is not None:
        venv.reset(seed=seed)
    return venv

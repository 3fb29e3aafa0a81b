"""Subjects (:class:`~hordax.benchmarking.harness.Subject`) for the two paths a user of a
gymnax-API env takes, hordax's or gymnax's own:

- :func:`vmap_subject`: ``jax.vmap(env.step)``, gymnax's in-step auto-reset (a fresh
  ``reset_env`` computed for every env on every step, selected where an episode ended);
- :func:`vecenv_subject`: hordax's :class:`~hordax.envs.wrappers.VecEnv`, whose amortized
  resets compute ``reset_pool`` fresh resets per step for the slots that finished.

Both return the step's every output: ``obs``, ``reward``, ``terminated``, ``truncated``,
``done`` (``terminated | truncated``) and the whole ``info`` dict
(``info["final_observation"]`` included).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from hordax.benchmarking.harness import Subject
from hordax.envs.wrappers import VecEnv


def step_outputs(obs: Any, reward: Any, terminated: Any, truncated: Any, info: Any) -> dict:
    """The harness's ``outputs`` dict of a gymnax-API step's results."""
    done = jnp.logical_or(terminated, truncated)
    return {
        "obs": obs,
        "reward": reward,
        "done": done,
        "terminated": terminated,
        "truncated": truncated,
        "info": info,
    }


def vmap_subject(
    env: Any, params: Any, num_envs: int, name: str = "", library: str = "hordax"
) -> Subject:
    """``num_envs`` copies of ``env`` stepped by ``jax.vmap(env.step)`` (one params for all).

    ``env`` is any gymnax-API environment (a hordax env, a bare gymnax one, a wrapped one).
    """
    vreset = jax.vmap(env.reset, in_axes=(0, None))
    vstep = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def reset(key: jax.Array) -> Any:
        return vreset(jax.random.split(key, num_envs), params)[1]

    def step(key: jax.Array, state: Any, action: Any) -> tuple[Any, dict]:
        obs, state, reward, term, trunc, info = vstep(
            jax.random.split(key, num_envs), state, action, params
        )
        return state, step_outputs(obs, reward, term, trunc, info)

    return Subject(
        name or f"{library} vmap(env.step)", num_envs, reset, step, library, "vmap(env.step)"
    )


def vecenv_subject(
    env: Any, params: Any, num_envs: int, reset_pool: int = -1, name: str = ""
) -> Subject:
    """``VecEnv(env, num_envs, reset_pool=reset_pool)``: amortized fresh resets
    (``-1`` the default pool, ``0`` in-step resets of every env as gymnax's ``step``)."""
    return batch_subject(
        VecEnv(env, num_envs, reset_pool=reset_pool),
        params,
        num_envs,
        name or f"hordax VecEnv(reset_pool={reset_pool})",
        path=f"VecEnv(reset_pool={reset_pool})",
    )


def batch_subject(
    batch_env: Any, params: Any, num_envs: int, name: str, path: str, library: str = "hordax"
) -> Subject:
    """A subject of a batch env with ``VecEnv``'s call shapes (``reset(key, params) ->
    (obs, state)``, ``step(key, state, action, params) -> (obs, state, reward, terminated,
    truncated, info)``): ``VecEnv`` itself or a wrapper stack over it."""

    def reset(key: jax.Array) -> Any:
        return batch_env.reset(key, params)[1]

    def step(key: jax.Array, state: Any, action: Any) -> tuple[Any, dict]:
        obs, state, reward, term, trunc, info = batch_env.step(key, state, action, params)
        return state, step_outputs(obs, reward, term, trunc, info)

    return Subject(name, num_envs, reset, step, library, path)


def action_sampler(env: Any, params: Any, num_envs: int) -> Any:
    """``key -> action [num_envs, ...]``: the env's action space sampled once per env (the
    same sampler serves every side of a comparison)."""
    space = env.action_space(params)
    return lambda key: jax.vmap(space.sample)(jax.random.split(key, num_envs))

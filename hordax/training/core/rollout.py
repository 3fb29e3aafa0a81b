"""Collect a rollout from a batch env with an agent (one ``lax.scan``)."""

from __future__ import annotations

from typing import Any

import jax
from flax import struct


@struct.dataclass
class Transition:
    """One step of a batch of envs; after the rollout scan every leaf is ``[T, B, ...]``."""

    obs: Any  # observation the action was chosen on
    action: jax.Array
    reward: jax.Array  # f32
    terminated: jax.Array  # bool
    truncated: jax.Array  # bool
    next_obs: Any  # info["final_observation"]: the true s_{t+1}, also at episode ends
    extras: dict  # agent extras (log_prob, value, ...)
    info: dict  # env info without final_observation (log, metrics, ...)


def env_step(env: Any, env_params: Any, key: jax.Array, env_state: Any, action: Any) -> tuple:
    """One batch step: ``(next_obs, env_state, reward, terminated, truncated, final_obs,
    info)`` with ``final_obs = info["final_observation"]`` (the true next observation, also
    at episode ends) taken out of ``info``, and the info's duplicate done flags dropped."""
    next_obs, env_state, reward, terminated, truncated, info = env.step(
        key, env_state, action, env_params
    )
    info = dict(info)
    final_obs = info.pop("final_observation")
    for k in ("terminated", "truncated"):
        info.pop(k, None)
    return next_obs, env_state, reward, terminated, truncated, final_obs, info


def rollout(
    env: Any,
    env_params: Any,
    agent: Any,
    agent_state: Any,
    env_state: Any,
    obs: Any,
    key: jax.Array,
    length: int,
) -> tuple[Any, Any, Transition]:
    """Run ``length`` steps of the batch env ``env`` with ``agent.act``.

    Returns ``(env_state, obs, transitions)`` with transitions ``[length, B, ...]``.
    """

    def step(carry, key_t):
        env_state, obs = carry
        key_act, key_env = jax.random.split(key_t)
        action, extras = agent.act(agent_state, obs, key_act)
        next_obs, env_state, reward, terminated, truncated, final_obs, info = env_step(
            env, env_params, key_env, env_state, action
        )
        tr = Transition(obs, action, reward, terminated, truncated, final_obs, extras, info)
        return (env_state, next_obs), tr

    (env_state, obs), transitions = jax.lax.scan(
        step, (env_state, obs), jax.random.split(key, length)
    )
    return env_state, obs, transitions


def recurrent_rollout(
    env: Any,
    env_params: Any,
    agent: Any,
    agent_state: Any,
    env_state: Any,
    obs: Any,
    carry: Any,
    reset: jax.Array,
    key: jax.Array,
    length: int,
) -> tuple[Any, Any, Any, jax.Array, Transition]:
    """``length`` steps with a recurrent agent (``agent.act_recurrent``).

    ``carry``: the agent's recurrent state ``[B, ...]``; ``reset bool[B]``: the current
    observation starts an episode (the carry is zeroed before it is used). Returns
    ``(env_state, obs, carry, reset, transitions)``; ``transitions.extras`` also holds
    ``reset [T, B]`` and ``next_value [T, B]`` = V(final_observation) continuing the carry
    (the bootstrap value through truncation).
    """

    def step(c, key_t):
        env_state, obs, carry, reset = c
        key_act, key_env = jax.random.split(key_t)
        action, extras, carry = agent.act_recurrent(agent_state, obs, key_act, carry, reset)
        next_obs, env_state, reward, terminated, truncated, final_obs, info = env_step(
            env, env_params, key_env, env_state, action
        )
        extras = {
            **extras,
            "reset": reset,
            "next_value": agent.value_recurrent(agent_state, final_obs, carry),
        }
        tr = Transition(obs, action, reward, terminated, truncated, final_obs, extras, info)
        return (env_state, next_obs, carry, terminated | truncated), tr

    (env_state, obs, carry, reset), transitions = jax.lax.scan(
        step, (env_state, obs, carry, reset), jax.random.split(key, length)
    )
    return env_state, obs, carry, reset, transitions

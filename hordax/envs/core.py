"""The hordax environment protocol: thin subclasses of gymnax's ``Environment``.

Single-agent envs implement, as in gymnax 1.0::

    reset_env(key, params) -> (obs, state)
    step_env(key, state, action, params) -> (obs, state, reward, terminated, info)
    observation_space(params), action_space(params), default_params

and callers use the inherited, jitted ``reset`` and ``step``; ``step`` returns
``(obs, state, reward, terminated, truncated, info)``, computes ``truncated`` from
``state.time >= params.max_steps_in_episode``, auto-resets with a *fresh* ``reset_env``
and puts the pre-reset observation in ``info["final_observation"]``.

hordax tightens the contract (see ``docs/env_protocol.md``):

- ``reward`` float32 ``[]``, ``terminated``/``truncated`` bool ``[]``; ``step_env`` never
  folds the time limit into ``terminated``.
- ``info`` has the same pytree structure every step and holds two dicts,
  ``info["metrics"]`` (task metrics, e.g. success) and ``info["reward_terms"]``
  (named, unscaled reward terms); both may be empty.

Multi-agent envs (:class:`MultiAgentEnvironment`) keep the same call shapes with a
leading agent axis: obs ``[n_agents, ...]``, action ``[n_agents, ...]``, reward
``f32[n_agents]``; ``terminated`` stays a scalar ``bool[]`` (the episode ends: gymnax's
auto-reset selects on a scalar) and per-agent status lives in
``info["agent_terminated"]`` and ``info["agent_mask"]``, both ``bool[n_agents]``.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import environment as gx_env

TEnvState = TypeVar("TEnvState")
TEnvParams = TypeVar("TEnvParams")


@struct.dataclass
class EnvState:
    """Base state: every hordax state carries the step counter ``time`` (int32 ``[]``)."""

    time: jax.Array


@struct.dataclass
class EnvParams:
    """Base params: the time limit that makes an episode *truncate* (int ``[]``)."""

    max_steps_in_episode: int = 500


def empty_info() -> dict[str, dict[str, jax.Array]]:
    """The minimal hordax ``info`` returned by ``step_env``: no metrics, no reward terms."""
    return {"metrics": {}, "reward_terms": {}}


class Environment(gx_env.Environment, Generic[TEnvState, TEnvParams]):
    """A single-agent hordax environment (a gymnax 1.0 ``Environment``).

    Subclasses implement ``reset_env``, ``step_env``, ``observation_space``,
    ``action_space`` and ``default_params``; optionally ``render(state, params)``
    returning ``uint8[H, W, 3]`` and ``validate_params(params)`` (host-side checks that
    raise ``ValueError`` naming the field, the value and the allowed range).
    """

    #: Whether ``reset_env`` draws a random initial state (the contract suite then checks
    #: that consecutive episodes in one slot start differently).
    random_reset: bool = True

    def validate_params(self, params: Any) -> None:
        """Check user-supplied params on the host; raise ``ValueError`` naming the field."""
        steps = getattr(params, "max_steps_in_episode", None)
        if steps is not None and int(jnp.min(jnp.asarray(steps))) < 1:
            raise ValueError(f"params.max_steps_in_episode={steps}: must be an integer >= 1")


class MultiAgentEnvironment(Environment[TEnvState, TEnvParams]):
    """A multi-agent hordax environment: arrays with a leading agent axis.

    ``step_env`` returns ``(obs [n, ...], state, reward f32[n], terminated bool[], info)``
    with ``info["agent_terminated"]`` and ``info["agent_mask"]`` of shape ``bool[n]``
    (``agent_mask`` is False for padding, not-yet-spawned or finished agents).
    ``action_space``/``observation_space`` describe the *stacked* arrays. A trainer that
    shares parameters folds ``[num_envs, n_agents]`` into its batch with one reshape.
    """

    @property
    def num_agents(self) -> int:
        """Number of agent slots (the static size of the agent axis)."""
        raise NotImplementedError

    @property
    def agents(self) -> list[str]:
        """Agent names for dict-per-agent adapters (PettingZoo/JaxMARL view)."""
        return [f"agent_{i}" for i in range(self.num_agents)]


def is_multi_agent(env: Any) -> bool:
    """True when ``env`` (possibly wrapped) is a :class:`MultiAgentEnvironment`."""
    inner = env
    while hasattr(inner, "_env"):
        inner = inner._env
    return isinstance(inner, MultiAgentEnvironment)

"""PettingZoo adapter: a hordax multi-agent env as a ``pettingzoo.ParallelEnv`` (numpy, dicts).

hordax's multi-agent envs stack agents on a leading axis (``obs [n, ...]``, ``action [n, ...]``,
``reward f32[n]``, a scalar episode ``terminated``, ``info["agent_terminated"]`` and
``info["agent_mask"]``). This adapter gives the dict-per-agent view outside code expects:

- ``possible_agents = env.agents``; agent ``i``'s spaces are the env's own
  ``agent_observation_space(i)`` / ``agent_action_space(i)`` (unpadded: agents of different
  teams may differ; a ``MultiDiscrete`` stack gives each agent a ``Discrete``);
- ``reset(seed=...)`` fixes the episode (every JAX key is drawn from the seed); no auto-reset;
  ``agents`` are the slots active in the first state (``env.agent_mask``): padding slots
  (e.g. a GPUDrive scene with fewer controllable vehicles than ``num_agents``) never appear;
- ``step(actions)`` returns dicts keyed by the live agents; an agent is terminated when the
  episode terminates, ``info["agent_terminated"]`` marks it or it is no longer active
  (``info["agent_mask"]``), all are truncated at the time limit, and agents that ended are
  removed from ``agents`` (PettingZoo's convention).
  Every live agent needs an action (a missing one is refused); the slots of agents that
  are not live are sent as zeros; actions are validated on the host (shape, dtype) like
  :mod:`hordax.envs.gymnasium_adapter`.
"""

from __future__ import annotations

import functools
from typing import Any

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
from pettingzoo import ParallelEnv

from hordax.envs.core import is_multi_agent
from hordax.envs.gymnasium_adapter import _resolve, check_action, to_gym_space
from hordax.envs.wrappers.clip import clip_action


@functools.partial(jax.jit, static_argnames=("env",))
def _step(env: Any, key: jax.Array, state: Any, action: Any, params: Any) -> tuple:
    """``step_env`` on the clipped action, plus ``truncated`` (no auto-reset)."""
    action = clip_action(action, env.action_space(params))
    obs, state, reward, terminated, info = env.step_env(key, state, action, params)
    return obs, state, reward, terminated, env.is_truncated(state, params), info


class PettingZooParallelEnv(ParallelEnv):
    """A hordax :class:`~hordax.envs.core.MultiAgentEnvironment` as a PettingZoo ParallelEnv.

    Args:
        env: an env id (made with ``hordax.make(env, **make_kwargs)``) or an env object.
        params: env params (default: the env's, or those ``make`` returns).
    """

    metadata = {"name": "hordax_parallel_v0", "render_modes": ["rgb_array"]}

    def __init__(
        self, env: Any, params: Any = None, render_mode: str | None = None, **make_kwargs: Any
    ):
        self.env, self.params = _resolve(env, params, make_kwargs, multi_agent=True)
        if not is_multi_agent(self.env):
            raise ValueError(f"{type(self.env).__name__} is single-agent: use GymnasiumEnv")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode={render_mode!r}: allowed values are None, 'rgb_array'")
        self.render_mode = render_mode
        self.possible_agents = list(self.env.agents)
        self._obs_spaces = {
            a: to_gym_space(self.env.agent_observation_space(i, self.params))
            for i, a in enumerate(self.possible_agents)
        }
        self._act_spaces = {
            a: to_gym_space(self.env.agent_action_space(i, self.params))
            for i, a in enumerate(self.possible_agents)
        }
        self._stacked_action = to_gym_space(self.env.action_space(self.params))

        # jitted with the env as a static argument: adapters over equal envs (an env class
        # that defines value equality, e.g. MPE's) share one compiled program
        self._reset = self.env.reset  # gymnax jits it with the env static
        self._step = functools.partial(_step, self.env)
        self._state = None
        self._key = None
        self.agents: list[str] = []

    def observation_space(self, agent: str) -> gymnasium.spaces.Space:
        return self._obs_spaces[agent]

    def action_space(self, agent: str) -> gymnasium.spaces.Space:
        return self._act_spaces[agent]

    def _obs_dict(self, obs: Any, agents: list[str]) -> dict[str, np.ndarray]:
        """Agent rows of the stacked ``obs [n, D]``, each cut to its own (unpadded) size.

        Each row is the agent's own writable copy: ``np.asarray`` of a jax array is a
        read-only view, and a view shared by all agents would let one agent's in-place edit
        change another's observation."""
        obs = np.asarray(obs)
        out = {}
        for a in agents:
            row = obs[self.possible_agents.index(a)]
            out[a] = np.array(row[tuple(slice(0, d) for d in self._obs_spaces[a].shape)])
        return out

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None or self._key is None:
            seed = int(np.random.SeedSequence(seed).generate_state(1)[0] >> 1)
            self._key = jax.random.key(seed)
        self._key, key = jax.random.split(self._key)
        obs, self._state = self._reset(key, self.params)
        active = np.asarray(self.env.agent_mask(self._state, self.params))
        self.agents = [a for a, on in zip(self.possible_agents, active, strict=True) if on]
        return self._obs_dict(obs, self.agents), {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]):
        if self._state is None or not self.agents:
            raise RuntimeError("call reset() before step() (and after every agent has ended)")
        unknown = sorted(set(actions) - set(self.agents))
        if unknown:
            raise ValueError(
                f"actions for agents that are not live: {unknown}; live: {self.agents}"
            )
        stacked = np.zeros(self._stacked_action.shape, self._stacked_action.dtype)
        for i, a in enumerate(self.possible_agents):
            if a in actions:  # an agent's own action; trailing entries of a wider stack stay 0
                row = check_action(actions[a], self._act_spaces[a])
                stacked[(i, *(slice(0, d) for d in row.shape))] = row
        missing = [a for a in self.agents if a not in actions]
        if missing:  # a live agent's action is never made up (PettingZoo's wrappers refuse too)
            raise ValueError(f"no action for live agents {missing}; live: {self.agents}")
        self._key, key = jax.random.split(self._key)
        obs, self._state, reward, terminated, truncated, info = self._step(
            key, self._state, jnp.asarray(stacked), self.params
        )
        live = list(self.agents)
        # an agent ends when it terminates, or when it is no longer active (agent_mask)
        agent_done = (
            np.asarray(info["agent_terminated"])
            | ~np.asarray(info["agent_mask"])
            | bool(terminated)
        )
        index = {a: i for i, a in enumerate(self.possible_agents)}
        terminations = {a: bool(agent_done[index[a]]) for a in live}
        truncations = {a: bool(truncated) for a in live}
        rewards = {a: float(np.asarray(reward)[index[a]]) for a in live}
        metrics = jax.tree.map(np.array, jax.device_get(info.get("metrics", {})))
        infos = {a: {"metrics": metrics} for a in live}
        self.agents = [a for a in live if not (terminations[a] or truncations[a])]
        return self._obs_dict(obs, live), rewards, terminations, truncations, infos

    def render(self):
        if self.render_mode != "rgb_array" or self._state is None:
            return None
        return np.array(self.env.render(self._state, self.params))

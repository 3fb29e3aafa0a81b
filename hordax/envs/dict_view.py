"""A JaxMARL-style dict view of a hordax multi-agent env (jittable, a thin layer).

hordax's multi-agent envs stack agents on a leading axis; JaxMARL code expects dicts keyed
by agent name. :class:`DictView` converts at the edge, inside jit:

- ``reset(key, params) -> (obs, state)``: ``obs[name]`` is the agent's own, unpadded
  ``f32[d_i]`` observation;
- ``step(key, state, actions, params) -> (obs, state, rewards, dones, info)``: ``actions[name]``
  is the agent's own action (an int for discrete actions, ``f32[a_i]`` for continuous ones),
  ``rewards[name]`` an ``f32[]``, ``dones[name]`` a ``bool[]`` (the episode ended, the agent
  terminated, or it is not active: ``info["agent_mask"]`` False, so an agent that ended, or a
  padding slot, is done on every later step, JaxMARL's convention for dead agents) plus
  ``dones["__all__"]`` (the episode ended: terminated or truncated, the JaxMARL convention
  of one ``done``). ``info`` is the env's own (``terminated`` and
  ``truncated`` stay apart there). Auto-reset is the env's (gymnax's, fresh draws).

Use the array view for training (one reshape folds the agent axis into the batch); this is
for code written against JaxMARL's interface.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from hordax.envs.core import is_multi_agent


class DictView:
    """A :class:`~hordax.envs.core.MultiAgentEnvironment` with dict-per-agent inputs/outputs.

    Args:
        env: the multi-agent env (its ``agents`` name the dict keys).
    """

    def __init__(self, env: Any):
        if not is_multi_agent(env):
            raise ValueError(f"{type(env).__name__} is single-agent: DictView needs agents")
        self.env = env
        self.agents = list(env.agents)

    @property
    def num_agents(self) -> int:
        return self.env.num_agents

    @property
    def default_params(self) -> Any:
        return self.env.default_params

    def observation_space(self, agent: str, params: Any) -> Any:
        """Agent ``agent``'s own (unpadded) observation space."""
        return self.env.agent_observation_space(self.agents.index(agent), params)

    def action_space(self, agent: str, params: Any) -> Any:
        """Agent ``agent``'s own action space."""
        return self.env.agent_action_space(self.agents.index(agent), params)

    def obs_dict(self, obs: jax.Array, params: Any) -> dict[str, jax.Array]:
        """Stacked ``[n, D]`` observations -> ``{name: f32[d_i]}`` (padding dropped)."""
        out = {}
        for i, name in enumerate(self.agents):
            shape = self.env.agent_observation_space(i, params).shape
            out[name] = obs[(i, *(slice(0, d) for d in shape))]
        return out

    def stack_actions(self, actions: dict[str, Any], params: Any) -> jax.Array:
        """``{name: action_i}`` -> the stacked action (entries past an agent's own width 0)."""
        missing = [a for a in self.agents if a not in actions]
        if missing or len(actions) != len(self.agents):
            extra = sorted(set(actions) - set(self.agents))
            raise ValueError(f"actions: missing {missing}, unknown {extra}; want {self.agents}")
        space = self.env.action_space(params)
        rows = []
        for name in self.agents:
            row = jnp.asarray(actions[name], space.dtype)
            if len(space.shape) > 1:  # Box[n, A]: pad the agent's own a_i entries to A
                row = jnp.pad(row, (0, space.shape[1] - row.shape[0]))
            rows.append(row)
        return jnp.stack(rows)

    def reset(self, key: jax.Array, params: Any) -> tuple[dict[str, jax.Array], Any]:
        obs, state = self.env.reset(key, params)
        return self.obs_dict(obs, params), state

    def step(
        self, key: jax.Array, state: Any, actions: dict[str, Any], params: Any
    ) -> tuple[dict, Any, dict, dict, dict]:
        action = self.stack_actions(actions, params)
        obs, state, reward, terminated, truncated, info = self.env.step(key, state, action, params)
        done = terminated | truncated
        # an agent that is not active in the returned state is done (on every step, not only
        # the one it ended on: envs whose agent_terminated marks only that step)
        agent_done = info["agent_terminated"] | ~info["agent_mask"] | done
        rewards = {name: reward[i] for i, name in enumerate(self.agents)}
        dones = {name: agent_done[i] for i, name in enumerate(self.agents)}
        dones["__all__"] = done
        return self.obs_dict(obs, params), state, rewards, dones, info

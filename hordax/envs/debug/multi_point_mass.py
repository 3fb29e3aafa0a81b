"""``Debug-MultiPointMass-v0``: N point masses, each must reach its own goal."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import spaces

from hordax.envs.core import MultiAgentEnvironment
from hordax.envs.debug.dynamics import ARENA, integrate
from hordax.envs.debug.point_mass import PointMassParams, validate_point_params
from hordax.envs.debug.render import draw
from hordax.envs.wrappers.clip import clip_action


@struct.dataclass
class MultiPointMassState:
    pos: jax.Array  # f32 [n, 2]
    vel: jax.Array  # f32 [n, 2]
    goal: jax.Array  # f32 [n, 2]
    reached: jax.Array  # bool [n]: agent has reached its goal (then frozen and masked)
    time: jax.Array  # i32 []


class MultiPointMass(MultiAgentEnvironment[MultiPointMassState, PointMassParams]):
    """``num_agents`` point masses in ``[-1, 1]^2``; agent ``i`` must reach goal ``i``.

    - observation: ``f32[n, 6 + 2 (n - 1)]``: own position, velocity and goal - position,
      then the positions of the other agents relative to it.
    - action: ``f32[n, 2]`` forces in ``[-1, 1]``; clipped, NaN acts as 0. Agents that
      reached their goal are frozen and ignore actions.
    - reward: ``f32[n]``, per agent ``-distance`` while active plus ``success_bonus`` on
      the step it arrives; 0 once finished.
    - termination (episode): every agent reached its goal. Per agent:
      ``info["agent_terminated"]`` (reached), ``info["agent_mask"]`` (still active).
    - truncation: ``time >= max_steps_in_episode``.
    - metrics: ``success`` (fraction of agents at their goal), ``distance`` (mean).
    """

    def __init__(self, num_agents: int = 3):
        super().__init__()
        if int(num_agents) < 1:
            raise ValueError(f"num_agents={num_agents}: must be an integer >= 1")
        self._num_agents = int(num_agents)

    @property
    def num_agents(self) -> int:
        return self._num_agents

    @property
    def default_params(self) -> PointMassParams:
        return PointMassParams()

    def reset_env(self, key: jax.Array, params: PointMassParams):
        key_pos, key_goal = jax.random.split(key)
        n = self.num_agents
        pos = jax.random.uniform(key_pos, (n, 2), jnp.float32, -0.9 * ARENA, 0.9 * ARENA)
        goal = jax.random.uniform(key_goal, (n, 2), jnp.float32, -0.9 * ARENA, 0.9 * ARENA)
        state = MultiPointMassState(
            pos, jnp.zeros((n, 2), jnp.float32), goal, jnp.zeros(n, bool), jnp.int32(0)
        )
        return self.observe(key, state, None, params), state

    def step_env(
        self, key: jax.Array, state: MultiPointMassState, action: jax.Array, params: PointMassParams
    ):
        action = clip_action(action, self.action_space(params))
        pos, vel = integrate(
            state.pos,
            state.vel,
            action,
            params.dt,
            params.force_scale,
            params.damping,
            params.max_speed,
        )
        frozen = state.reached[:, None]
        pos = jnp.where(frozen, state.pos, pos)
        vel = jnp.where(frozen, 0.0, vel)
        distance = jnp.linalg.norm(state.goal - pos, axis=-1)
        arrived = (distance < params.goal_radius) & ~state.reached
        active = ~state.reached
        reward = jnp.where(
            active, params.distance_scale * -distance + params.success_bonus * arrived, 0.0
        )
        reached = state.reached | arrived
        new_state = MultiPointMassState(pos, vel, state.goal, reached, state.time + 1)
        info = {
            "metrics": {
                "success": jnp.mean(reached.astype(jnp.float32)),
                "distance": jnp.mean(distance),
            },
            "reward_terms": {
                "distance": jnp.where(active, -distance, 0.0),
                "success": arrived.astype(jnp.float32),
            },
            "agent_terminated": reached,
            "agent_mask": ~reached,
        }
        obs = self.observe(key, new_state, action, params)
        return obs, new_state, reward.astype(jnp.float32), jnp.all(reached), info

    def observe(
        self, key: jax.Array, state: MultiPointMassState, action: Any, params: PointMassParams
    ) -> jax.Array:
        n = self.num_agents
        rel = state.pos[None, :, :] - state.pos[:, None, :]  # [n, n, 2]: j relative to i
        # Static (numpy) index of the other agents, so the gather has a fixed shape.
        others = np.array([[j for j in range(n) if j != i] for i in range(n)], np.int32)
        rel_others = rel[np.arange(n)[:, None], others].reshape((n, 2 * (n - 1)))
        own = jnp.concatenate([state.pos, state.vel, state.goal - state.pos], axis=-1)
        return jnp.concatenate([own, rel_others], axis=-1).astype(jnp.float32)

    def agent_mask(self, state: MultiPointMassState, params: PointMassParams) -> jax.Array:
        return ~state.reached

    def observation_space(self, params: PointMassParams) -> spaces.Box:
        n = self.num_agents
        high = jnp.concatenate(
            [
                jnp.array([ARENA, ARENA, params.max_speed, params.max_speed, 2 * ARENA, 2 * ARENA]),
                jnp.full((2 * (n - 1),), 2 * ARENA),
            ]
        ).astype(jnp.float32)
        high = jnp.broadcast_to(high, (n, high.shape[0]))
        return spaces.Box(-high, high, high.shape, jnp.float32)

    def action_space(self, params: PointMassParams) -> spaces.Box:
        return spaces.Box(-1.0, 1.0, (self.num_agents, 2), jnp.float32)

    def render(self, state: MultiPointMassState, params: PointMassParams) -> np.ndarray:
        return draw(np.asarray(state.pos), np.asarray(state.goal), float(params.goal_radius))

    def validate_params(self, params: PointMassParams) -> None:
        super().validate_params(params)
        validate_point_params(params)

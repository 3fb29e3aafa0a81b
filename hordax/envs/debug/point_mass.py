"""``Debug-PointMass-v0``: push a point mass onto a random goal."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import spaces

from hordax.envs.core import Environment
from hordax.envs.debug.dynamics import ARENA, integrate
from hordax.envs.debug.render import draw
from hordax.envs.wrappers.clip import clip_action


@struct.dataclass
class PointMassState:
    pos: jax.Array  # f32 [2]
    vel: jax.Array  # f32 [2]
    goal: jax.Array  # f32 [2]
    time: jax.Array  # i32 []


@struct.dataclass
class PointMassParams:
    max_steps_in_episode: int = 100
    dt: float = 0.1  # integration step (s)
    force_scale: float = 2.0  # acceleration per unit action (m/s^2)
    damping: float = 0.5  # linear velocity damping (1/s)
    max_speed: float = 1.0  # speed clip per axis (m/s)
    goal_radius: float = 0.1  # success when |pos - goal| < goal_radius (m)
    success_bonus: float = 10.0  # reward on the success step
    distance_scale: float = 1.0  # weight of the -distance term per step


class PointMass(Environment[PointMassState, PointMassParams]):
    """A point mass in ``[-1, 1]^2`` must reach a goal drawn uniformly at every reset.

    - observation: ``f32[6]`` = position ``[2]``, velocity ``[2]``, goal - position ``[2]``.
    - action: ``f32[2]`` force in ``[-1, 1]^2``; out-of-range values are clipped, NaN
      entries act as 0 (see ``hordax.envs.wrappers.clip.clip_action``).
    - reward: ``distance_scale * -|goal - pos| + success_bonus * success`` (float32);
      ``info["reward_terms"]`` holds ``distance`` and ``success`` unscaled.
    - termination: success (``|goal - pos| < goal_radius``).
    - truncation: ``time >= max_steps_in_episode`` (gymnax base).
    - metrics: ``success`` (0/1) and ``distance`` (m).
    """

    def __init__(self):
        super().__init__()

    @property
    def default_params(self) -> PointMassParams:
        return PointMassParams()

    def reset_env(
        self, key: jax.Array, params: PointMassParams
    ) -> tuple[jax.Array, PointMassState]:
        key_pos, key_goal = jax.random.split(key)
        pos = jax.random.uniform(key_pos, (2,), jnp.float32, -0.9 * ARENA, 0.9 * ARENA)
        goal = jax.random.uniform(key_goal, (2,), jnp.float32, -0.9 * ARENA, 0.9 * ARENA)
        state = PointMassState(pos, jnp.zeros(2, jnp.float32), goal, jnp.int32(0))
        return self.observe(key, state, None, params), state

    def step_env(
        self, key: jax.Array, state: PointMassState, action: jax.Array, params: PointMassParams
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
        distance = jnp.linalg.norm(state.goal - pos)
        success = distance < params.goal_radius
        reward = params.distance_scale * -distance + params.success_bonus * success
        new_state = PointMassState(pos, vel, state.goal, state.time + 1)
        info = {
            "metrics": {"success": success.astype(jnp.float32), "distance": distance},
            "reward_terms": {"distance": -distance, "success": success.astype(jnp.float32)},
        }
        obs = self.observe(key, new_state, action, params)
        return obs, new_state, reward.astype(jnp.float32), success, info

    def observe(
        self, key: jax.Array, state: PointMassState, action: Any, params: PointMassParams
    ) -> jax.Array:
        return jnp.concatenate([state.pos, state.vel, state.goal - state.pos]).astype(jnp.float32)

    def observation_space(self, params: PointMassParams) -> spaces.Box:
        high = jnp.array(
            [ARENA, ARENA, params.max_speed, params.max_speed, 2 * ARENA, 2 * ARENA], jnp.float32
        )
        return spaces.Box(-high, high, (6,), jnp.float32)

    def action_space(self, params: PointMassParams) -> spaces.Box:
        return spaces.Box(-1.0, 1.0, (2,), jnp.float32)

    def render(self, state: PointMassState, params: PointMassParams) -> np.ndarray:
        return draw(
            np.asarray(state.pos)[None], np.asarray(state.goal)[None], float(params.goal_radius)
        )

    def validate_params(self, params: PointMassParams) -> None:
        super().validate_params(params)
        validate_point_params(params)


def validate_point_params(params: Any) -> None:
    """Host-side range checks shared by the point-mass tasks."""
    rules = {
        "dt": (0.0, 1.0),
        "force_scale": (0.0, None),
        "max_speed": (0.0, None),
        "goal_radius": (0.0, 2 * ARENA),
    }
    for name, (low, high) in rules.items():
        value = np.asarray(getattr(params, name))
        if (
            not np.all(np.isfinite(value))
            or np.any(value <= low)
            or (high is not None and np.any(value > high))
        ):
            allowed = f"> {low}" + (f" and <= {high}" if high is not None else "")
            raise ValueError(f"params.{name}={value.tolist()}: must be finite and {allowed}")
    damping = np.asarray(params.damping)
    if not np.all(np.isfinite(damping)) or np.any(damping < 0):
        raise ValueError(f"params.damping={damping.tolist()}: must be finite and >= 0")

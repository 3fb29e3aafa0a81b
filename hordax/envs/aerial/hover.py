"""``Aerial-Hover-v0``: fly to and hold a position setpoint (Aerial Gym's position task)."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import spaces

from hordax.envs.aerial import common
from hordax.envs.aerial import controllers as ctl
from hordax.envs.aerial import dynamics as dyn
from hordax.envs.core import Environment


@struct.dataclass
class HoverState:
    quad: dyn.QuadState
    target: jax.Array  # f32[3] world position setpoint (m)
    time: jax.Array  # i32[]


@struct.dataclass
class HoverParams:
    """Everything randomizable: airframe, gains, spawn and target ranges, reward, crash."""

    quad: dyn.QuadParams = struct.field(default_factory=dyn.aerial_gym_quad)
    ctrl: ctl.ControllerParams = struct.field(default_factory=ctl.default_gains)
    max_steps_in_episode: int = 500  # 5 s at dt = 0.01 s, as Aerial Gym
    target_center: jax.Array = struct.field(
        default_factory=lambda: jnp.array([0.0, 0.0, 2.0], jnp.float32)
    )  # f32[3] m
    target_range: jax.Array = struct.field(
        default_factory=lambda: jnp.zeros(3, jnp.float32)
    )  # f32[3] target = center + U(-range, range)
    spawn_pos_range: jax.Array = struct.field(
        default_factory=lambda: jnp.array([2.0, 2.0, 1.0], jnp.float32)
    )  # f32[3] start = target + U(-range, range) (m)
    spawn_tilt: jax.Array = 0.5  # rad, max initial roll/pitch
    spawn_speed: jax.Array = 0.5  # m/s, max initial |v| per axis
    spawn_rate: jax.Array = 0.5  # rad/s, max initial |w| per axis
    crash_distance: jax.Array = 8.0  # m, |target - pos| beyond this is a crash
    ground_z: jax.Array = 0.0  # m, at or below: crash
    crash_reward: jax.Array = -20.0
    success_radius: jax.Array = 0.1  # m, for the "success" metric only
    # Optional terms of Aerial Gym's sim2real setpoint task (0 = off, the base task's reward):
    precision_gain: jax.Array = 0.0  # x exp(-50 d): a sharp peak that pays for centimetres
    progress_scale: jax.Array = 0.0  # x (d_prev - d) per step: "getting closer" (its 400)


class Hover(Environment[HoverState, HoverParams]):
    """Reach and hold a position setpoint from a random start (Aerial Gym's setpoint task).

    - constructor: ``controller`` (one of ``controllers.KINDS``, default ``"attitude"``) and
      ``airframe`` (``"aerial_gym"`` default, or ``"crazyflie"``: sets ``default_params``).
    - observation: ``f32[13]`` = target - position (3, world), quaternion (4, w first),
      body linear velocity (3), body angular velocity (3).
    - action: ``f32[4]`` in ``[-1, 1]``, meaning set by ``controller`` (see
      ``controllers``); NaN entries act as 0, +-inf and out-of-range values are clipped.
    - reward (Aerial Gym): with ``d = |target - pos|``, ``pos = 3 exp(-8 d^2) + 2 exp(-4 d^2)``,
      ``dist = (20 - d) / 40``, ``up = 0.2 / (0.1 + tilt^2)``, ``spin = 3 / (1 + |w|^2)``:
      ``pos + dist + pos (up + spin)``, plus two optional terms of Aerial Gym's sim2real
      setpoint task, off by default: ``precision_gain exp(-50 d)`` (the base terms are flat
      near ``d = 0``, so they barely pay for the last 10 cm) and
      ``progress_scale (d_prev - d)`` (approach per step; the base ``dist`` term's slope is
      only 1/40 per m); a crash step gives ``crash_reward`` (-20) instead.
    - termination (crash): ``z <= ground_z``, ``d > crash_distance`` or a non-finite state.
    - truncation: ``time >= max_steps_in_episode`` (500).
    - metrics: ``distance`` (m), ``success`` (``d < success_radius``), ``crashed``.
    """

    def __init__(self, controller: str = "attitude", airframe: str = "aerial_gym"):
        super().__init__()
        self.controller = common.check_controller(controller)
        self.airframe = airframe
        self._quad, self._ctrl = common.airframe_presets(airframe)

    @property
    def name(self) -> str:
        return "Aerial-Hover-v0"

    @property
    def default_params(self) -> HoverParams:
        return HoverParams(quad=self._quad, ctrl=self._ctrl)

    def reset_env(self, key: jax.Array, params: HoverParams) -> tuple[jax.Array, HoverState]:
        k_target, k_spawn = jax.random.split(key)
        target = params.target_center + params.target_range * jax.random.uniform(
            k_target, (3,), jnp.float32, -1.0, 1.0
        )
        quad = common.spawn(
            k_spawn,
            target,
            params.spawn_pos_range,
            params.spawn_tilt,
            params.spawn_speed,
            params.spawn_rate,
            params.quad,
        )
        state = HoverState(quad=quad, target=target.astype(jnp.float32), time=jnp.int32(0))
        return self.observe(key, state, None, params), state

    def step_env(self, key: jax.Array, state: HoverState, action: jax.Array, params: HoverParams):
        quad, finite = common.fly(
            key, state.quad, action, self.controller, params.quad, params.ctrl
        )
        new_state = state.replace(quad=quad, time=state.time + 1)
        reward, terms, crashed, distance = setpoint_reward(
            quad, state.quad.pos, state.target, params
        )
        crashed = crashed | ~finite
        reward = jnp.where(crashed, params.crash_reward, reward).astype(jnp.float32)
        info = {
            "metrics": {
                "distance": distance,
                "success": (distance < params.success_radius).astype(jnp.float32),
                "crashed": crashed.astype(jnp.float32),
            },
            "reward_terms": {**terms, "crash": crashed.astype(jnp.float32)},
        }
        obs = self.observe(key, new_state, action, params)
        return obs, new_state, reward, crashed, info

    def observe(self, key: jax.Array, state: HoverState, action: Any, params: HoverParams):
        return common.state_observation(state.quad, state.target - state.quad.pos)

    def observation_space(self, params: HoverParams) -> spaces.Box:
        return common.state_observation_space()

    def action_space(self, params: HoverParams) -> spaces.Box:
        return common.action_space()

    def validate_params(self, params: HoverParams) -> None:
        super().validate_params(params)
        common.validate_common(params)
        validate_setpoint_terms(params)
        rng = np.asarray(params.target_range, np.float64)
        if not np.all(np.isfinite(rng)) or np.any(rng < 0):
            raise ValueError(f"params.target_range={rng.tolist()}: must be finite and >= 0")
        low = np.asarray(params.target_center)[..., 2] - rng[..., 2]
        if np.any(low <= np.asarray(params.ground_z)):
            raise ValueError(
                f"params.target_center={np.asarray(params.target_center).tolist()}, "
                f"params.target_range={rng.tolist()}, "
                f"params.ground_z={np.asarray(params.ground_z).tolist()}: every target "
                "(target_center z - target_range z) must be above ground_z"
            )
        spawn = np.asarray(params.spawn_pos_range, np.float64)
        common.check_starts(
            params,
            lowest=np.asarray(params.target_center)[..., 2] - rng[..., 2] - spawn[..., 2],
            farthest=np.linalg.norm(spawn, axis=-1),
            fields={
                "lowest": "params.target_center z - params.target_range z - "
                "params.spawn_pos_range z",
                "farthest": "|params.spawn_pos_range| (from the target)",
            },
        )
        common.check_success_radius(params)

    def render(self, state: HoverState, params: HoverParams) -> np.ndarray:
        from hordax.envs.aerial.render import render_scene

        return render_scene(
            np.asarray(state.quad.pos)[None],
            np.asarray(state.quad.quat)[None],
            targets=np.asarray(state.target)[None],
            arm=float(np.max(np.abs(np.asarray(params.quad.motor_xy)))) * math.sqrt(2.0),
        )


def hover_reward(quad: dyn.QuadState, target: jax.Array, params: Any):
    """Aerial Gym's position-setpoint reward; returns ``(reward, terms, crashed, distance)``."""
    distance = jnp.linalg.norm(target - quad.pos)
    pos = 3.0 * jnp.exp(-8.0 * distance**2) + 2.0 * jnp.exp(-4.0 * distance**2)
    dist = (20.0 - distance) / 40.0
    up = 0.2 / (0.1 + common.tilt(quad) ** 2)
    spin = 3.0 / (1.0 + jnp.sum(quad.omega**2))
    reward = pos + dist + pos * (up + spin)
    crashed = dyn.below_ground(quad, params.ground_z) | (distance > params.crash_distance)
    terms = {"pos": pos, "dist": dist, "up": up, "spin": spin}
    return reward, terms, crashed, distance


def setpoint_reward(quad: dyn.QuadState, prev_pos: jax.Array, target: jax.Array, params: Any):
    """:func:`hover_reward` plus the two optional terms of Aerial Gym's sim2real setpoint
    task: ``params.precision_gain exp(-50 d)`` and ``params.progress_scale (d_prev - d)``
    (``d_prev = |target - prev_pos|``, the distance before the step). Returns
    ``(reward, terms, crashed, distance)`` with ``precision`` and ``progress`` in ``terms``."""
    reward, terms, crashed, distance = hover_reward(quad, target, params)
    precision = params.precision_gain * jnp.exp(-50.0 * distance)
    progress = jnp.linalg.norm(target - prev_pos) - distance
    reward = reward + precision + params.progress_scale * progress
    return reward, {**terms, "precision": precision, "progress": progress}, crashed, distance


def validate_setpoint_terms(params: Any) -> None:
    """``params.precision_gain`` and ``params.progress_scale`` must be finite and >= 0."""
    for name in ("precision_gain", "progress_scale"):
        value = np.asarray(getattr(params, name), np.float64)
        if not np.all(np.isfinite(value)) or np.any(value < 0):
            raise ValueError(f"params.{name}={value.tolist()}: must be finite and >= 0")

"""``Manip-Reach-v0``: move the Panda arm's end effector to a random target (no contacts)."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import spaces

from hordax.envs.manipulation.base import ArmEnv, check_lower_bounds

#: robosuite's Panda ``init_qpos`` (robosuite/models/robots/manipulators/panda_robot.py)
PANDA_HOME = (0.0, math.pi / 16, 0.0, -math.pi / 2 - math.pi / 3, 0.0, math.pi - 0.2, math.pi / 4)
_QVEL_BOUND = 50.0  # rad/s, observation clip


@struct.dataclass
class ReachState:
    qpos: jax.Array  # f32[7] joint angles (rad)
    qvel: jax.Array  # f32[7] joint velocities (rad/s)
    last_action: jax.Array  # f32[7] the previous (clipped) action
    ee: jax.Array  # f32[3] end-effector position (m, world)
    target: jax.Array  # f32[3] target position (m, world)
    time: jax.Array  # i32[]


@struct.dataclass
class ReachParams:
    """Randomizable per instance: arm response, reset spread, target box, reward shape."""

    max_steps_in_episode: int = 50  # 2.5 s at 20 Hz
    action_scale: jax.Array = struct.field(
        default_factory=lambda: jnp.full((7,), 1.0, jnp.float32)
    )  # f32[7] rad of target offset per unit action
    home_noise: jax.Array = 0.3  # rad, reset pose = home + U(-noise, noise) per joint
    gain_scale: jax.Array = 1.0  # x servo kp and kv
    damping_scale: jax.Array = 1.0  # x joint damping
    target_center: jax.Array = struct.field(
        default_factory=lambda: jnp.array([0.45, 0.0, 0.3], jnp.float32)
    )  # f32[3] m (the base is at the origin, the home pose's hand at (0.445, 0, 0.195))
    target_range: jax.Array = struct.field(
        default_factory=lambda: jnp.array([0.15, 0.2, 0.1], jnp.float32)
    )  # f32[3] target = center + U(-range, range)
    reach_sharpness: jax.Array = 10.0  # robosuite's reaching reward 1 - tanh(10 d)
    precision_gain: jax.Array = 0.0  # + gain exp(-d / 0.01): pays for the last centimetres
    velocity_cost: jax.Array = 0.0  # - cost |qvel|^2 (rad^2/s^2)
    success_radius: jax.Array = 0.02  # m, for the "success" metric only
    obs_noise: jax.Array = 0.0  # rad, joint-angle observation noise U(-noise, noise)
    action_noise: jax.Array = 0.0  # action noise U(-noise, noise) before the mapping


class Reach(ArmEnv):
    """The robosuite Panda arm (7 joints, position servos) reaches a target drawn every reset.

    - observation ``f32[27]``: joint angles - home (7), joint velocities (7, clipped to
      +-50 rad/s), last action (7), end-effector position (3), target - end effector (3).
    - action ``f32[7]`` in ``[-1, 1]``: joint-position targets ``home + action_scale *
      action`` clipped to the joint ranges; NaN entries act as 0 (the home pose), +-inf and
      out-of-range values are clipped (:class:`~hordax.envs.manipulation.base.ArmEnv`).
    - physics: MJX, 10 ms Euler steps, 5 per control step (20 Hz control), no contacts.
    - reset (fresh, inside jit): pose ``home + U(-home_noise, home_noise)`` at rest, target
      ``target_center + U(-target_range, target_range)``; ``mjx.forward`` gives the hand.
    - reward, with ``d = |target - ee|``: ``1 - tanh(reach_sharpness d)`` (robosuite's
      reaching reward) ``+ precision_gain exp(-d / 0.01) - velocity_cost |qvel|^2``.
    - noise (off by default): ``obs_noise`` on the observed joint angles, ``action_noise``
      on the applied action (:class:`~hordax.envs.manipulation.base.ArmEnv`).
    - termination: only a non-finite physics state (a guard). truncation: 50 steps.
    - metrics: ``distance`` (m; at an episode's last step, the final distance) and
      ``success`` (``d < success_radius``, 2 cm).
    """

    model_file = "panda.xml"
    ee_site = "ee"
    home = PANDA_HOME
    n_substeps = 5

    @property
    def name(self) -> str:
        return "Manip-Reach-v0"

    @property
    def default_params(self) -> ReachParams:
        return ReachParams()

    def reset_env(self, key: jax.Array, params: ReachParams) -> tuple[jax.Array, ReachState]:
        k_pose, k_target = jax.random.split(key)
        qpos = self.random_pose(k_pose, params)
        target = params.target_center + params.target_range * jax.random.uniform(
            k_target, (3,), jnp.float32, -1.0, 1.0
        )
        data = self.reset_physics(qpos, params)
        state = ReachState(
            qpos=data.qpos,
            qvel=data.qvel,
            last_action=jnp.zeros(self.nu, jnp.float32),
            ee=self.ee_pos(data),
            target=target.astype(jnp.float32),
            time=jnp.int32(0),
        )
        return self.observe(key, state, None, params), state

    def step_env(self, key: jax.Array, state: ReachState, action: jax.Array, params: ReachParams):
        # fold_in: the noise keys leave the reset's and the step's other draws unchanged
        action, ctrl = self.targets(action, params, jax.random.fold_in(key, 2))
        data, qpos, qvel, ok = self.step_physics(state.qpos, state.qvel, ctrl, params)
        ee = jnp.where(ok, self.ee_pos(data), state.ee)
        new_state = state.replace(
            qpos=qpos, qvel=qvel, last_action=action, ee=ee, time=state.time + 1
        )
        distance = jnp.linalg.norm(state.target - ee)
        reach = 1.0 - jnp.tanh(params.reach_sharpness * distance)
        precision = jnp.exp(-distance / 0.01)
        speed = jnp.sum(qvel**2)
        reward = reach + params.precision_gain * precision - params.velocity_cost * speed
        reward = jnp.where(ok, reward, 0.0).astype(jnp.float32)
        terminated = ~ok
        info = {
            "metrics": {
                "distance": distance.astype(jnp.float32),
                "success": (distance < params.success_radius).astype(jnp.float32),
            },
            "reward_terms": {
                "reach": reach.astype(jnp.float32),
                "precision": precision.astype(jnp.float32),
                "speed": speed.astype(jnp.float32),
                "nonfinite": terminated.astype(jnp.float32),
            },
        }
        obs = self.observe(key, new_state, action, params)
        return obs, new_state, reward, terminated, info

    def observe(self, key: jax.Array, state: ReachState, action: Any, params: ReachParams):
        joints = self.noisy(jax.random.fold_in(key, 1), state.qpos, params.obs_noise)
        obs = jnp.concatenate(
            [
                joints - self.home_q,
                jnp.clip(state.qvel, -_QVEL_BOUND, _QVEL_BOUND),
                state.last_action,
                state.ee,
                state.target - state.ee,
            ]
        )
        return jnp.nan_to_num(obs).astype(jnp.float32)

    def render_markers(self, state: ReachState, params: ReachParams) -> list:
        """The target as a red sphere of the success radius."""
        return [(np.asarray(state.target), float(params.success_radius), (0.9, 0.1, 0.1, 1.0))]

    def observation_space(self, params: ReachParams) -> spaces.Box:
        span = self.ctrl_high - self.ctrl_low
        high = np.concatenate(
            [span, np.full(7, _QVEL_BOUND), np.ones(7), np.full(3, 1.5), np.full(3, 3.0)]
        ).astype(np.float32)
        return spaces.Box(jnp.asarray(-high), jnp.asarray(high), (27,), jnp.float32)

    def validate_params(self, params: ReachParams) -> None:
        super().validate_params(params)
        check_lower_bounds(params, reach_sharpness=(0.0, True), success_radius=(0.0, True))
        check_lower_bounds(
            params,
            precision_gain=(0.0, False),
            velocity_cost=(0.0, False),
            target_range=(0.0, False),
        )
        center = np.asarray(params.target_center, np.float64)
        rng = np.asarray(params.target_range, np.float64)
        reach = np.linalg.norm(np.abs(center - np.array([0.0, 0.0, 0.333])) + rng, axis=-1)
        if not np.all(np.isfinite(center)) or np.any(reach > 0.85):
            raise ValueError(
                f"params.target_center={center.tolist()}, params.target_range={rng.tolist()}: "
                "the target box must lie within 0.85 m of the shoulder (0, 0, 0.333), the "
                "Panda's reach"
            )

"""``Manip-Reach-v0``: move the Panda arm's end effector to a random target (no contacts)."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import spaces

from hordax.envs.manipulation.base import QVEL_BOUND, ArmEnv, check_lower_bounds

#: robosuite's Panda ``init_qpos`` (robosuite/models/robots/manipulators/panda_robot.py)
PANDA_HOME = (0.0, math.pi / 16, 0.0, -math.pi / 2 - math.pi / 3, 0.0, math.pi - 0.2, math.pi / 4)
_EE_VEL_BOUND = 10.0  # m/s, critic observation clip (the Panda's hand peaks near 2 m/s)


@struct.dataclass
class ReachState:
    qpos: jax.Array  # f32[7] joint angles (rad)
    qvel: jax.Array  # f32[7] joint velocities (rad/s)
    last_action: jax.Array  # f32[7] the previous (clipped) action
    ee: jax.Array  # f32[3] end-effector position (m, world)
    ee_vel: jax.Array  # f32[3] end effector's mean velocity over the last control step (m/s)
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

    - observation ``f32[27]``: joint angles - home (7, clipped to +- the joint's range
      width), joint velocities (7, clipped to +-50 rad/s), last action (7), end-effector
      position (3), target - end effector (3). The joints have no limit constraint (the
      model has no constraint solver, see ``physics``): targets that jump between the
      range's ends every step (saturated actions) can swing a light wrist joint past its
      range, in MuJoCo C as in MJX (joint 6 up to 4.2 rad past home), hence the clip.
    - action ``f32[7]`` in ``[-1, 1]``: joint-position targets ``home + action_scale *
      action`` clipped to the joint ranges; NaN entries act as 0 (the home pose), +-inf and
      out-of-range values are clipped (:class:`~hordax.envs.manipulation.base.ArmEnv`).
    - physics: MJX, 10 ms Euler steps, 5 per control step (20 Hz control), no contacts.
    - reset (fresh, inside jit): pose ``home + U(-home_noise, home_noise)`` at rest, target
      ``target_center + U(-target_range, target_range)``; ``mjx.kinematics`` gives the hand.
    - reward, with ``d = |target - ee|``: ``1 - tanh(reach_sharpness d)`` (robosuite's
      reaching reward) ``+ precision_gain exp(-d / 0.01) - velocity_cost |qvel|^2``.
    - noise (off by default): ``obs_noise`` on the observed joint angles, ``action_noise``
      on the applied action (:class:`~hordax.envs.manipulation.base.ArmEnv`).
    - termination: only a non-finite physics state (a guard). truncation: 50 steps.
    - metrics: ``distance`` (m; at an episode's last step, the final distance) and
      ``success`` (``d < success_radius``, 2 cm).
    - critic observation ``f32[29]`` (privileged, for an asymmetric critic:
      ``agent.critic_obs=true``; the actor never sees it): joint angles - home (7, not
      clipped), joint velocities (7, clipped to +-50 rad/s), end-effector position (3),
      its mean velocity over the last control step (3, m/s, clipped to +-10), target (3),
      target - end effector (3), distance ``d`` (1), ``log gain_scale`` and
      ``log damping_scale`` (2: the physics params a domain-randomized run varies, which
      the actor can only infer).
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
            ee_vel=jnp.zeros(3, jnp.float32),  # at rest
            target=target.astype(jnp.float32),
            time=jnp.int32(0),
        )
        return self.observe(key, state, None, params), state

    def step_env(self, key: jax.Array, state: ReachState, action: jax.Array, params: ReachParams):
        # fold_in: the noise keys leave the reset's and the step's other draws unchanged
        action, ctrl = self.targets(action, params, jax.random.fold_in(key, 2))
        data, qpos, qvel, ok = self.step_physics(state.qpos, state.qvel, ctrl, params)
        ee = jnp.where(ok, self.ee_pos(data), state.ee)
        # Finite difference over the control step: no extra kinematics pass (the hand's
        # velocity J(q) qdot would need the Jacobian, i.e. a second mjx pass per step).
        ee_vel = (ee - state.ee) / self.control_dt
        new_state = state.replace(
            qpos=qpos, qvel=qvel, last_action=action, ee=ee, ee_vel=ee_vel, time=state.time + 1
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
        obs = jnp.concatenate(
            [
                self.joint_obs(key, state.qpos, params),
                jnp.clip(state.qvel, -QVEL_BOUND, QVEL_BOUND),
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
            [span, np.full(7, QVEL_BOUND), np.ones(7), np.full(3, 1.5), np.full(3, 3.0)]
        ).astype(np.float32)
        return spaces.Box(jnp.asarray(-high), jnp.asarray(high), (27,), jnp.float32)

    def critic_observation(self, state: ReachState, params: ReachParams) -> jax.Array:
        """``f32[29]``: the privileged observation of ``state`` (see the class docstring)."""
        to_target = state.target - state.ee
        crit = jnp.concatenate(
            [
                state.qpos - self.home_q,
                jnp.clip(state.qvel, -QVEL_BOUND, QVEL_BOUND),
                state.ee,
                jnp.clip(state.ee_vel, -_EE_VEL_BOUND, _EE_VEL_BOUND),
                state.target,
                to_target,
                jnp.linalg.norm(to_target)[None],
                jnp.log(jnp.asarray(params.gain_scale, jnp.float32))[None],
                jnp.log(jnp.asarray(params.damping_scale, jnp.float32))[None],
            ]
        )
        return jnp.nan_to_num(crit).astype(jnp.float32)

    def critic_observation_space(self, params: ReachParams) -> spaces.Box:
        high = np.concatenate(
            [
                np.full(7, np.inf),  # the true angles (see the observation's clip)
                np.full(7, QVEL_BOUND),
                np.full(3, 1.5),
                np.full(3, _EE_VEL_BOUND),
                np.full(3, 1.5),
                np.full(3, 3.0),
                [3.0 * math.sqrt(3.0)],
                np.full(2, np.inf),  # log-scales: any finite value (params are > 0)
            ]
        ).astype(np.float32)
        low = -high
        low[-3] = 0.0  # the distance
        return spaces.Box(jnp.asarray(low), jnp.asarray(high), (29,), jnp.float32)

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

"""``Manip-Push-v0``: the Panda arm pushes a cube across the table to a target, with contacts.

The task is MuJoCo Playground's PandaPickCube reduced to pushing (the gripper's fingers are
fixed): reward ``1 - tanh(5 |cube - grip|)`` plus ``1 - tanh(5 |target - cube|)`` gated by
a latched "reached the cube" flag; the episode ends when the cube leaves the workspace.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import spaces

from hordax.envs.manipulation import physics
from hordax.envs.manipulation.base import QVEL_BOUND, ArmEnv, check_lower_bounds

#: joint pose with the fingers pointing straight down, the grip site (between the
#: fingertips) at (0.42, 0, 0.04): 4 cm above the table, 13 cm behind the cube's centre box
#: (damped least-squares IK from robosuite's home pose, MuJoCo C, 4 decimals: < 0.1 mm)
PUSH_HOME = (0.0, 0.3177, 0.0, -2.6301, 0.0, 2.9478, math.pi / 4)
CUBE_HALF = 0.025  # m, the cube's half size (assets/panda_push.xml)
#: m, the cube's centre height at rest on the table: MuJoCo C settles it 1.7e-5 m into the
#: soft contact. Resetting there (not at CUBE_HALF, where the 4 corner contacts sit exactly
#: at distance 0, active or not by rounding) keeps the first steps' contacts unambiguous:
#: jit, vmap and single-env runs then agree (contract suite)
CUBE_REST_Z = 0.024983
_CUBE_VEL_BOUND = 10.0  # m/s and rad/s, observation clip of the cube's velocities
#: the cube leaves the workspace (termination) outside |x|, |y| <= 1 m, 0 <= z + 0.05 <= 1 m:
#: Playground's box-out-of-bounds test, with 5 cm of slack below the table plane
_WORKSPACE = 1.0
_CUBE_POS_BOUND = 2.0  # m, observation clip of the cube's position


@struct.dataclass
class PushState:
    qpos: jax.Array  # f32[14] arm joint angles (7, rad), cube position (3, m), quaternion (4)
    qvel: jax.Array  # f32[13] arm joints (7), cube linear (3, world) and angular (3, cube frame)
    last_action: jax.Array  # f32[7] the previous (clipped) action
    grip: jax.Array  # f32[3] grip site (between the fingertips) position (m, world)
    target: jax.Array  # f32[2] target of the cube's centre on the table (m, world x, y)
    reached: jax.Array  # bool[] the grip has come within reached_radius of the cube (latched)
    time: jax.Array  # i32[]


@struct.dataclass
class PushParams:
    """Randomizable per instance: arm response, reset spreads, reward shape."""

    max_steps_in_episode: int = 100  # 5 s at 20 Hz
    action_scale: jax.Array = struct.field(
        default_factory=lambda: jnp.array([0.8, 1.2, 0.4, 2.2, 0.2, 1.2, 1.1], jnp.float32)
    )  # f32[7] rad of target offset per unit action: the largest offsets from PUSH_HOME that
    # IK needs to put the grip (fingers down) anywhere in x 0.35..0.8, |y| <= 0.35,
    # z 0.02..0.2 m (tests/envs/manipulation/test_manip_push.py checks a few of them)
    home_noise: jax.Array = 0.05  # rad, reset pose = PUSH_HOME + U(-noise, noise) per joint
    gain_scale: jax.Array = 1.0  # x servo kp and kv
    damping_scale: jax.Array = 1.0  # x joint damping
    cube_center: jax.Array = struct.field(
        default_factory=lambda: jnp.array([0.55, 0.0], jnp.float32)
    )  # f32[2] m, cube x, y at reset = center + U(-range, range)
    cube_range: jax.Array = struct.field(
        default_factory=lambda: jnp.array([0.05, 0.1], jnp.float32)
    )  # f32[2] m
    cube_yaw_range: jax.Array = math.pi / 4  # rad, cube yaw at reset U(-range, range)
    target_min_distance: jax.Array = 0.08  # m, target = cube + r (cos a, sin a) on the table,
    target_max_distance: jax.Array = 0.15  # r ~ U(min, max), a ~ U(-pi, pi)
    reach_sharpness: jax.Array = 5.0  # Playground's gripper-box term 1 - tanh(5 d)
    push_sharpness: jax.Array = 5.0  # Playground's box-target term 1 - tanh(5 d)
    push_weight: jax.Array = 2.0  # box-target weight relative to gripper-box (Playground 8 : 4)
    reached_radius: jax.Array = 0.05  # m, grip-cube distance that latches "reached"
    success_radius: jax.Array = 0.03  # m, cube-target distance for the "success" metric
    cube_mass_scale: jax.Array = 1.0  # x the cube's 0.1 kg (and inertia)
    obs_noise: jax.Array = 0.0  # rad, joint-angle observation noise U(-noise, noise)
    action_noise: jax.Array = 0.0  # action noise U(-noise, noise) before the mapping


def _yaw_quat(yaw: jax.Array) -> jax.Array:
    """``f32[4]`` MuJoCo quaternion ``(w, x, y, z)`` of a rotation by ``yaw`` about +z."""
    return jnp.stack([jnp.cos(yaw / 2), 0.0 * yaw, 0.0 * yaw, jnp.sin(yaw / 2)])


class Push(ArmEnv):
    """The robosuite Panda arm with a fixed two-finger pusher pushes a 5 cm cube to a target.

    - observation ``f32[42]``: joint angles - home (7, clipped to +- the
      joint's range width, as Reach's), joint velocities (7, clipped to
      +-50 rad/s), last action (7), grip position (3), cube position (3), cube quaternion
      (4, ``w >= 0``), cube linear and angular velocity (6, clipped to +-10; the free
      joint's ``qvel``: linear in the world frame, angular in the cube's own frame), cube - grip
      (3), target - cube on the table (2); the cube's position is clipped to +-2 m.
    - action ``f32[7]`` in ``[-1, 1]``: joint-position targets ``PUSH_HOME + action_scale *
      action`` clipped to the joint ranges; NaN entries act as 0, +-inf and out-of-range
      values are clipped (:class:`~hordax.envs.manipulation.base.ArmEnv`).
    - physics: MJX, 5 ms Euler steps, 10 per control step (20 Hz control); contacts
      cube-table, fingers-cube and fingertips-table (``assets/panda_push.xml``).
    - reset (fresh, inside jit): arm ``PUSH_HOME + U(-home_noise, home_noise)`` at rest, cube
      on the table at ``cube_center + U(-cube_range, cube_range)`` with yaw
      ``U(-cube_yaw_range, cube_yaw_range)``, target ``cube + r (cos a, sin a)`` with
      ``r ~ U(target_min_distance, target_max_distance)``, ``a ~ U(-pi, pi)``.
    - reward, with ``g = |cube - grip|`` and ``d = |target - cube|`` (on the table):
      ``1 - tanh(reach_sharpness g) + push_weight * reached * (1 - tanh(push_sharpness d))``
      where ``reached`` latches once ``g < reached_radius`` (Playground's PandaPickCube).
    - randomization (per instance, by ``vmap`` over params): servo gains, joint damping, the
      cube's mass (``cube_mass_scale``); noise (off by default): ``obs_noise`` on the observed
      joint angles, ``action_noise`` on the applied action
      (:class:`~hordax.envs.manipulation.base.ArmEnv`).
    - termination: the cube leaves the workspace (``|x|, |y| > 1``, ``z < -0.05`` or ``z >
      1`` m) or a non-finite physics state. truncation: 100 steps.
    - metrics: ``distance`` (cube-target, m), ``success`` (``d < success_radius``),
      ``grip_distance`` (m) and ``reached``.
    """

    model_file = "panda_push.xml"
    ee_site = "grip"
    home = PUSH_HOME
    n_substeps = 10
    camera_lookat = (0.5, 0.0, 0.1)  # the table in front of the arm
    camera_distance = 1.2

    def render_markers(self, state: PushState, params: Any) -> list:
        """The cube's target on the table, a green sphere of the success radius."""
        pos = np.array([*np.asarray(state.target), 0.0])
        return [(pos, float(params.success_radius), (0.1, 0.8, 0.2, 1.0))]

    @property
    def name(self) -> str:
        return "Manip-Push-v0"

    @property
    def default_params(self) -> PushParams:
        return PushParams()

    def __init__(self):
        super().__init__()
        self.cube_body = physics.body_id(self.model, "cube")
        #: qpos / qvel addresses of the cube's free joint (after the arm's 7 joints)
        self.cube_qadr, self.cube_dadr = physics.free_joint(self.model, "cube")
        #: m, the least grip-cube distance without pressing the contacts in (to 0.5 mm: 3.45
        #: cm with an edge between the fingertips): the cube's half size plus the fingertip
        #: spheres' radius (the grip lies between their centres)
        tip = float(self.model.geom_size[physics.geom_id(self.model, "tip_left"), 0])
        half = float(self.model.geom_size[physics.geom_id(self.model, "cube"), :3].min())
        self.min_grip_distance = half + tip

    def cube_model(self, params: PushParams):
        """The device model with the arm's and the cube's randomization applied."""
        return physics.scaled_body(
            self.sim_model(params), self.model, self.cube_body, params.cube_mass_scale, 1.0
        )

    def reset_env(self, key: jax.Array, params: PushParams) -> tuple[jax.Array, PushState]:
        k_pose, k_cube, k_yaw, k_r, k_a = jax.random.split(key, 5)
        arm = self.random_pose(k_pose, params)
        cube_xy = params.cube_center + params.cube_range * jax.random.uniform(
            k_cube, (2,), jnp.float32, -1.0, 1.0
        )
        yaw = params.cube_yaw_range * jax.random.uniform(k_yaw, (), jnp.float32, -1.0, 1.0)
        radius = jax.random.uniform(
            k_r, (), jnp.float32, params.target_min_distance, params.target_max_distance
        )
        angle = jax.random.uniform(k_a, (), jnp.float32, -jnp.pi, jnp.pi)
        target = cube_xy + radius * jnp.stack([jnp.cos(angle), jnp.sin(angle)])
        cube_pos = jnp.concatenate([cube_xy, jnp.full((1,), CUBE_REST_Z, jnp.float32)])
        qpos = self.set_free_pose(self.full_qpos(arm), self.cube_qadr, cube_pos, _yaw_quat(yaw))
        data = self.reset_physics(qpos, params, self.cube_model(params))
        state = PushState(
            qpos=data.qpos,
            qvel=data.qvel,
            last_action=jnp.zeros(self.nu, jnp.float32),
            grip=self.ee_pos(data),
            target=target.astype(jnp.float32),
            reached=jnp.bool_(False),
            time=jnp.int32(0),
        )
        return self.observe(key, state, None, params), state

    def step_env(self, key: jax.Array, state: PushState, action: jax.Array, params: PushParams):
        # fold_in: the noise keys leave the reset's and the step's other draws unchanged
        action, ctrl = self.targets(action, params, jax.random.fold_in(key, 2))
        mx = self.cube_model(params)
        data, qpos, qvel, ok = self.step_physics(state.qpos, state.qvel, ctrl, params, mx)
        grip = jnp.where(ok, self.ee_pos(data), state.grip)
        cube = qpos[self.cube_qadr : self.cube_qadr + 3]
        grip_distance = jnp.linalg.norm(cube - grip)
        reached = state.reached | (grip_distance < params.reached_radius)
        distance = jnp.linalg.norm(state.target - cube[:2])
        reach = 1.0 - jnp.tanh(params.reach_sharpness * grip_distance)
        push = 1.0 - jnp.tanh(params.push_sharpness * distance)
        reward = reach + params.push_weight * reached * push
        reward = jnp.where(ok, reward, 0.0).astype(jnp.float32)
        out = jnp.max(jnp.abs(cube[:2])) > _WORKSPACE
        out = out | (cube[2] > _WORKSPACE) | self.object_dropped(cube, cube, jnp.inf, -0.05)
        terminated = ~ok | out
        new_state = state.replace(
            qpos=qpos,
            qvel=qvel,
            last_action=action,
            grip=grip,
            reached=reached,
            time=state.time + 1,
        )
        info = {
            "metrics": {
                "distance": distance.astype(jnp.float32),
                "success": (distance < params.success_radius).astype(jnp.float32),
                "grip_distance": grip_distance.astype(jnp.float32),
                "reached": reached.astype(jnp.float32),
            },
            "reward_terms": {
                "reach": reach.astype(jnp.float32),
                "push": (reached * push).astype(jnp.float32),
                "nonfinite": (~ok).astype(jnp.float32),
            },
        }
        obs = self.observe(key, new_state, action, params)
        return obs, new_state, reward, terminated, info

    def observe(self, key: jax.Array, state: PushState, action: Any, params: PushParams):
        a, d = self.cube_qadr, self.cube_dadr
        # clipped so that a cube thrown out of the workspace (its last, terminal step) still
        # gives an observation inside observation_space
        cube = jnp.clip(state.qpos[a : a + 3], -_CUBE_POS_BOUND, _CUBE_POS_BOUND)
        quat = state.qpos[a + 3 : a + 7]
        quat = jnp.where(quat[0] < 0, -quat, quat)  # q and -q are the same rotation
        obs = jnp.concatenate(
            [
                self.joint_obs(key, state.qpos, params),
                jnp.clip(state.qvel[self.act_dadr], -QVEL_BOUND, QVEL_BOUND),
                state.last_action,
                state.grip,
                cube,
                quat,
                jnp.clip(state.qvel[d : d + 6], -_CUBE_VEL_BOUND, _CUBE_VEL_BOUND),
                cube - state.grip,
                state.target - cube[:2],
            ]
        )
        return jnp.nan_to_num(obs).astype(jnp.float32)

    def observation_space(self, params: PushParams) -> spaces.Box:
        span = self.ctrl_high - self.ctrl_low
        high = np.concatenate(
            [
                span,
                np.full(7, QVEL_BOUND),
                np.ones(7),
                np.full(3, 1.5),  # grip: within the arm's reach
                np.full(3, _CUBE_POS_BOUND),
                np.ones(4),
                np.full(6, _CUBE_VEL_BOUND),
                np.full(3, _CUBE_POS_BOUND + 1.5),
                np.full(2, _CUBE_POS_BOUND + 1.0),
            ]
        ).astype(np.float32)
        return spaces.Box(jnp.asarray(-high), jnp.asarray(high), (42,), jnp.float32)

    def validate_params(self, params: PushParams) -> None:
        super().validate_params(params)
        check_lower_bounds(
            params,
            reach_sharpness=(0.0, True),
            push_sharpness=(0.0, True),
            reached_radius=(0.0, True),
            success_radius=(0.0, True),
            cube_mass_scale=(0.0, True),
        )
        check_lower_bounds(
            params,
            push_weight=(0.0, False),
            cube_range=(0.0, False),
            cube_yaw_range=(0.0, False),
            target_min_distance=(0.0, False),
        )
        reached = np.asarray(params.reached_radius, np.float64)
        if np.any(reached < self.min_grip_distance):
            raise ValueError(
                f"params.reached_radius={reached.tolist()}: must be >= "
                f"{self.min_grip_distance:g} m, the cube's half size plus the fingertips' "
                "radius: the grip (between the fingertip spheres) comes no closer to the "
                "cube's centre (3.45 cm with an edge between the fingertips) unless the "
                "contacts are pressed in, so a smaller radius leaves `reached`, and with it "
                "the push reward, off (Playground's 0.012 m is for a gripper that closes "
                "around the cube)"
            )
        lo = np.asarray(params.target_min_distance, np.float64)
        hi = np.asarray(params.target_max_distance, np.float64)
        if not np.all(np.isfinite(hi)) or np.any(hi < lo) or np.any(hi > 0.3):
            raise ValueError(
                f"params.target_max_distance={hi.tolist()}: must be finite, >= "
                f"target_min_distance ({lo.tolist()}) and <= 0.3 m"
            )
        center = np.asarray(params.cube_center, np.float64)
        rng = np.asarray(params.cube_range, np.float64)
        x_lo, x_hi = center[..., 0] - rng[..., 0], center[..., 0] + rng[..., 0]
        y_out = np.abs(center[..., 1]) + rng[..., 1]
        if not np.all(np.isfinite(center)) or np.any(x_lo < 0.5) or np.any(x_hi > 0.7):
            raise ValueError(
                f"params.cube_center={center.tolist()}, params.cube_range={rng.tolist()}: the "
                "cube's reset x must lie in [0.5, 0.7] m (in front of the fingers at x = 0.42, "
                "within the arm's reach on the table)"
            )
        if np.any(y_out > 0.25):
            raise ValueError(
                f"params.cube_center={center.tolist()}, params.cube_range={rng.tolist()}: the "
                "cube's reset y must lie in [-0.25, 0.25] m"
            )

"""In-hand manipulation with the Shadow Hand on MJX: ``Manip-HandSphereRotate-v0`` (Faive's
sphere rotation about a fixed axis) and ``Manip-HandCubeRotateZ-v0`` (MuJoCo Playground's
LeapCubeRotateZAxis task definition on the Shadow Hand).

Both share :class:`HandEnv`: the MJX Shadow Hand (24 position servos, ``assets/shadow_hand``)
palm up with fingers along +x, one free object resting in the palm, a floor 10 cm below.
The scenes disable the constraint solver's warm start (and the servos have no activation),
so the env state's ``(qpos, qvel)`` with the step's targets is the whole physical state:
``mjx.Data`` is rebuilt from it each control step exactly
(:func:`~hordax.envs.manipulation.physics.control_step`; tested against MuJoCo C).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from flax import struct
from gymnax.environments import spaces

from hordax.envs.manipulation import physics
from hordax.envs.manipulation.base import QVEL_BOUND, ArmEnv, check_lower_bounds

_F = (0.0, 0.5, 0.6, 0.4)  # a finger's J4 (spread), J3, J2, J1: curled
#: Home pose (rad), actuator order WRJ2, WRJ1, THJ5..THJ1, FF, MF, RF J4..J1, LFJ5, LF J4..J1:
#: wrist straight, thumb turned over the palm, fingers curled into a cup. Under random
#: finger actions U(-0.3, 0.3) (x 0.5-0.6 rad) MuJoCo C keeps both objects in the hand for
#: 200 steps (4 of 4 seeds); with the fingers less curled (0.3 rad) the sphere rolls out.
SHADOW_HOME = (0.0, 0.0, 0.4, 1.0, 0.0, 0.0, 0.3) + _F + _F + _F + (0.3,) + _F
#: distal bodies of the thumb and four fingers, and the fingertip offset along their z (m)
_TIPS = ("rh_thdistal", "rh_ffdistal", "rh_mfdistal", "rh_rfdistal", "rh_lfdistal")
_TIP_OFFSET = np.array([0.0, 0.0, 0.026], np.float32)
_OBJ_VEL_BOUND = (10.0, 50.0)  # m/s and rad/s, critic observation clip
_POS_BOUND = 2.0  # m, critic observation clip of object/fingertip offsets
_FORCE_BOUND = 10.0  # N m, the largest actuator force range (wrist)
_CONTACT_BOUND = 30.0  # N, critic observation clip of contact normal forces
#: contact force groups: the five distal links (fingertips), then the rest of the hand
_CONTACT_GROUPS = len(_TIPS) + 1


@struct.dataclass
class HandState:
    qpos: jax.Array  # f32[31] hand joints (24, model order: act_qadr maps actuators), object (7)
    qvel: jax.Array  # f32[30] hand joints (24), object (linear world frame, angular body frame)
    last_action: jax.Array  # f32[24] the previous clean action
    history: jax.Array  # f32[H, 24] the last H measured (noisy) joint angles, newest last
    actuator_force: jax.Array  # f32[24] servo forces of the last physics step (N m)
    tips: jax.Array  # f32[5, 3] fingertip positions (m, world), for the critic
    contact_force: jax.Array  # f32[6] normal force (N) on the object: 5 distal links, rest
    time: jax.Array  # i32[]


@struct.dataclass
class HandParams:
    """Randomizable per instance (``vmap`` over params randomizes per env): servo gains
    and damping, friction, object mass and size, observation and action noise, reset spread,
    drop thresholds and reward weights. Task defaults come from each env's ``default_params``.
    """

    max_steps_in_episode: int = 200
    action_scale: jax.Array = struct.field(
        default_factory=lambda: jnp.full((24,), 0.5, jnp.float32)
    )  # f32[24] rad of target offset around home per unit action
    home_noise: jax.Array = 0.05  # rad, reset hand pose = home + U(-noise, noise) per joint
    gain_scale: jax.Array = 1.0  # x servo kp (and kv)
    damping_scale: jax.Array = 1.0  # x joint damping
    friction_scale: jax.Array = 1.0  # x sliding friction of every geom
    object_mass_scale: jax.Array = 1.0  # x object mass (at fixed size)
    object_size_scale: jax.Array = 1.0  # x object size (mass and inertia follow, density fixed)
    obs_noise: jax.Array = 0.0  # rad, actor joint-angle noise U(-noise, noise)
    action_noise: jax.Array = 0.0  # applied action = action + U(-noise, noise)
    object_pos_noise: jax.Array = 0.01  # m, reset object position offset U(-noise, noise)
    drop_distance: jax.Array = 0.1  # m, dropped when farther than this from its rest point
    drop_z: jax.Array = -0.05  # m, dropped when its centre is lower (palm surface ~0.022)
    rotation_axis: jax.Array = struct.field(
        default_factory=lambda: jnp.array([1.0, 0.0, 0.0], jnp.float32)
    )  # f32[3] world axis (normalized in the env) and sense of the rewarded rotation
    rotation_weight: jax.Array = 0.01  # x rotation term
    action_cost: jax.Array = 0.002  # x |action|
    torque_cost: jax.Array = 0.01  # x |actuator force| (N m)
    drop_penalty: jax.Array = 1.0  # - on a drop (or a non-finite state)


def _surface_below(model: mujoco.MjModel, qpos: np.ndarray, point, exclude_body: int) -> float:
    """Height (m, world) of the first collision geom (one that can touch another geom)
    straight below ``point`` with the model at ``qpos``, body ``exclude_body`` left out:
    MuJoCo C's ``mj_ray`` after ``mj_kinematics``."""
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_kinematics(model, data)
    collides = (np.asarray(model.geom_contype) | np.asarray(model.geom_conaffinity)) != 0
    groups = np.unique(np.asarray(model.geom_group)[collides & (model.geom_bodyid > 0)])
    mask = np.zeros(mujoco.mjNGROUP, np.uint8)
    mask[groups] = 1
    geom = np.array([-1], np.int32)
    start = np.asarray(point, np.float64)
    down = np.array([0.0, 0.0, -1.0])
    dist = mujoco.mj_ray(model, data, start, down, mask, 1, exclude_body, geom)
    if geom[0] < 0:
        raise ValueError(f"no collision geom below {start.tolist()} in the hand scene")
    return float(start[2] - dist)


class HandEnv(ArmEnv):
    """The shared Shadow Hand in-hand task (subclasses set the scene, history length and
    reward through :meth:`task_reward`).

    - action ``f32[24]`` in ``[-1, 1]``: joint-position targets ``home + action_scale *
      (action + action noise)`` clipped to the servo ranges; NaN entries act as 0, +-inf as
      +-1 (:class:`~hordax.envs.manipulation.base.ArmEnv`).
    - physics: MJX, 10 ms Euler steps (implicit damping), 5 per control step (20 Hz), Newton
      solver with 8 iterations (4 line-search steps), warm start disabled (see the scene
      files).
    - reset (fresh, inside jit): hand ``home + U(-home_noise, home_noise)``; object at its rest
      point ``+ U(-object_pos_noise, object_pos_noise)`` per axis with a uniformly random
      orientation; everything at rest; ``mjx.kinematics`` gives the positions.
    - actor observation ``f32[24 (H + 1)]``: the last ``H`` measured joint angles - home
      (each with noise ``U(-obs_noise, obs_noise)``, drawn when measured), last action.
    - critic observation ``f32[130]`` (:meth:`critic_observation`, privileged, noise-free):
      joint angles - home (24), joint velocities (24, clipped +-50 rad/s), actuator forces
      (24), object position - rest point (3), object quaternion (4, w first), object linear
      and angular velocity in the world frame (3 + 3), fingertip positions - object position
      (5 x 3), contact normal forces on the object (6: from each distal link, thumb first,
      then from the rest of the hand; N, clipped to 30; those of the control step's last
      physics step, 0 at reset), last action (24).
    - termination: the object is dropped (farther than ``drop_distance`` from its rest
      point, or its centre below ``drop_z``) or the physics state is non-finite.
      truncation: ``max_steps_in_episode``.
    - metrics: ``rotation_speed`` (rad/s about the task axis), ``drop`` (1 at the step an
      episode ends by a drop), ``success`` (task-defined).
    """

    model_file = ""
    ee_site = ""
    home = SHADOW_HOME
    n_substeps = 5
    camera_lookat = (0.3, 0.0, 0.06)  # the palm, from 0.5 m
    camera_distance = 0.5
    #: actor observation history length (joint angles)
    history_len: int = 1

    def __init__(self):
        super().__init__()
        self.obj_qadr, self.obj_dadr = physics.free_joint(self.model, "object")
        self.obj_body = physics.body_id(self.model, "object")
        #: the object's rest point (its ``qpos0`` position in the scene), ``np.float32[3]``
        self.obj_rest = self.qpos0[self.obj_qadr : self.obj_qadr + 3].copy()
        self.tip_ids = np.array([physics.body_id(self.model, n) for n in _TIPS], np.int32)
        # contact groups of the geoms: distal link i -> i, the object -> -2, any other hand
        # body -> the last group, the world (floor) -> -1
        body = np.asarray(self.model.geom_bodyid)
        group = np.where(body > 0, _CONTACT_GROUPS - 1, -1)
        for i, b in enumerate(self.tip_ids):
            group[body == b] = i
        group[body == self.obj_body] = -2
        self.geom_group = group.astype(np.int32)
        self.contact_rows = physics.contact_rows(self.model)
        # heights the drop thresholds are checked against (validate_params), m, world
        obj_geom = int(np.flatnonzero(body == self.obj_body)[0])
        size = np.asarray(self.model.geom_size[obj_geom], np.float64)
        sphere = self.model.geom_type[obj_geom] == mujoco.mjtGeom.mjGEOM_SPHERE
        #: the object's smallest half-extent and its bounding radius at size scale 1 (m)
        self.obj_half = float(size[0] if sphere else size.min())
        self.obj_rbound = float(self.model.geom_rbound[obj_geom])
        #: the floor plane's height and the palm's collision surface under the object's
        #: rest point with the hand at home (``mj_ray`` in MuJoCo C)
        self.floor_z = float(self.model.geom_pos[physics.geom_id(self.model, "floor"), 2])
        home_qpos = self.qpos0.astype(np.float64)
        home_qpos[self.act_qadr] = self.home_q
        self.palm_z = _surface_below(self.model, home_qpos, self.obj_rest, self.obj_body)

    # -- physics -----------------------------------------------------------------------------

    def sim_model(self, params: HandParams):
        """The device model with gains, damping, friction and object mass/size applied."""
        mx = super().sim_model(params)
        mx = physics.scaled_friction(mx, self.model, params.friction_scale)
        return physics.scaled_body(
            mx, self.model, self.obj_body, params.object_mass_scale, params.object_size_scale
        )

    def object_pose(self, qpos: jax.Array) -> tuple[jax.Array, jax.Array]:
        """``(position f32[3] (m, world), quaternion f32[4] (w first))`` of the object."""
        a = self.obj_qadr
        return qpos[a : a + 3], qpos[a + 3 : a + 7]

    def object_velocity(self, qpos: jax.Array, qvel: jax.Array) -> tuple[jax.Array, jax.Array]:
        """``(linear f32[3] (m/s), angular f32[3] (rad/s))``, both in the world frame (the
        free joint's angular velocity is in the body frame: rotated here)."""
        d = self.obj_dadr
        quat = self.object_pose(qpos)[1]
        return qvel[d : d + 3], physics.quat_rotate(quat, qvel[d + 3 : d + 6])

    def fingertips(self, data) -> jax.Array:
        """``f32[5, 3]`` fingertip positions (m, world): thumb, first, middle, ring, little."""
        rot = data.xmat[self.tip_ids]
        return data.xpos[self.tip_ids] + rot @ _TIP_OFFSET

    def contact_forces(self, data) -> jax.Array:
        """``f32[6]`` normal contact force on the object (N): from each distal link (thumb,
        first, middle, ring, little), then from the rest of the hand (palm, other links);
        those of the physics step that produced ``data``."""
        return physics.contact_normal_forces(
            data, self.contact_rows, self.geom_group, _CONTACT_GROUPS
        )

    # -- gymnax -----------------------------------------------------------------------------

    def reset_env(self, key: jax.Array, params: HandParams) -> tuple[jax.Array, HandState]:
        k_pose, k_pos, k_quat, k_obs = jax.random.split(key, 4)
        hand = self.random_pose(k_pose, params)
        offset = jax.random.uniform(k_pos, (3,), jnp.float32, -1.0, 1.0) * params.object_pos_noise
        qpos = self.set_free_pose(
            self.full_qpos(hand), self.obj_qadr, self.obj_rest + offset, physics.random_quat(k_quat)
        )
        data = self.reset_physics(qpos, params)
        measured = self.noisy(k_obs, self.hand_qpos(data.qpos), params.obs_noise)
        state = HandState(
            qpos=data.qpos,
            qvel=data.qvel,
            last_action=jnp.zeros(self.nu, jnp.float32),
            history=jnp.tile(measured, (self.history_len, 1)),
            actuator_force=jnp.zeros(self.nu, jnp.float32),
            tips=self.fingertips(data),
            contact_force=jnp.zeros(_CONTACT_GROUPS, jnp.float32),  # no solve yet
            time=jnp.int32(0),
        )
        return self.get_obs(state), state

    def step_env(self, key: jax.Array, state: HandState, action: jax.Array, params: HandParams):
        k_act, k_obs = jax.random.split(key)
        action, ctrl = self.targets(action, params, k_act)
        data, qpos, qvel, ok = self.step_physics(state.qpos, state.qvel, ctrl, params)
        force = jnp.where(ok, data.actuator_force, 0.0)
        measured = self.noisy(k_obs, self.hand_qpos(qpos), params.obs_noise)
        new_state = state.replace(
            qpos=qpos,
            qvel=qvel,
            last_action=action,
            history=jnp.concatenate([state.history[1:], measured[None]]),
            actuator_force=force,
            tips=jnp.where(ok, self.fingertips(data), state.tips),
            contact_force=jnp.where(ok, self.contact_forces(data), 0.0),
            time=state.time + 1,
        )
        pos, _ = self.object_pose(qpos)
        _, angvel = self.object_velocity(qpos, qvel)
        axis = params.rotation_axis / jnp.linalg.norm(params.rotation_axis)
        speed = jnp.dot(angvel, axis)
        dropped = ok & self.object_dropped(pos, self.obj_rest, params.drop_distance, params.drop_z)
        terminated = dropped | ~ok
        reward, terms, success = self.task_reward(speed, action, force, terminated, params)
        reward = jnp.where(ok, reward, -self._penalty(params)).astype(jnp.float32)
        info = {
            "metrics": {
                "rotation_speed": speed.astype(jnp.float32),
                "drop": dropped.astype(jnp.float32),
                "success": success.astype(jnp.float32),
            },
            "reward_terms": {
                **{k: v.astype(jnp.float32) for k, v in terms.items()},
                "drop": dropped.astype(jnp.float32),
                "nonfinite": (~ok).astype(jnp.float32),
            },
        }
        return self.get_obs(new_state), new_state, reward, terminated, info

    def task_reward(self, speed, action, force, terminated, params):
        """``(reward f32[], reward_terms dict, success bool[])`` of one step."""
        raise NotImplementedError

    def _penalty(self, params: HandParams) -> jax.Array:
        """The reward of a step whose physics went non-finite (penalized as a drop; the
        ``drop`` metric counts drops only, ``reward_terms["nonfinite"]`` these steps)."""
        return params.drop_penalty

    def _joint_bound(self) -> np.ndarray:
        """``np.float32[24]`` bound of ``|angle - home|`` in observations: the servo range's
        farther end plus 0.5 rad (joint limits are soft: contacts can push a joint past its
        range; the noise adds up to ``obs_noise``). Observations are clipped to it."""
        span = np.maximum(self.ctrl_high - self.home_q, self.home_q - self.ctrl_low)
        return (span + 0.5).astype(np.float32)

    def get_obs(self, state: HandState, params: Any = None, key: Any = None) -> jax.Array:
        """Actor observation ``f32[24 (H + 1)]``: joint-angle history - home, last action."""
        bound = self._joint_bound()
        hist = jnp.clip(state.history - self.home_q, -bound, bound).reshape(-1)
        return jnp.nan_to_num(jnp.concatenate([hist, state.last_action])).astype(jnp.float32)

    def observation_space(self, params: HandParams) -> spaces.Box:
        bound = self._joint_bound()
        high = np.concatenate([np.tile(bound, self.history_len), np.ones(self.nu)])
        high = jnp.asarray(high, jnp.float32)
        return spaces.Box(-high, high, high.shape, jnp.float32)

    def critic_observation(self, state: HandState, params: HandParams) -> jax.Array:
        """Privileged critic observation ``f32[130]`` (see the class docstring): true joint
        state, actuator forces, object pose and velocities, fingertips, contact forces,
        last action."""
        pos, quat = self.object_pose(state.qpos)
        linvel, angvel = self.object_velocity(state.qpos, state.qvel)
        tips = (state.tips - pos).reshape(-1)
        lin_b, ang_b = _OBJ_VEL_BOUND
        bound = self._joint_bound()
        obs = jnp.concatenate(
            [
                jnp.clip(self.hand_qpos(state.qpos) - self.home_q, -bound, bound),
                jnp.clip(state.qvel[self.act_dadr], -QVEL_BOUND, QVEL_BOUND),
                jnp.clip(state.actuator_force, -_FORCE_BOUND, _FORCE_BOUND),
                jnp.clip(pos - self.obj_rest, -_POS_BOUND, _POS_BOUND),
                jnp.clip(quat, -1.0, 1.0),  # a float32 unit quaternion may exceed 1 by an ulp
                jnp.clip(linvel, -lin_b, lin_b),
                jnp.clip(angvel, -ang_b, ang_b),
                jnp.clip(tips, -_POS_BOUND, _POS_BOUND),
                jnp.clip(state.contact_force, 0.0, _CONTACT_BOUND),
                state.last_action,
            ]
        )
        return jnp.nan_to_num(obs).astype(jnp.float32)

    def critic_observation_space(self, params: HandParams) -> spaces.Box:
        n = self.nu
        lin_b, ang_b = _OBJ_VEL_BOUND
        high = np.concatenate(
            [
                self._joint_bound(),
                np.full(n, QVEL_BOUND),
                np.full(n, _FORCE_BOUND),
                np.full(3, _POS_BOUND),
                np.ones(4),
                np.full(3, lin_b),
                np.full(3, ang_b),
                np.full(15, _POS_BOUND),
                np.full(_CONTACT_GROUPS, _CONTACT_BOUND),
                np.ones(n),
            ]
        )
        high = jnp.asarray(high, jnp.float32)
        return spaces.Box(-high, high, high.shape, jnp.float32)

    def validate_params(self, params: HandParams) -> None:
        super().validate_params(params)
        check_lower_bounds(
            params,
            friction_scale=(0.0, True),
            object_mass_scale=(0.0, True),
            object_pos_noise=(0.0, False),
            drop_distance=(0.0, True),
            rotation_weight=(0.0, False),
            action_cost=(0.0, False),
            torque_cost=(0.0, False),
            drop_penalty=(0.0, False),
        )
        size = np.asarray(params.object_size_scale, np.float64)
        if not np.all(np.isfinite(size)) or np.any((size < 0.8) | (size > 1.2)):
            raise ValueError(
                f"params.object_size_scale={size.tolist()}: must be in [0.8, 1.2] (the object "
                "must still fit above the palm at its reset point)"
            )
        drop_z = np.asarray(params.drop_z, np.float64)
        if not np.all(np.isfinite(drop_z)) or np.any(drop_z >= self.palm_z):
            raise ValueError(
                f"params.drop_z={drop_z.tolist()}: must be finite and below the palm's surface "
                f"under the object's rest point, z = {self.palm_z:.3f} m (an object held in the "
                "palm has its centre above it: at home the sphere settles at z = 0.044 m, the "
                "cube at 0.046 m; a higher drop_z counts a held object as dropped)"
            )
        self._check_drop_thresholds(params, size, drop_z)
        axis = np.asarray(params.rotation_axis, np.float64)
        if (
            axis.shape[-1:] != (3,)
            or not np.all(np.isfinite(axis))
            or np.any(np.linalg.norm(axis, axis=-1) < 1e-6)
        ):
            raise ValueError(
                f"params.rotation_axis={axis.tolist()}: must be 3 finite values, not all 0"
            )

    def _check_drop_thresholds(self, params: HandParams, size: np.ndarray, drop_z: np.ndarray):
        """Host-side checks of the drop rule against the scene: a reset must not start the
        object past ``drop_distance``, and an object lying on the floor must count as
        dropped (else a dropped object ends no episode and costs no ``drop_penalty``)."""
        distance = np.asarray(params.drop_distance, np.float64)
        spread = np.sqrt(3.0) * np.asarray(params.object_pos_noise, np.float64)
        if np.any(distance <= spread):
            raise ValueError(
                f"params.drop_distance={distance.tolist()}: must exceed the reset's largest "
                f"offset from the rest point, sqrt(3) * params.object_pos_noise = "
                f"{spread.tolist()} m (a reset could start the object dropped)"
            )
        # on the floor the object's centre is at least its smallest half-extent above the
        # floor (lying flat) and at most its bounding radius (any pose touching it)
        z_low = self.floor_z + self.obj_half * size
        dist_low = self.obj_rest[2] - (self.floor_z + self.obj_rbound * size)
        if np.any((drop_z <= z_low) & (distance >= dist_low)):
            raise ValueError(
                f"params.drop_z={drop_z.tolist()}, params.drop_distance={distance.tolist()}: an "
                f"object lying on the floor (z = {self.floor_z:g} m) would never count as "
                f"dropped: drop_z must be above {np.round(z_low, 4).tolist()} m (the centre of "
                f"the object lying flat there) or drop_distance below "
                f"{np.round(dist_low, 4).tolist()} m (its least distance from the rest point "
                "there)"
            )


class SphereRotate(HandEnv):
    """``Manip-HandSphereRotate-v0``: spin a sphere (3 cm radius, 100 g) in the palm about a
    fixed world axis (``rotation_axis``, default +x: along the fingers), after Faive's
    ``FaiveHandP0_sphere`` ("Getting the Ball Rolling").

    - reward: ``rotation_weight * min(w + 1, 2, 4 - w) - action_cost |a| - torque_cost |tau|
      - drop_penalty [dropped]`` with ``w`` the sphere's angular velocity (rad/s) about the
      axis. The band is Faive's shape: maximal (2) for 1-2 rad/s in the chosen sense, slope
      1 on both sides (Faive's code writes it as ``min(s w + 1, 2, ...)``); weights
      0.01 / 0.002 / 0.01 / 1 as Faive's.
    - drop: the sphere more than ``drop_distance`` (10 cm) from its rest point (Faive's fall
      distance; its 0.5 m is for the Faive hand's scene) or below ``drop_z``.
    - 20 Hz, 200 steps (10 s); actor history of 5 joint-angle measurements (Faive's
      ``dof_pos_history``) with 0.05 rad noise by default; the critic observation is
      privileged (:meth:`HandEnv.critic_observation`).
    - metrics: ``rotation_speed`` (rad/s), ``drop``, ``success`` (``w`` in the 1-2 rad/s band
      on a step that does not end the episode).
    """

    model_file = "shadow_hand/hand_sphere.xml"
    history_len = 5

    @property
    def name(self) -> str:
        return "Manip-HandSphereRotate-v0"

    @property
    def default_params(self) -> HandParams:
        return HandParams(max_steps_in_episode=200, obs_noise=0.05)

    def task_reward(self, speed, action, force, terminated, params):
        band = jnp.minimum(jnp.minimum(speed + 1.0, 2.0), 4.0 - speed)
        act = jnp.linalg.norm(action)
        torque = jnp.linalg.norm(force)
        reward = (
            params.rotation_weight * band
            - params.action_cost * act
            - params.torque_cost * torque
            - params.drop_penalty * terminated
        )
        terms = {"rotation": band, "action": act, "torque": torque}
        # not on the step the sphere is lost: a drop through the band is no success
        return reward, terms, (speed >= 1.0) & (speed <= 2.0) & ~terminated


class CubeRotateZ(HandEnv):
    """``Manip-HandCubeRotateZ-v0``: Playground's LeapCubeRotateZAxis task definition on the
    Shadow Hand: spin a cube (5 cm, 100 g) in the palm about world +z as fast as possible
    without dropping it.

    - control 0.05 s (5 x 10 ms), actions = offsets around home x 0.6 (clipped to the servo
      ranges, which Playground does too), 500 steps.
    - reward (Playground's ``sum(scale * term) * dt``): ``dt (rotation_weight w_z -
      drop_penalty [terminated])`` with ``w_z`` the cube's world angular velocity about +z
      (rad/s); scales 1 and 100 (so a drop costs 5).
    - termination: cube centre below ``drop_z`` (-0.05 m, Playground's threshold; the palm
      surface is at z ~ 0.022 here) or farther than ``drop_distance`` (0.5 m, inactive in
      practice), or a non-finite state (Playground: NaN in qpos/qvel).
    - reset: hand ``home + U(-0.05, 0.05)``, cube at its rest point ``+ U(-0.01, 0.01)`` with a
      uniformly random orientation (Playground's reset).
    - actor observation: noisy joint angles (``U(-0.05, 0.05)``) and the last action
      (history 1); critic: privileged (:meth:`HandEnv.critic_observation`).
    - metrics: ``rotation_speed`` (rad/s about +z), ``drop``, ``success`` (no drop; Playground
      defines no success: 1 at every step the cube is held).
    """

    model_file = "shadow_hand/hand_cube.xml"
    history_len = 1

    @property
    def name(self) -> str:
        return "Manip-HandCubeRotateZ-v0"

    @property
    def default_params(self) -> HandParams:
        return HandParams(
            max_steps_in_episode=500,
            action_scale=jnp.full((24,), 0.6, jnp.float32),
            obs_noise=0.05,
            drop_distance=0.5,
            rotation_axis=jnp.array([0.0, 0.0, 1.0], jnp.float32),
            rotation_weight=1.0,
            action_cost=0.0,
            torque_cost=0.0,
            drop_penalty=100.0,
        )

    def task_reward(self, speed, action, force, terminated, params):
        dt = self.control_dt
        reward = dt * (params.rotation_weight * speed - params.drop_penalty * terminated)
        return reward, {"angvel": speed}, ~terminated

    def _penalty(self, params: HandParams) -> jax.Array:
        return self.control_dt * params.drop_penalty

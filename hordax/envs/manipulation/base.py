"""The manipulation family's gymnax environment base: an MJX arm or hand driven by
joint-position targets around a home pose, with fresh resets computed inside jit, optional
free-joint objects, observation/action noise and object-drop detection."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from gymnax.environments import spaces

from hordax.envs.core import Environment
from hordax.envs.manipulation import physics
from hordax.envs.wrappers.clip import clip_action

#: rad/s, observation clip of the actuated joints' velocities (every task of the family)
QVEL_BOUND = 50.0


class ArmEnv(Environment):
    """Shared machinery of the MJX arm tasks (subclasses set the class attributes and
    implement ``reset_env``/``step_env``/``observe`` with the helpers below).

    - The MuJoCo model (``model_file`` in ``assets/``) is compiled once per process and put
      on the device once per env instance (``self.mx``, static: it is not part of the
      params, so ``vmap`` over params never copies it).
    - Joints: every actuator drives one hinge/slide joint (``self.act_qadr``/``act_dadr``,
      ``np.int32[nu]``: their qpos/qvel addresses); other joints (an object's free joint:
      ``nq != nu``) are unactuated. ``home`` gives one angle per actuator.
    - Actions: ``f32[nu]`` in ``[-1, 1]``; the joint-position target of actuator ``i`` is
      ``home[i] + params.action_scale[i] * action[i]``, clipped to the actuator's control
      range (the joint range). NaN entries act as 0 (the home pose), +-inf and out-of-range
      values are clipped to +-1 (:func:`~hordax.envs.wrappers.clip.clip_action`). With a key,
      :meth:`targets` adds action noise ``params.action_noise * U(-1, 1)`` per entry to
      the clean action before the mapping (the targets are still clipped to the ranges).
    - Physics: each control step holds the targets for ``n_substeps`` ``mjx.step`` calls
      (:func:`~hordax.envs.manipulation.physics.control_step`); ``(qpos, qvel)`` is the
      whole state (models with contacts disable the solver's warm start in their MJCF).
    - Observation noise: :meth:`noisy` adds ``params.obs_noise * U(-1, 1)`` per entry
      (Playground's uniform joint-angle noise); tasks apply it to the actor's
      proprioception only, never to the critic observation.
    - A non-finite ``qpos``/``qvel`` after a step (never seen with clipped targets, kept as a
      guard) terminates the episode; the state keeps the last finite ``qpos`` with zero
      ``qvel`` so that nothing non-finite reaches an observation.
    """

    model_file: str = ""
    #: end-effector site name in the MJCF ("" for none, e.g. a hand)
    ee_site: str = "ee"
    #: home joint pose (rad), one entry per actuated joint
    home: tuple[float, ...] = ()
    #: physics steps per control step (control period = n_substeps * model timestep)
    n_substeps: int = 5
    #: render camera: the point it looks at (m, world) and its distance (m)
    camera_lookat: tuple[float, float, float] = (0.3, 0.0, 0.35)
    camera_distance: float = 1.6

    def __init__(self):
        super().__init__()
        self.model = physics.load_model(self.model_file)
        self.mx = physics.put_model(self.model)
        self.nu = int(self.model.nu)
        self.ee_id = physics.site_id(self.model, self.ee_site) if self.ee_site else -1
        #: qpos / qvel addresses of the actuated joints, ``np.int32[nu]`` (actuator order)
        self.act_qadr, self.act_dadr = physics.actuated_joints(self.model)
        #: the model's reference pose ``qpos0`` (``np.float32[nq]``): unactuated joints'
        #: default values (an object's rest pose in the MJCF)
        self.qpos0 = np.asarray(self.model.qpos0, np.float32)
        #: actuator control ranges (the joint ranges), ``np.float32[nu]``
        self.ctrl_low, self.ctrl_high = physics.joint_ranges(self.model)
        self.home_q = np.asarray(self.home, np.float32)
        if self.home_q.shape != (self.nu,):
            raise ValueError(f"{type(self).__name__}: home must give one angle per actuator")

    @property
    def control_dt(self) -> float:
        """Seconds per control step."""
        return float(self.model.opt.timestep) * self.n_substeps

    # -- helpers for the tasks ---------------------------------------------------------------

    def sim_model(self, params: Any):
        """The device model with ``params.gain_scale`` and ``params.damping_scale`` applied."""
        return physics.scaled_model(self.mx, self.model, params.gain_scale, params.damping_scale)

    def targets(
        self, action: jax.Array, params: Any, key: jax.Array | None = None
    ) -> tuple[jax.Array, jax.Array]:
        """``(clean action, joint-position targets)`` for a raw action (NaN -> 0, clipped),
        both ``f32[nu]``. With ``key``, the targets come from the clean action plus
        ``params.action_noise * U(-1, 1)`` (the returned action stays the clean one)."""
        action = clip_action(action, self.action_space(params))
        applied = action if key is None else self.noisy(key, action, params.action_noise)
        ctrl = jnp.clip(self.home_q + params.action_scale * applied, self.ctrl_low, self.ctrl_high)
        return action, ctrl

    def noisy(self, key: jax.Array, x: jax.Array, scale) -> jax.Array:
        """``x + scale * U(-1, 1)`` per entry (``scale`` a traced scalar; 0 returns ``x``)."""
        return x + scale * jax.random.uniform(key, x.shape, jnp.float32, -1.0, 1.0)

    def joint_obs(self, key: jax.Array, qpos: jax.Array, params: Any) -> jax.Array:
        """Observed actuated joint angles - home, ``f32[nu]``: with ``params.obs_noise``
        (drawn from ``fold_in(key, 1)``), clipped to +- each joint's range width. The arm
        models have no joint-limit constraint (no constraint solver, or joint limits off),
        so targets that jump between a range's ends every step (saturated actions) can swing
        a light wrist joint past its range, in MuJoCo C as in MJX (the Panda's joint 6 up to
        4.2 rad past home); the clip keeps the observation inside ``observation_space``."""
        span = self.ctrl_high - self.ctrl_low
        joints = self.noisy(jax.random.fold_in(key, 1), self.hand_qpos(qpos), params.obs_noise)
        return jnp.clip(joints - self.home_q, -span, span)

    def hand_qpos(self, qpos: jax.Array) -> jax.Array:
        """The actuated joints' angles ``f32[nu]`` out of a full ``qpos`` ``f32[nq]``."""
        return qpos[self.act_qadr]

    def full_qpos(self, joints: jax.Array) -> jax.Array:
        """``f32[nq]``: ``qpos0`` with the actuated joints set to ``joints`` (``f32[nu]``);
        tasks then place their objects with :meth:`set_free_pose`."""
        return jnp.asarray(self.qpos0).at[self.act_qadr].set(joints)

    @staticmethod
    def set_free_pose(qpos: jax.Array, adr: int, pos: jax.Array, quat: jax.Array) -> jax.Array:
        """``qpos`` with the free joint at qpos address ``adr`` placed at ``pos`` (m,
        ``f32[3]``) and ``quat`` (``f32[4]``, w first, normalized here)."""
        quat = quat / jnp.linalg.norm(quat)
        return qpos.at[adr : adr + 3].set(pos).at[adr + 3 : adr + 7].set(quat)

    @staticmethod
    def object_dropped(pos: jax.Array, reference: jax.Array, max_distance, min_z) -> jax.Array:
        """``bool[]``: an object at ``pos`` (m, world) is farther than ``max_distance`` from
        ``reference`` (Faive's fall distance) or lower than ``min_z`` (Playground's cube
        drop). Either test can be switched off with an infinite bound."""
        far = jnp.linalg.norm(pos - reference) > max_distance
        return far | (pos[2] < min_z)

    def random_pose(self, key: jax.Array, params: Any) -> jax.Array:
        """A fresh joint pose: ``home + U(-home_noise, home_noise)`` per joint, in range."""
        noise = jax.random.uniform(key, (self.nu,), jnp.float32, -1.0, 1.0) * params.home_noise
        return jnp.clip(self.home_q + noise, self.ctrl_low, self.ctrl_high)

    def reset_physics(self, qpos: jax.Array, params: Any, mx=None):
        """The kinematics (:func:`~hordax.envs.manipulation.physics.kinematics`) at rest in
        ``qpos`` (``f32[nq]``; targets = the actuated joints' angles): the reset's data.
        ``mx`` overrides the device model (default :meth:`sim_model`), e.g. a task's model
        with its object randomization applied."""
        mx = self.sim_model(params) if mx is None else mx
        zeros = jnp.zeros(self.model.nv, qpos.dtype)
        return physics.kinematics(mx, qpos, zeros, self.hand_qpos(qpos))

    def step_physics(self, qpos: jax.Array, qvel: jax.Array, ctrl: jax.Array, params: Any, mx=None):
        """One control step; returns ``(data, qpos, qvel, ok)``: a non-finite result is
        replaced by ``(old qpos, zero qvel)`` and flagged ``ok = False``. ``mx`` as in
        :meth:`reset_physics`."""
        mx = self.sim_model(params) if mx is None else mx
        data = physics.control_step(mx, qpos, qvel, ctrl, self.n_substeps)
        ok = physics.finite(data.qpos, data.qvel, data.site_xpos)
        new_qpos = jnp.where(ok, data.qpos, qpos)
        new_qvel = jnp.where(ok, data.qvel, jnp.zeros_like(qvel))
        return data, new_qpos, new_qvel, ok

    def ee_pos(self, data) -> jax.Array:
        return data.site_xpos[self.ee_id]

    def action_space(self, params: Any) -> spaces.Box:
        return spaces.Box(-1.0, 1.0, (self.nu,), jnp.float32)

    def render_markers(self, state: Any, params: Any) -> list:
        """Task markers that are not bodies of the model (:data:`render.Marker` tuples)."""
        return []

    def render(self, state: Any, params: Any) -> np.ndarray:
        """``uint8[240, 320, 3]``: MuJoCo's offscreen render of one env's ``state.qpos``
        with the task's markers (host side, outside jit; see :mod:`.render`)."""
        from hordax.envs.manipulation.render import default_camera, render_frame

        camera = default_camera(self.camera_lookat, self.camera_distance)
        return render_frame(self.model, state.qpos, self.render_markers(state, params), camera)

    def validate_params(self, params: Any) -> None:
        super().validate_params(params)
        validate_arm_params(params, self.nu)


def validate_arm_params(params: Any, nu: int) -> None:
    """Host-side checks of the shared arm params; ``ValueError`` naming the field."""
    scale = np.asarray(params.action_scale, np.float64)
    if scale.shape[-1:] != (nu,) or not np.all(np.isfinite(scale)) or np.any(scale <= 0):
        raise ValueError(
            f"params.action_scale={scale.tolist()}: must be {nu} finite values > 0 (rad)"
        )
    check_lower_bounds(
        params, home_noise=(0.0, False), gain_scale=(0.0, True), damping_scale=(0.0, False)
    )
    noise = {k: (0.0, False) for k in ("obs_noise", "action_noise") if hasattr(params, k)}
    check_lower_bounds(params, **noise)


def check_lower_bounds(params: Any, **rules: tuple[float, bool]) -> None:
    """Each named params field (scalar or array) finite and ``> low`` (``strict``) or
    ``>= low``: ``name=(low, strict)``; ``ValueError`` naming the field otherwise."""
    for name, (low, strict) in rules.items():
        value = np.asarray(getattr(params, name), np.float64)
        bad = value <= low if strict else value < low
        if not np.all(np.isfinite(value)) or np.any(bad):
            op = ">" if strict else ">="
            raise ValueError(f"params.{name}={value.tolist()}: must be finite and {op} {low:g}")

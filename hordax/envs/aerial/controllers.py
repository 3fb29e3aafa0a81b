"""Batched, jittable Lee geometric (SE(3)) controllers: setpoints -> motor thrust commands.

The family follows Aerial Gym's ``lee_*_control`` controllers (Lee, Leok, McClamroch 2010,
"Geometric tracking control of a quadrotor UAV on SE(3)"):

- outer loop: a world-frame acceleration command ``a_cmd`` (from position/velocity errors,
  or given) becomes the desired force ``F = m (a_cmd + g e_z)``; the desired attitude
  ``R_d`` has body z along ``F`` and the commanded yaw; the collective thrust is
  ``F . (R e_z)`` (the force's projection on the current thrust axis);
- inner loop: ``e_R = 1/2 (R_d^T R - R^T R_d)^v``, ``e_w = w - R^T R_d w_d`` and
  ``M = J (-k_rot e_R - k_angvel e_w) + w x J w``;
- motor thrusts solve the allocation matrix for (collective, M) with yaw given the lowest
  priority (:func:`mix`: the yaw part is scaled down until no motor leaves its limits,
  as PX4's mixer does); then clamped to the limits.

Gains (:class:`ControllerParams`) are *normalized*: ``k_pos``/``k_vel`` are accelerations
per m and per m/s (Aerial Gym's ``K_pos``/``K_vel`` are already mass-normalized); the
attitude gains are angular accelerations, i.e. Aerial Gym's torque gains divided by the
inertia, so one set of gains means the same closed loop on any airframe. Defaults are the
centres of Aerial Gym's ranges for the base quadrotor: ``K_pos = (2.5, 2.5, 1.5)``,
``K_vel = 2.5``; its ``K_rot = (1.0, 1.0, 0.5)`` N m/rad and ``K_angvel = 0.15`` N m s/rad
over inertia (4.225e-4, 4.225e-4, 8.45e-4) give ``k_rot = (2367, 2367, 592)`` and
``k_angvel = (355, 355, 178)``, but those inner-loop gains are unstable in this simulator
at 100 Hz with a 0.04 s motor lag (measured: the attitude diverges within a second; see
``tests/envs/aerial/test_aerial_controllers.py``). The inner-loop defaults here were chosen by a
step-response sweep in this simulator instead: ``k_rot = (150, 150, 37.5)``,
``k_angvel = (25, 25, 12.5)`` for the base quadrotor (:func:`default_gains`) and
``(30, 30, 7.5)``, ``(12, 12, 6)`` for the Crazyflie (:func:`crazyflie_gains`), whose
motors are 3.6x slower (tau 0.145 s).

Each controller *kind* defines an action space ``f32[4]`` in ``[-1, 1]`` (clip first):

=============  ===========================================================================
kind           action -> setpoint
=============  ===========================================================================
position       ``p_d = p + max_pos_offset * a[:3]`` (world, relative to the current
               position), yaw ``psi_d = pi * a[3]`` (absolute, world)
velocity       ``v_d = Rz(psi) max_speed * a[:3]`` (yaw-aligned vehicle frame, as Aerial
               Gym), yaw rate ``max_yaw_rate * a[3]``
acceleration   ``a_d = max_accel * a[:3]`` (world, gravity compensated by the controller),
               yaw rate ``max_yaw_rate * a[3]``
attitude       collective ``(a[0] + 1) m g`` (``a[0] = 0`` hovers), roll/pitch
               ``max_tilt * a[1:3]``, yaw rate ``max_yaw_rate * a[3]``
rates          collective ``(a[0] + 1) m g``, body rates ``max_body_rate * a[1:3]``
               (roll, pitch) and ``max_yaw_rate * a[3]`` (yaw)
motors         per-motor thrust ``thrust_min + (a + 1) / 2 (thrust_max - thrust_min)``
=============  ===========================================================================
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import struct

from hordax.envs.aerial.dynamics import (
    QuadParams,
    QuadState,
    allocation_matrix,
    quat_from_euler,
    quat_to_euler,
    quat_to_rotmat,
)

KINDS = ("position", "velocity", "acceleration", "attitude", "rates", "motors")

_EZ = jnp.array([0.0, 0.0, 1.0], jnp.float32)
MAX_YAW_ERROR = math.pi / 6  # rad, see acceleration_control


@struct.dataclass
class ControllerParams:
    """Gains and action scales of the Lee controllers (float32 leaves; vmappable)."""

    k_pos: jax.Array = struct.field(
        default_factory=lambda: jnp.array([2.5, 2.5, 1.5], jnp.float32)
    )  # f32[3] (m/s^2)/m
    k_vel: jax.Array = struct.field(
        default_factory=lambda: jnp.array([2.5, 2.5, 2.5], jnp.float32)
    )  # f32[3] (m/s^2)/(m/s)
    k_rot: jax.Array = struct.field(
        default_factory=lambda: jnp.array([150.0, 150.0, 37.5], jnp.float32)
    )  # f32[3] (rad/s^2)/rad, inertia-normalized
    k_angvel: jax.Array = struct.field(
        default_factory=lambda: jnp.array([25.0, 25.0, 12.5], jnp.float32)
    )  # f32[3] (rad/s^2)/(rad/s), inertia-normalized
    max_tilt: jax.Array = math.pi / 3  # rad, attitude command and tilt limit of F
    max_yaw_rate: jax.Array = math.pi / 3  # rad/s
    max_body_rate: jax.Array = math.pi  # rad/s, roll/pitch rate scale (rates kind)
    max_speed: jax.Array = 2.0  # m/s, velocity scale
    max_accel: jax.Array = 5.0  # m/s^2, acceleration scale
    max_pos_offset: jax.Array = 2.0  # m, position scale


def default_gains() -> ControllerParams:
    """The default gains (tuned for Aerial Gym's base quadrotor), float32 leaves."""
    return jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), ControllerParams())


def crazyflie_gains() -> ControllerParams:
    """Default gains with the slower inner loop the Crazyflie's 0.145 s motor lag needs."""
    return default_gains().replace(
        k_rot=jnp.array([30.0, 30.0, 7.5], jnp.float32),
        k_angvel=jnp.array([12.0, 12.0, 6.0], jnp.float32),
    )


def aerial_gym_gains(quad: QuadParams) -> ControllerParams:
    """Aerial Gym's gains (range centres) normalized by ``quad``'s mass and inertia.

    ``k_rot = K_rot / J``, ``k_angvel = K_angvel / J`` with ``K_rot = (1, 1, 0.5)``,
    ``K_angvel = 0.15``; for the base quadrotor ``(2367, 2367, 592)`` and ``(355, 355, 178)``.
    """
    gains = default_gains()
    return gains.replace(
        k_rot=jnp.array([1.0, 1.0, 0.5], jnp.float32) / quad.inertia,
        k_angvel=jnp.full(3, 0.15, jnp.float32) / quad.inertia,
    )


# --------------------------------------------------------------------------------------------
# building blocks


def mix(collective: jax.Array, torque: jax.Array, quad: QuadParams) -> jax.Array:
    """Motor thrusts ``f32[4]`` for ``(collective, torque[3])``, yaw torque lowest priority.

    ``f = f_base + s f_yaw`` where ``f_base`` produces (collective, roll, pitch) and
    ``f_yaw`` the yaw torque; ``s in [0, 1]`` is the largest scale keeping every motor in
    ``[thrust_min, thrust_max]`` (if ``f_base`` itself is outside, ``s = 0``); the result
    is clamped to the limits. Without saturation this is the exact allocation inverse.
    """
    inv = jnp.linalg.inv(allocation_matrix(quad))
    f_base = inv[:, :3] @ jnp.concatenate([jnp.reshape(collective, (1,)), torque[:2]])
    f_yaw = inv[:, 3] * torque[2]
    lo, hi = quad.thrust_min, quad.thrust_max
    room = jnp.where(f_yaw > 0, hi - f_base, lo - f_base)
    safe = jnp.where(f_yaw == 0, 1.0, f_yaw)
    ratio = jnp.where(f_yaw == 0, jnp.inf, room / safe)
    scale = jnp.clip(jnp.min(ratio), 0.0, 1.0)
    return jnp.clip(f_base + scale * f_yaw, lo, hi)


def _vee(m: jax.Array) -> jax.Array:
    return jnp.stack([m[2, 1], m[0, 2], m[1, 0]])


def _normalize(v: jax.Array, eps: float = 1e-9) -> jax.Array:
    return v / jnp.maximum(jnp.linalg.norm(v), eps)


def attitude_torque(
    state: QuadState,
    rot_d: jax.Array,
    omega_d: jax.Array,
    quad: QuadParams,
    gains: ControllerParams,
) -> jax.Array:
    """Lee attitude law ``f32[3]`` body torque for desired rotation ``rot_d [3, 3]``.

    ``omega_d`` is the desired angular velocity expressed in the desired frame.
    """
    rot = quat_to_rotmat(state.quat)
    e_rot = 0.5 * _vee(rot_d.T @ rot - rot.T @ rot_d)
    e_omega = state.omega - rot.T @ rot_d @ omega_d
    gyro = jnp.cross(state.omega, quad.inertia * state.omega)
    return quad.inertia * (-gains.k_rot * e_rot - gains.k_angvel * e_omega) + gyro


def _rot_from_thrust_dir_and_yaw(b3: jax.Array, yaw: jax.Array) -> jax.Array:
    b1c = jnp.stack([jnp.cos(yaw), jnp.sin(yaw), jnp.zeros_like(yaw)])
    b2 = _normalize(jnp.cross(b3, b1c))
    b1 = jnp.cross(b2, b3)
    return jnp.stack([b1, b2, b3], axis=1)


def acceleration_control(
    state: QuadState,
    acc_d: jax.Array,
    yaw_d: jax.Array,
    yaw_rate_d: jax.Array,
    quad: QuadParams,
    gains: ControllerParams,
) -> jax.Array:
    """World acceleration command (+ yaw, yaw rate) -> motor thrust commands ``f32[4]``.

    The desired force ``F = m (acc_d + g e_z)`` is limited to a tilt of ``max_tilt`` from
    vertical (its vertical part kept >= 0.1 m g) before the attitude is derived from it.
    The yaw setpoint is taken at most ``MAX_YAW_ERROR`` (pi/6) from the current yaw: Lee's
    ``e_R`` mixes tilt and yaw, and a yaw error near pi starves the tilt correction (the
    Crazyflie drifted into the ground when told to turn by ~2.7 rad at once).
    """
    yaw_now = quat_to_euler(state.quat)[2]
    yaw_err = jnp.arctan2(jnp.sin(yaw_d - yaw_now), jnp.cos(yaw_d - yaw_now))
    yaw_d = yaw_now + jnp.clip(yaw_err, -MAX_YAW_ERROR, MAX_YAW_ERROR)
    force = quad.mass * (acc_d + quad.gravity * _EZ)
    fz = jnp.maximum(force[2], 0.1 * quad.mass * quad.gravity)
    horiz = force[:2]
    h_norm = jnp.linalg.norm(horiz)
    h_max = fz * jnp.tan(gains.max_tilt)
    horiz = horiz * jnp.minimum(1.0, h_max / jnp.maximum(h_norm, 1e-9))
    force = jnp.concatenate([horiz, fz[None]])
    rot_d = _rot_from_thrust_dir_and_yaw(_normalize(force), yaw_d)
    rot = quat_to_rotmat(state.quat)
    collective = jnp.maximum(force @ rot[:, 2], 0.0)
    torque = attitude_torque(state, rot_d, jnp.stack([0.0, 0.0, yaw_rate_d]), quad, gains)
    return mix(collective, torque, quad)


def position_control(
    state: QuadState,
    pos_d: jax.Array,
    yaw_d: jax.Array,
    quad: QuadParams,
    gains: ControllerParams,
    vel_d: jax.Array | None = None,
    acc_ff: jax.Array | None = None,
) -> jax.Array:
    """``a = k_pos (p_d - p) + k_vel (v_d - v) + a_ff`` then :func:`acceleration_control`."""
    vel_d = jnp.zeros(3, jnp.float32) if vel_d is None else vel_d
    acc_ff = jnp.zeros(3, jnp.float32) if acc_ff is None else acc_ff
    acc = gains.k_pos * (pos_d - state.pos) + gains.k_vel * (vel_d - state.vel) + acc_ff
    return acceleration_control(state, acc, yaw_d, jnp.float32(0.0), quad, gains)


def velocity_control(
    state: QuadState,
    vel_d: jax.Array,
    yaw_rate_d: jax.Array,
    quad: QuadParams,
    gains: ControllerParams,
) -> jax.Array:
    """World velocity command (+ yaw rate): ``a = k_vel (v_d - v)``, yaw held at the current."""
    acc = gains.k_vel * (vel_d - state.vel)
    yaw = quat_to_euler(state.quat)[2]
    return acceleration_control(state, acc, yaw, yaw_rate_d, quad, gains)


def attitude_control(
    state: QuadState,
    collective: jax.Array,
    roll: jax.Array,
    pitch: jax.Array,
    yaw_rate: jax.Array,
    quad: QuadParams,
    gains: ControllerParams,
) -> jax.Array:
    """Collective thrust (N), roll and pitch (rad, yaw kept) and yaw rate -> motor commands."""
    yaw = quat_to_euler(state.quat)[2]
    rot_d = quat_to_rotmat(quat_from_euler(roll, pitch, yaw))
    torque = attitude_torque(state, rot_d, jnp.stack([0.0, 0.0, yaw_rate]), quad, gains)
    return mix(collective, torque, quad)


def rates_control(
    state: QuadState,
    collective: jax.Array,
    rates: jax.Array,
    quad: QuadParams,
    gains: ControllerParams,
) -> jax.Array:
    """Collective thrust (N) and body rates ``f32[3]`` -> motor commands.

    ``M = J (-k_angvel (w - w_d)) + w x J w`` (the rate loop of the Lee controller).
    """
    gyro = jnp.cross(state.omega, quad.inertia * state.omega)
    torque = quad.inertia * (-gains.k_angvel * (state.omega - rates)) + gyro
    return mix(collective, torque, quad)


# --------------------------------------------------------------------------------------------
# [-1, 1] actions


def motor_command(
    kind: str,
    action: jax.Array,
    state: QuadState,
    quad: QuadParams,
    gains: ControllerParams,
) -> jax.Array:
    """Map a ``[-1, 1]`` action ``f32[4]`` of controller ``kind`` to motor thrusts ``f32[4]``.

    ``kind`` is static (one of :data:`KINDS`); the scaling is in the module docstring.
    The action must already be finite and clipped (envs do this).
    """
    a = jnp.asarray(action, jnp.float32)
    hover_collective = (a[0] + 1.0) * quad.mass * quad.gravity
    if kind == "position":
        return position_control(
            state, state.pos + gains.max_pos_offset * a[:3], math.pi * a[3], quad, gains
        )
    if kind == "velocity":
        yaw = quat_to_euler(state.quat)[2]
        c, s = jnp.cos(yaw), jnp.sin(yaw)
        v = gains.max_speed * a[:3]
        vel_d = jnp.stack([c * v[0] - s * v[1], s * v[0] + c * v[1], v[2]])
        return velocity_control(state, vel_d, gains.max_yaw_rate * a[3], quad, gains)
    if kind == "acceleration":
        yaw = quat_to_euler(state.quat)[2]
        return acceleration_control(
            state, gains.max_accel * a[:3], yaw, gains.max_yaw_rate * a[3], quad, gains
        )
    if kind == "attitude":
        return attitude_control(
            state,
            hover_collective,
            gains.max_tilt * a[1],
            gains.max_tilt * a[2],
            gains.max_yaw_rate * a[3],
            quad,
            gains,
        )
    if kind == "rates":
        rates = jnp.stack(
            [gains.max_body_rate * a[1], gains.max_body_rate * a[2], gains.max_yaw_rate * a[3]]
        )
        return rates_control(state, hover_collective, rates, quad, gains)
    if kind == "motors":
        return quad.thrust_min + (a + 1.0) / 2.0 * (quad.thrust_max - quad.thrust_min)
    raise ValueError(f"controller={kind!r}: must be one of {KINDS}")


def validate_gains(gains: ControllerParams, prefix: str = "params.ctrl") -> None:
    """Host-side checks: all gains and scales finite and > 0 (``max_tilt`` < pi/2)."""
    import numpy as np

    for name in gains.__dataclass_fields__:
        value = np.asarray(getattr(gains, name), np.float64)
        if not np.all(np.isfinite(value)) or np.any(value <= 0):
            raise ValueError(f"{prefix}.{name}={value.tolist()}: must be finite and > 0")
    tilt = np.asarray(gains.max_tilt)
    if np.any(tilt >= math.pi / 2):
        raise ValueError(f"{prefix}.max_tilt={tilt.tolist()}: must be < pi/2")

"""Quadrotor rigid-body dynamics (pure functions of arrays; no env logic).

Frames and conventions
----------------------
- World frame: z up, gravity ``-gravity * e_z``. Positions/velocities are world-frame.
- Attitude: unit quaternion ``quat = [w, x, y, z]`` rotating body vectors into the world
  frame (``v_world = R(quat) v_body``). Body z is the thrust axis, body x points forward.
- Angular velocity ``omega`` is expressed in the body frame.
- Motor ``i`` sits at ``params.motor_xy[i]`` (body x, y in m) and spins in direction
  ``params.motor_dir[i]`` (+1: its reaction torque about body z is ``+yaw_coef * f_i``).

Equations (``v_b = R^T v`` the body-frame velocity, products elementwise)::

    p'     = v
    m v'   = R (T e_z + F_drag) + F_ext - m g e_z,   F_drag = -(k_lin v_b + k_quad |v_b| v_b)
    q'     = 1/2 q (x) [0, omega]
    J w'   = M + M_drag + tau_ext - w x J w      (tau_ext: body-frame external torque)
             M_drag = -(k_ang_lin w + k_ang_quad |w| w)
    f_i'   = (f_cmd_i - f_i) / tau,   tau = tau_up if f_cmd_i >= f_i else tau_down

with ``(T, M) = A f`` (:func:`allocation_matrix`) and ``f_cmd`` clamped to
``[thrust_min, thrust_max]`` per motor (so the lagged thrust stays in the same range).

Integrator
----------
Classic fourth-order Runge-Kutta over the whole 17-dim state (position, velocity,
quaternion, body rates, motor thrusts) at ``dt = 0.01 s`` with the motor command held
over the step (zero-order hold), then the quaternion is renormalized. The four stages
run as a ``lax.scan`` so the derivative is compiled once. Why RK4 rather
than (semi-implicit) Euler: the fast parts of this system (motor lag ``tau = 0.04 s`` is
only 4 steps; the gyroscopic term and the controllers' stiff attitude loops) make first-
order schemes visibly wrong at 100 Hz (an Euler motor lag overshoots the exact
``1 - exp(-dt/tau)`` response by 13 % per step, and Euler's attitude drift feeds the
position error), while RK4 stays within ~1e-6 of a tight-tolerance reference
(``tests/envs/aerial/test_aerial_dynamics.py`` checks this against ``scipy.integrate.solve_ivp``).
Its cost is four evaluations of a ~100-flop derivative per step, small against
observation, reward and (for navigation) the depth camera.

Every function works on unbatched arrays; ``jax.vmap`` batches them (over states and,
for domain randomization, over :class:`QuadParams`).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import struct

GRAVITY = 9.81


# --------------------------------------------------------------------------------------------
# parameters and state


@struct.dataclass
class QuadParams:
    """Physical parameters of one quadrotor (all float32 leaves; vmappable).

    Defaults are Aerial Gym's base quadrotor (``quad.urdf`` and its robot config): mass
    0.225 kg, inertia diag(4.225e-4, 4.225e-4, 8.45e-4) kg m^2, allocation matrix with
    +-0.13 m moment arms (motors at (+-0.13, +-0.13) m, an X layout) and yaw coefficient
    0.01 N m/N, motor lag tau = 0.04 s, thrust in [0, 2] N per motor, drag 0,
    disturbances off (Aerial Gym's "on" values: probability 0.02 per step, 0.75 N,
    0.004 N m).
    """

    mass: jax.Array = 0.225  # kg
    inertia: jax.Array = struct.field(
        default_factory=lambda: jnp.array([4.225e-4, 4.225e-4, 8.45e-4], jnp.float32)
    )  # f32[3] principal moments (kg m^2), body axes
    gravity: jax.Array = GRAVITY  # m/s^2
    motor_xy: jax.Array = struct.field(
        default_factory=lambda: _x_frame(0.13)
    )  # f32[4, 2] motor positions in the body xy plane (m)
    motor_dir: jax.Array = struct.field(
        default_factory=lambda: jnp.array([-1.0, 1.0, -1.0, 1.0], jnp.float32)
    )  # f32[4] spin direction: sign of each motor's yaw reaction torque
    yaw_coef: jax.Array = 0.01  # yaw torque per unit thrust (N m / N)
    thrust_min: jax.Array = 0.0  # N per motor
    thrust_max: jax.Array = 2.0  # N per motor
    motor_tau_up: jax.Array = 0.04  # s, first-order lag when thrust rises
    motor_tau_down: jax.Array = 0.04  # s, ... when it falls
    lin_drag: jax.Array = struct.field(
        default_factory=lambda: jnp.zeros(3, jnp.float32)
    )  # f32[3] N/(m/s), body frame
    quad_drag: jax.Array = struct.field(
        default_factory=lambda: jnp.zeros(3, jnp.float32)
    )  # f32[3] N/(m/s)^2, body frame
    ang_lin_drag: jax.Array = struct.field(
        default_factory=lambda: jnp.zeros(3, jnp.float32)
    )  # f32[3] N m/(rad/s)
    ang_quad_drag: jax.Array = struct.field(
        default_factory=lambda: jnp.zeros(3, jnp.float32)
    )  # f32[3] N m/(rad/s)^2
    disturb_prob: jax.Array = 0.0  # probability per step of a random force/torque kick
    disturb_force: jax.Array = 0.75  # N, max |component| of a kick (world frame)
    disturb_torque: jax.Array = 0.004  # N m, max |component| of a kick (body frame)
    dt: jax.Array = 0.01  # s, integration step


def motor_layout(kind: str, arm_length: float) -> jax.Array:
    """Motor positions ``f32[4, 2]`` for an ``"x"`` or ``"+"`` frame with centre-motor distance.

    Motor order: front-right, back-right, back-left, front-left for ``"x"``; front, right,
    back, left for ``"+"`` (body x forward, y left). Use with ``motor_dir = [-1, 1, -1, 1]``
    (diagonal/opposite motors spin the same way).
    """
    if kind == "x":
        return _x_frame(arm_length / math.sqrt(2.0))
    if kind == "+":
        a = arm_length
        xy = [[a, 0.0], [0.0, -a], [-a, 0.0], [0.0, a]]
    else:
        raise ValueError(f"layout={kind!r}: must be 'x' or '+'")
    return jnp.array(xy, jnp.float32)


def _x_frame(offset: float) -> jax.Array:
    """X frame with motors at ``(+-offset, +-offset)`` (exactly symmetric in float32)."""
    a = offset
    return jnp.array([[a, -a], [-a, -a], [-a, a], [a, a]], jnp.float32)


def aerial_gym_quad() -> QuadParams:
    """Aerial Gym's base quadrotor (the :class:`QuadParams` defaults), float32 leaves."""
    return _as_f32(QuadParams())


def crazyflie() -> QuadParams:
    """Crazyflie 2.x (brushed, 250 mAh, "L250" propellers), system-identified values.

    Source: the ``cf2x_L250`` entry of ``drone_models/data/params.toml`` in the MIT-licensed
    ``drone-models`` 0.1.0 package (M. Rath, M. Schuck, TU Munich Learning Systems and
    Robotics Lab; system identification of the Crazyflie 2.x): mass 0.0319 kg, inertia
    diag(16.8e-6, 16.8e-6, 29.8e-6) kg m^2, moment arm L = 0.03253 m per axis (X frame,
    i.e. the 46 mm centre-motor arm: 0.046 / sqrt(2) = 0.0325), thrust-to-torque 0.00735
    N m/N, thrust in [0.0128, 0.12] N per motor, thrust dynamics coefficient 6.893 1/s
    (tau = 1 / 6.893 = 0.145 s), linear drag 0.0147 N/(m/s) (x, y) and 0.0128 (z). The
    inertia agrees in magnitude with Forster (2015, ETH "System identification of the
    Crazyflie 2.0 nano quadrocopter": Ixx ~ 1.66e-5, Izz ~ 2.93e-5 kg m^2).
    """
    return _as_f32(
        QuadParams(
            mass=0.0319,
            inertia=jnp.array([16.8e-6, 16.8e-6, 29.8e-6]),
            motor_xy=_x_frame(0.03253),
            yaw_coef=0.007350862856566459,
            thrust_min=0.012817578393224994,
            thrust_max=0.12,
            motor_tau_up=1.0 / 6.8932095506763345,
            motor_tau_down=1.0 / 6.8932095506763345,
            lin_drag=jnp.array([0.01471782, 0.01471782, 0.01277641]),
            disturb_force=0.1,
            disturb_torque=2e-4,
        )
    )


def _as_f32(params: QuadParams) -> QuadParams:
    return jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), params)


@struct.dataclass
class QuadState:
    """State of one quadrotor (float32)."""

    pos: jax.Array  # f32[3] world position (m)
    vel: jax.Array  # f32[3] world velocity (m/s)
    quat: jax.Array  # f32[4] attitude [w, x, y, z], body -> world
    omega: jax.Array  # f32[3] body angular velocity (rad/s)
    thrust: jax.Array  # f32[4] current motor thrusts (N)


def hover_state(params: QuadParams, pos: jax.Array | None = None) -> QuadState:
    """Level, at rest, motors already at the hover thrust ``m g / 4``."""
    pos = jnp.zeros(3, jnp.float32) if pos is None else jnp.asarray(pos, jnp.float32)
    return QuadState(
        pos=pos,
        vel=jnp.zeros(3, jnp.float32),
        quat=jnp.array([1.0, 0.0, 0.0, 0.0], jnp.float32),
        omega=jnp.zeros(3, jnp.float32),
        thrust=jnp.full(4, params.mass * params.gravity / 4.0, jnp.float32),
    )


def hover_thrust(params: QuadParams) -> jax.Array:
    """Per-motor thrust that balances gravity, ``m g / 4`` (N)."""
    return params.mass * params.gravity / 4.0


# --------------------------------------------------------------------------------------------
# rotations


def quat_mul(a: jax.Array, b: jax.Array) -> jax.Array:
    """Hamilton product ``a (x) b`` of ``[w, x, y, z]`` quaternions."""
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return jnp.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=-1,
    )


def quat_to_rotmat(q: jax.Array) -> jax.Array:
    """Rotation matrix ``f32[..., 3, 3]`` of a unit quaternion (body -> world)."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    r = jnp.stack(
        [
            1 - 2 * (y * y + z * z),
            2 * (x * y - w * z),
            2 * (x * z + w * y),
            2 * (x * y + w * z),
            1 - 2 * (x * x + z * z),
            2 * (y * z - w * x),
            2 * (x * z - w * y),
            2 * (y * z + w * x),
            1 - 2 * (x * x + y * y),
        ],
        axis=-1,
    )
    return r.reshape(q.shape[:-1] + (3, 3))


def quat_from_euler(roll: jax.Array, pitch: jax.Array, yaw: jax.Array) -> jax.Array:
    """Quaternion of intrinsic z-y'-x'' (yaw, then pitch, then roll) Euler angles."""
    cr, sr = jnp.cos(roll / 2), jnp.sin(roll / 2)
    cp, sp = jnp.cos(pitch / 2), jnp.sin(pitch / 2)
    cy, sy = jnp.cos(yaw / 2), jnp.sin(yaw / 2)
    return jnp.stack(
        [
            cr * cp * cy + sr * sp * sy,
            sr * cp * cy - cr * sp * sy,
            cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy,
        ],
        axis=-1,
    )


def quat_to_euler(q: jax.Array) -> jax.Array:
    """``f32[..., 3]`` roll, pitch, yaw (z-y'-x'') of a unit quaternion."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    roll = jnp.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    pitch = jnp.arcsin(jnp.clip(2 * (w * y - z * x), -1.0, 1.0))
    yaw = jnp.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return jnp.stack([roll, pitch, yaw], axis=-1)


def rotate(q: jax.Array, v: jax.Array) -> jax.Array:
    """``R(q) v``: body vector to world."""
    return quat_to_rotmat(q) @ v


def rotate_inv(q: jax.Array, v: jax.Array) -> jax.Array:
    """``R(q)^T v``: world vector to body."""
    return quat_to_rotmat(q).T @ v


# --------------------------------------------------------------------------------------------
# motors


def allocation_matrix(params: QuadParams) -> jax.Array:
    """``f32[4, 4]``: rows (collective thrust, Mx, My, Mz) per unit thrust of each motor.

    A thrust ``f_i`` along body z at ``(x_i, y_i)`` gives ``Mx = y_i f_i``, ``My = -x_i f_i``;
    the rotor's reaction torque is ``Mz = motor_dir_i * yaw_coef * f_i``.
    """
    x, y = params.motor_xy[:, 0], params.motor_xy[:, 1]
    return jnp.stack([jnp.ones_like(x), y, -x, params.motor_dir * params.yaw_coef], axis=0).astype(
        jnp.float32
    )


def _wrench(thrust: jax.Array, params: QuadParams) -> jax.Array:
    """``allocation_matrix(params) @ thrust`` = ``(collective, Mx, My, Mz)``.

    Split into the mean thrust times the row sums plus the deviations from the mean: for
    equal thrusts on a symmetric frame both parts are exactly zero in float32 whatever
    order XLA sums in, so a hovering vehicle feels exactly zero torque (a plain dot leaves
    ~1e-9 N m of rounding, i.e. mm of drift over seconds).
    """
    alloc = allocation_matrix(params)
    mean = jnp.mean(thrust)
    return alloc @ (thrust - mean) + mean * jnp.sum(alloc, axis=1)


def motor_thrusts_for_wrench(
    collective: jax.Array, torque: jax.Array, params: QuadParams
) -> jax.Array:
    """Motor thrusts ``f32[4]`` that produce ``(collective, torque[3])``, clamped to limits.

    Solves the (square, invertible for any X/+ frame) allocation system exactly, then
    clamps each motor to ``[thrust_min, thrust_max]`` (the wrench is not preserved under
    saturation).
    """
    wrench = jnp.concatenate([jnp.reshape(collective, (1,)), torque])
    thrusts = jnp.linalg.solve(allocation_matrix(params), wrench)
    return jnp.clip(thrusts, params.thrust_min, params.thrust_max)


def clamp_motor_command(command: jax.Array, params: QuadParams) -> jax.Array:
    """Clamp per-motor thrust commands to ``[thrust_min, thrust_max]``."""
    return jnp.clip(command, params.thrust_min, params.thrust_max)


# --------------------------------------------------------------------------------------------
# dynamics


def _derivative(
    y: tuple[jax.Array, ...],
    command: jax.Array,
    params: QuadParams,
    force_ext: jax.Array,
    torque_ext: jax.Array,
) -> tuple[jax.Array, ...]:
    """Time derivative of ``(pos, vel, quat, omega, thrust)`` (see the module docstring)."""
    pos, vel, quat, omega, thrust = y
    del pos
    rot = quat_to_rotmat(quat)
    wrench = _wrench(thrust, params)
    v_body = rot.T @ vel
    drag = -(params.lin_drag * v_body + params.quad_drag * jnp.abs(v_body) * v_body)
    force_body = jnp.array([0.0, 0.0, 1.0], jnp.float32) * wrench[0] + drag
    gravity = jnp.array([0.0, 0.0, 1.0], jnp.float32) * params.gravity
    acc = (rot @ force_body + force_ext) / params.mass - gravity
    omega_q = jnp.concatenate([jnp.zeros(1, jnp.float32), omega])
    dquat = 0.5 * quat_mul(quat, omega_q)
    ang_drag = -(params.ang_lin_drag * omega + params.ang_quad_drag * jnp.abs(omega) * omega)
    torque = wrench[1:] + ang_drag + torque_ext - jnp.cross(omega, params.inertia * omega)
    domega = torque / params.inertia
    tau = jnp.where(command >= thrust, params.motor_tau_up, params.motor_tau_down)
    dthrust = (command - thrust) / tau
    return vel, acc, dquat, domega, dthrust


def derivative(
    state: QuadState,
    command: jax.Array,
    params: QuadParams,
    force_ext: jax.Array | None = None,
    torque_ext: jax.Array | None = None,
) -> QuadState:
    """``d state / dt`` as a :class:`QuadState` of rates (``command`` already clamped)."""
    force_ext, torque_ext = _ext(force_ext, torque_ext)
    y = (state.pos, state.vel, state.quat, state.omega, state.thrust)
    return QuadState(*_derivative(y, command, params, force_ext, torque_ext))


def _ext(force_ext, torque_ext):
    zero = jnp.zeros(3, jnp.float32)
    return (
        zero if force_ext is None else jnp.asarray(force_ext, jnp.float32),
        zero if torque_ext is None else jnp.asarray(torque_ext, jnp.float32),
    )


def step(
    state: QuadState,
    command: jax.Array,
    params: QuadParams,
    force_ext: jax.Array | None = None,
    torque_ext: jax.Array | None = None,
) -> QuadState:
    """Advance one step of ``params.dt`` (RK4, zero-order-hold command, renormalized quat).

    Args:
        state: current :class:`QuadState`.
        command: ``f32[4]`` motor thrust commands (N); clamped to the thrust limits here.
            Must be finite (envs sanitize actions before they reach the dynamics).
        params: :class:`QuadParams`.
        force_ext: optional ``f32[3]`` external force, world frame (N), held over the step.
        torque_ext: optional ``f32[3]`` external torque, body frame (N m).

    Returns:
        The next :class:`QuadState` (float32).
    """
    command = clamp_motor_command(jnp.asarray(command, jnp.float32), params)
    force_ext, torque_ext = _ext(force_ext, torque_ext)
    dt = params.dt
    y0 = (state.pos, state.vel, state.quat, state.omega, state.thrust)

    def f(y):
        return _derivative(y, command, params, force_ext, torque_ext)

    def stage(carry, coef):
        # One RK4 stage: k_i = f(y0 + c_i dt k_{i-1}); accumulate w_i k_i. Scanning over
        # the four stages compiles the derivative once (about half the compile time of
        # the unrolled form, which matters for the many small programs of a test suite).
        k_prev, acc = carry
        c, w = coef[0], coef[1]
        k = f(tuple(a + c * dt * b for a, b in zip(y0, k_prev, strict=True)))
        acc = tuple(a + w * b for a, b in zip(acc, k, strict=True))
        return (k, acc), None

    zeros = tuple(jnp.zeros_like(a) for a in y0)
    coefs = jnp.array([[0.0, 1.0], [0.5, 2.0], [0.5, 2.0], [1.0, 1.0]], jnp.float32)
    (_, acc), _ = jax.lax.scan(stage, (zeros, zeros), coefs)
    y1 = tuple(a + dt / 6 * b for a, b in zip(y0, acc, strict=True))
    pos, vel, quat, omega, thrust = y1
    quat = quat / jnp.linalg.norm(quat)
    # RK4 can overshoot the lag's fixed point by rounding only; keep thrusts in range.
    thrust = jnp.clip(thrust, params.thrust_min, params.thrust_max)
    return QuadState(pos, vel, quat, omega, thrust)


def sample_disturbance(key: jax.Array, params: QuadParams) -> tuple[jax.Array, jax.Array]:
    """Random kick for one step: ``(force_world f32[3], torque_body f32[3])``.

    With probability ``disturb_prob`` each component is uniform in ``[-max, max]``
    (``disturb_force`` N, ``disturb_torque`` N m); otherwise both are zero.
    """
    u = jax.random.uniform(key, (7,), jnp.float32, -1.0, 1.0)  # one draw: cheap to compile
    on = (u[0] + 1.0) / 2.0 < params.disturb_prob
    force = u[1:4] * params.disturb_force
    torque = u[4:7] * params.disturb_torque
    return jnp.where(on, force, 0.0), jnp.where(on, torque, 0.0)


def below_ground(state: QuadState, ground_z: jax.Array = 0.0) -> jax.Array:
    """``bool[]``: the body centre is at or below the ground plane ``z = ground_z``."""
    return state.pos[2] <= ground_z


def is_finite(state: QuadState) -> jax.Array:
    """``bool[]``: every leaf of ``state`` is finite."""
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(state)]))


# --------------------------------------------------------------------------------------------
# host-side validation


def validate_quad_params(params: QuadParams, prefix: str = "params.quad") -> None:
    """Reject physically meaningless parameters with a ``ValueError`` naming the field.

    Works on unbatched or batched (domain-randomized) params: every entry is checked.
    """
    import numpy as np

    def arr(name):
        return np.asarray(getattr(params, name), np.float64)

    def fail(name, value, allowed):
        raise ValueError(f"{prefix}.{name}={np.asarray(value).tolist()}: must be {allowed}")

    for name in params.__dataclass_fields__:
        value = arr(name)
        if not np.all(np.isfinite(value)):
            fail(name, value, "finite")
    positive = ["mass", "inertia", "gravity", "thrust_max", "motor_tau_up", "motor_tau_down", "dt"]
    for name in positive:
        if np.any(arr(name) <= 0):
            fail(name, arr(name), "> 0")
    nonneg = [
        "thrust_min",
        "yaw_coef",
        "lin_drag",
        "quad_drag",
        "ang_lin_drag",
        "ang_quad_drag",
        "disturb_force",
        "disturb_torque",
    ]
    for name in nonneg:
        if np.any(arr(name) < 0):
            fail(name, arr(name), ">= 0")
    if np.any(arr("thrust_min") >= arr("thrust_max")):
        fail("thrust_min", arr("thrust_min"), f"< thrust_max={arr('thrust_max').tolist()}")
    prob = arr("disturb_prob")
    if np.any((prob < 0) | (prob > 1)):
        fail("disturb_prob", prob, "in [0, 1]")
    if np.any(arr("dt") > 0.1):
        fail("dt", arr("dt"), "<= 0.1 s (RK4 on the motor lag and attitude loops)")
    if arr("inertia").shape[-1:] != (3,):
        fail("inertia", arr("inertia"), "a vector of 3 principal moments")
    if arr("motor_xy").shape[-2:] != (4, 2):
        fail("motor_xy", arr("motor_xy"), "of shape [4, 2]")
    alloc = np.asarray(jax.vmap(allocation_matrix)(params)) if arr("mass").ndim else None
    alloc = np.asarray(allocation_matrix(params))[None] if alloc is None else alloc
    if np.any(np.abs(np.linalg.det(alloc)) < 1e-12):
        raise ValueError(
            f"{prefix}.motor_xy={arr('motor_xy').tolist()}, "
            f"{prefix}.motor_dir={arr('motor_dir').tolist()}, "
            f"{prefix}.yaw_coef={arr('yaw_coef').tolist()}: the motor layout's allocation "
            "matrix must be invertible (thrusts -> force and torques)"
        )
    weight = arr("mass") * arr("gravity")
    if np.any(4 * arr("thrust_max") <= weight):
        hover = (weight / 4).tolist()
        fail("thrust_max", arr("thrust_max"), f"> m g / 4 = {hover} (able to hover)")

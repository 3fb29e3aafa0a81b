"""Pieces shared by the aerial tasks: airframe presets, spawning, observation, crash rules.

Not an env itself; ``hover.py`` and ``track.py`` build on it.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from gymnax.environments import spaces

from hordax.envs.aerial import controllers as ctl
from hordax.envs.aerial import dynamics as dyn
from hordax.envs.wrappers.clip import clip_action

AIRFRAMES = ("aerial_gym", "crazyflie")


def airframe_presets(airframe: str) -> tuple[dyn.QuadParams, ctl.ControllerParams]:
    """``(QuadParams, ControllerParams)`` for ``"aerial_gym"`` or ``"crazyflie"``."""
    if airframe == "aerial_gym":
        return dyn.aerial_gym_quad(), ctl.default_gains()
    if airframe == "crazyflie":
        return dyn.crazyflie(), ctl.crazyflie_gains()
    raise ValueError(f"airframe={airframe!r}: must be one of {AIRFRAMES}")


def check_controller(controller: str) -> str:
    """Host-side check of the constructor's ``controller`` argument."""
    if controller not in ctl.KINDS:
        raise ValueError(f"controller={controller!r}: must be one of {ctl.KINDS}")
    return controller


def action_space() -> spaces.Box:
    """Every controller's action is ``f32[4]`` in ``[-1, 1]``."""
    return spaces.Box(-1.0, 1.0, (4,), jnp.float32)


def sanitize_action(action: jax.Array) -> jax.Array:
    """The documented rule: NaN -> 0, +-inf and out-of-range values clipped to [-1, 1]."""
    return clip_action(action, action_space())


def spawn(
    key: jax.Array,
    center: jax.Array,
    pos_range: jax.Array,
    tilt: jax.Array,
    speed: jax.Array,
    rate: jax.Array,
    quad: dyn.QuadParams,
) -> dyn.QuadState:
    """A random initial state around ``center``.

    Position ``center + U(-pos_range, pos_range)`` per axis; roll and pitch
    ``U(-tilt, tilt)``, yaw ``U(-pi, pi)``; velocity and body rates ``U(-speed, speed)``,
    ``U(-rate, rate)`` per axis; motors at the hover thrust.
    """
    # One draw for everything: each jax.random call compiles its own threefry graph, and
    # those dominate the compile time of this small function on CPU.
    u = jax.random.uniform(key, (12,), jnp.float32, -1.0, 1.0)
    pos = center + u[0:3] * pos_range
    rp = u[3:5] * tilt
    yaw = u[5] * math.pi
    state = dyn.hover_state(quad, pos)
    return state.replace(
        quat=dyn.quat_from_euler(rp[0], rp[1], yaw).astype(jnp.float32),
        vel=u[6:9] * speed,
        omega=u[9:12] * rate,
    )


def fly(
    key: jax.Array,
    state: dyn.QuadState,
    action: jax.Array,
    controller: str,
    quad: dyn.QuadParams,
    gains: ctl.ControllerParams,
) -> tuple[dyn.QuadState, jax.Array]:
    """Sanitize ``action``, run the controller and one dynamics step with a random kick.

    Returns ``(next_state, finite)``; if the step produced a non-finite value the previous
    state is returned instead and ``finite`` is False (the task then ends the episode).
    """
    action = sanitize_action(action)
    command = ctl.motor_command(controller, action, state, quad, gains)
    command = jnp.where(jnp.isfinite(command), command, quad.thrust_min)
    force, torque = dyn.sample_disturbance(key, quad)
    nxt = dyn.step(state, command, quad, force, torque)
    finite = dyn.is_finite(nxt)
    nxt = jax.tree.map(lambda a, b: jnp.where(finite, a, b), nxt, state)
    return nxt, finite


def yaw_frame(yaw: jax.Array, v: jax.Array) -> jax.Array:
    """World vectors ``v f32[..., 3]`` in the yaw-aligned vehicle frame: ``Rz(-yaw) v``.

    ``yaw`` (rad) broadcasts against ``v[..., 0]``. The frame of the velocity controller's
    command, so a goal vector observed in it is the direction to command.
    """
    c, s = jnp.cos(yaw), jnp.sin(yaw)
    return jnp.stack([c * v[..., 0] + s * v[..., 1], -s * v[..., 0] + c * v[..., 1], v[..., 2]], -1)


def state_observation(quad_state: dyn.QuadState, pos_error: jax.Array) -> jax.Array:
    """Aerial Gym's 13-dim observation ``f32[13]``.

    ``[target - position (3, world), quaternion w, x, y, z (4), body linear velocity (3),
    body angular velocity (3)]``.
    """
    v_body = dyn.rotate_inv(quad_state.quat, quad_state.vel)
    return jnp.concatenate([pos_error, quad_state.quat, v_body, quad_state.omega]).astype(
        jnp.float32
    )


def state_observation_space() -> spaces.Box:
    """Bounds of :func:`state_observation`: quaternion in [-1, 1], the rest unbounded."""
    high = np.full(13, np.inf, np.float32)
    high[3:7] = 1.0
    return spaces.Box(jnp.asarray(-high), jnp.asarray(high), (13,), jnp.float32)


def tilt(quad_state: dyn.QuadState) -> jax.Array:
    """``1 - (body z)_z``: 0 level, 1 on its side, 2 upside down (Aerial Gym's ``tilt``)."""
    q = quad_state.quat
    return 2.0 * (q[1] * q[1] + q[2] * q[2])


def validate_common(params: Any) -> None:
    """Checks shared by the aerial tasks (airframe, gains, spawn ranges, crash rules)."""
    dyn.validate_quad_params(params.quad, "params.quad")
    ctl.validate_gains(params.ctrl, "params.ctrl")
    for name in ("spawn_pos_range", "spawn_tilt", "spawn_speed", "spawn_rate"):
        value = np.asarray(getattr(params, name), np.float64)
        if not np.all(np.isfinite(value)) or np.any(value < 0):
            raise ValueError(f"params.{name}={value.tolist()}: must be finite and >= 0")
    dist = np.asarray(params.crash_distance, np.float64)
    if not np.all(np.isfinite(dist)) or np.any(dist <= 0):
        raise ValueError(f"params.crash_distance={dist.tolist()}: must be finite and > 0")


def check_starts(
    params: Any, lowest: np.ndarray, farthest: np.ndarray, fields: dict[str, str]
) -> None:
    """No start is a crash: every spawn above ``params.ground_z`` and within
    ``params.crash_distance`` of what the crash distance is measured from.

    ``lowest`` / ``farthest``: the lowest start height and the largest start distance the
    spawn ranges allow (every entry, if batched); ``fields``: ``{"lowest": formula,
    "farthest": formula}`` naming the params each is computed from, for the message.
    Otherwise a share of the episodes would end on their first step with the crash reward.
    """

    def shown(x: Any) -> Any:
        return np.round(np.asarray(x, np.float64), 6).tolist()

    ground = np.asarray(params.ground_z, np.float64)
    if np.any(lowest <= ground):
        raise ValueError(
            f"{fields['lowest']} = {shown(lowest)}: the lowest start must be above "
            f"params.ground_z={shown(ground)} (starts below it crash at once)"
        )
    crash = np.asarray(params.crash_distance, np.float64)
    if np.any(farthest >= crash):
        raise ValueError(
            f"{fields['farthest']} = {shown(farthest)}: the farthest start must be within "
            f"params.crash_distance={shown(crash)} (starts beyond it crash at once)"
        )


def check_success_radius(params: Any) -> None:
    """``params.success_radius`` (the ``success`` metric's) must be finite and > 0."""
    radius = np.asarray(params.success_radius, np.float64)
    if np.any(radius <= 0):
        raise ValueError(f"params.success_radius={radius.tolist()}: must be finite and > 0")

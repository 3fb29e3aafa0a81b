"""Vehicle models (dt = 0.1 s by default) as pure JAX functions, and IDM car following.

- :func:`classic_step`: the kinematic bicycle about the centre of mass of GPUDrive's
  ``classic`` model (Nocturne): mid-step speed ``v = speed + a dt / 2``, slip
  ``beta = atan(tan(delta) / 2)``, yaw rate ``v cos(beta) tan(delta) / length``, position
  along ``yaw + beta``; action (acceleration ``a`` m/s^2, steering angle ``delta`` rad).
- :func:`invertible_step` / :func:`invertible_inverse`: Waymax's invertible bicycle
  (GPUDrive's ``bicycle``): action (acceleration, steering *curvature* ``kappa`` 1/m),
  ``x' = x + vx dt + a cos(yaw) dt^2 / 2``, ``yaw' = yaw + kappa (speed dt + a dt^2 / 2)``,
  ``speed' = speed + a dt``, velocity along ``yaw'``; the inverse recovers ``(a, kappa)``
  from two consecutive states (expert actions from logs).
- :func:`delta_local_step`: action (dx, dy, dyaw) in the agent's frame.
- :func:`state_step`: the action is the next pose and speed.

States are ``pos f32[..., 2]``, ``yaw f32[...]``, ``vel f32[..., 2]`` (world frame).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hordax.envs.driving.geometry import rotate, wrap_angle

DT = 0.1


def heading(yaw: jax.Array) -> jax.Array:
    """Unit vector ``[..., 2]`` along ``yaw``."""
    return jnp.stack([jnp.cos(yaw), jnp.sin(yaw)], axis=-1)


def classic_step(pos, yaw, speed, accel, steer, length, dt=DT):
    """GPUDrive's classic kinematic bicycle. Returns ``(pos, yaw, speed)``."""
    v = speed + 0.5 * accel * dt
    tan_d = jnp.tan(steer)
    beta = jnp.arctan(0.5 * tan_d)
    yaw_rate = v * jnp.cos(beta) * tan_d / length
    new_pos = pos + (v * dt)[..., None] * heading(yaw + beta)
    return new_pos, wrap_angle(yaw + yaw_rate * dt), speed + accel * dt


def invertible_step(pos, yaw, vel, accel, curvature, dt=DT):
    """Waymax's invertible bicycle. Returns ``(pos, yaw, vel)``."""
    speed = jnp.linalg.norm(vel, axis=-1)
    new_pos = pos + vel * dt + (0.5 * accel * dt**2)[..., None] * heading(yaw)
    new_yaw = wrap_angle(yaw + curvature * (speed * dt + 0.5 * accel * dt**2))
    new_vel = (speed + accel * dt)[..., None] * heading(new_yaw)
    return new_pos, new_yaw, new_vel


def invertible_inverse(yaw, vel, next_yaw, next_vel, dt=DT, eps=1e-6):
    """``(accel, curvature)`` that :func:`invertible_step` maps ``(yaw, vel)`` to
    ``(next_yaw, next_vel)`` with; curvature 0 where the car barely moves (the distance
    ``speed dt + a dt^2 / 2`` below ``eps``)."""
    speed = jnp.linalg.norm(vel, axis=-1)
    next_speed = jnp.linalg.norm(next_vel, axis=-1)
    accel = (next_speed - speed) / dt
    travel = speed * dt + 0.5 * accel * dt**2
    moving = jnp.abs(travel) > eps
    curvature = jnp.where(moving, wrap_angle(next_yaw - yaw) / jnp.where(moving, travel, 1.0), 0.0)
    return accel, curvature


def delta_local_step(pos, yaw, delta, dt=DT):
    """``delta [..., 3]`` = (dx, dy, dyaw) in the agent's frame. Returns ``(pos, yaw, vel)``."""
    move = rotate(delta[..., 0:2], jnp.cos(yaw), jnp.sin(yaw))
    return pos + move, wrap_angle(yaw + delta[..., 2]), move / dt


def state_step(target):
    """``target [..., 4]`` = (x, y, yaw, speed). Returns ``(pos, yaw, vel)``."""
    yaw = wrap_angle(target[..., 2])
    return target[..., 0:2], yaw, target[..., 3:4] * heading(yaw)


def idm_accel(speed, desired_speed, gap, closing_speed, params):
    """Intelligent Driver Model acceleration (Treiber et al. 2000).

    ``a = a_max (1 - (v / v0)^4 - (s* / gap)^2)``, ``s* = s0 + v T + v dv / (2 sqrt(a_max b))``
    with ``gap`` the bumper-to-bumper distance to the leader (``inf`` when none) and
    ``closing_speed`` ``dv = v - v_leader``. ``params`` has ``idm_max_accel``,
    ``idm_comfort_decel``, ``idm_min_gap``, ``idm_time_headway``.
    """
    a_max, b = params.idm_max_accel, params.idm_comfort_decel
    s_star = params.idm_min_gap + jnp.maximum(
        0.0, speed * params.idm_time_headway + speed * closing_speed / (2 * jnp.sqrt(a_max * b))
    )
    free = 1.0 - (speed / jnp.maximum(desired_speed, 0.1)) ** 4
    interaction = (s_star / jnp.maximum(gap, 0.1)) ** 2
    return a_max * (free - interaction)

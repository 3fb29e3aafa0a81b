"""A scripted driver for :class:`~hordax.envs.driving.env.Drive`: pure pursuit along each
agent's lane route with IDM speed control (the background traffic's car following).

It reads the agent's route (``state.route``, drawn at reset; the goal lies on it), so it is
an *expert*, not a policy that sees only observations: it checks that goals are reachable,
that reward and termination fire as documented, and drives the example GIF.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hordax.envs.driving import dynamics as dyn
from hordax.envs.driving.env import Drive, DriveParams, DriveState
from hordax.envs.driving.geometry import to_frame
from hordax.envs.driving.observation import nearest_route_arc, route_polyline
from hordax.envs.driving.scene import scene_at
from hordax.envs.driving.traffic import following_gaps


def route_follower(
    env: Drive,
    state: DriveState,
    params: DriveParams,
    target_speed: float = 8.0,
    lookahead: float = 3.0,
    yield_to_crossing: bool = False,
) -> jax.Array:
    """Actions of every controlled agent (in the env's action space): steer towards the route
    point ``lookahead`` metres ahead of the nearest route point, accelerate by IDM towards
    ``target_speed`` behind whatever is ahead in the lane corridor (the look-ahead grows by
    0.3 s of travel with speed); with ``yield_to_crossing``, also behind the first crossing
    conflict along its route that another object reaches first (traffic.py, as the
    background traffic of ``Drive(yield_to_crossing=True)``)."""
    n = env.num_agents
    lanes = scene_at(params.scenes, state.scene).lanes
    pts, ok, cum = route_polyline(lanes, state.route[:n])  # the route as one polyline
    pos, yaw = state.pos[:n], state.yaw[:n]
    speed = jnp.linalg.norm(state.vel[:n], axis=-1)
    lookahead = lookahead + 0.3 * speed[:, None]
    here = nearest_route_arc(pts, ok, cum, pos)[:, None]
    ahead = jnp.where(ok & (cum >= here + lookahead), cum, jnp.inf)
    last = jnp.max(jnp.where(ok, jnp.arange(ok.shape[1]), 0), axis=1)
    j = jnp.where(jnp.isfinite(ahead.min(1)), jnp.argmin(ahead, axis=1), last)
    target = to_frame(pts[jnp.arange(n), j], pos, yaw)
    alpha = jnp.arctan2(target[:, 1], target[:, 0])
    curvature = 2 * jnp.sin(alpha) / jnp.maximum(jnp.linalg.norm(target, axis=-1), 1.0)

    gap, lead_speed = following_gaps(
        state, 0, n, (pts, ok, cum, here[:, 0]) if yield_to_crossing else None
    )
    idm = params.replace(idm_max_accel=3.0, idm_comfort_decel=3.0)  # livelier than traffic
    accel = dyn.idm_accel(speed, jnp.full(n, target_speed), gap, speed - lead_speed, idm)
    if env.dynamics == "classic":
        steer = jnp.arctan(curvature * state.size[:n, 0])
        u = jnp.stack([accel / params.max_accel, steer / params.max_steer], axis=-1)
    elif env.dynamics == "bicycle":
        u = jnp.stack([accel / params.max_accel, curvature / params.max_curvature], axis=-1)
    else:
        raise ValueError(f"route_follower drives the bicycle models, not {env.dynamics!r}")
    u = jnp.clip(u, -1.0, 1.0)
    if env.action_type == "continuous":
        return u.astype(jnp.float32)
    grid = env.action_grid(params) / jnp.stack([params.max_accel, env._steer_scale(params)])
    return jnp.argmin(jnp.sum((u[:, None] - grid[None]) ** 2, -1), axis=1).astype(jnp.int32)

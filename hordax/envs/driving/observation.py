"""Per-agent observations in the ego frame: ego state, nearest partners, nearest road
segments, optional lidar rays; normalized into ``[-1, 1]``, padded and masked.

Layout of one agent's flat ``f32[D]`` observation (:func:`observation_size`,
``env.split_observation`` cuts it into these parts):

- ``ego`` (:data:`EGO_FEATURES` = 8): speed / max_speed, length / size_scale,
  width / size_scale, goal x, goal y and goal distance / goal_scale (ego frame), collided
  (ever this episode), fraction of the episode left;
- ``partners`` ``[K_p, 12]``: the ``K_p`` nearest other objects within ``obs_radius``:
  valid, x, y (/ obs_radius), cos and sin of the relative heading, relative velocity x, y
  (/ max_speed), length, width (/ size_scale), one-hot vehicle / pedestrian / cyclist;
- ``roads`` ``[K_r, 11]``: the ``K_r`` nearest road segments (by midpoint) within
  ``obs_radius``: valid, midpoint x, y (/ obs_radius), length / size_scale, cos and sin of
  the segment's direction, one-hot road edge / road line / lane / crosswalk / other;
- ``lidar`` ``[rays, 2]`` (optional): distance / lidar_range along evenly spaced rays
  around the agent to the nearest road edge and the nearest other object's box;
- ``route`` ``[K_w, 3]`` (optional, generated-traffic scenes): ``K_w`` points of the agent's
  lane route ahead of it, every ``route_spacing`` metres of arc length from the route point
  nearest to it: valid, x, y (ego frame, / obs_radius); invalid past the route's end. The
  goal lies on this route, so these are the waypoints a route planner would hand a driver
  (not part of GPUDrive's observation: off by default);
- ``route`` ``[K_w, 5]`` with ``route_features="lane"`` instead: the route at arc lengths
  ``0, route_spacing, ..`` from the agent's projection on it, interpolated between polyline
  points: valid, x, y (ego frame, / obs_radius), cos and sin of the route's direction there
  relative to the agent's heading. Row 0 is the foot of the agent on its route, so it holds
  the lateral offset and the heading error that a lane-keeping controller reads, in the
  same units on every map.

Padding rows (fewer objects or segments than slots) are all zeros, valid flag included.
The nearest ``K`` are picked with ``lax.top_k`` on negated distances (no sort).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hordax.envs.driving.geometry import box_corners, ray_segment_distance, rotate
from hordax.envs.driving.roadgraph import NUM_ROAD_TYPES, ROAD_TYPES

EGO_FEATURES = 8
PARTNER_FEATURES = 12
ROAD_FEATURES = 6 + NUM_ROAD_TYPES
LIDAR_CHANNELS = 2
ROUTE_FEATURES = 3
LANE_ROUTE_FEATURES = 5
#: features per route row for each ``route_features`` option of ``Drive``
ROUTE_WIDTH = {"points": ROUTE_FEATURES, "lane": LANE_ROUTE_FEATURES}


def observation_size(
    max_partners: int,
    max_road_points: int,
    lidar_rays: int,
    route_points: int = 0,
    route_width: int = ROUTE_FEATURES,
) -> int:
    return (
        EGO_FEATURES
        + max_partners * PARTNER_FEATURES
        + max_road_points * ROAD_FEATURES
        + lidar_rays * LIDAR_CHANNELS
        + route_points * route_width
    )


def split(
    obs: jax.Array,
    max_partners: int,
    max_road_points: int,
    lidar_rays: int,
    route_points: int = 0,
    route_width: int = ROUTE_FEATURES,
) -> dict:
    """Cut ``obs [..., D]`` into ``ego [..., 8]``, ``partners [..., K_p, 12]``,
    ``roads [..., K_r, 11]``, ``lidar [..., rays, 2]``, ``route [..., K_w, route_width]``."""
    sizes = [
        EGO_FEATURES,
        max_partners * PARTNER_FEATURES,
        max_road_points * ROAD_FEATURES,
        lidar_rays * LIDAR_CHANNELS,
    ]
    ego, partners, roads, lidar, route = jnp.split(obs, list(jnp.cumsum(jnp.array(sizes))), axis=-1)
    lead = obs.shape[:-1]
    return {
        "ego": ego,
        "partners": partners.reshape(*lead, max_partners, PARTNER_FEATURES),
        "roads": roads.reshape(*lead, max_road_points, ROAD_FEATURES),
        "lidar": lidar.reshape(*lead, lidar_rays, LIDAR_CHANNELS),
        "route": route.reshape(*lead, route_points, route_width),
    }


def route_polyline(lanes, route: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Each agent's lane route ``route i32[n, H]`` (lane indices, -1 ends it) as one
    polyline: ``(points f32[n, H * P, 2], ok bool[n, H * P], arc length f32[n, H * P])``;
    ``ok`` marks real points (padding and lanes past the route's end are False), the arc
    length runs along the ok points (a lane's first point repeats its predecessor's last, a
    zero-length step)."""
    n = route.shape[0]
    lane = jnp.maximum(route, 0)
    n_pts = lanes.pts.shape[1]
    ok = (route >= 0)[..., None] & (jnp.arange(n_pts) < lanes.npts[lane][..., None])
    pts = lanes.pts[lane].reshape(n, -1, 2)
    ok = ok.reshape(n, -1)
    step = jnp.linalg.norm(jnp.diff(pts, axis=1), axis=-1) * (ok[:, 1:] & ok[:, :-1])
    cum = jnp.concatenate([jnp.zeros((n, 1)), jnp.cumsum(step, axis=1)], axis=1)
    return pts, ok, cum


def nearest_route_arc(pts: jax.Array, ok: jax.Array, cum: jax.Array, pos: jax.Array):
    """Arc length ``f32[n]`` of the route point nearest to each agent's ``pos f32[n, 2]``."""
    dist = jnp.where(ok, jnp.linalg.norm(pts - pos[:, None], axis=-1), jnp.inf)
    return jnp.take_along_axis(cum, jnp.argmin(dist, axis=1)[:, None], 1)[:, 0]


def route_arc(pts: jax.Array, ok: jax.Array, cum: jax.Array, pos: jax.Array) -> jax.Array:
    """Arc length ``f32[n]`` of each point ``pos f32[n, 2]`` projected on its route polyline
    (the nearest point of the nearest segment between two ok points; unlike
    :func:`nearest_route_arc`, not quantized to the polyline's points)."""
    a, b = pts[:, :-1], pts[:, 1:]
    seg_ok = ok[:, :-1] & ok[:, 1:]
    d = b - a
    length2 = jnp.sum(d * d, axis=-1)
    t = jnp.sum((pos[:, None] - a) * d, axis=-1) / jnp.maximum(length2, 1e-12)
    t = jnp.clip(t, 0.0, 1.0)
    foot = a + t[..., None] * d
    dist = jnp.where(seg_ok, jnp.linalg.norm(foot - pos[:, None], axis=-1), jnp.inf)
    k = jnp.argmin(dist, axis=1)[:, None]
    seg = jnp.take_along_axis(cum[:, 1:] - cum[:, :-1], k, 1)[:, 0]
    return jnp.take_along_axis(cum[:, :-1], k, 1)[:, 0] + jnp.take_along_axis(t, k, 1)[:, 0] * seg


def route_samples(pts: jax.Array, ok: jax.Array, cum: jax.Array, target: jax.Array):
    """Points at arc lengths ``target f32[b, K]`` along route polylines (``pts f32[b, L, 2]``,
    ``ok bool[b, L]``, ``cum f32[b, L]``: :func:`route_polyline`), linearly interpolated
    between polyline points. Returns ``(xy f32[b, K, 2], tangent f32[b, K, 2] (unit),
    valid bool[b, K])``; ``valid`` is False past the route's end."""
    length = jnp.max(jnp.where(ok, cum, -jnp.inf), axis=-1)  # [b]
    valid = target <= length[:, None]
    past = ok[:, None, :] & (cum[:, None, :] >= target[..., None])  # [b, K, L]
    hi = jnp.maximum(jnp.argmax(past, axis=-1), 1)  # first point at or past the target
    lo = hi - 1
    a, b = _take(pts, lo), _take(pts, hi)
    ca, cb = _take(cum, lo), _take(cum, hi)
    seg = cb - ca
    t = jnp.clip((target - ca) / jnp.maximum(seg, 1e-6), 0.0, 1.0)
    d = b - a
    tangent = d / jnp.maximum(jnp.linalg.norm(d, axis=-1, keepdims=True), 1e-6)
    return a + t[..., None] * d, tangent, valid


def route_ahead(state, lanes, params, *, num_agents: int, points: int, spacing: float):
    """``f32[n, points, 3]``: (valid, x, y) of the route points ``spacing, 2 spacing, ..``
    metres of arc length ahead of the route point nearest to each controlled agent, in its
    ego frame / ``obs_radius``; the first polyline point at or past each arc length (lane
    points are ~1 m apart on the shipped maps); rows past the route's end are zeros."""
    n = num_agents
    pos, yaw = state.pos[:n], state.yaw[:n]
    pts, ok, cum = route_polyline(lanes, state.route[:n])
    here = nearest_route_arc(pts, ok, cum, pos)
    target = here[:, None] + spacing * jnp.arange(1, points + 1, dtype=jnp.float32)  # [n, K]
    length = jnp.max(jnp.where(ok, cum, -jnp.inf), axis=-1)  # [n] the route's arc length
    valid = target <= length[:, None]
    ahead = ok[:, None, :] & (cum[:, None, :] >= target[..., None])  # [n, K, L]
    idx = jnp.argmax(ahead, axis=-1)  # the first point at or past the target
    xy = rotate(_take(pts, idx) - pos[:, None], jnp.cos(yaw)[:, None], -jnp.sin(yaw)[:, None])
    feats = jnp.concatenate([jnp.ones((n, points, 1)), xy / params.obs_radius], axis=-1)
    return feats * valid[..., None]


def route_lane(state, lanes, params, *, num_agents: int, points: int, spacing: float):
    """``f32[n, points, 5]``: (valid, x, y, cos, sin) of each controlled agent's route at arc
    lengths ``0, spacing, .., (points - 1) spacing`` past its projection on the route
    (:func:`route_arc`), interpolated (:func:`route_samples`); x, y in its ego frame /
    ``obs_radius``, cos and sin of the route direction minus the agent's heading. Unlike
    :func:`route_ahead` nothing is quantized to the polyline's ~1 m point spacing, and
    row 0 (the foot point) gives the lateral offset and heading error. Rows past the
    route's end are zeros."""
    n = num_agents
    pos, yaw = state.pos[:n], state.yaw[:n]
    pts, ok, cum = route_polyline(lanes, state.route[:n])
    here = route_arc(pts, ok, cum, pos)
    target = here[:, None] + spacing * jnp.arange(points, dtype=jnp.float32)  # [n, K]
    xy, tangent, valid = route_samples(pts, ok, cum, target)
    c, s = jnp.cos(yaw)[:, None], jnp.sin(yaw)[:, None]
    rel = rotate(xy - pos[:, None], c, -s) / params.obs_radius
    direction = rotate(tangent, c, -s)  # (cos, sin) of the route's heading minus the agent's
    feats = jnp.concatenate([jnp.ones((n, points, 1)), rel, direction], axis=-1)
    return feats * valid[..., None]


#: the function that builds the route rows for each ``route_features`` option of ``Drive``
ROUTE_ROWS = {"points": route_ahead, "lane": route_lane}


def _nearest(dist: jax.Array, valid: jax.Array, k: int) -> tuple[jax.Array, jax.Array]:
    """Indices ``[n, k]`` of the ``k`` smallest valid distances per row and their validity."""
    score = jnp.where(valid, -dist, -jnp.inf)
    top, idx = jax.lax.top_k(score, k)
    return idx, top > -jnp.inf


def _take(x: jax.Array, idx: jax.Array) -> jax.Array:
    """``x [n, m, ...]`` rows ``idx [n, k]`` -> ``[n, k, ...]``."""
    return jnp.take_along_axis(x, idx.reshape(*idx.shape, *([1] * (x.ndim - 2))), axis=1)


def _pad_rows(x: jax.Array, k: int) -> jax.Array:
    return jnp.pad(x, ((0, 0), (0, k - x.shape[1]), (0, 0))) if x.shape[1] < k else x


def observe(
    state,
    road,
    params,
    *,
    num_agents: int,
    max_partners: int,
    max_road_points: int,
    lidar_rays: int,
    route: jax.Array | None = None,
    undirected_lines: bool = False,
) -> jax.Array:
    """``f32[num_agents, D]`` observations of the controlled agents (slots ``0..n-1``);
    ``route`` (:func:`route_ahead`, ``[n, K_w, 3]``) is appended when given;
    ``undirected_lines`` turns road edges and road lines that point behind the agent round
    (their direction modulo pi; lane centre lines keep the direction of travel)."""
    n, m = num_agents, state.pos.shape[0]
    pos, yaw = state.pos[:n], state.yaw[:n]
    c, s = jnp.cos(yaw), jnp.sin(yaw)
    speed = jnp.linalg.norm(state.vel, axis=-1)

    goal = rotate(state.goal - pos, c, -s)
    t_left = 1.0 - state.time / jnp.maximum(params.max_steps_in_episode, 1)
    ego = jnp.concatenate(
        [
            (speed[:n] / params.max_speed)[:, None],
            state.size[:n] / params.size_scale,
            goal / params.goal_scale,
            (jnp.linalg.norm(goal, axis=-1) / params.goal_scale)[:, None],
            state.collided[:, None].astype(jnp.float32),
            jnp.broadcast_to(t_left, (n, 1)).astype(jnp.float32),
        ],
        axis=-1,
    )

    # partners: every other object that exists, within the radius; features are computed
    # for the k picked rows only
    rel = rotate(state.pos[None] - pos[:, None], c[:, None], -s[:, None])  # [n, m, 2]
    dist = jnp.linalg.norm(rel, axis=-1)
    not_self = ~jnp.eye(n, m, dtype=bool)
    valid = state.exists[None] & not_self & (dist <= params.obs_radius)
    kp = min(max_partners, m - 1)
    if kp > 0:
        idx, ok = _nearest(dist, valid, kp)  # [n, kp]
        rel_yaw = state.yaw[idx] - yaw[:, None]
        rel_vel = rotate(state.vel[idx] - state.vel[:n, None], c[:, None], -s[:, None])
        partners = jnp.concatenate(
            [
                jnp.ones((n, kp, 1)),
                _take(rel, idx) / params.obs_radius,
                jnp.cos(rel_yaw)[..., None],
                jnp.sin(rel_yaw)[..., None],
                rel_vel / params.max_speed,
                state.size[idx] / params.size_scale,
                jax.nn.one_hot(state.kind[idx] - 1, 3),  # vehicle, pedestrian, cyclist
            ],
            axis=-1,
        )
        partners = _pad_rows(partners * ok[..., None], max_partners)
    else:
        partners = jnp.zeros((n, max_partners, PARTNER_FEATURES))

    # road segments by midpoint; features for the k picked segments only
    mid = 0.5 * (road.seg[:, :2] + road.seg[:, 2:])
    dist_r = jnp.linalg.norm(mid[None] - pos[:, None], axis=-1)  # [n, R]
    valid_r = (road.kind > 0)[None] & (dist_r <= params.obs_radius)
    idx, ok = _nearest(dist_r, valid_r, max_road_points)  # [n, K]
    seg = road.seg[idx]  # [n, K, 4]
    d = seg[..., 2:] - seg[..., :2]
    seg_yaw = jnp.arctan2(d[..., 1], d[..., 0]) - yaw[:, None]
    if undirected_lines:
        # a road edge or line has no direction of travel: it has the direction of whichever
        # lanelet bound drew it, which differs between maps; seen modulo pi, pointing ahead
        kind = road.kind[idx]
        line = (kind == ROAD_TYPES["road_edge"]) | (kind == ROAD_TYPES["road_line"])
        seg_yaw = jnp.where(line & (jnp.cos(seg_yaw) < 0), seg_yaw + jnp.pi, seg_yaw)
    rel_r = rotate(mid[idx] - pos[:, None], c[:, None], -s[:, None])
    roads = (
        jnp.concatenate(
            [
                jnp.ones((n, max_road_points, 1)),
                rel_r / params.obs_radius,
                (jnp.linalg.norm(d, axis=-1) / params.size_scale)[..., None],
                jnp.cos(seg_yaw)[..., None],
                jnp.sin(seg_yaw)[..., None],
                jax.nn.one_hot(road.kind[idx] - 1, NUM_ROAD_TYPES),
            ],
            axis=-1,
        )
        * ok[..., None]
    )

    parts = [ego, partners.reshape(n, -1), roads.reshape(n, -1)]
    if lidar_rays:
        parts.append(lidar(state, road, params, num_agents=n, rays=lidar_rays).reshape(n, -1))
    if route is not None:
        parts.append(route.reshape(n, -1))
    return jnp.clip(jnp.concatenate(parts, axis=-1), -1.0, 1.0).astype(jnp.float32)


def lidar(state, road, params, *, num_agents: int, rays: int) -> jax.Array:
    """``f32[n, rays, 2]``: distance / lidar_range to the nearest road edge and the nearest
    other object's box edge along ``rays`` evenly spaced rays (1 = nothing in range)."""
    n, m = num_agents, state.pos.shape[0]
    angles = state.yaw[:n, None] + jnp.linspace(0.0, 2 * jnp.pi, rays, endpoint=False)[None]
    direction = jnp.stack([jnp.cos(angles), jnp.sin(angles)], axis=-1)  # [n, rays, 2]
    origin = state.pos[:n, None, None, :]
    rng = params.lidar_range
    edge = road.kind == ROAD_TYPES["road_edge"]
    d_road = ray_segment_distance(origin, direction[:, :, None], road.seg[None, None], rng)
    d_road = jnp.where(edge[None, None], d_road, rng).min(-1)
    corners = box_corners(state.pos, state.yaw, state.size[:, 0], state.size[:, 1])
    sides = jnp.concatenate([corners, jnp.roll(corners, -1, axis=-2)], axis=-1).reshape(m * 4, 4)
    other = (state.exists[None] & ~jnp.eye(n, m, dtype=bool)).repeat(4, axis=1)  # [n, 4m]
    d_obj = ray_segment_distance(origin, direction[:, :, None], sides[None, None], rng)
    d_obj = jnp.where(other[:, None], d_obj, rng).min(-1)
    return jnp.stack([d_road, d_obj], axis=-1) / rng

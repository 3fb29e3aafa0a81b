"""Scene arrays on the device: padded to static sizes, stacked into batches in ``EnvParams``.

- :class:`RoadGraph`: road segments with types and the drivable quads (every scene).
- :class:`LaneGraph`: lane centre lines, successors and spawn slots (generated traffic).
- :class:`MapScene` = road + lanes: a map on which :class:`~hordax.envs.driving.env.Drive`
  spawns agents and background traffic.
- :class:`LogScene` = road + logged objects (GPUDrive JSON): trajectories, ``valid``, sizes,
  types, goals, which objects are controlled; :class:`~hordax.envs.driving.env.DriveLog`.

A batch has a leading scene axis on every leaf; the env draws a scene per episode, so
``vmap`` over scenes is free and resampling scenes is a params swap
(``params.replace(scenes=...)``). Padding: road type 0, ``quad_valid``/``spawn_valid``/
``valid`` False, lane successors -1.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from hordax.envs.driving.roadgraph import MAX_SUCCESSORS, MapArrays


@struct.dataclass
class RoadGraph:
    seg: jax.Array  # f32[R, 4] (x0, y0, x1, y1)
    kind: jax.Array  # i32[R] roadgraph.ROAD_TYPES, 0 = padding
    quads: jax.Array  # f32[Q, 4, 2] drivable area
    quad_valid: jax.Array  # bool[Q]


@struct.dataclass
class LaneGraph:
    pts: jax.Array  # f32[L, P, 2] centre line (padded with its last point)
    cum: jax.Array  # f32[L, P] arc length at each point
    npts: jax.Array  # i32[L] points in use (>= 2)
    length: jax.Array  # f32[L]
    succ: jax.Array  # i32[L, MAX_SUCCESSORS], -1 padded
    speed_limit: jax.Array  # f32[L] m/s
    spawn_lane: jax.Array  # i32[S]
    spawn_s: jax.Array  # f32[S]
    spawn_valid: jax.Array  # bool[S]


@struct.dataclass
class MapScene:
    road: RoadGraph
    lanes: LaneGraph


@struct.dataclass
class LogScene:
    road: RoadGraph
    traj: jax.Array  # f32[M, T, 5] (x, y, yaw, vx, vy)
    valid: jax.Array  # bool[M, T]
    size: jax.Array  # f32[M, 2] (length, width)
    kind: jax.Array  # i32[M] 1 vehicle, 2 pedestrian, 3 cyclist, 0 padding
    goal: jax.Array  # f32[M, 2]
    controlled: jax.Array  # bool[M] (only the first num_agents slots may be True)


def _pad(x: np.ndarray, n: int, value=0) -> np.ndarray:
    """``x`` padded along axis 0 to ``n`` rows of ``value``."""
    x = np.asarray(x)
    pad = np.full((n - len(x), *x.shape[1:]), value, x.dtype)
    return np.concatenate([x, pad]) if len(pad) else x


def road_sizes(roads: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]], min_roads: int):
    return (
        max([min_roads] + [len(r[0]) for r in roads]),
        max([1] + [len(r[2]) for r in roads]),
    )


def stack_roads(
    roads: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]], min_roads: int = 1
) -> RoadGraph:
    """Stack ``(seg f32[R, 4], kind i32[R], quads f32[Q, 4, 2])`` per scene into one padded
    batch; at least ``min_roads`` road rows (the observation's top-k needs ``k`` of them)."""
    r, q = road_sizes(roads, min_roads)
    return RoadGraph(
        seg=jnp.asarray(np.stack([_pad(np.float32(s), r) for s, _, _ in roads])),
        kind=jnp.asarray(np.stack([_pad(np.int32(k), r) for _, k, _ in roads])),
        quads=jnp.asarray(np.stack([_pad(np.float32(c).reshape(-1, 4, 2), q) for *_, c in roads])),
        quad_valid=jnp.asarray(np.stack([np.arange(q) < len(c) for *_, c in roads])),
    )


def stack_maps(maps: Sequence[MapArrays], min_roads: int = 1, min_slots: int = 1) -> MapScene:
    """A batch of maps (leading axis ``len(maps)``), padded to the largest of each size (at
    least ``min_roads`` road rows and ``min_slots`` spawn-slot rows: top-k needs them)."""
    road = stack_roads([(m.road_seg, m.road_type, m.quads) for m in maps], min_roads)
    n_lanes = max(len(m.lane_pts) for m in maps)
    n_pts = max(max(len(p) for p in m.lane_pts) for m in maps)
    n_slots = max([min_slots] + [len(m.spawn_lane) for m in maps])
    pts = np.zeros((len(maps), n_lanes, n_pts, 2), np.float32)
    cum = np.zeros((len(maps), n_lanes, n_pts), np.float32)
    npts = np.full((len(maps), n_lanes), 2, np.int32)
    length = np.ones((len(maps), n_lanes), np.float32)
    succ = np.full((len(maps), n_lanes, MAX_SUCCESSORS), -1, np.int32)
    speed = np.zeros((len(maps), n_lanes), np.float32)
    for b, m in enumerate(maps):
        for k, p in enumerate(m.lane_pts):
            c = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(p, axis=0).T))])
            pts[b, k] = _pad(p, n_pts, 0.0)
            pts[b, k, len(p) :] = p[-1]
            # beyond the last point: strictly increasing, so a search never lands there
            cum[b, k] = np.concatenate([c, c[-1] + 1.0 + np.arange(n_pts - len(p))])
            npts[b, k], length[b, k] = len(p), c[-1]
        succ[b, : len(m.lane_succ)] = m.lane_succ
        speed[b, : len(m.lane_pts)] = m.speed_limit
    lanes = LaneGraph(
        pts=jnp.asarray(pts),
        cum=jnp.asarray(cum),
        npts=jnp.asarray(npts),
        length=jnp.asarray(length),
        succ=jnp.asarray(succ),
        speed_limit=jnp.asarray(speed),
        spawn_lane=jnp.asarray(np.stack([_pad(m.spawn_lane, n_slots) for m in maps])),
        spawn_s=jnp.asarray(np.stack([_pad(m.spawn_s, n_slots) for m in maps])),
        spawn_valid=jnp.asarray(np.stack([np.arange(n_slots) < len(m.spawn_lane) for m in maps])),
    )
    return MapScene(road=road, lanes=lanes)


def stack_logs(logs: Sequence, min_roads: int = 1) -> LogScene:
    """A batch of :class:`~hordax.envs.driving.gpudrive_json.LogArrays` (same object slots),
    logs padded to the longest (``valid`` False after a log's end)."""
    road = stack_roads([(g.road_seg, g.road_type, np.zeros((0, 4, 2))) for g in logs], min_roads)
    steps = max(g.traj.shape[1] for g in logs)

    def pad_t(x):
        return np.concatenate(
            [x, np.zeros((x.shape[0], steps - x.shape[1], *x.shape[2:]), x.dtype)], 1
        )

    return LogScene(
        road=road,
        traj=jnp.asarray(np.stack([pad_t(g.traj) for g in logs])),
        valid=jnp.asarray(np.stack([pad_t(g.valid) for g in logs])),
        size=jnp.asarray(np.stack([g.size for g in logs])),
        kind=jnp.asarray(np.stack([g.kind for g in logs])),
        goal=jnp.asarray(np.stack([g.goal for g in logs])),
        controlled=jnp.asarray(np.stack([g.controlled for g in logs])),
    )


def scene_at(scenes, index: jax.Array):
    """Scene ``index`` of a batch (a dynamic slice of every leaf)."""
    return jax.tree.map(lambda x: jax.lax.dynamic_index_in_dim(x, index, keepdims=False), scenes)


def num_scenes(scenes) -> int:
    return int(jax.tree.leaves(scenes)[0].shape[0])


def lane_pose(lanes: LaneGraph, lane: jax.Array, s: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(pos f32[b, 2], yaw f32[b])`` at arc length ``s f32[b]`` along lanes ``lane i32[b]``
    of one scene (clamped to the lane's ends)."""
    pts, cum, npts = lanes.pts[lane], lanes.cum[lane], lanes.npts[lane]  # [b, P, 2], [b, P]
    j = jnp.clip(jnp.sum(cum[:, 1:] <= s[:, None], axis=-1), 0, npts - 2)
    rows = jnp.arange(lane.shape[0])
    a, b = pts[rows, j], pts[rows, j + 1]
    ca, cb = cum[rows, j], cum[rows, j + 1]
    t = jnp.clip((s - ca) / jnp.maximum(cb - ca, 1e-6), 0.0, 1.0)
    d = b - a
    return a + t[..., None] * d, jnp.arctan2(d[..., 1], d[..., 0])

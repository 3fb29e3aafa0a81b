"""Host-side (numpy) construction of a driving map's arrays from lanelets.

A :class:`Lanelet` is CommonRoad's unit: a left and a right bound with the same number of
points (the lane's centre line is their mean, its width their distance), successors,
predecessors and neighbours. :func:`build_map` turns a list of them into the padded arrays
the env steps on (:class:`MapArrays`):

- **road segments** ``(x0, y0, x1, y1)`` with a type (:data:`ROAD_TYPES`): lane centre lines
  (``lane``), bounds shared with other drivable area (``road_line``) and bounds with no
  drivable area beyond them (``road_edge``: the curb; found by probing 0.3 m and 2 m outside
  every metre of each bound segment against every drivable quad (a segment that is curb
  along part of its length only is split there), so lanelets crossing inside
  an intersection, and the small pockets between them, do not make curbs);
- **drivable quads**: each bound pair ``(L_i, L_i+1, R_i+1, R_i)``; off-road means outside all;
- **lanes** for routing: centre line points, cumulative arc length, successors (<= 4);
- **spawn slots** ``(lane, s)``: points along lanes at least ``min_gap`` apart (centre to
  centre, over all lanes) so spawned vehicles never overlap, on lanes at least
  ``min_spawn_width`` wide, with at least ``min_route`` metres of road ahead.

Polylines are simplified first (Douglas-Peucker over left, right and centre jointly,
``tolerance`` 0.1 m like GPUDrive's ``polyline_reduction_threshold``), then segments longer
than ``max_segment`` are split, so the nearest road points of an observation stay local.
"""

from __future__ import annotations

import dataclasses

import numpy as np

#: road segment types (0 is padding); observations one-hot types 1..5
ROAD_TYPES = {"none": 0, "road_edge": 1, "road_line": 2, "lane": 3, "crosswalk": 4, "other": 5}
NUM_ROAD_TYPES = 5
MAX_SUCCESSORS = 4


@dataclasses.dataclass
class Lanelet:
    """One lanelet: ``left``/``right`` bounds ``f64[p, 2]`` (same ``p >= 2``), driving from
    point 0 to point ``p - 1`` with the left bound on the left; links are list indices."""

    left: np.ndarray
    right: np.ndarray
    successors: list[int] = dataclasses.field(default_factory=list)
    predecessors: list[int] = dataclasses.field(default_factory=list)
    drivable: bool = True  # cars may drive here (not a sidewalk, shoulder, border, ...)
    crosswalk: bool = False


@dataclasses.dataclass
class MapArrays:
    """A map's arrays (numpy, unpadded). Coordinates are shifted by ``-offset``."""

    name: str
    offset: np.ndarray  # f64[2] the world point that became the origin
    road_seg: np.ndarray  # f32[R, 4]
    road_type: np.ndarray  # i32[R]
    quads: np.ndarray  # f32[Q, 4, 2]
    lane_pts: list  # L arrays f32[p_l, 2]
    lane_succ: np.ndarray  # i32[L, MAX_SUCCESSORS], -1 padded
    lane_width: list  # L arrays f32[p_l]
    spawn_lane: np.ndarray  # i32[S]
    spawn_s: np.ndarray  # f32[S]
    speed_limit: float = 11.0  # m/s, background traffic's desired speed

    @property
    def sizes(self) -> dict[str, int]:
        return {
            "roads": len(self.road_seg),
            "quads": len(self.quads),
            "lanes": len(self.lane_pts),
            "lane_points": max((len(p) for p in self.lane_pts), default=0),
            "spawn_slots": len(self.spawn_lane),
        }


def _chord_deviation(lines: list[np.ndarray], i: int, j: int) -> np.ndarray:
    """Max over ``lines`` of the distance of points ``i+1..j-1`` to the chord ``i -> j``."""
    dev = np.zeros(j - i - 1)
    for p in lines:
        a, b = p[i], p[j]
        d = b - a
        n = np.hypot(*d)
        rel = p[i + 1 : j] - a
        if n < 1e-9:
            dist = np.hypot(rel[:, 0], rel[:, 1])
        else:
            dist = np.abs(d[0] * rel[:, 1] - d[1] * rel[:, 0]) / n
        dev = np.maximum(dev, dist)
    return dev


def simplify(lines: list[np.ndarray], tolerance: float) -> np.ndarray:
    """Indices kept by Douglas-Peucker run on several polylines that share their indices."""
    n = len(lines[0])
    keep = np.zeros(n, bool)
    keep[[0, n - 1]] = True
    stack = [(0, n - 1)]
    while stack:
        i, j = stack.pop()
        if j - i < 2:
            continue
        dev = _chord_deviation(lines, i, j)
        k = int(np.argmax(dev))
        if dev[k] > tolerance:
            m = i + 1 + k
            keep[m] = True
            stack += [(i, m), (m, j)]
    return np.flatnonzero(keep)


def densify(points: np.ndarray, max_segment: float) -> np.ndarray:
    """``points [p, d]`` with segments longer than ``max_segment`` split evenly."""
    out = [points[0]]
    for a, b in zip(points[:-1], points[1:], strict=True):
        k = max(1, int(np.ceil(np.hypot(*(b[:2] - a[:2])) / max_segment)))
        out += [a + (b - a) * (t / k) for t in range(1, k + 1)]
    return np.asarray(out)


def _segments(p: np.ndarray) -> np.ndarray:
    return np.concatenate([p[:-1], p[1:]], axis=1)


def _classify_bound(
    seg: np.ndarray,
    centre: np.ndarray,
    quads: np.ndarray,
    probe: tuple[float, ...],
    step: float,
) -> list[tuple[np.ndarray, bool]]:
    """One bound segment ``f32[4]`` as ``[(piece f32[4], is_curb), ..]``: probed ``probe``
    metres outside (away from the lane's ``centre`` point) at the middle of every
    ``step``-long piece, a piece is curb when no drivable quad holds any of its probes; runs
    of pieces of one kind are merged, so a segment of one kind stays one segment. Probing
    the segment's middle alone made a 7 m bound a curb where its far end lies inside a
    roundabout's ring (rounD Kackertstrasse: a splitter island's bound reaching 2 m into
    the circulating lane)."""
    a, b = seg[:2], seg[2:]
    k = max(1, int(np.ceil(np.hypot(*(b - a)) / step)))
    t = np.linspace(0.0, 1.0, k + 1)
    pts = a + (b - a) * t[:, None]
    mid = 0.5 * (pts[:-1] + pts[1:])
    normal = np.array([-(b - a)[1], (b - a)[0]]) / max(np.hypot(*(b - a)), 1e-9)
    if np.dot(0.5 * (a + b) - centre, normal) < 0:
        normal = -normal
    curb = np.ones(k, bool)
    for d in probe:
        curb &= ~quads_contain(mid + d * normal, quads)
    out, start = [], 0
    for j in range(1, k + 1):
        if j == k or curb[j] != curb[start]:
            out.append((np.concatenate([pts[start], pts[j]]).astype(seg.dtype), bool(curb[start])))
            start = j
    return out


def quads_contain(points: np.ndarray, quads: np.ndarray) -> np.ndarray:
    """``bool[N]``: numpy twin of :func:`hordax.envs.driving.geometry.points_in_quads`."""
    if len(quads) == 0:
        return np.zeros(len(points), bool)

    def cross(o, a, b):
        return (a[..., 0] - o[..., 0]) * (b[..., 1] - o[..., 1]) - (a[..., 1] - o[..., 1]) * (
            b[..., 0] - o[..., 0]
        )

    def tri(p, a, b, c):
        d = np.stack([cross(a, b, p), cross(b, c, p), cross(c, a, p)])
        return ~((d < 0).any(0) & (d > 0).any(0))

    p, q = points[:, None, :], quads[None]
    inside = tri(p, q[..., 0, :], q[..., 1, :], q[..., 2, :]) | tri(
        p, q[..., 0, :], q[..., 2, :], q[..., 3, :]
    )
    return inside.any(1)


def _box_hits_segments(
    centre: np.ndarray, yaw: float, length: float, width: float, segs: np.ndarray
) -> bool:
    """Whether the oriented box meets any segment ``f[S, 4]`` (separating axes: the box's
    two, each segment's normal; numpy twin of ``geometry.segment_hits_box``)."""
    if not len(segs):
        return False
    c, s = np.cos(yaw), np.sin(yaw)
    rot = np.array([[c, s], [-s, c]])  # world -> box frame
    p0 = (segs[:, :2] - centre) @ rot.T
    p1 = (segs[:, 2:] - centre) @ rot.T
    hl, hw = 0.5 * length, 0.5 * width
    sep_x = (np.minimum(p0[:, 0], p1[:, 0]) > hl) | (np.maximum(p0[:, 0], p1[:, 0]) < -hl)
    sep_y = (np.minimum(p0[:, 1], p1[:, 1]) > hw) | (np.maximum(p0[:, 1], p1[:, 1]) < -hw)
    d = p1 - p0
    normal = np.stack([-d[:, 1], d[:, 0]], axis=1)
    offset = np.sum(normal * p0, axis=1)
    reach = hl * np.abs(normal[:, 0]) + hw * np.abs(normal[:, 1])
    return bool(np.any(~(sep_x | sep_y | (np.abs(offset) > reach))))


def _reach(lengths: np.ndarray, succ: np.ndarray, hops: int = 12, cap: float = 1000.0):
    """Longest drivable distance from the start of each lane over up to ``hops`` lanes."""
    reach = lengths.copy()
    for _ in range(hops):
        nxt = np.where(succ >= 0, reach[np.maximum(succ, 0)], 0.0).max(1, initial=0.0)
        reach = np.minimum(lengths + nxt, cap)
    return reach


def build_map(
    name: str,
    lanelets: list[Lanelet],
    *,
    tolerance: float = 0.1,
    max_segment: float = 10.0,
    slot_spacing: float = 5.0,
    min_gap: float = 7.0,
    min_spawn_width: float = 2.5,
    min_route: float = 25.0,
    edge_probe: tuple[float, ...] = (0.3, 2.0),
    edge_step: float = 1.0,
    areas: list[np.ndarray] = (),
    offset: np.ndarray | None = None,
    speed_limit: float = 11.0,
    spawn_box: tuple[float, float] = (4.5 * 1.1, 1.9 * 1.1),
) -> MapArrays:
    """Build the road graph, drivable quads, lane graph and spawn slots of one map.

    ``areas`` are extra drivable convex polygons (``f64[k, 2]``, e.g. a junction's box)
    that carry no lanes. ``spawn_box`` (length, width): no spawn slot puts a box this large
    (Drive's default vehicles at their largest) across a road edge. Raises ``ValueError``
    naming the map when it has no drivable lanelet or no spawn slot.
    """
    drivable = [i for i, ll in enumerate(lanelets) if ll.drivable and not ll.crosswalk]
    if not drivable:
        raise ValueError(f"map {name!r}: no drivable lanelets (lanes: 0): nothing to drive on")
    if offset is None:
        pts = np.concatenate(
            [np.concatenate([lanelets[i].left, lanelets[i].right]) for i in drivable]
        )
        offset = 0.5 * (pts.min(0) + pts.max(0))
    offset = np.asarray(offset, np.float64)
    lane_index = {i: k for k, i in enumerate(drivable)}

    # simplified, densified bounds and centre lines of every lanelet
    geo = {}
    for i, ll in enumerate(lanelets):
        left, right = ll.left - offset, ll.right - offset
        centre = 0.5 * (left + right)
        keep = simplify([left, right, centre], tolerance)
        joint = densify(np.concatenate([left[keep], right[keep]], axis=1), max_segment)
        left, right = joint[:, :2], joint[:, 2:]
        geo[i] = (left, right, 0.5 * (left + right))

    quads = [
        np.stack([lb[:-1], lb[1:], rb[1:], rb[:-1]], axis=1)
        for lb, rb, _ in (geo[i] for i in drivable)
    ]
    for poly in areas:  # a triangle fan, each triangle a quad with a repeated corner
        poly = np.asarray(poly, np.float64) - offset
        fan = [
            np.stack([poly[0], poly[k], poly[k + 1], poly[k + 1]]) for k in range(1, len(poly) - 1)
        ]
        quads.append(np.asarray(fan).reshape(-1, 4, 2))
    quads = np.concatenate(quads)

    # bounds: curb (nothing drivable just outside) or road line; duplicates of shared bounds
    # (the right bound of one lanelet is the left bound of its neighbour) are emitted once
    segs, types, seen = [], [], set()
    for i in drivable:
        left, right, centre = geo[i]
        for bound in (left, right):
            s = _segments(bound)
            cmid = 0.5 * (centre[:-1] + centre[1:])
            for seg, c in zip(s, cmid, strict=True):
                key = frozenset([tuple(np.round(seg[:2], 1)), tuple(np.round(seg[2:], 1))])
                if key in seen:
                    continue
                seen.add(key)
                for piece, is_edge in _classify_bound(seg, c, quads, edge_probe, edge_step):
                    segs.append(piece)
                    types.append(ROAD_TYPES["road_edge" if is_edge else "road_line"])
        segs += list(_segments(centre))
        types += [ROAD_TYPES["lane"]] * (len(centre) - 1)
    for i, ll in enumerate(lanelets):
        if ll.crosswalk:
            left, right, _ = geo[i]
            ring = np.concatenate([left, right[::-1], left[:1]])
            segs += list(_segments(ring))
            types += [ROAD_TYPES["crosswalk"]] * (len(ring) - 1)

    lane_pts = [geo[i][2].astype(np.float32) for i in drivable]
    lane_width = [np.hypot(*(geo[i][0] - geo[i][1]).T).astype(np.float32) for i in drivable]
    succ = np.full((len(drivable), MAX_SUCCESSORS), -1, np.int32)
    for k, i in enumerate(drivable):
        nxt = [lane_index[j] for j in lanelets[i].successors if j in lane_index][:MAX_SUCCESSORS]
        succ[k, : len(nxt)] = nxt
    lengths = np.array([np.hypot(*np.diff(p, axis=0).T).sum() for p in lane_pts])
    reach = _reach(lengths, succ)
    ahead_after = np.where(succ >= 0, reach[np.maximum(succ, 0)], 0.0).max(1, initial=0.0)

    # spawn slots: candidates along every lane, then a greedy spacing filter over all lanes
    # (a fixed shuffle so no lane is favoured)
    cands = []
    for k, p in enumerate(lane_pts):
        cum = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(p, axis=0).T))])
        for s in np.arange(0.5 * slot_spacing, lengths[k] - 2.0, slot_spacing):
            j = min(int(np.searchsorted(cum, s, side="right")) - 1, len(p) - 2)
            t = (s - cum[j]) / max(cum[j + 1] - cum[j], 1e-9)
            width = (1 - t) * lane_width[k][j] + t * lane_width[k][j + 1]
            if width >= min_spawn_width and lengths[k] - s + ahead_after[k] >= min_route:
                yaw = np.arctan2(*(p[j + 1] - p[j])[::-1])
                cands.append((k, s, (1 - t) * p[j] + t * p[j + 1], yaw))
    order = np.random.default_rng(0).permutation(len(cands))
    kept: list = []
    for c in (cands[o] for o in order):
        if all(np.hypot(*(c[2] - q[2])) >= min_gap for q in kept):
            kept.append(c)
    # a car spawned across a curb is off-road on its first step whatever it does (exiD
    # Aachen-Brand's gore lanes run 0.5-0.8 m from a curb: 4 of its 133 slots did)
    curbs = np.asarray(segs, np.float64).reshape(-1, 4)[
        np.asarray(types) == ROAD_TYPES["road_edge"]
    ]
    kept = [c for c in kept if not _box_hits_segments(c[2], c[3], *spawn_box, curbs)]
    if not kept:
        raise ValueError(
            f"map {name!r}: no spawn slot (lanes {min_spawn_width} m wide with {min_route} m "
            "of road ahead): cannot place agents"
        )
    return MapArrays(
        name=name,
        offset=offset,
        road_seg=np.asarray(segs, np.float32).reshape(-1, 4),
        road_type=np.asarray(types, np.int32),
        quads=quads.astype(np.float32),
        lane_pts=lane_pts,
        lane_succ=succ,
        lane_width=lane_width,
        spawn_lane=np.array([c[0] for c in kept], np.int32),
        spawn_s=np.array([c[1] for c in kept], np.float32),
        speed_limit=float(speed_limit),
    )

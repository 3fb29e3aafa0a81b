"""Bird's-eye-view frames of a driving scene (host-side numpy): ``uint8[H, W, 3]``.

Drivable area light grey, road edges black, road lines white, lane centre lines faint,
crosswalks yellow; controlled agents as coloured boxes with a darker front, their goals as
rings of the same colour; background traffic blue-grey. North (+y) is up.
"""

from __future__ import annotations

import numpy as np

from hordax.envs.driving.roadgraph import ROAD_TYPES, quads_contain

COLORS = np.array(
    [
        [220, 60, 60],
        [40, 160, 70],
        [230, 150, 20],
        [150, 70, 200],
        [20, 170, 190],
        [200, 60, 150],
        [120, 120, 20],
        [90, 90, 230],
    ],
    np.uint8,
)
BACKGROUND = np.array([110, 140, 100], np.uint8)  # grass
ASPHALT = np.array([175, 175, 175], np.uint8)
LINE_COLORS = {
    ROAD_TYPES["road_edge"]: (np.array([20, 20, 20], np.uint8), 2),
    ROAD_TYPES["road_line"]: (np.array([245, 245, 245], np.uint8), 1),
    ROAD_TYPES["lane"]: (np.array([200, 200, 200], np.uint8), 1),
    ROAD_TYPES["crosswalk"]: (np.array([240, 220, 60], np.uint8), 1),
    ROAD_TYPES["other"]: (np.array([230, 80, 80], np.uint8), 1),
}
TRAFFIC = np.array([90, 110, 160], np.uint8)


class _Canvas:
    def __init__(self, lo: np.ndarray, hi: np.ndarray, size: int):
        span = max(float((hi - lo).max()), 1.0)
        self.scale = (size - 1) / span
        self.lo, self.size = lo - 0.5 * (span - (hi - lo)), size
        self.img = np.empty((size, size, 3), np.uint8)
        self.img[:] = BACKGROUND

    def px(self, p: np.ndarray) -> np.ndarray:
        """World ``[..., 2]`` -> pixel (col, row) floats, row 0 at the top."""
        q = (np.asarray(p, np.float64) - self.lo) * self.scale
        return np.stack([q[..., 0], self.size - 1 - q[..., 1]], axis=-1)

    def fill(self, poly: np.ndarray, color: np.ndarray) -> None:
        """Fill a convex-ish polygon (world ``[k, 2]``)."""
        q = self.px(poly)
        c0, r0 = np.floor(q.min(0)).astype(int)
        c1, r1 = np.ceil(q.max(0)).astype(int)
        c0, r0, c1, r1 = max(c0, 0), max(r0, 0), min(c1, self.size - 1), min(r1, self.size - 1)
        if c0 > c1 or r0 > r1:
            return
        rr, cc = np.mgrid[r0 : r1 + 1, c0 : c1 + 1]
        pts = np.stack([cc.ravel() + 0.5, rr.ravel() + 0.5], axis=1)
        quad = q if len(q) == 4 else np.concatenate([q, q[-1:]])[:4]
        inside = quads_contain(pts, quad[None]).reshape(rr.shape)
        self.img[rr[inside], cc[inside]] = color

    def lines(self, segs: np.ndarray, color: np.ndarray, width: int = 1) -> None:
        """Draw world segments ``[k, 4]``."""
        if not len(segs):
            return
        a, b = self.px(segs[:, :2]), self.px(segs[:, 2:])
        steps = int(np.ceil(np.abs(b - a).max())) + 1
        t = np.linspace(0.0, 1.0, max(steps, 2))[None, :, None]
        pts = np.round(a[:, None] + t * (b - a)[:, None]).reshape(-1, 2).astype(int)
        for dc in range(width):
            for dr in range(width):
                c, r = pts[:, 0] + dc, pts[:, 1] + dr
                ok = (c >= 0) & (c < self.size) & (r >= 0) & (r < self.size)
                self.img[r[ok], c[ok]] = color

    def ring(self, centre: np.ndarray, radius: float, color: np.ndarray) -> None:
        a = np.linspace(0, 2 * np.pi, 25)
        pts = centre + radius * np.stack([np.cos(a), np.sin(a)], axis=1)
        self.lines(np.concatenate([pts[:-1], pts[1:]], axis=1), color, 2)


def _box(pos, yaw, length, width) -> np.ndarray:
    c, s = np.cos(yaw), np.sin(yaw)
    half = np.array([[1, 1], [-1, 1], [-1, -1], [1, -1]]) * 0.5 * np.array([length, width])
    return pos + half @ np.array([[c, s], [-s, c]])


def render_scene(road, state, num_agents: int, size: int = 384, goal_radius: float = 2.0):
    """One frame of ``state`` on ``road`` (one scene's :class:`RoadGraph`)."""
    seg, kind = np.asarray(road.seg), np.asarray(road.kind)
    quads, qvalid = np.asarray(road.quads), np.asarray(road.quad_valid)
    used = seg[kind > 0]
    pts = used.reshape(-1, 2) if len(used) else np.zeros((1, 2))
    lo, hi = pts.min(0) - 5.0, pts.max(0) + 5.0
    canvas = _Canvas(lo, hi, size)
    for q in quads[qvalid]:
        canvas.fill(q, ASPHALT)
    for k in (
        ROAD_TYPES["lane"],
        ROAD_TYPES["road_line"],
        ROAD_TYPES["crosswalk"],
        ROAD_TYPES["other"],
        ROAD_TYPES["road_edge"],
    ):
        color, width = LINE_COLORS[k]
        canvas.lines(seg[kind == k], color, width)
    pos, yaw, box = np.asarray(state.pos), np.asarray(state.yaw), np.asarray(state.size)
    exists, goal = np.asarray(state.exists), np.asarray(state.goal)
    active = np.asarray(state.active)
    for i in range(len(pos)):
        if not exists[i]:
            continue
        color = COLORS[i % len(COLORS)] if i < num_agents else TRAFFIC
        if i < num_agents and not active[i]:
            color = (0.5 * color).astype(np.uint8)  # stopped after a crash
        corners = _box(pos[i], yaw[i], box[i, 0], box[i, 1])
        canvas.fill(corners, color)
        nose = _box(
            pos[i] + 0.35 * box[i, 0] * np.array([np.cos(yaw[i]), np.sin(yaw[i])]),
            yaw[i],
            0.3 * box[i, 0],
            box[i, 1],
        )
        canvas.fill(nose, (0.6 * color).astype(np.uint8))
    for i in range(num_agents):
        if active[i]:
            canvas.ring(goal[i], goal_radius, COLORS[i % len(COLORS)])
    return canvas.img

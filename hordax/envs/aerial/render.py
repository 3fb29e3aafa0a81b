"""RGB frames of aerial scenes (host-side numpy): a top view (x-y) beside a side view (x-z).

Drones are drawn as their two rotated arm diagonals (projected from 3D with their attitude)
with the front arm tip marked, targets as rings, trajectories as polylines, spherical and
cylindrical obstacles as discs. Returns ``uint8[H, W, 3]`` for videos.
"""

from __future__ import annotations

import numpy as np

COLORS = np.array(
    [[220, 60, 60], [50, 110, 220], [40, 170, 80], [220, 160, 30], [150, 70, 200], [30, 180, 180]],
    np.uint8,
)
BACKGROUND = np.array([246, 246, 246], np.uint8)
GROUND = np.array([205, 190, 160], np.uint8)


def _quat_to_rotmat(q: np.ndarray) -> np.ndarray:
    w, x, y, z = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


class _Panel:
    """Maps two world axes onto a ``size x size`` pixel square."""

    def __init__(self, img, x0, size, axes, lo, hi):
        self.img, self.x0, self.size, self.axes = img, x0, size, axes
        self.lo, self.hi = np.asarray(lo, float), np.asarray(hi, float)

    def px(self, p):
        p = np.asarray(p, float)[..., list(self.axes)]
        u = (p - self.lo) / np.maximum(self.hi - self.lo, 1e-9) * (self.size - 1)
        return u[..., 0] + self.x0, (self.size - 1) - u[..., 1]

    def scale(self, r):
        return r / np.max(self.hi - self.lo) * (self.size - 1)

    def line(self, a, b, color, width=1.0):
        (xa, ya), (xb, yb) = self.px(a), self.px(b)
        n = int(max(abs(xb - xa), abs(yb - ya), 1)) * 2 + 1
        xs, ys = np.linspace(xa, xb, n), np.linspace(ya, yb, n)
        self.dots(xs, ys, color, width)

    def dots(self, xs, ys, color, radius):
        h, w = self.img.shape[:2]
        r = int(np.ceil(radius))
        for dx in range(-r, r + 1):
            for dy in range(-r, r + 1):
                if dx * dx + dy * dy > radius * radius + 0.5:
                    continue
                xi = np.round(xs + dx).astype(int)
                yi = np.round(ys + dy).astype(int)
                ok = (xi >= self.x0) & (xi < self.x0 + self.size) & (yi >= 0) & (yi < h)
                ok &= xi < w
                self.img[yi[ok], xi[ok]] = color

    def disc(self, center, radius, color, ring=False):
        cx, cy = self.px(center)
        rpx = max(self.scale(radius), 1.5)
        ys, xs = np.mgrid[0 : self.size, self.x0 : self.x0 + self.size]
        d = np.hypot(xs - cx, ys - cy)
        mask = (d <= rpx) & (d >= rpx - 1.5) if ring else d <= rpx
        sub = self.img[:, self.x0 : self.x0 + self.size]
        sub[mask] = color


def render_scene(
    positions: np.ndarray,
    quats: np.ndarray,
    targets: np.ndarray | None = None,
    trajectories: np.ndarray | None = None,
    spheres: np.ndarray | None = None,
    cylinders: np.ndarray | None = None,
    arm: float = 0.18,
    bounds: tuple[np.ndarray, np.ndarray] | None = None,
    size: int = 160,
) -> np.ndarray:
    """Draw drones (and targets, trajectories, obstacles) as ``uint8[size, 2 size, 3]``.

    Args:
        positions: ``[n, 3]`` drone positions; ``quats``: ``[n, 4]`` attitudes (w first).
        targets: optional ``[n, 3]`` goals (rings in the drone's colour).
        trajectories: optional ``[n, T, 3]`` past positions (polylines).
        spheres: optional ``[k, 4]`` (x, y, z, radius); cylinders: ``[k, 3]`` vertical
            (x, y, radius), drawn in the top view.
        arm: centre-to-motor distance in m (drawn enlarged x3 to stay visible).
        bounds: ``(low[3], high[3])`` of the drawn region; default fits the content.
    """
    positions = np.atleast_2d(np.asarray(positions, float))
    quats = np.atleast_2d(np.asarray(quats, float))
    pts = [positions]
    if targets is not None:
        pts.append(np.atleast_2d(targets))
    if trajectories is not None:
        pts.append(np.asarray(trajectories, float).reshape(-1, 3))
    finite = np.concatenate(pts)
    finite = finite[np.all(np.isfinite(finite), axis=-1)]
    if bounds is None:
        if finite.size == 0:
            finite = np.zeros((1, 3))
        centre = (finite.min(0) + finite.max(0)) / 2
        half = max(float(np.max(finite.max(0) - finite.min(0))) / 2 + 0.5, 1.0)
        lo, hi = centre - half, centre + half
    else:
        lo, hi = (np.asarray(b, float) for b in bounds)
    img = np.empty((size, 2 * size, 3), np.uint8)
    img[:] = BACKGROUND
    top = _Panel(img, 0, size, (0, 1), lo[[0, 1]], hi[[0, 1]])
    side = _Panel(img, size, size, (0, 2), lo[[0, 2]], hi[[0, 2]])
    # ground line in the side view
    gx, gy = side.px(np.array([lo[0], 0.0, 0.0]))
    if 0 <= gy < size:
        img[int(gy) :, size:] = GROUND
    img[:, size - 1 : size + 1] = 120
    for obstacles, panel_list in ((spheres, (top, side)), (cylinders, (top,))):
        if obstacles is None:
            continue
        for ob in np.atleast_2d(obstacles):
            for panel in panel_list:
                if len(ob) == 4:
                    panel.disc(ob[:3], ob[3], np.array([120, 120, 130], np.uint8))
                else:
                    panel.disc(np.array([ob[0], ob[1], 0.0]), ob[2], np.array([120, 120, 130]))
    if trajectories is not None:
        for i, traj in enumerate(np.asarray(trajectories, float)):
            color = COLORS[i % len(COLORS)] // 2 + 100
            for a, b in zip(traj[:-1], traj[1:], strict=True):
                if np.all(np.isfinite(a)) and np.all(np.isfinite(b)):
                    top.line(a, b, color)
                    side.line(a, b, color)
    if targets is not None:
        for i, t in enumerate(np.atleast_2d(targets)):
            for panel in (top, side):
                panel.disc(t, 0.12, COLORS[i % len(COLORS)], ring=True)
    for i, (p, q) in enumerate(zip(positions, quats, strict=True)):
        if not (np.all(np.isfinite(p)) and np.all(np.isfinite(q))):
            continue
        rot = _quat_to_rotmat(q / max(np.linalg.norm(q), 1e-9))
        color = COLORS[i % len(COLORS)]
        d = 3 * arm / np.sqrt(2)
        tips = [rot @ np.array(v) * d + p for v in ([1, 1, 0], [-1, -1, 0], [1, -1, 0], [-1, 1, 0])]
        for panel in (top, side):
            panel.line(tips[0], tips[1], color, 1.2)
            panel.line(tips[2], tips[3], color, 1.2)
            front = rot @ np.array([1.0, 0.0, 0.0]) * d + p
            fx, fy = panel.px(front)
            panel.dots(np.array([fx]), np.array([fy]), np.array([30, 30, 30], np.uint8), 2.0)
    return img

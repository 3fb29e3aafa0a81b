"""Top-down RGB frames of point masses and goals (host-side numpy)."""

from __future__ import annotations

import numpy as np

from hordax.envs.debug.dynamics import ARENA

COLORS = np.array(
    [[230, 60, 60], [60, 120, 230], [60, 180, 90], [220, 170, 40], [160, 80, 200], [40, 190, 190]],
    np.uint8,
)


def draw(pos: np.ndarray, goal: np.ndarray, goal_radius: float, size: int = 96) -> np.ndarray:
    """``pos, goal [n, 2]`` -> ``uint8[size, size, 3]``: goals as rings, agents as discs."""
    img = np.full((size, size, 3), 245, np.uint8)
    ys, xs = np.mgrid[0:size, 0:size]
    to_px = lambda p: (np.asarray(p) + ARENA) / (2 * ARENA) * (size - 1)  # noqa: E731
    for i, (p, g) in enumerate(zip(np.atleast_2d(pos), np.atleast_2d(goal), strict=True)):
        color = COLORS[i % len(COLORS)]
        gx, gy = to_px(g)
        r_goal = max(2.0, goal_radius / (2 * ARENA) * size)
        d_goal = np.hypot(xs - gx, ys - gy)
        img[(d_goal <= r_goal) & (d_goal >= r_goal - 1.5)] = color
        px, py = to_px(p)
        img[np.hypot(xs - px, ys - py) <= 3.0] = color
    return img[::-1]  # y up

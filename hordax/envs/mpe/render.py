"""Top-down RGB frames of a particle world (host-side numpy)."""

from __future__ import annotations

import numpy as np


def draw(
    pos: np.ndarray, size: np.ndarray, colors: np.ndarray, num_agents: int, pixels: int = 128
) -> np.ndarray:
    """Entities as filled discs of their radii: ``uint8[pixels, pixels, 3]``, y up.

    Args:
        pos: f32[E, 2] positions (agents first).
        size: f32[E] radii.
        colors: f32[E, 3] RGB in ``[0, 1]``.
        num_agents: the first ``num_agents`` entities are agents: drawn last (on top) with a
            dark outline.
        pixels: image side.

    The view spans ``[-r, r]^2`` with ``r`` the larger of 1.2 and the farthest entity edge
    (PettingZoo zooms out likewise when agents wander off).
    """
    pos, size = np.asarray(pos, np.float64), np.asarray(size, np.float64)
    finite = np.isfinite(pos).all(-1)
    reach = np.abs(pos[finite]).max(initial=0.0) + size.max(initial=0.0)
    half = max(1.2, float(reach) * 1.05)
    img = np.full((pixels, pixels, 3), 255, np.uint8)
    ys, xs = np.mgrid[0:pixels, 0:pixels]
    scale = (pixels - 1) / (2 * half)
    order = list(range(num_agents, len(pos))) + list(range(num_agents))  # landmarks first
    for e in order:
        if not finite[e]:
            continue
        cx, cy = (pos[e] + half) * scale
        r = max(1.5, size[e] * scale)
        d = np.hypot(xs - cx, ys - cy)
        img[d <= r] = np.clip(np.asarray(colors[e]) * 255, 0, 255).astype(np.uint8)
        if e < num_agents:
            img[(d <= r) & (d > r - 1.0)] = 40
    return img[::-1]

"""Planar geometry for driving, in JAX: oriented boxes, segments, drivable quads.

Everything broadcasts over leading axes; shapes are given for one item. Boxes are centred
at ``pos`` with heading ``yaw`` (rad), ``length`` along the heading, ``width`` across it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def wrap_angle(a: jax.Array) -> jax.Array:
    """Angle(s) wrapped into ``[-pi, pi)``."""
    return (a + jnp.pi) % (2 * jnp.pi) - jnp.pi


def rotate(xy: jax.Array, cos: jax.Array, sin: jax.Array) -> jax.Array:
    """Rotate ``xy [..., 2]`` by the angle whose cosine and sine are given (``[...]``)."""
    x, y = xy[..., 0], xy[..., 1]
    return jnp.stack([cos * x - sin * y, sin * x + cos * y], axis=-1)


def to_frame(xy: jax.Array, origin: jax.Array, yaw: jax.Array) -> jax.Array:
    """World points ``xy [..., 2]`` in the frame at ``origin [..., 2]`` heading ``yaw``."""
    return rotate(xy - origin, jnp.cos(yaw), -jnp.sin(yaw))


def box_corners(pos: jax.Array, yaw: jax.Array, length: jax.Array, width: jax.Array) -> jax.Array:
    """``f32[..., 4, 2]`` corners (front-left, rear-left, rear-right, front-right)."""
    signs = jnp.array([[1.0, 1.0], [-1.0, 1.0], [-1.0, -1.0], [1.0, -1.0]], jnp.float32)
    half = jnp.stack([length, width], axis=-1)[..., None, :] * 0.5 * signs
    return pos[..., None, :] + rotate(half, jnp.cos(yaw)[..., None], jnp.sin(yaw)[..., None])


def boxes_overlap(corners_a: jax.Array, corners_b: jax.Array) -> jax.Array:
    """``bool[...]``: the oriented rectangles overlap (separating axis test).

    Rectangles have two edge directions each, so four candidate axes; they overlap iff the
    projections of their corners overlap on all four. Touching counts as overlap.
    """
    corners_a, corners_b = jnp.broadcast_arrays(corners_a, corners_b)
    axes = jnp.concatenate(
        [
            corners_a[..., 1:3, :] - corners_a[..., 0:2, :],
            corners_b[..., 1:3, :] - corners_b[..., 0:2, :],
        ],
        axis=-2,
    )  # [..., 4, 2]
    pa = jnp.einsum("...kd,...cd->...kc", axes, corners_a)  # [..., 4 axes, 4 corners]
    pb = jnp.einsum("...kd,...cd->...kc", axes, corners_b)
    separated = (pa.max(-1) < pb.min(-1)) | (pb.max(-1) < pa.min(-1))
    return ~jnp.any(separated, axis=-1)


def segment_hits_box(
    seg: jax.Array, pos: jax.Array, yaw: jax.Array, length: jax.Array, width: jax.Array
) -> jax.Array:
    """``bool[...]``: segment ``seg [..., 4]`` = (x0, y0, x1, y1) meets the oriented box.

    Separating axes of a box and a segment: the box's two axes (the segment's bounding
    interval in the box frame against the half extents) and the segment's normal.
    """
    c, s = jnp.cos(yaw), jnp.sin(yaw)
    p0 = rotate(seg[..., 0:2] - pos, c, -s)
    p1 = rotate(seg[..., 2:4] - pos, c, -s)
    hl, hw = 0.5 * length, 0.5 * width
    sep_x = (jnp.minimum(p0[..., 0], p1[..., 0]) > hl) | (jnp.maximum(p0[..., 0], p1[..., 0]) < -hl)
    sep_y = (jnp.minimum(p0[..., 1], p1[..., 1]) > hw) | (jnp.maximum(p0[..., 1], p1[..., 1]) < -hw)
    d = p1 - p0
    normal = jnp.stack([-d[..., 1], d[..., 0]], axis=-1)
    offset = jnp.sum(normal * p0, axis=-1)  # the segment's line: normal . p = offset
    reach = hl * jnp.abs(normal[..., 0]) + hw * jnp.abs(normal[..., 1])  # box's projection radius
    sep_n = jnp.abs(offset) > reach
    return ~(sep_x | sep_y | sep_n)


def _cross(o: jax.Array, a: jax.Array, b: jax.Array) -> jax.Array:
    return (a[..., 0] - o[..., 0]) * (b[..., 1] - o[..., 1]) - (a[..., 1] - o[..., 1]) * (
        b[..., 0] - o[..., 0]
    )


def _in_triangle(p: jax.Array, a: jax.Array, b: jax.Array, c: jax.Array) -> jax.Array:
    d1, d2, d3 = _cross(a, b, p), _cross(b, c, p), _cross(c, a, p)
    neg = (d1 < 0) | (d2 < 0) | (d3 < 0)
    pos = (d1 > 0) | (d2 > 0) | (d3 > 0)
    return ~(neg & pos)


def points_in_quads(points: jax.Array, quads: jax.Array, valid: jax.Array) -> jax.Array:
    """``bool[N]``: point ``points[i] (f32[N, 2])`` lies in some valid quad ``f32[Q, 4, 2]``.

    Each quad is split into triangles (0, 1, 2) and (0, 2, 3): exact for convex quads, and
    for the thin, nearly convex strips of a lanelet a close cover.
    """
    p = points[:, None, :]
    q = quads[None]
    inside = _in_triangle(p, q[..., 0, :], q[..., 1, :], q[..., 2, :]) | _in_triangle(
        p, q[..., 0, :], q[..., 2, :], q[..., 3, :]
    )
    return jnp.any(inside & valid[None, :], axis=-1)


def ray_segment_distance(
    origin: jax.Array, direction: jax.Array, seg: jax.Array, max_range: float
) -> jax.Array:
    """Distance along the unit ray ``origin + t direction`` to segment ``seg`` (``max_range``
    where it misses); broadcasts ``origin [..., 2]``, ``direction [..., 2]``, ``seg [..., 4]``."""
    a, b = seg[..., 0:2], seg[..., 2:4]
    e = b - a
    denom = direction[..., 0] * e[..., 1] - direction[..., 1] * e[..., 0]
    w = a - origin
    safe = jnp.where(jnp.abs(denom) < 1e-9, 1.0, denom)
    t = (w[..., 0] * e[..., 1] - w[..., 1] * e[..., 0]) / safe
    u = (w[..., 0] * direction[..., 1] - w[..., 1] * direction[..., 0]) / safe
    hit = (jnp.abs(denom) >= 1e-9) & (t >= 0) & (u >= 0) & (u <= 1)
    return jnp.where(hit, jnp.minimum(t, max_range), max_range)

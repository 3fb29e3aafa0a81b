"""Forward depth camera by ray casting in JAX (pure functions; no env logic).

The scene is an axis-aligned room (the camera sees its inner walls, floor and ceiling)
plus ``K`` obstacle slots; slot ``i`` is a sphere, a vertical cylinder (floor to ceiling)
or an axis-aligned box, chosen by ``kind[i]``, and ignored where ``active[i]`` is False:

- sphere: centre ``center[i]``, radius ``size[i, 0]``;
- cylinder: axis through ``center[i, :2]``, radius ``size[i, 0]`` (vertical, unbounded in
  z: the room's floor and ceiling close it);
- box: centre ``center[i]``, half extents ``size[i]``.

The camera sits at the body origin looking along body x (body z up), a pinhole with
``hfov`` horizontal field of view (Aerial Gym's 87 deg) and square pixels. A pixel's depth
is the distance along its ray to the first surface (Euclidean range, as a ray-casting
range sensor), clipped to ``[min_range, max_range]`` and divided by ``max_range``.
Multiplicative Gaussian noise and pixel dropout (a dropped pixel reads 0) are optional.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import struct

SPHERE, CYLINDER, BOX = 0, 1, 2
MIN_RES, MAX_RES = (16, 24), (135, 240)


@struct.dataclass
class Scene:
    """Room and obstacles (float32 unless noted)."""

    room_lo: jax.Array  # f32[3] inner room corner (m)
    room_hi: jax.Array  # f32[3]
    kind: jax.Array  # i32[K]: SPHERE, CYLINDER or BOX
    center: jax.Array  # f32[K, 3]
    size: jax.Array  # f32[K, 3]: radius in [0] (sphere, cylinder) or half extents (box)
    active: jax.Array  # bool[K]


def check_resolution(height: int, width: int) -> tuple[int, int]:
    """Host-side check: ``16 <= height <= 135`` and ``24 <= width <= 240`` (Aerial Gym's range)."""
    if not (MIN_RES[0] <= int(height) <= MAX_RES[0] and MIN_RES[1] <= int(width) <= MAX_RES[1]):
        raise ValueError(
            f"camera resolution={(height, width)}: height must be in [{MIN_RES[0]}, "
            f"{MAX_RES[0]}] and width in [{MIN_RES[1]}, {MAX_RES[1]}]"
        )
    return int(height), int(width)


def ray_directions(height: int, width: int, hfov: float = math.radians(87.0)) -> jax.Array:
    """Unit ray directions ``f32[height, width, 3]`` in the body frame (x forward, z up).

    Row 0 is the top of the image, column 0 the left; square pixels, so the vertical
    field of view is ``2 atan(tan(hfov / 2) height / width)``.
    """
    half_w = math.tan(hfov / 2.0)
    half_h = half_w * height / width
    u = (jnp.arange(width, dtype=jnp.float32) + 0.5) / width * 2.0 - 1.0  # -1 left .. 1 right
    v = (jnp.arange(height, dtype=jnp.float32) + 0.5) / height * 2.0 - 1.0  # -1 top .. 1 bottom
    vv, uu = jnp.meshgrid(v, u, indexing="ij")
    d = jnp.stack([jnp.ones_like(uu), -uu * half_w, -vv * half_h], axis=-1)
    return d / jnp.linalg.norm(d, axis=-1, keepdims=True)


def _sphere_hit(o, d, c, r):
    """Nearest t > 0 of ray o + t d (|d| = 1) with a sphere; inf if none."""
    oc = o - c
    b = jnp.sum(oc * d, -1)
    cc = jnp.sum(oc * oc, -1) - r * r
    disc = b * b - cc
    sq = jnp.sqrt(jnp.maximum(disc, 0.0))
    t0, t1 = -b - sq, -b + sq
    t = jnp.where(t0 > 0, t0, t1)
    return jnp.where((disc >= 0) & (t > 0), t, jnp.inf)


def _cylinder_hit(o, d, c, r):
    """Vertical infinite cylinder: the sphere test in the xy plane, scaled by |d_xy|."""
    dxy = d[..., :2]
    a = jnp.sum(dxy * dxy, -1)
    oc = o[..., :2] - c[..., :2]
    b = jnp.sum(oc * dxy, -1)
    cc = jnp.sum(oc * oc, -1) - r * r
    disc = b * b - a * cc
    sq = jnp.sqrt(jnp.maximum(disc, 0.0))
    safe_a = jnp.where(a > 1e-12, a, 1.0)
    t0, t1 = (-b - sq) / safe_a, (-b + sq) / safe_a
    t = jnp.where(t0 > 0, t0, t1)
    return jnp.where((a > 1e-12) & (disc >= 0) & (t > 0), t, jnp.inf)


def _slabs(o, d, lo, hi):
    """Entry and exit t of a ray through an axis-aligned box (slab method)."""
    inv = 1.0 / jnp.where(jnp.abs(d) > 1e-12, d, 1e-12)
    ta, tb = (lo - o) * inv, (hi - o) * inv
    t_near = jnp.max(jnp.minimum(ta, tb), -1)
    t_far = jnp.min(jnp.maximum(ta, tb), -1)
    return t_near, t_far


def _box_hit(o, d, c, half):
    t_near, t_far = _slabs(o, d, c - half, c + half)
    t = jnp.where(t_near > 0, t_near, t_far)
    return jnp.where((t_near <= t_far) & (t > 0), t, jnp.inf)


def ray_cast(origin: jax.Array, dirs: jax.Array, scene: Scene) -> jax.Array:
    """Distance ``f32[...]`` along each unit ray ``dirs [..., 3]`` from ``origin [3]``.

    Room walls/floor/ceiling are hit from inside (exit distance of the room box); every
    active obstacle slot is tested with its kind's intersection and the nearest hit wins.
    """
    o = origin
    room = _slabs(o, dirs, scene.room_lo, scene.room_hi)[1]
    room = jnp.where(room > 0, room, jnp.inf)

    def one(kind, center, size, active):
        r = size[0]
        t = jnp.where(
            kind == SPHERE,
            _sphere_hit(o, dirs, center, r),
            jnp.where(
                kind == CYLINDER, _cylinder_hit(o, dirs, center, r), _box_hit(o, dirs, center, size)
            ),
        )
        return jnp.where(active, t, jnp.inf)

    hits = jax.vmap(one)(scene.kind, scene.center, scene.size, scene.active)  # [K, ...]
    return jnp.minimum(room, jnp.min(hits, axis=0))


def depth_image(
    pos: jax.Array,
    rot: jax.Array,
    dirs_body: jax.Array,
    scene: Scene,
    min_range: jax.Array,
    max_range: jax.Array,
) -> jax.Array:
    """Normalized depth ``f32[H, W]`` in ``[min_range / max_range, 1]`` (noise-free)."""
    dirs = dirs_body @ rot.T  # body -> world for every pixel
    t = ray_cast(pos, dirs, scene)
    return jnp.clip(t, min_range, max_range) / max_range


def corrupt(key: jax.Array, depth: jax.Array, noise_std: jax.Array, dropout: jax.Array):
    """Multiplicative Gaussian noise ``depth (1 + N(0, std))`` clipped to [0, 1], then each
    pixel dropped (set to 0) with probability ``dropout``."""
    k_n, k_d = jax.random.split(key)
    noisy = depth * (1.0 + noise_std * jax.random.normal(k_n, depth.shape, jnp.float32))
    keep = jax.random.uniform(k_d, depth.shape) >= dropout
    return jnp.where(keep, jnp.clip(noisy, 0.0, 1.0), 0.0)


def clearance(pos: jax.Array, scene: Scene) -> jax.Array:
    """Distance ``f32[]`` from ``pos`` to the nearest surface (obstacles and room walls).

    Negative inside an obstacle or outside the room. Used for the collision rule.
    """
    walls = jnp.min(jnp.minimum(pos - scene.room_lo, scene.room_hi - pos))

    def one(kind, center, size, active):
        sphere = jnp.linalg.norm(pos - center) - size[0]
        cyl = jnp.linalg.norm(pos[:2] - center[:2]) - size[0]
        q = jnp.abs(pos - center) - size
        box = jnp.linalg.norm(jnp.maximum(q, 0.0)) + jnp.minimum(jnp.max(q), 0.0)
        d = jnp.where(kind == SPHERE, sphere, jnp.where(kind == CYLINDER, cyl, box))
        return jnp.where(active, d, jnp.inf)

    return jnp.minimum(
        walls, jnp.min(jax.vmap(one)(scene.kind, scene.center, scene.size, scene.active))
    )

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


def _axes(v: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Split ``[..., 3]`` into three ``[...]`` arrays (structure of arrays: every per-pixel
    operation below is then elementwise, which XLA fuses into one loop over the pixels)."""
    return v[..., 0], v[..., 1], v[..., 2]


def _safe_inv(x: jax.Array) -> jax.Array:
    return 1.0 / jnp.where(jnp.abs(x) > 1e-12, x, 1e-12)


def _slab_range(o, inv, lo, hi):
    """Entry and exit t of rays ``o + t d`` through the box ``[lo, hi]`` (slab method); ``o``,
    ``lo``, ``hi`` are 3-tuples of scalars, ``inv`` a 3-tuple of per-pixel ``1 / d``."""
    near, far = None, None
    for a in range(3):
        ta, tb = (lo[a] - o[a]) * inv[a], (hi[a] - o[a]) * inv[a]
        lo_t, hi_t = jnp.minimum(ta, tb), jnp.maximum(ta, tb)
        near = lo_t if near is None else jnp.maximum(near, lo_t)
        far = hi_t if far is None else jnp.minimum(far, hi_t)
    return near, far


def _slot_hit(o, d, inv, inv_axy, kind, center, size):
    """Nearest ``t > 0`` of the rays with one obstacle slot (inf where none), per pixel.

    Spheres and vertical cylinders are one quadric: ``|m (o + t d - c)|^2 = r^2`` with
    ``m = (1, 1, 1)`` for a sphere and ``(1, 1, 0)`` for a cylinder, so ``a = 1`` (unit rays)
    or ``a = d_x^2 + d_y^2`` (its inverse ``inv_axy`` is precomputed per pixel). Boxes use the
    slab test with the per-pixel ``inv = 1 / d``. Both are evaluated (the kind is data, and
    under ``vmap`` a branch would be a select anyway) and the slot's kind picks one.
    """
    is_sphere = kind == SPHERE
    ocx, ocy = o[0] - center[0], o[1] - center[1]
    ocz = jnp.where(is_sphere, o[2] - center[2], 0.0)
    r = size[0]
    b = ocx * d[0] + ocy * d[1] + ocz * d[2]
    a = jnp.where(is_sphere, 1.0, d[0] * d[0] + d[1] * d[1])
    inv_a = jnp.where(is_sphere, 1.0, inv_axy)
    # b^2 - a c = a (r^2 - h^2), h = distance from the centre (axis) to the ray's line: the
    # textbook b^2 - a c cancels two numbers ~|oc|^2 and loses digits at grazing rays
    s = b * inv_a
    px, py = ocx - s * d[0], ocy - s * d[1]
    pz = jnp.where(is_sphere, ocz - s * d[2], 0.0)
    disc = a * (r * r - (px * px + py * py + pz * pz))
    sq = jnp.sqrt(jnp.maximum(disc, 0.0))
    t0, t1 = (-b - sq) * inv_a, (-b + sq) * inv_a
    tq = jnp.where(t0 > 0, t0, t1)
    quad_ok = (a > 1e-12) & (disc >= 0) & (tq > 0)
    lo = tuple(center[i] - size[i] for i in range(3))
    hi = tuple(center[i] + size[i] for i in range(3))
    near, far = _slab_range(o, inv, lo, hi)
    tb = jnp.where(near > 0, near, far)
    box_ok = (near <= far) & (tb > 0)
    is_box = kind == BOX
    t = jnp.where(is_box, tb, tq)
    return jnp.where(jnp.where(is_box, box_ok, quad_ok), t, jnp.inf)


def ray_cast(
    origin: jax.Array, dirs: jax.Array, scene: Scene, num_slots: jax.Array | int | None = None
) -> jax.Array:
    """Distance ``f32[...]`` along each unit ray ``dirs [..., 3]`` from ``origin [3]``.

    Room walls/floor/ceiling are hit from inside (exit distance of the room box); every
    active obstacle slot is tested with its kind's intersection and the nearest hit wins.
    ``num_slots`` (default: all ``K``) bounds the slots looked at: slots ``>= num_slots``
    must be inactive (Navigate's active slots come first, so it passes its obstacle
    count and skips the inactive ones instead of computing and discarding them).
    """
    return _cast(_axes(origin), _axes(dirs), scene, num_slots)


GROUP = 4  # obstacle slots per pass over the pixels (see _cast)


def _cast(o, d, scene: Scene, num_slots) -> jax.Array:
    inv = tuple(_safe_inv(x) for x in d)
    axy = d[0] * d[0] + d[1] * d[1]
    inv_axy = 1.0 / jnp.where(axy > 1e-12, axy, 1.0)
    room = _slab_range(o, inv, _axes(scene.room_lo), _axes(scene.room_hi))[1]
    room = jnp.where(room > 0, room, jnp.inf)
    k = scene.kind.shape[0]

    def group(g, t_min):
        # GROUP slots unrolled: one fused pass over the pixels keeps the running minimum
        # in registers (a pass per slot would stream every per-pixel array through memory
        # once per slot, which dominates on CPU at thousands of envs).
        for j in range(GROUP):
            i = g * GROUP + j
            slot = jnp.minimum(i, k - 1)
            t = _slot_hit(
                o, d, inv, inv_axy, scene.kind[slot], scene.center[slot], scene.size[slot]
            )
            t_min = jnp.minimum(t_min, jnp.where((i < k) & scene.active[slot], t, jnp.inf))
        return t_min

    upper = k if num_slots is None else jnp.minimum(num_slots, k)
    # With a traced ``num_slots`` the trip count skips groups of inactive slots.
    return jax.lax.fori_loop(0, (upper + GROUP - 1) // GROUP, group, room)


def depth_image(
    pos: jax.Array,
    rot: jax.Array,
    dirs_body: jax.Array,
    scene: Scene,
    min_range: jax.Array,
    max_range: jax.Array,
    num_slots: jax.Array | int | None = None,
) -> jax.Array:
    """Normalized depth ``f32[H, W]`` in ``[min_range / max_range, 1]`` (noise-free).

    ``dirs_body [H, W, 3]`` are the body-frame rays (:func:`ray_directions`); ``rot [3, 3]``
    maps body to world; ``num_slots`` as in :func:`ray_cast`.
    """
    bx, by, bz = _axes(dirs_body)
    # body -> world per pixel, written out so that it fuses with the ray tests
    d = tuple(rot[i, 0] * bx + rot[i, 1] * by + rot[i, 2] * bz for i in range(3))
    t = _cast(_axes(pos), d, scene, num_slots)
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

"""Car following for :class:`~hordax.envs.driving.env.Drive`'s background traffic and the
scripted driver: the gap to the object ahead, and (optionally) to the first crossing
conflict along the follower's route.

Plain IDM car following (:func:`leader_gaps`) brakes only for an object already in the
follower's lane corridor, so a car crossing from a side road, or entering a roundabout
ring, is seen too late: it does not yield. :func:`conflict_gaps` adds the missing rule.
Every other object's next ``horizon_s`` seconds are predicted at constant velocity; the
first point of the follower's route (up to ``horizon_m`` ahead) that such a prediction
comes within ``0.5 (w_i + w_j) + margin`` of is a *conflict*, and the follower yields (IDM
brakes as for a stopped leader there) iff the other reaches it no later than the follower
would at its current speed (first come, first served; the later one yields, so two
followers never wait for each other over one conflict). Objects behind the follower that
head its way (its own followers, cars merging from behind) are not yielded to.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hordax.envs.driving.geometry import rotate
from hordax.envs.driving.observation import route_samples


def _follower_frame(state, start: int, stop: int):
    """For followers ``start..stop-1``: their heading's ``(cos, sin)`` ``f32[b]``, every
    object's position in each follower's frame ``f32[b, m, 2]``, and ``bool[b, m]`` that
    the object is not the follower itself."""
    m = state.pos.shape[0]
    sel = slice(start, stop)
    c, sn = jnp.cos(state.yaw[sel]), jnp.sin(state.yaw[sel])
    rel = rotate(state.pos[None] - state.pos[sel, None], c[:, None], -sn[:, None])
    return c, sn, rel, ~jnp.eye(stop - start, m, k=start, dtype=bool)


def leader_gaps(state, start: int, stop: int) -> tuple[jax.Array, jax.Array]:
    """For objects ``start..stop-1``: the bumper gap ``f32[b]`` to the nearest object ahead
    in their lane corridor (in the follower's frame: ahead, lateral overlap + 0.3 m; ``inf``
    when none) and that leader's speed along the follower's heading ``f32[b]``."""
    sel = slice(start, stop)
    c, sn, rel, not_self = _follower_frame(state, start, stop)
    half_w = 0.5 * (state.size[sel, 1:2] + state.size[None, :, 1]) + 0.3
    ahead = (rel[..., 0] > 0) & (jnp.abs(rel[..., 1]) < half_w) & state.exists[None] & not_self
    gap = rel[..., 0] - 0.5 * (state.size[sel, 0:1] + state.size[None, :, 0])
    gap = jnp.where(ahead, gap, jnp.inf)
    lead = jnp.argmin(gap, axis=-1)
    return jnp.min(gap, axis=-1), state.vel[lead, 0] * c + state.vel[lead, 1] * sn


def conflict_gaps(
    state,
    start: int,
    stop: int,
    pts: jax.Array,
    ok: jax.Array,
    cum: jax.Array,
    here: jax.Array,
    horizon_m: float = 30.0,
    path_step: float = 1.5,
    horizon_s: float = 4.0,
    margin: float = 0.4,
) -> tuple[jax.Array, jax.Array]:
    """For objects ``start..stop-1`` driving routes ``(pts, ok, cum)`` (``[b, L]``, the
    follower at arc length ``here f32[b]``): the gap ``f32[b]`` from the follower's front
    bumper to the first conflict it must yield at (``inf`` when none; module docstring)
    and the yielded-to object's speed along the route there ``f32[b]`` (so IDM closes on a
    crossing car as on a stopped one, on a car ahead in its lane as on a leader).

    The route is sampled every ``path_step`` metres; each other object's straight path
    over ``[0, horizon_s]`` is tested against each sample in closed form (closest approach,
    then the time it first comes within the radius): ``b x K x M`` pairs per scene
    (``K = horizon_m / path_step + 1``), 4 x 21 x 8 at the CPU sizes."""
    m = state.pos.shape[0]
    sel = slice(start, stop)
    rows = jnp.arange(stop - start)
    n_k = int(round(horizon_m / path_step)) + 1
    ahead = path_step * jnp.arange(n_k, dtype=jnp.float32)  # [K] metres ahead
    xy, tangent, valid = route_samples(pts, ok, cum, here[:, None] + ahead)  # [b, K, 2]

    # who may be yielded to: existing others, not behind the follower heading its way
    _, _, rel, not_self = _follower_frame(state, start, stop)
    same_way = jnp.cos(state.yaw[None] - state.yaw[sel, None]) > 0.5
    behind = (rel[..., 0] < 0) & same_way
    other = state.exists[None] & not_self & ~behind  # [b, m]

    # each other's path p + v t, t in [0, horizon_s], against each route sample q
    radius = 0.5 * (state.size[sel, 1][:, None] + state.size[None, :, 1]) + margin  # [b, m]
    d = xy[:, :, None] - state.pos[None, None]  # [b, K, m, 2]: q - p
    v = state.vel[None, None]  # [1, 1, m, 2]
    vv = jnp.maximum(jnp.sum(v * v, axis=-1), 1e-9)
    t_close = jnp.clip(jnp.sum(d * v, axis=-1) / vv, 0.0, horizon_s)  # closest approach
    miss2 = jnp.sum((d - v * t_close[..., None]) ** 2, axis=-1)
    r2 = radius[:, None] ** 2
    hit = (miss2 < r2) & valid[:, :, None] & other[:, None]  # [b, K, m]
    t_in = jnp.maximum(t_close - jnp.sqrt(jnp.maximum(r2 - miss2, 0.0) / vv), 0.0)

    first_k = jnp.argmax(hit, axis=1)  # [b, m] the first conflicting route sample
    cols = jnp.arange(m)[None]
    t_other = t_in[rows[:, None], first_k, cols]  # [b, m] when it gets there
    d_conflict = ahead[first_k]  # [b, m] metres along the route
    speed = jnp.linalg.norm(state.vel[sel], axis=-1)
    t_self = d_conflict / jnp.maximum(speed, 1.0)[:, None]
    yields = jnp.any(hit, axis=1) & (t_other <= t_self)
    front = 0.5 * state.size[sel, 0][:, None] + 0.5 * state.size[None, :, 1]
    gap = jnp.where(yields, d_conflict - front, jnp.inf)  # [b, m]
    j = jnp.argmin(gap, axis=-1)  # [b]
    tan = tangent[rows, first_k[rows, j]]  # [b, 2]
    lead_speed = jnp.sum(state.vel[j] * tan, axis=-1)
    return jnp.min(gap, axis=-1), lead_speed


def following_gaps(state, start: int, stop: int, route=None) -> tuple[jax.Array, jax.Array]:
    """IDM's ``(gap f32[b], leader speed f32[b])`` for objects ``start..stop-1``: the
    nearer of the lane leader (:func:`leader_gaps`) and, when ``route = (pts, ok, cum,
    here)`` is given, the first conflict to yield at (:func:`conflict_gaps`)."""
    gap, lead_speed = leader_gaps(state, start, stop)
    if route is None:
        return gap, lead_speed
    c_gap, c_speed = conflict_gaps(state, start, stop, *route)
    nearer = c_gap < gap
    return jnp.where(nearer, c_gap, gap), jnp.where(nearer, c_speed, lead_speed)

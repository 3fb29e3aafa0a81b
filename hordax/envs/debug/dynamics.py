"""Point-mass dynamics in the square arena ``[-1, 1]^2`` (pure functions of arrays).

Semi-implicit Euler at step ``dt``: ``v' = clip(v + dt * (force_scale * a - damping * v),
-max_speed, max_speed)``, ``p' = p + dt * v'``; a wall stops the velocity component that
points out of the arena. Works on any leading batch shape: ``pos, vel, action [..., 2]``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

ARENA = 1.0


def integrate(
    pos: jax.Array,
    vel: jax.Array,
    action: jax.Array,
    dt: jax.Array,
    force_scale: jax.Array,
    damping: jax.Array,
    max_speed: jax.Array,
):
    """One step; returns ``(pos', vel')`` (float32)."""
    vel = vel + dt * (force_scale * action - damping * vel)
    vel = jnp.clip(vel, -max_speed, max_speed)
    pos = pos + dt * vel
    hit_low, hit_high = pos < -ARENA, pos > ARENA
    vel = jnp.where((hit_low & (vel < 0)) | (hit_high & (vel > 0)), 0.0, vel)
    return jnp.clip(pos, -ARENA, ARENA), vel

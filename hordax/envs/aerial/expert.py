"""A scripted reference for :class:`~hordax.envs.aerial.multi_hover.MultiHover` (velocity
controller): each drone flies a proportional velocity command to its goal on its own
altitude layer while it is far from the goal, so paths that cross at the ring's centre are
``layer`` metres apart in height.

It reads the observation only (the goal offset and the attitude are its first 7 values) and
knows each agent's slot, as a policy with the agent-id one-hot does. It shows that the task
is solvable within its 5 s (``benchmarks/multihover_profile.py --scripted``: every drone
within 0.1 m at the end in ~100 % of evaluation episodes, benchmarks/RESULTS.md) and that
straight flights through the centre collide (the tests).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hordax.envs.aerial.common import yaw_frame
from hordax.envs.aerial.dynamics import quat_to_euler


def layered_velocity_action(
    obs: jax.Array,
    gain: float = 2.0,
    layer: float = 0.8,
    near: float = 0.6,
    max_speed: float = 2.0,
) -> jax.Array:
    """``f32[..., n, 4]`` velocity-controller actions from observations ``f32[..., n, d]``.

    World velocity command ``clip(gain (goal - pos + dz_i), +-max_speed)`` with agent ``i``
    aimed ``dz_i = layer (i - (n - 1) / 2)`` m above its goal while it is farther than
    ``near`` m from it horizontally (``layer=0``: straight at the goal), rotated into the
    drone's yaw frame (the velocity controller's frame) and scaled by ``max_speed`` (the
    controller's ``max_speed``, m/s); yaw rate command ``-2 yaw`` (yaw held at 0).
    """
    n = obs.shape[-2]
    err = obs[..., :3]
    yaw = quat_to_euler(obs[..., 3:7])[..., 2]
    dz = layer * (jnp.arange(n, dtype=jnp.float32) - (n - 1) / 2.0)
    far = jnp.linalg.norm(err[..., :2], axis=-1) > near
    err = err.at[..., 2].add(jnp.where(far, dz, 0.0))
    v = jnp.clip(gain * err, -max_speed, max_speed) / max_speed
    yaw_rate = jnp.clip(-2.0 * yaw, -1.0, 1.0)
    command = jnp.concatenate([yaw_frame(yaw, v), yaw_rate[..., None]], axis=-1)
    return command.astype(jnp.float32)

"""Return estimators shared by all trainers.

Terminated and truncated are separate everywhere: a terminated step bootstraps with 0,
a truncated step bootstraps with ``V(final_observation)`` (passed in ``next_value``), and
the lambda-trace is cut at either, because the next row belongs to a new episode.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def compute_gae(
    reward: jax.Array,
    value: jax.Array,
    next_value: jax.Array,
    terminated: jax.Array,
    truncated: jax.Array,
    gamma: float,
    gae_lambda: float,
) -> tuple[jax.Array, jax.Array]:
    """Generalized advantage estimation over a rollout.

    Args:
        reward: ``f32[T, B]`` rewards ``r_t``.
        value: ``f32[T, B]`` values ``V(s_t)``.
        next_value: ``f32[T, B]`` values of the *true* next states ``V(s_{t+1})``, i.e. of
            ``info["final_observation"]`` (equal to the next obs when the episode goes on).
        terminated: ``bool[T, B]``; no bootstrap after a terminal step.
        truncated: ``bool[T, B]``; bootstrap from ``next_value``, but cut the trace.
        gamma: discount.
        gae_lambda: GAE lambda.

    Returns:
        ``(advantage, target)``, both ``f32[T, B]``; ``target = advantage + value``.
    """
    not_terminated = 1.0 - terminated.astype(jnp.float32)
    not_done = 1.0 - jnp.logical_or(terminated, truncated).astype(jnp.float32)
    delta = reward + gamma * not_terminated * next_value - value

    def backward(next_adv: jax.Array, xs: tuple[jax.Array, jax.Array]):
        delta_t, not_done_t = xs
        adv = delta_t + gamma * gae_lambda * not_done_t * next_adv
        return adv, adv

    _, advantage = jax.lax.scan(backward, jnp.zeros_like(delta[0]), (delta, not_done), reverse=True)
    return advantage, advantage + value

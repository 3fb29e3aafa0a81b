"""PPO losses for one minibatch (pure functions; shapes ``[N]`` unless noted)."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def policy_loss(
    log_prob: jax.Array, old_log_prob: jax.Array, advantage: jax.Array, clip_eps: float
) -> tuple[jax.Array, dict]:
    """Clipped surrogate ``-E[min(r A, clip(r, 1-eps, 1+eps) A)]`` with ``r = pi/pi_old``."""
    ratio = jnp.exp(log_prob - old_log_prob)
    unclipped = ratio * advantage
    clipped = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantage
    loss = -jnp.mean(jnp.minimum(unclipped, clipped))
    # Diagnostics: approx KL (k3 estimator) and fraction of clipped ratios.
    log_ratio = log_prob - old_log_prob
    approx_kl = jnp.mean(jnp.exp(log_ratio) - 1.0 - log_ratio)
    clip_frac = jnp.mean((jnp.abs(ratio - 1.0) > clip_eps).astype(jnp.float32))
    return loss, {"approx_kl": approx_kl, "clip_frac": clip_frac}


def value_loss(
    value: jax.Array, old_value: jax.Array, target: jax.Array, clip_eps: float, clip_value: bool
) -> jax.Array:
    """``0.5 * E[(V - target)^2]``, optionally the max with the clipped-update loss."""
    loss = jnp.square(value - target)
    if clip_value:
        clipped = old_value + jnp.clip(value - old_value, -clip_eps, clip_eps)
        loss = jnp.maximum(loss, jnp.square(clipped - target))
    return 0.5 * jnp.mean(loss)

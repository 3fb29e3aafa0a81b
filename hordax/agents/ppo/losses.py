"""PPO losses for one minibatch (pure functions; shapes ``[N]`` unless noted)."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def weighted_mean(x: jax.Array, weight: jax.Array | None) -> jax.Array:
    """``mean(x)``, or over the rows with ``weight > 0`` only (``sum(w x) / sum(w)``; rows of
    weight 0 are dropped exactly, even if non-finite; 0 when no row has weight)."""
    if weight is None:
        return jnp.mean(x)
    w = weight.astype(jnp.float32)
    return jnp.sum(jnp.where(w > 0, w * x, 0.0)) / jnp.maximum(jnp.sum(w), 1e-8)


def policy_loss(
    log_prob: jax.Array,
    old_log_prob: jax.Array,
    advantage: jax.Array,
    clip_eps: float,
    weight: jax.Array | None = None,
) -> tuple[jax.Array, dict]:
    """Clipped surrogate ``-E[min(r A, clip(r, 1-eps, 1+eps) A)]`` with ``r = pi/pi_old``
    (``E`` over the rows of positive ``weight`` when given: masked agents)."""
    ratio = jnp.exp(log_prob - old_log_prob)
    unclipped = ratio * advantage
    clipped = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantage
    loss = -weighted_mean(jnp.minimum(unclipped, clipped), weight)
    # Diagnostics: approx KL (k3 estimator) and fraction of clipped ratios.
    log_ratio = log_prob - old_log_prob
    approx_kl = weighted_mean(jnp.exp(log_ratio) - 1.0 - log_ratio, weight)
    clip_frac = weighted_mean((jnp.abs(ratio - 1.0) > clip_eps).astype(jnp.float32), weight)
    return loss, {"approx_kl": approx_kl, "clip_frac": clip_frac}


def value_loss(
    value: jax.Array,
    old_value: jax.Array,
    target: jax.Array,
    clip_eps: float,
    clip_value: bool,
    weight: jax.Array | None = None,
) -> jax.Array:
    """``0.5 * E[(V - target)^2]``, optionally the max with the clipped-update loss."""
    loss = jnp.square(value - target)
    if clip_value:
        clipped = old_value + jnp.clip(value - old_value, -clip_eps, clip_eps)
        loss = jnp.maximum(loss, jnp.square(clipped - target))
    return 0.5 * weighted_mean(loss, weight)

"""Action distributions as pure functions of their parameters (no distrax dependency).

Shapes: batch ``[B]``; categorical logits ``[B, n]`` and actions int32 ``[B]``;
diagonal Gaussian mean ``[B, d]``, ``log_std [d]`` and actions float32 ``[B, d]``.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

_LOG_2PI = math.log(2 * math.pi)


def categorical_sample(key: jax.Array, logits: jax.Array) -> jax.Array:
    return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)


def categorical_log_prob(logits: jax.Array, action: jax.Array) -> jax.Array:
    logp = jax.nn.log_softmax(logits, axis=-1)
    return jnp.take_along_axis(logp, action[..., None].astype(jnp.int32), axis=-1)[..., 0]


def categorical_entropy(logits: jax.Array) -> jax.Array:
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.sum(jnp.exp(logp) * logp, axis=-1)


def categorical_mode(logits: jax.Array) -> jax.Array:
    return jnp.argmax(logits, axis=-1).astype(jnp.int32)


def gaussian_sample(key: jax.Array, mean: jax.Array, log_std: jax.Array) -> jax.Array:
    return mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape, mean.dtype)


def gaussian_log_prob(mean: jax.Array, log_std: jax.Array, action: jax.Array) -> jax.Array:
    z = (action - mean) * jnp.exp(-log_std)
    return jnp.sum(-0.5 * z**2 - log_std - 0.5 * _LOG_2PI, axis=-1)


def gaussian_entropy(mean: jax.Array, log_std: jax.Array) -> jax.Array:
    ent = jnp.sum(log_std + 0.5 * (1.0 + _LOG_2PI))
    return jnp.broadcast_to(ent, mean.shape[:-1])

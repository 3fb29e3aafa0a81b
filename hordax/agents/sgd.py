"""The gradient step every agent shares: clipped Adam, learning-rate annealing, one optimizer
step, and minibatch epochs over a batch (Brax's ``training/gradients.py`` idea: one small
update step that every algorithm calls).

The learning rate is applied outside the optax chain (``-lr * update``) so that it can be a
traced per-member value: a population ``vmap``-s over it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax

from hordax.validation import need as _need


def clipped_adam(max_grad_norm: float, eps: float = 1e-8) -> optax.GradientTransformation:
    """Global-norm gradient clipping, then Adam's scaling without its learning rate."""
    return optax.chain(optax.clip_by_global_norm(max_grad_norm), optax.scale_by_adam(eps=eps))


def annealed_learning_rate(
    lr: jax.Array, step: jax.Array, total_steps: int, anneal: bool
) -> jax.Array:
    """``lr`` (``f32[]``), decayed linearly to 0 over ``total_steps`` optimizer steps when
    ``anneal`` (``step``: ``i32[]`` steps taken)."""
    if not anneal:
        return lr
    frac = jnp.clip(step.astype(jnp.float32) / total_steps, 0.0, 1.0)
    return lr * (1.0 - frac)


def apply_gradient(
    optimizer: optax.GradientTransformation,
    params: Any,
    opt_state: Any,
    grads: Any,
    lr: jax.Array,
) -> tuple[Any, Any]:
    """One optimizer step with step size ``lr``: ``(new params, new optimizer state)``."""
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, jax.tree.map(lambda u: -lr * u, updates)), opt_state


ACTIVE_ROWS = "_active_rows"
"""The metrics key through which a minibatch step reports how many of its rows count."""


def split_minibatches(x: jax.Array, perm: jax.Array, num_minibatches: int, axis: int = 0):
    """``x`` shuffled by ``perm`` along ``axis`` and cut into ``num_minibatches`` equal parts,
    stacked on a new leading axis: ``[..., n, ...] -> [num_minibatches, ..., n / m, ...]``."""
    x = jnp.moveaxis(jnp.take(x, perm, axis=axis), axis, 0)
    x = x.reshape((num_minibatches, x.shape[0] // num_minibatches, *x.shape[1:]))
    return jnp.moveaxis(x, 1, axis + 1)


def minibatch_epochs(
    state: Any,
    batch: Any,
    key: jax.Array,
    *,
    num_epochs: int,
    num_minibatches: int,
    num_rows: int,
    step: Callable[[Any, Any], tuple[Any, dict]],
    minibatches: Callable[[Any, jax.Array], Any] | None = None,
) -> tuple[Any, dict]:
    """``num_epochs`` passes over ``batch``, each a fresh permutation of its ``num_rows`` rows
    cut into ``num_minibatches`` minibatches, ``state, metrics = step(state, minibatch)`` on
    each; returns the final state and every metric's mean over all minibatch steps.

    When ``step``'s metrics hold :data:`ACTIVE_ROWS` (``f32[]``: the minibatch's rows that
    count, e.g. unmasked agents), each metric's mean is weighted by it, so a minibatch with no
    active row (whose metrics are 0 by construction) does not pull the figures towards 0;
    the key is not returned.

    ``minibatches(batch, perm)`` builds the stacked minibatches (default: every leaf split
    on its leading axis by :func:`split_minibatches`).
    """
    if minibatches is None:

        def minibatches(b: Any, perm: jax.Array) -> Any:
            return jax.tree.map(lambda x: split_minibatches(x, perm, num_minibatches), b)

    def epoch(st: Any, key_perm: jax.Array):
        return jax.lax.scan(
            step, st, minibatches(batch, jax.random.permutation(key_perm, num_rows))
        )

    state, metrics = jax.lax.scan(epoch, state, jax.random.split(key, num_epochs))
    rows = metrics.pop(ACTIVE_ROWS, None)
    if rows is None:
        return state, jax.tree.map(jnp.mean, metrics)
    total = jnp.maximum(jnp.sum(rows), 1.0)  # no active row at all: every metric reads 0
    return state, jax.tree.map(
        lambda m: jnp.sum(jnp.where(rows > 0, rows * m, 0.0)) / total, metrics
    )


def validate_sgd(cfg: Any, batch_size: int | None = None) -> None:
    """Host-side checks of the fields every minibatch-SGD agent config has (PPO, PQN):
    ``learning_rate``, ``gamma``, ``max_grad_norm``, ``num_epochs``, ``num_minibatches`` (which
    must divide ``batch_size`` = num_envs * rollout_length when given). ``ValueError`` names the
    key (``agent.<field>``), the value and what is allowed."""

    def need(ok: bool, key: str, value: object, rule: str) -> None:
        _need(ok, key, value, rule, prefix="agent.")

    lr, clip = cfg.learning_rate, cfg.max_grad_norm
    need(math.isfinite(lr) and lr > 0, "learning_rate", lr, "must be a finite number > 0")
    need(0.0 <= cfg.gamma <= 1.0, "gamma", cfg.gamma, "must be in [0, 1]")
    need(math.isfinite(clip) and clip > 0, "max_grad_norm", clip, "must be > 0")
    need(cfg.num_epochs >= 1, "num_epochs", cfg.num_epochs, "must be an integer >= 1")
    n_mb = cfg.num_minibatches
    need(n_mb >= 1, "num_minibatches", n_mb, "must be an integer >= 1")
    if batch_size is not None:
        need(
            batch_size % n_mb == 0,
            "num_minibatches",
            n_mb,
            f"must divide the batch num_envs * rollout_length = {batch_size}",
        )

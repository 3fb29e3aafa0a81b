"""Combination rules of an ensemble's members (pure, jittable): validation weights, the vote,
the weighted average and the rolling selection.

- **vote** (discrete actions): every member's greedy action gets one vote; the action with
  the most votes wins. Ties go to the action whose voters have the larger total weight
  (the validation weights below), then to the lowest action index.
- **weighted average** (continuous actions): each member's greedy action is clipped into
  the action box and the clipped actions are averaged with the validation weights.
- **rolling selection** (FinRL's ensemble strategy): time is cut into windows of ``W``
  steps; during window ``j`` the policy acts with the member whose own run had the best
  Sharpe ratio of per-step rewards over window ``j - 1`` (ties: lowest member index;
  :func:`hordax.envs.trading.metrics.sharpe_of_steps`, not annualized). Window 0 uses
  ``initial`` (the member with the best validation score). Only rewards of steps already
  taken are used (no look-ahead; tested). Unlike FinRL, members are not retrained between
  windows.

Weights from validation scores ``s[K]`` (Sharpe or return, see
:class:`~hordax.training.config.EnsembleConfig`): ``positive``: ``max(s, 0) / sum`` (equal
weights if no score is positive); ``softmax``: ``softmax(s / temperature)``; ``equal``:
``1 / K``. NaN and ``-inf`` scores count as the worst; ``+inf`` (a Sharpe ratio with no
volatility and a positive mean, see the metrics' flat rule) as the best: the members with
``+inf`` share the weight.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from hordax.envs.trading import metrics
from hordax.training.config.ensemble import WEIGHTINGS


def member_weights(scores: Any, weighting: str = "positive", temperature: float = 1.0):
    """``f32[K]`` weights summing to 1 from validation ``scores[K]`` (see module doc)."""
    s = jnp.asarray(scores, jnp.float32)
    k = s.shape[0]
    finite = jnp.isfinite(s)
    if weighting == "equal":
        return jnp.full((k,), 1.0 / k, jnp.float32)
    if weighting == "positive":
        pos = jnp.where(finite, jnp.maximum(s, 0.0), 0.0)
        total = pos.sum()
        weights = jnp.where(total > 0, pos / jnp.where(total > 0, total, 1.0), 1.0 / k)
    elif weighting == "softmax":
        logits = jnp.where(finite, s / temperature, -jnp.inf)
        logits = jnp.where(finite.any(), logits, 0.0)
        weights = jax.nn.softmax(logits)
    else:
        raise ValueError(f"weighting={weighting!r}: allowed values are {list(WEIGHTINGS)}")
    best = (s == jnp.inf).astype(jnp.float32)
    return jnp.where(best.sum() > 0, best / jnp.maximum(best.sum(), 1.0), weights)


def majority_vote(actions: jax.Array, num_actions: int, weights: jax.Array | None = None):
    """``i32[]`` winner of ``actions: int[K]`` (one vote each; ties: larger total weight of
    the voters, then the lowest action index). Weights must sum to at most 1."""
    onehot = jax.nn.one_hot(actions, num_actions, dtype=jnp.float32)  # [K, A]
    counts = onehot.sum(0)
    if weights is not None:
        # The weight term is < 1, so it only orders actions with equal counts.
        counts = counts + 0.5 * (weights[:, None] * onehot).sum(0)
    return jnp.argmax(counts).astype(jnp.int32)  # argmax: first maximum = lowest index


def weighted_average(actions: jax.Array, weights: jax.Array) -> jax.Array:
    """``f32[*A]``: ``sum_k weights[k] * actions[k]`` for ``actions: f32[K, *A]``."""
    w = weights.reshape((-1,) + (1,) * (actions.ndim - 1))
    return jnp.sum(w * actions, axis=0)


def rolling_init(num_members: int, window: int, initial: Any = 0) -> dict:
    """State of the rolling selector: the current choice and the current window's member
    rewards ``f32[window, K]`` (``n`` of them filled)."""
    rewards = jnp.zeros((window, num_members), jnp.float32)
    return {"choice": jnp.int32(initial), "rewards": rewards, "n": jnp.int32(0)}


def rolling_update(sel: dict, member_rewards: jax.Array, window: int) -> dict:
    """Add one step's ``member_rewards: f32[K]``; at a window's end, choose the member with
    the best Sharpe ratio over that window (it acts during the next window)."""
    rewards = sel["rewards"].at[sel["n"]].set(member_rewards.astype(jnp.float32))
    n = sel["n"] + 1
    full = n >= window
    best = jnp.argmax(metrics.sharpe_of_steps(rewards.T, xp=jnp)).astype(jnp.int32)
    return {
        "choice": jnp.where(full, best, sel["choice"]),
        "rewards": rewards,
        "n": jnp.where(full, 0, n),
    }


def rolling_choices(member_rewards: jax.Array, window: int, initial: Any = 0) -> jax.Array:
    """``i32[T]``: the member acting at each step, given ``member_rewards: f32[T, K]``."""

    def body(sel, r):
        return rolling_update(sel, r, window), sel["choice"]

    init = rolling_init(member_rewards.shape[1], window, initial)
    _, choices = jax.lax.scan(body, init, member_rewards)
    return choices

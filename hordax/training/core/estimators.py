"""Return estimators shared by all trainers.

Terminated and truncated are separate everywhere: a terminated step bootstraps with 0,
a truncated step bootstraps with ``V(final_observation)`` (passed in ``next_value``), and
the lambda-trace is cut at either, because the next row belongs to a new episode.
"""

from __future__ import annotations

from typing import Any

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


def compute_q_lambda(
    reward: jax.Array,
    next_q_max: jax.Array,
    terminated: jax.Array,
    truncated: jax.Array,
    gamma: float,
    q_lambda: float,
) -> jax.Array:
    """Peng's Q(lambda) returns over a rollout (PQN's targets).

    ``G_t = r_t + gamma * (1 - term_t) * [(1 - lambda) max_a Q(s_{t+1}, a) + lambda G_{t+1}]``
    inside an episode; at a truncation (and at the rollout's last step) the bracket is just
    ``max_a Q(s_{t+1}, a)`` of the true next state (``final_observation``); at a termination
    ``G_t = r_t``.

    Args:
        reward: ``f32[T, B]``.
        next_q_max: ``f32[T, B]`` ``max_a Q(s_{t+1}, a)`` with ``s_{t+1}`` = the rollout's
            ``next_obs`` (the pre-reset observation at episode ends).
        terminated, truncated: ``bool[T, B]``.
        gamma, q_lambda: discount and trace parameter (may be traced scalars).

    Returns:
        ``f32[T, B]`` targets.
    """
    not_terminated = 1.0 - terminated.astype(jnp.float32)
    not_done = 1.0 - jnp.logical_or(terminated, truncated).astype(jnp.float32)

    def backward(next_return: jax.Array, xs: tuple) -> tuple[jax.Array, jax.Array]:
        r, q, nt, nd = xs
        mix = q_lambda * nd  # the trace continues only inside an episode
        g = r + gamma * nt * ((1.0 - mix) * q + mix * next_return)
        return g, g

    # At the last step the carry equals q there, so the bracket is max Q(s_T) exactly.
    _, returns = jax.lax.scan(
        backward,
        next_q_max[-1],
        (reward, next_q_max, not_terminated, not_done),
        reverse=True,
    )
    return returns


def compute_n_step(
    reward: jax.Array, terminated: jax.Array, truncated: jax.Array, gamma: float, n: int
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """n-step returns inside a rollout window, for transitions stored in a replay buffer.

    From step ``t`` the window runs over ``t, t+1, ...`` and stops after ``n`` steps, at the
    rollout's last step, at a truncation (bootstrap from that step's ``final_observation``)
    or at a termination (no bootstrap). The target is then
    ``G_t + discount_t * Q(next_obs[last_t], .)``.

    Args:
        reward, terminated, truncated: ``[T, B]``.
        gamma: discount; ``n``: static window length (>= 1).

    Returns:
        ``(G, discount, last)``: ``f32[T, B]`` discounted reward sums, ``f32[T, B]``
        bootstrap discounts (``gamma**k`` for ``k`` steps taken, 0 after a termination) and
        ``i32[T, B]`` the step whose ``next_obs`` is the bootstrap observation.
    """
    T = reward.shape[0]
    term = terminated.astype(bool)
    done = jnp.logical_or(term, truncated.astype(bool))
    t_idx = jnp.arange(T)[:, None] * jnp.ones_like(reward, dtype=jnp.int32)
    ret = jnp.zeros_like(reward, dtype=jnp.float32)
    disc = jnp.ones_like(reward, dtype=jnp.float32)
    last = t_idx
    alive = jnp.ones_like(term)  # the window of row t still collects rewards
    ended_by_term = jnp.zeros_like(term)
    for k in range(n):  # n is static and small
        idx = jnp.minimum(t_idx + k, T - 1)
        valid = alive & (t_idx + k <= T - 1)
        r_k = jnp.take_along_axis(reward, idx, axis=0)
        ret = ret + jnp.where(valid, disc * r_k, 0.0)
        disc = jnp.where(valid, disc * gamma, disc)
        last = jnp.where(valid, idx, last)
        term_k = jnp.take_along_axis(term, idx, axis=0)
        done_k = jnp.take_along_axis(done, idx, axis=0)
        ended_by_term = ended_by_term | (valid & term_k)
        alive = valid & ~done_k
    discount = jnp.where(ended_by_term, 0.0, disc)
    return ret.astype(jnp.float32), discount.astype(jnp.float32), last.astype(jnp.int32)


def bootstrap_values(
    value_fn: Any,
    value: jax.Array,
    next_obs: Any,
    last_obs: Any,
    truncated: jax.Array,
) -> jax.Array:
    """``V(s_{t+1})`` ``f32[T, B, ...]`` of a rollout's true next states, without a forward
    pass over every ``final_observation``.

    ``value`` is ``f32[T, B]``, or ``f32[T, B, n]`` for multi-agent critics (one value per
    agent; ``value_fn`` then returns ``[B, n]``); ``truncated`` is the episode's ``[T, B]``.

    Where the episode goes on, ``s_{t+1}`` is the next row's observation, whose value the
    rollout already computed (``value[t + 1]``); after the last step it is ``last_obs [B]``
    (the batch's current observations: one pass over ``B`` rows). Only where ``truncated``
    is ``s_{t+1}`` the episode's ``final_observation`` (``next_obs [T, B, ...]``): those rows
    are evaluated ``B`` at a time, in as many rounds as there are truncations (usually
    one or none), rather than all ``T * B`` rows. Terminated rows keep the shifted value,
    which GAE multiplies by 0. Equal to ``value_fn`` on every ``next_obs`` row up to float
    rounding (the same network on the same inputs, in other batch sizes).
    """
    T, B = value.shape[:2]
    n, rest = T * B, value.shape[2:]
    shifted = jnp.concatenate([value[1:], value_fn(last_obs)[None]], axis=0)
    shifted = shifted.reshape((n, *rest))
    rows = jax.tree.map(lambda x: x.reshape((n, *x.shape[2:])), next_obs)
    trunc = truncated.reshape(n)
    # order[i]: the row of the i-th truncation (ascending); n (dropped) past the last
    order = jnp.nonzero(trunc, size=n, fill_value=n)[0].astype(jnp.int32)
    count = jnp.sum(trunc, dtype=jnp.int32)

    def one_round(c: tuple) -> tuple:
        r, out = c
        slots = jax.lax.dynamic_slice_in_dim(order, r * B, B)  # ascending; n = unused
        src = jnp.minimum(slots, n - 1)
        v = value_fn(jax.tree.map(lambda x: x[src], rows))
        return r + 1, out.at[slots].set(v, mode="drop", indices_are_sorted=True)

    _, out = jax.lax.while_loop(lambda c: c[0] * B < count, one_round, (jnp.int32(0), shifted))
    return out.reshape(value.shape)

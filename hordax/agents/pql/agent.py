"""PQL's math: deterministic tanh actor, clipped double-Q critic with target-policy
smoothing and a Polyak-averaged target critic (no target actor, as in PQL), and mixed
exploration. Actions inside the agent are in ``[-1, 1]`` (``unit``); :meth:`act` returns
them rescaled to the env's Box bounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct
from gymnax.environments import spaces

from hordax.agents.networks import ACTIVATIONS
from hordax.agents.pql.config import PQLConfig
from hordax.agents.sgd import apply_gradient, clipped_adam

#: Hyperparameters held in the agent state (``f32[]``), so populations may vary them.
TRACED_HPARAMS = ("actor_lr", "critic_lr", "tau")


class _MLP(nn.Module):
    hidden_sizes: Sequence[int]
    out: int
    activation: str

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        act = ACTIVATIONS[self.activation]
        for w in self.hidden_sizes:
            x = act(nn.Dense(w, kernel_init=nn.initializers.orthogonal(np.sqrt(2)))(x))
        return nn.Dense(self.out, kernel_init=nn.initializers.orthogonal(0.01))(x)


class Actor(nn.Module):
    """``obs [B, ...] -> tanh(mlp(obs)) [B, d]`` in ``[-1, 1]``."""

    hidden_sizes: Sequence[int]
    action_dim: int
    activation: str = "elu"

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = obs.reshape((obs.shape[0], -1)).astype(jnp.float32)
        return jnp.tanh(_MLP(self.hidden_sizes, self.action_dim, self.activation)(x))


class DoubleQ(nn.Module):
    """Two independent critics: ``(obs [B, ...], unit action [B, d]) -> (q1, q2)``, each
    ``[B]`` (``num_atoms == 1``) or ``[B, num_atoms]`` logits (distributional, PQL-D)."""

    hidden_sizes: Sequence[int]
    activation: str = "elu"
    num_atoms: int = 1

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> tuple[jax.Array, jax.Array]:
        x = jnp.concatenate([obs.reshape((obs.shape[0], -1)).astype(jnp.float32), action], -1)
        q1 = _MLP(self.hidden_sizes, self.num_atoms, self.activation, name="q1")(x)
        q2 = _MLP(self.hidden_sizes, self.num_atoms, self.activation, name="q2")(x)
        if self.num_atoms == 1:
            return q1[:, 0], q2[:, 0]
        return q1, q2


def categorical_projection(
    probs: jax.Array, reward: jax.Array, discount: jax.Array, support: jax.Array
) -> jax.Array:
    """Project the distribution of ``reward + discount * Z`` onto ``support`` (C51).

    Args:
        probs: ``f32[B, K]`` probabilities of the next-state return on ``support``.
        reward, discount: ``f32[B]`` (n-step reward sum and bootstrap discount).
        support: ``f32[K]`` evenly spaced atoms ``v_min .. v_max``.

    Returns:
        ``f32[B, K]``: each shifted atom's mass split between its two neighbouring atoms
        in proportion to closeness (values outside the support are clipped to its ends).
    """
    v_min, v_max = support[0], support[-1]
    dz = (v_max - v_min) / (support.shape[0] - 1)
    tz = jnp.clip(reward[:, None] + discount[:, None] * support[None, :], v_min, v_max)
    # weight[b, i, j] = share of shifted atom j that lands on atom i.
    weight = jnp.clip(1.0 - jnp.abs(tz[:, None, :] - support[None, :, None]) / dz, 0.0, 1.0)
    return jnp.einsum("bij,bj->bi", weight, probs)


@struct.dataclass
class PQLState:
    """``params = {"actor", "critic", "critic_target"}``; one optimizer state per learner;
    ``hparams``: traced scalars; counters: ``critic_updates``, ``actor_updates`` and
    ``update`` (trainer updates, for the random warm-up)."""

    params: Any
    actor_opt: Any
    critic_opt: Any
    hparams: dict
    critic_updates: jax.Array
    actor_updates: jax.Array
    update: jax.Array


@struct.dataclass
class CriticBatch:
    """n-step transitions from the buffer (``[N, ...]``)."""

    obs: jax.Array
    action: jax.Array  # unit actions [N, d]
    reward: jax.Array  # n-step discounted reward sum [N]
    next_obs: jax.Array  # bootstrap observation [N, ...]
    discount: jax.Array  # gamma**k, 0 after a termination [N]


def exploration_stds(num_envs: int, sigma_min: float, sigma_max: float) -> jax.Array:
    """Mixed exploration: ``f32[num_envs]`` noise stds spaced linearly over the env index."""
    return jnp.linspace(sigma_min, sigma_max, num_envs, dtype=jnp.float32)


class PQLAgent:
    """PQL for a ``Box`` action space with finite bounds."""

    def __init__(self, config: PQLConfig, obs_shape: tuple[int, ...], action_space: Any):
        if not isinstance(action_space, spaces.Box):
            raise ValueError(
                f"agent=pql needs a Box action space, got {action_space!r} "
                "(use agent=pqn for discrete actions)"
            )
        low = np.broadcast_to(np.asarray(action_space.low, np.float32), action_space.shape)
        high = np.broadcast_to(np.asarray(action_space.high, np.float32), action_space.shape)
        if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
            raise ValueError("agent=pql needs finite action bounds (the actor ends in tanh)")
        self.config = config
        self.obs_shape = tuple(obs_shape)
        self.action_shape = tuple(action_space.shape)
        self.action_dim = int(np.prod(action_space.shape))
        self.low = jnp.asarray(low.reshape(-1))
        self.high = jnp.asarray(high.reshape(-1))
        hs = tuple(config.hidden_sizes)
        self.actor = Actor(hs, self.action_dim, config.activation)
        self.distributional = bool(config.distributional)
        atoms = int(config.num_atoms) if self.distributional else 1
        self.critic = DoubleQ(hs, config.activation, atoms)
        self.support = jnp.linspace(config.v_min, config.v_max, atoms, dtype=jnp.float32)
        self.actor_tx = clipped_adam(config.max_grad_norm)
        self.critic_tx = clipped_adam(config.max_grad_norm)

    def init(self, key: jax.Array) -> PQLState:
        ka, kc = jax.random.split(key)
        obs = jnp.zeros((1, *self.obs_shape), jnp.float32)
        act = jnp.zeros((1, self.action_dim), jnp.float32)
        critic = self.critic.init(kc, obs, act)
        params = {"actor": self.actor.init(ka, obs), "critic": critic, "critic_target": critic}
        hparams = {k: jnp.float32(getattr(self.config, k)) for k in TRACED_HPARAMS}
        zero = jnp.int32(0)
        return PQLState(
            params,
            self.actor_tx.init(params["actor"]),
            self.critic_tx.init(params["critic"]),
            hparams,
            zero,
            zero,
            zero,
        )

    def to_env(self, unit: jax.Array) -> jax.Array:
        """Unit actions ``[B, d]`` in [-1, 1] -> env actions ``[B, *action_shape]``."""
        a = self.low + (unit + 1.0) * 0.5 * (self.high - self.low)
        return a.reshape((unit.shape[0], *self.action_shape))

    def act(self, state: PQLState, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, dict]:
        """Actor mean plus per-env Gaussian noise (mixed exploration), clipped to [-1, 1];
        uniform random actions during the first ``warmup_updates`` trainer updates."""
        cfg = self.config
        b = obs.shape[0]
        mean = self.actor.apply(state.params["actor"], obs)
        k_noise, k_rand = jax.random.split(key)
        std = exploration_stds(b, cfg.sigma_min, cfg.sigma_max)[:, None]
        noisy = jnp.clip(mean + std * jax.random.normal(k_noise, mean.shape), -1.0, 1.0)
        rand = jax.random.uniform(k_rand, mean.shape, minval=-1.0, maxval=1.0)
        unit = jnp.where(state.update < cfg.warmup_updates, rand, noisy)
        return self.to_env(unit), {"unit_action": unit}

    def act_greedy(self, state: PQLState, obs: jax.Array) -> jax.Array:
        return self.to_env(self.actor.apply(state.params["actor"], obs))

    # --- learners -----------------------------------------------------------------------
    def critic_loss(self, critic_params: Any, state: PQLState, batch: CriticBatch, key: jax.Array):
        cfg = self.config
        next_a = self.actor.apply(state.params["actor"], batch.next_obs)
        noise = jnp.clip(
            cfg.target_noise * jax.random.normal(key, next_a.shape),
            -cfg.target_noise_clip,
            cfg.target_noise_clip,
        )
        next_a = jnp.clip(next_a + noise, -1.0, 1.0)
        tq1, tq2 = self.critic.apply(state.params["critic_target"], batch.next_obs, next_a)
        q1, q2 = self.critic.apply(critic_params, batch.obs, batch.action)
        if self.distributional:
            # Clipped double-Q on distributions: per sample, the target head whose mean is
            # lower; both heads are trained by cross-entropy to its projected distribution.
            p1, p2 = jax.nn.softmax(tq1), jax.nn.softmax(tq2)
            lower = (p1 @ self.support) <= (p2 @ self.support)
            p_next = jnp.where(lower[:, None], p1, p2)
            target = categorical_projection(p_next, batch.reward, batch.discount, self.support)
            target = jax.lax.stop_gradient(target)
            ce = lambda logits: -jnp.mean(jnp.sum(target * jax.nn.log_softmax(logits), -1))  # noqa: E731
            return ce(q1) + ce(q2), jnp.mean(jax.nn.softmax(q1) @ self.support)
        target = batch.reward + batch.discount * jnp.minimum(tq1, tq2)
        target = jax.lax.stop_gradient(target)
        loss = 0.5 * (jnp.mean(jnp.square(q1 - target)) + jnp.mean(jnp.square(q2 - target)))
        return loss, jnp.mean(q1)

    def critic_update(
        self, state: PQLState, batch: CriticBatch, key: jax.Array
    ) -> tuple[PQLState, dict]:
        """One critic (V-learner) step and the Polyak update of the target critic."""
        (loss, q), grads = jax.value_and_grad(self.critic_loss, has_aux=True)(
            state.params["critic"], state, batch, key
        )
        critic, opt = apply_gradient(
            self.critic_tx,
            state.params["critic"],
            state.critic_opt,
            grads,
            state.hparams["critic_lr"],
        )
        target = optax.incremental_update(
            critic, state.params["critic_target"], state.hparams["tau"]
        )
        params = {**state.params, "critic": critic, "critic_target": target}
        metrics = {"critic_loss": loss, "critic_grad_norm": optax.global_norm(grads), "q": q}
        return state.replace(
            params=params, critic_opt=opt, critic_updates=state.critic_updates + 1
        ), metrics

    def actor_loss(self, actor_params: Any, state: PQLState, obs: jax.Array) -> jax.Array:
        a = self.actor.apply(actor_params, obs)
        q1, _ = self.critic.apply(state.params["critic"], obs, a)
        if self.distributional:
            q1 = jax.nn.softmax(q1) @ self.support
        return -jnp.mean(q1)

    def actor_update(self, state: PQLState, obs: jax.Array) -> tuple[PQLState, dict]:
        """One actor (P-learner) step: maximize Q1(s, actor(s)) on buffer observations."""
        loss, grads = jax.value_and_grad(self.actor_loss)(state.params["actor"], state, obs)
        actor, opt = apply_gradient(
            self.actor_tx, state.params["actor"], state.actor_opt, grads, state.hparams["actor_lr"]
        )
        metrics = {"actor_loss": loss, "actor_grad_norm": optax.global_norm(grads)}
        return state.replace(
            params={**state.params, "actor": actor},
            actor_opt=opt,
            actor_updates=state.actor_updates + 1,
        ), metrics


def make_agent(config: PQLConfig, obs_shape: tuple[int, ...], action_space: Any) -> PQLAgent:
    return PQLAgent(config, obs_shape, action_space)

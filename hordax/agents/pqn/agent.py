"""PQN as an agent: epsilon-greedy acting and minibatch-epoch Q(lambda) regression.

No replay buffer and no target network: the targets are computed by the trainer from the
rollout it just collected (:func:`hordax.training.core.estimators.compute_q_lambda`), and
LayerNorm in the Q-network keeps the online bootstrapping stable.
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
from hordax.agents.pqn.config import PQNConfig
from hordax.agents.sgd import (
    annealed_learning_rate,
    apply_gradient,
    clipped_adam,
    minibatch_epochs,
)

#: Hyperparameters held in the agent state (``f32[]``), so populations may vary them.
TRACED_HPARAMS = ("learning_rate", "q_lambda", "epsilon_finish")


class QNetwork(nn.Module):
    """``obs [B, ...] -> Q [B, n_actions]``: (Dense -> LayerNorm -> act) x L -> Dense."""

    hidden_sizes: Sequence[int]
    num_actions: int
    activation: str = "relu"
    layer_norm: bool = True

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = obs.reshape((obs.shape[0], -1)).astype(jnp.float32)
        act = ACTIVATIONS[self.activation]
        for width in self.hidden_sizes:
            x = nn.Dense(width, kernel_init=nn.initializers.orthogonal(np.sqrt(2)))(x)
            if self.layer_norm:
                x = nn.LayerNorm()(x)
            x = act(x)
        return nn.Dense(self.num_actions, kernel_init=nn.initializers.orthogonal(1.0))(x)


@struct.dataclass
class PQNState:
    """``params``: Q-network; ``opt_state``: clip + Adam; ``hparams``: traced scalars;
    ``step``: optimizer steps; ``update``: trainer updates done (drives epsilon)."""

    params: Any
    opt_state: Any
    hparams: dict
    step: jax.Array
    update: jax.Array


@struct.dataclass
class PQNBatch:
    obs: jax.Array  # [N, *obs_shape]
    action: jax.Array  # [N] int32
    target: jax.Array  # [N] Q(lambda) target


class PQNAgent:
    """PQN for a ``Discrete`` action space.

    Args:
        config: hyperparameters.
        obs_shape: single observation shape.
        action_space: gymnax ``Discrete``.
        num_updates: trainer updates in the run (epsilon and learning-rate schedules).
    """

    def __init__(
        self, config: PQNConfig, obs_shape: tuple[int, ...], action_space: Any, num_updates: int
    ):
        if not isinstance(action_space, spaces.Discrete):
            raise ValueError(
                f"agent=pqn needs a Discrete action space, got {action_space!r} "
                "(use agent=pql for continuous actions)"
            )
        self.config = config
        self.obs_shape = tuple(obs_shape)
        self.num_actions = int(action_space.n)
        net = config.network
        self.q = QNetwork(tuple(net.hidden_sizes), self.num_actions, net.activation, net.layer_norm)
        self.num_updates = max(1, int(num_updates))
        self.total_steps = max(1, self.num_updates * config.num_epochs * config.num_minibatches)
        self.optimizer = clipped_adam(config.max_grad_norm)

    def init(self, key: jax.Array) -> PQNState:
        params = self.q.init(key, jnp.zeros((1, *self.obs_shape), jnp.float32))
        hparams = {k: jnp.float32(getattr(self.config, k)) for k in TRACED_HPARAMS}
        return PQNState(params, self.optimizer.init(params), hparams, jnp.int32(0), jnp.int32(0))

    def epsilon(self, state: PQNState) -> jax.Array:
        """Linear decay from epsilon_start to epsilon_finish over epsilon_decay of the run."""
        cfg = self.config
        decay_updates = max(1.0, cfg.epsilon_decay * self.num_updates)
        frac = jnp.clip(state.update.astype(jnp.float32) / decay_updates, 0.0, 1.0)
        finish = state.hparams["epsilon_finish"]
        return cfg.epsilon_start + frac * (finish - cfg.epsilon_start)

    def learning_rate(self, state: PQNState) -> jax.Array:
        return annealed_learning_rate(
            state.hparams["learning_rate"], state.step, self.total_steps, self.config.anneal_lr
        )

    def q_values(self, state: PQNState, obs: jax.Array) -> jax.Array:
        return self.q.apply(state.params, obs)

    def act(self, state: PQNState, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, dict]:
        """Epsilon-greedy actions ``i32[B]`` (one epsilon for the whole batch)."""
        greedy = self.act_greedy(state, obs)
        key_explore, key_action = jax.random.split(key)
        b = greedy.shape[0]
        random_action = jax.random.randint(key_action, (b,), 0, self.num_actions)
        explore = jax.random.uniform(key_explore, (b,)) < self.epsilon(state)
        return jnp.where(explore, random_action, greedy).astype(jnp.int32), {}

    def act_greedy(self, state: PQNState, obs: jax.Array) -> jax.Array:
        return jnp.argmax(self.q_values(state, obs), axis=-1).astype(jnp.int32)

    def _loss(self, params: Any, mb: PQNBatch) -> jax.Array:
        q = self.q.apply(params, mb.obs)
        q_taken = jnp.take_along_axis(q, mb.action[:, None], axis=-1)[:, 0]
        return 0.5 * jnp.mean(jnp.square(q_taken - jax.lax.stop_gradient(mb.target)))

    def update(self, state: PQNState, batch: PQNBatch, key: jax.Array) -> tuple[PQNState, dict]:
        """``num_epochs`` passes of ``num_minibatches`` shuffled minibatches over ``batch``."""
        cfg = self.config

        def minibatch_step(st: PQNState, mb: PQNBatch):
            loss, grads = jax.value_and_grad(self._loss)(st.params, mb)
            params, opt_state = apply_gradient(
                self.optimizer, st.params, st.opt_state, grads, self.learning_rate(st)
            )
            metrics = {"loss": loss, "grad_norm": optax.global_norm(grads)}
            return st.replace(params=params, opt_state=opt_state, step=st.step + 1), metrics

        eps = self.epsilon(state)
        state, metrics = minibatch_epochs(
            state,
            batch,
            key,
            num_epochs=cfg.num_epochs,
            num_minibatches=cfg.num_minibatches,
            num_rows=batch.target.shape[0],
            step=minibatch_step,
        )
        metrics["epsilon"] = eps
        return state.replace(update=state.update + 1), metrics


def make_agent(
    config: PQNConfig, obs_shape: tuple[int, ...], action_space: Any, num_updates: int
) -> PQNAgent:
    return PQNAgent(config, obs_shape, action_space, num_updates)

"""PPO as an :class:`~hordax.agents.types.Agent`: act, value and the minibatch-epoch update."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct
from gymnax.environments import spaces

from hordax.agents import distributions as dist
from hordax.agents.networks import (
    ActorCriticHead,
    PolicyHead,
    RecurrentActorCriticHead,
    RecurrentPolicyHead,
    RecurrentValueHead,
    ValueHead,
)
from hordax.agents.ppo.config import RECURRENT_CRITIC_OBS_RULE, PPOConfig
from hordax.agents.ppo.losses import policy_loss, value_loss, weighted_mean
from hordax.agents.sgd import (
    ACTIVE_ROWS,
    annealed_learning_rate,
    apply_gradient,
    clipped_adam,
    minibatch_epochs,
    split_minibatches,
)

#: Hyperparameters that live in the agent state (``f32[]`` each), so that a population can
#: ``vmap`` over them (different values per member); the rest of :class:`PPOConfig` is static.
TRACED_HPARAMS = ("learning_rate", "ent_coef", "vf_coef", "clip_eps", "gae_lambda")


@struct.dataclass
class PPOState:
    """Agent state.

    ``params = {"actor": ..., "critic": ...}`` (``{"actor_critic": ...}`` with
    ``network.shared_torso``); ``opt_state``: gradient clipping and Adam's
    moments; ``hparams``: :data:`TRACED_HPARAMS` as ``f32[]`` scalars; ``step``: ``i32[]``
    optimizer steps taken (drives learning-rate annealing).
    """

    params: Any
    opt_state: Any
    hparams: dict
    step: jax.Array


@struct.dataclass
class PPOBatch:
    """One rollout flattened to ``N = rollout_length * num_envs`` rows."""

    obs: jax.Array  # [N, *obs_shape]
    action: jax.Array  # [N] int32 or [N, d] float32 (unclipped sample)
    log_prob: jax.Array  # [N] behaviour log-probability
    value: jax.Array  # [N] behaviour value V(obs)
    advantage: jax.Array  # [N] GAE advantage
    target: jax.Array  # [N] value target = advantage + value
    # Multi-agent: bool[N], the row's agent was active when it acted (rows with False add
    # nothing to the losses, the advantage normalization or the diagnostics). None: all.
    mask: jax.Array | None = None


#: The per-row fields both batch kinds share.
_SEQ_FIELDS = ("obs", "action", "log_prob", "value", "advantage", "target")


@struct.dataclass
class RecurrentPPOBatch:
    """One rollout as sequences ``[T, B]`` (a recurrent agent's minibatches split envs)."""

    obs: jax.Array  # [T, B, *obs_shape]
    action: jax.Array  # [T, B] or [T, B, d]
    log_prob: jax.Array  # [T, B]
    value: jax.Array  # [T, B]
    advantage: jax.Array  # [T, B]
    target: jax.Array  # [T, B]
    reset: jax.Array  # bool [T, B]: the step starts an episode (zero the GRU carry first)
    carry0: dict  # {"actor": [B, H], "critic": [B, H]} (shared: {"actor_critic": [B, H]})


def actor_input(obs: Any) -> jax.Array:
    """The actor's observation: ``obs``, or ``obs["actor"]`` of an ``{"actor", "critic"}``
    pair (``VecEnv(critic_obs=True)``)."""
    return obs["actor"] if isinstance(obs, dict) else obs


def critic_input(obs: Any) -> jax.Array:
    """The critic's observation: ``obs``, or ``obs["critic"]`` of a pair (the env's
    ``critic_observation``: asymmetric actor-critic, MAPPO's centralized critic)."""
    return obs["critic"] if isinstance(obs, dict) else obs


class PPOAgent:
    """PPO for ``Discrete`` or ``Box`` action spaces: one actor and one critic network, or
    one network with a policy and a value output (``network.shared_torso``).

    Observations are arrays, or ``{"actor": ..., "critic": ...}`` pairs: the actor reads
    ``"actor"``, the critic ``"critic"`` (``obs_shape`` is then the dict of both shapes).

    Args:
        config: hyperparameters.
        obs_shape: single observation shape (a dict of two for pairs).
        action_space: gymnax ``Discrete`` or ``Box`` space.
        num_updates: rollouts in the whole run (sets the learning-rate schedule).
    """

    def __init__(
        self, config: PPOConfig, obs_shape: tuple[int, ...], action_space: Any, num_updates: int
    ):
        self.config = config
        self.obs_shape = (
            {k: tuple(v) for k, v in obs_shape.items()}
            if isinstance(obs_shape, dict)
            else tuple(obs_shape)
        )
        if isinstance(action_space, spaces.Discrete):
            self.continuous, self.action_dim = False, int(action_space.n)
        elif isinstance(action_space, spaces.Box):
            self.continuous, self.action_dim = True, int(np.prod(action_space.shape))
            self.action_shape = tuple(action_space.shape)
            # f32[n]: the flat action bounds (the bound loss's)
            bound = lambda b: np.broadcast_to(  # noqa: E731
                np.asarray(b, np.float32), self.action_shape
            ).reshape(-1)
            self.action_low, self.action_high = bound(action_space.low), bound(action_space.high)
        else:
            raise TypeError(f"PPO supports Discrete and Box action spaces, got {action_space!r}")
        torso = config.network.torso
        shapes = self.obs_shape.values() if isinstance(self.obs_shape, dict) else [self.obs_shape]
        if torso in ("cnn", "grid") and any(len(s) not in (2, 3) for s in shapes):
            # else a convolution's broadcasting error deep inside flax
            shape = next(s for s in shapes if len(s) not in (2, 3))
            raise ValueError(
                f"agent.network.torso={torso!r}: needs image observations [H, W] or "
                f"[H, W, C], the env's have shape {shape}; use agent.network.torso='mlp'"
            )
        self.recurrent = int(config.network.rnn_size) > 0
        self.shared = bool(config.network.shared_torso)
        if self.shared and isinstance(self.obs_shape, dict):
            # One torso cannot read two observations: the critic's would be ignored.
            raise ValueError(
                "agent.network.shared_torso=true: not available with critic observations "
                "(agent.critic_obs / mappo); allowed: false"
            )
        if self.recurrent and isinstance(self.obs_shape, dict):
            # The recurrent heads unroll one observation sequence (else KeyError at init).
            rnn_size = int(config.network.rnn_size)
            raise ValueError(f"agent.network.rnn_size={rnn_size}: {RECURRENT_CRITIC_OBS_RULE}")
        net, n, cont = config.network, self.action_dim, self.continuous
        if self.shared:
            head = RecurrentActorCriticHead if self.recurrent else ActorCriticHead
            self.networks = {"actor_critic": head(net, n, cont)}
        elif self.recurrent:
            self.networks = {
                "actor": RecurrentPolicyHead(net, n, cont),
                "critic": RecurrentValueHead(net),
            }
        else:
            self.networks = {"actor": PolicyHead(net, n, cont), "critic": ValueHead(net)}
        self.total_steps = max(1, num_updates * config.num_epochs * config.num_minibatches)
        # Adam without its learning rate: the (traced, per-member) rate is applied in
        # ``update`` so that a population can vmap over it.
        self.optimizer = clipped_adam(config.max_grad_norm, eps=1e-5)

    def learning_rate(self, state: PPOState) -> jax.Array:
        """The step size of the next optimizer step (``f32[]``): linear decay to 0 if annealed."""
        return annealed_learning_rate(
            state.hparams["learning_rate"], state.step, self.total_steps, self.config.anneal_lr
        )

    # --- acting -------------------------------------------------------------------------
    def init(self, key: jax.Array) -> PPOState:
        dummy = jax.tree.map(
            lambda s: jnp.zeros((1, *s), jnp.float32),
            self.obs_shape,
            is_leaf=lambda x: isinstance(x, tuple),
        )
        keys = dict(zip(self.networks, jax.random.split(key, len(self.networks)), strict=True))
        if self.recurrent:
            seq, reset, carry = dummy[None], jnp.zeros((1, 1), bool), self.initial_carry(1)
            params = {k: m.init(keys[k], seq, reset, carry[k]) for k, m in self.networks.items()}
        else:
            inputs = {"actor_critic": actor_input(dummy), "actor": actor_input(dummy)}
            inputs["critic"] = critic_input(dummy)
            params = {k: m.init(keys[k], inputs[k]) for k, m in self.networks.items()}
        hparams = {k: jnp.float32(getattr(self.config, k)) for k in TRACED_HPARAMS}
        return PPOState(params, self.optimizer.init(params), hparams, jnp.int32(0))

    def _dist(self, params: Any, obs: Any) -> tuple[jax.Array, jax.Array | None]:
        """The policy output ``(logits or mean [B, n], log_std)`` on ``obs [B, ...]``."""
        if self.shared:
            return self.networks["actor_critic"].apply(params["actor_critic"], actor_input(obs))[0]
        return self.networks["actor"].apply(params["actor"], actor_input(obs))

    def _dist_value(self, params: Any, obs: Any) -> tuple[tuple, jax.Array]:
        """``((out, log_std), value [B])`` on ``obs [B, ...]``: one torso pass when shared."""
        if self.shared:
            return self.networks["actor_critic"].apply(params["actor_critic"], actor_input(obs))
        value = self.networks["critic"].apply(params["critic"], critic_input(obs))
        return self._dist(params, obs), value

    def _log_prob_entropy(self, out: jax.Array, log_std: Any, action: jax.Array):
        """Log-probability and entropy ``[N]`` of ``action`` under ``(out [N, n], log_std)``."""
        if self.continuous:
            flat = action.reshape((action.shape[0], -1))
            return dist.gaussian_log_prob(out, log_std, flat), dist.gaussian_entropy(out, log_std)
        return dist.categorical_log_prob(out, action), dist.categorical_entropy(out)

    def _sample(self, out: jax.Array, log_std: Any, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        """``(action [B, ...], log_prob [B])`` sampled from ``(out [B, n], log_std)``."""
        if self.continuous:
            flat = dist.gaussian_sample(key, out, log_std)
            log_prob = dist.gaussian_log_prob(out, log_std, flat)
            return flat.reshape((out.shape[0], *self.action_shape)), log_prob
        action = dist.categorical_sample(key, out)
        return action, dist.categorical_log_prob(out, action)

    def _mode(self, out: jax.Array) -> jax.Array:
        if self.continuous:
            return out.reshape((out.shape[0], *self.action_shape))
        return dist.categorical_mode(out)

    def act(self, state: PPOState, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, dict]:
        (out, log_std), value = self._dist_value(state.params, obs)
        action, log_prob = self._sample(out, log_std, key)
        return action, {"log_prob": log_prob, "value": value}

    def act_greedy(self, state: PPOState, obs: jax.Array) -> jax.Array:
        return self._mode(self._dist(state.params, obs)[0])

    def log_prob(self, state: PPOState, obs: jax.Array, action: jax.Array) -> jax.Array:
        """``log pi(action | obs)`` ``[B]`` (feed-forward agents)."""
        out, log_std = self._dist(state.params, obs)
        return self._log_prob_entropy(out, log_std, action)[0]

    def value(self, state: PPOState, obs: Any) -> jax.Array:
        """``V(obs)`` ``[B]`` (the critic reads ``obs["critic"]`` of a pair)."""
        if self.shared:
            return self._dist_value(state.params, obs)[1]
        return self.networks["critic"].apply(state.params["critic"], critic_input(obs))

    # --- recurrent acting (network.rnn_size > 0) -----------------------------------------
    def initial_carry(self, batch_size: int) -> dict[str, jax.Array]:
        """Zero GRU carries ``f32[B, H]``, one per network: ``{"actor", "critic"}`` (or
        ``{"actor_critic"}`` when shared)."""
        h = jnp.zeros((batch_size, int(self.config.network.rnn_size)), jnp.float32)
        return {k: h for k in self.networks}

    def _unroll(self, params: Any, obs: jax.Array, reset: jax.Array, carry: dict):
        """The recurrent networks over ``obs [T, B, ...]`` from ``carry`` (zeroed where
        ``reset [T, B]``) -> ``((out [T, B, n], log_std), value [T, B], carry)``."""
        if self.shared:
            dist_out, value, c = self.networks["actor_critic"].apply(
                params["actor_critic"], obs, reset, carry["actor_critic"]
            )
            return dist_out, value, {"actor_critic": c}
        dist_out, c_actor = self.networks["actor"].apply(
            params["actor"], obs, reset, carry["actor"]
        )
        value, c_critic = self.networks["critic"].apply(
            params["critic"], obs, reset, carry["critic"]
        )
        return dist_out, value, {"actor": c_actor, "critic": c_critic}

    def act_recurrent(
        self, state: PPOState, obs: jax.Array, key: jax.Array, carry: dict, reset: jax.Array
    ) -> tuple[jax.Array, dict, dict]:
        """One step: ``obs [B, ...]``, ``reset bool[B]`` (the step starts an episode: carries
        are zeroed first) -> ``(action, extras {log_prob, value}, carry after obs)``."""
        (out, log_std), value, carry = self._unroll(state.params, obs[None], reset[None], carry)
        action, log_prob = self._sample(out[0], log_std, key)
        return action, {"log_prob": log_prob, "value": value[0]}, carry

    def value_recurrent(self, state: PPOState, obs: jax.Array, carry: dict) -> jax.Array:
        """``V(obs) [B]`` continuing the critic's ``carry`` (no reset): the value of the true
        next observation, for bootstrapping through truncation."""
        no_reset = jnp.zeros((1, obs.shape[0]), bool)
        if self.shared:
            return self._unroll(state.params, obs[None], no_reset, carry)[1][0]
        return self.networks["critic"].apply(
            state.params["critic"], obs[None], no_reset, carry["critic"]
        )[0][0]

    def act_greedy_recurrent(
        self, state: PPOState, obs: jax.Array, carry: dict, reset: jax.Array
    ) -> tuple[jax.Array, dict]:
        if self.shared:
            (out, _), _, carry = self._unroll(state.params, obs[None], reset[None], carry)
            return self._mode(out[0]), carry
        (out, _), c_actor = self.networks["actor"].apply(
            state.params["actor"], obs[None], reset[None], carry["actor"]
        )
        return self._mode(out[0]), {**carry, "actor": c_actor}

    # --- learning -----------------------------------------------------------------------
    def _forward(self, params: Any, mb: Any) -> tuple[jax.Array, ...]:
        """``(log_prob, entropy, value, mb flattened to rows, out [N, n])`` of a minibatch
        (``out``: the distribution's logits or Gaussian means); a recurrent minibatch
        ``[T, b]`` is unrolled from its ``carry0`` with its resets."""
        if not self.recurrent:
            (out, log_std), value = self._dist_value(params, mb.obs)
            return (*self._log_prob_entropy(out, log_std, mb.action), value, mb, out)
        (out, log_std), value, _ = self._unroll(params, mb.obs, mb.reset, mb.carry0)
        T, b = mb.reset.shape
        rows = lambda x: x.reshape((T * b, *x.shape[2:]))  # noqa: E731
        flat = PPOBatch(*(rows(getattr(mb, f)) for f in _SEQ_FIELDS))
        out = rows(out)
        return (*self._log_prob_entropy(out, log_std, flat.action), rows(value), flat, out)

    def _loss(self, params: Any, hp: dict, mb: Any) -> tuple[jax.Array, dict]:
        cfg = self.config
        log_prob, entropy, value, mb, out = self._forward(params, mb)
        adv, w = mb.advantage, mb.mask
        if cfg.normalize_advantages and w is None:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        elif cfg.normalize_advantages:  # over the minibatch's active rows only
            mean = weighted_mean(adv, w)
            std = jnp.sqrt(weighted_mean(jnp.square(adv - mean), w))
            adv = (adv - mean) / (std + 1e-8)
        pi_loss, diag = policy_loss(log_prob, mb.log_prob, adv, hp["clip_eps"], w)
        v_loss = value_loss(value, mb.value, mb.target, hp["clip_eps"], cfg.clip_value, w)
        ent = weighted_mean(entropy, w)
        total = pi_loss + hp["vf_coef"] * v_loss - hp["ent_coef"] * ent
        if self.continuous and cfg.bounds_loss_coef > 0:  # static: off adds no term at all
            excess = jax.nn.relu(out - self.action_high) + jax.nn.relu(self.action_low - out)
            bounds = weighted_mean(jnp.sum(jnp.square(excess), axis=-1), w)
            total = total + cfg.bounds_loss_coef * bounds
            diag = {**diag, "bounds_loss": bounds}
        return total, {"policy_loss": pi_loss, "value_loss": v_loss, "entropy": ent, **diag}

    def update(self, state: PPOState, batch: PPOBatch, key: jax.Array) -> tuple[PPOState, dict]:
        """``num_epochs`` passes of ``num_minibatches`` shuffled minibatches over ``batch``."""
        cfg = self.config
        # Feed-forward: shuffle rows. Recurrent: shuffle envs, keep each env's sequence.
        n = batch.advantage.shape[1 if self.recurrent else 0]

        def minibatch_step(st: PPOState, mb: PPOBatch):
            (loss, metrics), grads = jax.value_and_grad(self._loss, has_aux=True)(
                st.params, st.hparams, mb
            )
            params, opt_state = apply_gradient(
                self.optimizer, st.params, st.opt_state, grads, self.learning_rate(st)
            )
            metrics = {**metrics, "loss": loss, "grad_norm": optax.global_norm(grads)}
            mask = getattr(mb, "mask", None)  # recurrent batches have none
            if mask is not None:  # weight each minibatch's figures by its active rows
                metrics[ACTIVE_ROWS] = jnp.sum(mask > 0).astype(jnp.float32)
            return st.replace(params=params, opt_state=opt_state, step=st.step + 1), metrics

        def recurrent_minibatches(b: RecurrentPPOBatch, perm: jax.Array) -> RecurrentPPOBatch:
            # [T, B] leaves split on B, carries [B, H] on B.
            m = cfg.num_minibatches
            return b.replace(
                **{f: split_minibatches(getattr(b, f), perm, m, 1) for f in _SEQ_FIELDS},
                reset=split_minibatches(b.reset, perm, m, 1),
                carry0=jax.tree.map(lambda c: split_minibatches(c, perm, m), b.carry0),
            )

        return minibatch_epochs(
            state,
            batch,
            key,
            num_epochs=cfg.num_epochs,
            num_minibatches=cfg.num_minibatches,
            num_rows=n,
            step=minibatch_step,
            minibatches=recurrent_minibatches if self.recurrent else None,
        )


def make_agent(
    config: PPOConfig, obs_shape: tuple[int, ...], action_space: Any, num_updates: int
) -> PPOAgent:
    """Build a PPO agent (see :class:`PPOAgent`)."""
    return PPOAgent(config, obs_shape, action_space, num_updates)

"""The PPO trainer: ``train(key)`` is one jit of nested scans.

    update = rollout scan -> V(true next states) -> GAE -> agent.update (epochs x minibatches)
    train(key) = lax.scan(update, init(key), length=num_updates)

The host may instead call ``run_chunk`` repeatedly (same result) to show progress, log and
checkpoint between chunks (``hordax.training.host.loop``).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from hordax.agents.ppo import (
    TRACED_HPARAMS,
    PPOBatch,
    PPOConfig,
    PPOState,
    RecurrentPPOBatch,
    make_agent,
    validate_ppo,
)
from hordax.training.config import TrainerConfig, resolve
from hordax.training.core.estimators import bootstrap_values, compute_gae
from hordax.training.core.metrics import episode_metrics, finiteness
from hordax.training.core.rollout import recurrent_rollout, rollout
from hordax.training.core.trainer import UpdateLoop
from hordax.training.core.types import Algorithm, Resolved, TrainState
from hordax.validation import need


class PPOTrainer(UpdateLoop):
    """PPO on a (single-agent) environment (multi-agent PPO: see ``docs/training.md``).

    Args:
        trainer_cfg: batch and budget sizes.
        agent_cfg: PPO hyperparameters.
        env, env_params: the raw environment and its params (wrapped here).
        resolved: derived sizes; computed from ``trainer_cfg`` when omitted.
    """

    name = "PPO"

    def __init__(
        self,
        trainer_cfg: TrainerConfig,
        agent_cfg: Any,
        env: Any,
        env_params: Any,
        resolved: Resolved | None = None,
    ):
        resolved = resolved or resolve(trainer_cfg)
        super().__init__(trainer_cfg, agent_cfg, env, env_params, resolved)
        self.agent = make_agent(agent_cfg, self.obs_shape, self.action_space, resolved.num_updates)

    def init(self, key: jax.Array) -> TrainState:
        key, key_agent, key_env = jax.random.split(key, 3)
        obs, env_state = self.env.reset(key_env, self.env_params)
        state = TrainState(self.agent.init(key_agent), env_state, obs, key, jnp.int32(0))
        if self.agent.recurrent:
            n = self.cfg.num_envs
            state = state.replace(carry=self.agent.initial_carry(n), reset=jnp.ones((n,), bool))
        return state

    def update(self, state: TrainState) -> tuple[TrainState, dict]:
        """One rollout and one PPO update."""
        cfg, acfg, agent = self.cfg, self.agent_cfg, self.agent
        key, key_rollout, key_update = jax.random.split(state.key, 3)
        carry, reset = state.carry, state.reset
        if agent.recurrent:
            env_state, obs, carry, reset, tr = recurrent_rollout(
                self.env, self.env_params, agent, state.agent, state.env_state, state.obs,
                carry, reset, key_rollout, cfg.rollout_length,
            )  # fmt: skip
            next_value = tr.extras["next_value"]
        else:
            env_state, obs, tr = rollout(
                self.env, self.env_params, agent, state.agent, state.env_state, state.obs,
                key_rollout, cfg.rollout_length,
            )  # fmt: skip
        T, B = tr.reward.shape
        flat = lambda x: x.reshape((T * B, *x.shape[2:]))  # noqa: E731
        if not agent.recurrent:
            next_value = bootstrap_values(
                lambda o: agent.value(state.agent, o), tr.extras["value"], tr.next_obs, obs,
                tr.truncated,
            )  # fmt: skip
        advantage, target = compute_gae(
            tr.reward,
            tr.extras["value"],
            next_value,
            tr.terminated,
            tr.truncated,
            acfg.gamma,
            state.agent.hparams["gae_lambda"],
        )
        seq = (tr.obs, tr.action, tr.extras["log_prob"], tr.extras["value"], advantage, target)
        if agent.recurrent:
            batch = RecurrentPPOBatch(*seq, reset=tr.extras["reset"], carry0=state.carry)
        else:
            batch = PPOBatch(*(flat(x) for x in seq))
        agent_state, losses = agent.update(state.agent, batch, key_update)
        metrics = {**losses, **episode_metrics(tr.info), **finiteness(losses, agent_state)}
        new_state = TrainState(agent_state, env_state, obs, key, state.update_idx + 1, carry, reset)
        return new_state, metrics


def make_train(trainer_cfg: TrainerConfig, agent_cfg: Any, env: Any, env_params: Any):
    """``train(key) -> (final TrainState, metrics [num_updates])`` (PureJaxRL shape)."""
    return PPOTrainer(trainer_cfg, agent_cfg, env, env_params).train


def validate(agent_cfg: PPOConfig, trainer_cfg: TrainerConfig) -> None:
    """PPO's checks, with the batch it will get (``ValueError`` naming ``agent.<key>``)."""
    validate_ppo(agent_cfg, batch_size=trainer_cfg.num_envs * trainer_cfg.rollout_length)
    if int(agent_cfg.network.rnn_size):  # recurrent PPO: minibatches are whole env sequences
        need(
            trainer_cfg.num_envs % agent_cfg.num_minibatches == 0,
            "agent.num_minibatches",
            agent_cfg.num_minibatches,
            f"must divide trainer.num_envs = {trainer_cfg.num_envs} with a recurrent network "
            "(minibatches are whole env sequences)",
        )


def check_member(agent_cfg: PPOConfig) -> None:
    """Ensembles combine greedy actions of feed-forward members only."""
    rnn_size = int(agent_cfg.network.rnn_size)
    need(
        rnn_size == 0,
        "agent.network.rnn_size",
        rnn_size,
        "agent=ensemble combines feed-forward PPO members only (rnn_size=0)",
    )


ALGORITHM = Algorithm(
    name="ppo",
    config=PPOConfig,
    validate=validate,
    traced_hparams=TRACED_HPARAMS,
    make_agent=make_agent,
    inference_state=lambda params: PPOState(params, None, {}, jnp.int32(0)),
    trainer=PPOTrainer,
    action_space="any",
    check_member=check_member,
)

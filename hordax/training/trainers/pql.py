"""The PQL trainer, synchronous mode: one jitted schedule that realizes the ratios exactly.

    update = rollout (T steps of B envs, mixed exploration)
             -> n-step transitions (bootstrap through truncation from final_observation,
                none after termination; windows run on into the next rollout: the last
                n - 1 steps wait in the state for it) -> replay buffer (in the train state)
             -> repeat Na = Nc / beta_pv times: beta_pv critic updates, then 1 actor update

with ``Nc = beta_av * T`` critic updates per trainer update (``beta_av`` critic updates
per collection step of all envs) and ``beta_pv`` critic updates per actor update. The
parallel mode (actor, V-learner and P-learner concurrently, ``agent.mode=parallel``) runs
this trainer's math on another schedule: :mod:`hordax.training.host.pql_parallel`.

Observation normalization (``agent.normalize_obs``): the buffer stores RAW observations;
the running statistics (:class:`~hordax.envs.wrappers.RunningStats`, the same code as the
``NormalizeObservation`` wrapper) live in the train state (``OffPolicyState.obs_stats``)
and are merged with every rollout's observations; the actor acts on observations
normalized with the current statistics, and every sampled batch is normalized at sample
time with the statistics current at that update, so no buffer row goes stale
(:mod:`hordax.training.core.normalization`).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from hordax.agents.pql import (
    TRACED_HPARAMS,
    CriticBatch,
    PQLConfig,
    PQLState,
    make_agent,
    validate_pql,
)
from hordax.envs.wrappers import RunningStats
from hordax.training.config import ConfigError, TrainConfig, TrainerConfig
from hordax.training.core import replay
from hordax.training.core.estimators import compute_n_step
from hordax.training.core.metrics import episode_metrics, finiteness
from hordax.training.core.normalization import NormalizedPolicy, normalize, update_stats
from hordax.training.core.rollout import rollout
from hordax.training.core.trainer import UpdateLoop
from hordax.training.core.types import Algorithm, Resolved
from hordax.validation import need


@struct.dataclass
class PendingSteps:
    """The last ``n - 1`` steps of the previous rollout (leaves ``[n - 1, B, ...]``): their
    n-step windows run on into the next rollout, so they become replay rows then."""

    obs: jax.Array
    unit_action: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    next_obs: jax.Array  # final_observation of each step
    valid: jax.Array  # bool[]: False before the first rollout (nothing pending yet)


@struct.dataclass
class OffPolicyState:
    """:class:`~hordax.training.core.types.TrainState` plus the replay buffer and the steps
    whose n-step windows are not complete yet."""

    agent: Any
    env_state: Any
    obs: Any
    key: jax.Array
    update_idx: jax.Array
    buffer: replay.ReplayBuffer
    obs_stats: RunningStats | None = None  # running obs statistics (None: normalize_obs off)
    pending: PendingSteps | None = None


def normalize_batch(batch: CriticBatch, stats: RunningStats | None) -> CriticBatch:
    """A sampled batch with ``obs`` and ``next_obs`` normalized with ``stats``."""
    return batch.replace(obs=normalize(batch.obs, stats), next_obs=normalize(batch.next_obs, stats))


def no_pending_steps(n: int, num_envs: int, obs_shape: tuple, action_dim: int) -> PendingSteps:
    """The pending steps before the first rollout (zeros, ``valid=False``)."""
    m = n - 1
    return PendingSteps(
        obs=jnp.zeros((m, num_envs, *obs_shape), jnp.float32),
        unit_action=jnp.zeros((m, num_envs, action_dim), jnp.float32),
        reward=jnp.zeros((m, num_envs), jnp.float32),
        terminated=jnp.zeros((m, num_envs), bool),
        truncated=jnp.zeros((m, num_envs), bool),
        next_obs=jnp.zeros((m, num_envs, *obs_shape), jnp.float32),
        valid=jnp.bool_(False),
    )


def n_step_transitions(
    tr: Any, pending: PendingSteps, gamma: float, n: int, reward_scale: float = 1.0
) -> tuple[CriticBatch, jax.Array, PendingSteps]:
    """n-step transitions whose windows are whole ``n`` steps (unless an episode ends).

    The ``m = n - 1`` pending steps of the previous rollout are put before this rollout's
    ``T`` steps, and the windows of ``compute_n_step`` are taken over those ``T + m`` steps:
    the first ``T`` of them (the pending steps and this rollout's first ``T - m``) have their
    whole window inside, and become rows; the last ``m`` steps are pending for the next
    rollout. Windows stop at a termination (no bootstrap) or a truncation (bootstrap from
    that step's ``final_observation``), as in one long rollout.

    Args:
        tr: the rollout, ``[T, B]`` leaves (``extras["unit_action"]``: the agent's actions).
        pending: the previous rollout's last ``m`` steps (``valid`` False at the first one).
        gamma, n, reward_scale: discount, window length (``n <= T``), reward factor.

    Returns:
        ``(rows, count, pending)``: ``rows`` flat ``[T * B]``, the valid ones first
        (``count`` of them, ``i32[]``: ``T * B``, or ``(T - m) * B`` at the first rollout,
        whose pending steps are not real), and the steps pending for the next rollout.
    """
    T, B = tr.reward.shape
    m = n - 1
    ext = {  # the pending steps, then this rollout's: [T + m, B, ...]
        "obs": (pending.obs, tr.obs.astype(jnp.float32)),
        "unit_action": (pending.unit_action, tr.extras["unit_action"]),
        "reward": (pending.reward, tr.reward.astype(jnp.float32)),
        "terminated": (pending.terminated, tr.terminated),
        "truncated": (pending.truncated, tr.truncated),
        "next_obs": (pending.next_obs, tr.next_obs.astype(jnp.float32)),
    }
    ext = {k: jnp.concatenate(v, axis=0) for k, v in ext.items()}
    ret, disc, last = compute_n_step(
        ext["reward"] * reward_scale, ext["terminated"], ext["truncated"], gamma, n
    )
    boot = ext["next_obs"][last, jnp.arange(B)[None, :]]  # next_obs at each window's end
    # Rows of steps 0 .. T-1 of ext, this rollout's first (valid at every rollout), then the
    # pending ones (valid from the second rollout on).
    order = jnp.concatenate([jnp.arange(m, T), jnp.arange(0, m)])
    flat = lambda x: x[order].reshape((T * B, *x.shape[2:]))  # noqa: E731
    rows = CriticBatch(
        flat(ext["obs"]), flat(ext["unit_action"]), flat(ret), flat(boot), flat(disc)
    )
    count = jnp.where(pending.valid, T * B, (T - m) * B).astype(jnp.int32)
    after = PendingSteps(**{k: v[T:] for k, v in ext.items()}, valid=jnp.bool_(True))
    return rows, count, after


class PQLTrainer(UpdateLoop):
    """PQL (synchronous schedule) on a single-agent env with a bounded ``Box`` action space.

    With ``agent.mode=parallel`` the host runs it with its parallel driver
    (``driver = "pql_parallel"``, :mod:`hordax.training.host.pql_parallel`).
    """

    name = "PQL"

    def __init__(
        self,
        trainer_cfg: TrainerConfig,
        agent_cfg: Any,
        env: Any,
        env_params: Any,
        resolved: Resolved,
    ):
        # No NormalizeObservation wrapper: the buffer keeps raw observations and the trainer
        # normalizes with the current statistics (see the module docstring).
        super().__init__(trainer_cfg, agent_cfg, env, env_params, resolved, stack_cfg=None)
        self.normalize_obs = bool(agent_cfg.normalize_obs)
        self.agent = make_agent(agent_cfg, self.obs_shape, self.action_space)
        self.critic_updates = round(agent_cfg.beta_av * trainer_cfg.rollout_length)
        self.actor_updates = self.critic_updates // agent_cfg.beta_pv
        self.driver = "pql_parallel" if agent_cfg.mode == "parallel" else "jit"

    def init(self, key: jax.Array) -> OffPolicyState:
        key, key_agent, key_env = jax.random.split(key, 3)
        obs, env_state = self.env.reset(key_env, self.env_params)
        d = self.agent.action_dim
        row = CriticBatch(
            jnp.zeros(self.obs_shape, jnp.float32),
            jnp.zeros((d,), jnp.float32),
            jnp.float32(0),
            jnp.zeros(self.obs_shape, jnp.float32),
            jnp.float32(0),
        )
        buffer = replay.init_buffer(row, self.agent_cfg.buffer_size)
        agent_state = self.agent.init(key_agent)
        stats = None
        if self.normalize_obs:
            stats = RunningStats.create(self.obs_shape).update(obs)
        pending = no_pending_steps(self.agent_cfg.n_step, self.cfg.num_envs, self.obs_shape, d)
        return OffPolicyState(
            agent_state, env_state, obs, key, jnp.int32(0), buffer, stats, pending
        )

    def critic_batch(self, buffer: replay.ReplayBuffer, stats: Any, key: jax.Array):
        """A critic batch sampled from the buffer, normalized with ``stats``."""
        return normalize_batch(replay.sample(buffer, key, self.agent_cfg.batch_size), stats)

    def actor_obs(self, buffer: replay.ReplayBuffer, stats: Any, key: jax.Array):
        """Actor observations sampled from the buffer, normalized with ``stats``."""
        return normalize(replay.sample(buffer, key, self.agent_cfg.batch_size).obs, stats)

    def learn(self, agent_state: Any, buffer: replay.ReplayBuffer, stats: Any, key: jax.Array):
        """The synchronous schedule: ``actor_updates`` x (``beta_pv`` critic, 1 actor);
        batches normalized with ``stats`` (the statistics current at this update)."""
        acfg, agent = self.agent_cfg, self.agent

        def critic_step(st, k):
            k_sample, k_noise = jax.random.split(k)
            return agent.critic_update(st, self.critic_batch(buffer, stats, k_sample), k_noise)

        def group(st, k):
            k_critic, k_actor = jax.random.split(k)
            st, cm = jax.lax.scan(critic_step, st, jax.random.split(k_critic, acfg.beta_pv))
            st, am = agent.actor_update(st, self.actor_obs(buffer, stats, k_actor))
            return st, {**jax.tree.map(jnp.mean, cm), **am}

        st, m = jax.lax.scan(group, agent_state, jax.random.split(key, self.actor_updates))
        return st, jax.tree.map(jnp.mean, m)

    def update(self, state: OffPolicyState) -> tuple[OffPolicyState, dict]:
        acfg = self.agent_cfg
        key, key_rollout, key_learn = jax.random.split(state.key, 3)
        env_state, obs, tr = rollout(
            self.env,
            self.env_params,
            NormalizedPolicy(self.agent, state.obs_stats),
            state.agent,
            state.env_state,
            state.obs,
            key_rollout,
            self.cfg.rollout_length,
        )
        rows, count, pending = n_step_transitions(
            tr, state.pending, acfg.gamma, acfg.n_step, acfg.reward_scale
        )
        buffer = replay.add(state.buffer, rows, count)
        stats = update_stats(state.obs_stats, tr, obs)
        agent_state, losses = self.learn(state.agent, buffer, stats, key_learn)
        agent_state = agent_state.replace(update=agent_state.update + 1)
        both = {
            "loss": losses["critic_loss"] + losses["actor_loss"],
            "grad_norm": losses["critic_grad_norm"] + losses["actor_grad_norm"],
        }
        metrics = {
            **losses,
            **episode_metrics(tr.info),
            "critic_updates": agent_state.critic_updates.astype(jnp.float32),
            "actor_updates": agent_state.actor_updates.astype(jnp.float32),
            "buffer_size": buffer.size.astype(jnp.float32),
            **finiteness(both, agent_state),
        }
        new_state = OffPolicyState(
            agent_state, env_state, obs, key, state.update_idx + 1, buffer, stats, pending
        )
        return new_state, metrics


def validate(agent_cfg: PQLConfig, trainer_cfg: TrainerConfig) -> None:
    validate_pql(agent_cfg, trainer_cfg.num_envs, trainer_cfg.rollout_length)


def validate_run(agent_cfg: PQLConfig, cfg: TrainConfig) -> None:
    """What PQL's parallel mode does not support (it is not one jitted program)."""
    if agent_cfg.mode != "parallel":
        return
    rule = "agent.mode=parallel does not support {}; use agent.mode=sync"
    for ok, key, value, what in (
        (cfg.population.size == 1, "population.size", cfg.population.size,
         "populations (population.size must be 1)"),
        (cfg.checkpoint.every == 0, "checkpoint.every", cfg.checkpoint.every,
         "checkpoints (checkpoint.every must be 0)"),
        (not cfg.resume, "resume", cfg.resume, "resume"),
        (not cfg.distributed, "distributed", cfg.distributed, "multi-host runs"),
        (cfg.eval.every == 0, "eval.every", cfg.eval.every,
         "evaluation between chunks (eval.every must be 0; the end-of-run one runs)"),
    ):  # fmt: skip
        need(ok, key, value, rule.format(what), error=ConfigError)


def check_member(agent_cfg: PQLConfig) -> None:
    """Ensemble members train inside one program: the synchronous schedule."""
    need(
        agent_cfg.mode == "sync",
        "agent.mode",
        repr(agent_cfg.mode),
        "a mixed ensemble trains its PQL members with the synchronous schedule inside its one"
        " program (mode=sync)",
    )


ALGORITHM = Algorithm(
    name="pql",
    config=PQLConfig,
    validate=validate,
    traced_hparams=TRACED_HPARAMS,
    make_agent=lambda cfg, obs_shape, space, num_updates: make_agent(cfg, obs_shape, space),
    inference_state=lambda params: PQLState(
        params, None, None, {}, jnp.int32(0), jnp.int32(0), jnp.int32(0)
    ),
    trainer=PQLTrainer,
    action_space="continuous",
    validate_run=validate_run,
    check_member=check_member,
)

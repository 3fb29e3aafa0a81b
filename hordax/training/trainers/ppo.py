"""The PPO trainer: ``train(key)`` is one jit of nested scans.

    update = rollout scan -> V(true next states) -> GAE -> agent.update (epochs x minibatches)
    train(key) = lax.scan(update, init(key), length=num_updates)

One trainer for single agents and for multi-agent envs (IPPO, MAPPO: ``agent=ippo``,
``agent=mappo``): on a multi-agent env the agent is a
:class:`~hordax.training.core.multi_agent.TeamAgent` (one PPO learner per team, parameters
shared within it) whose observations and outputs carry the agent axis ``[B, n]``; rewards,
values and done flags are per agent (an agent's episode ends at the env's episode end, its
terminal flag is ``info["agent_terminated"]`` or the episode's ``terminated``), GAE runs over
``[T, B, n]`` and each team's rows (``[T * B * n_k]``) are one PPO batch weighted by the
agent mask (the agents active when they acted). With ``agent.critic_obs`` the env stack
delivers ``{"actor", "critic"}`` observation pairs (``VecEnv(critic_obs=True)``) and the
critic reads the env's ``critic_observation``, its truncation bootstrap that of the terminal
state (asymmetric actor-critic; MAPPO = IPPO + this).

The host may instead call ``run_chunk`` repeatedly (same result) to show progress, log and
checkpoint between chunks (``hordax.training.host.loop``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp

from hordax.agents.ppo import (
    TRACED_HPARAMS,
    IPPOConfig,
    MAPPOConfig,
    PPOBatch,
    PPOConfig,
    PPOState,
    RecurrentPPOBatch,
    make_agent,
    validate_ppo,
)
from hordax.envs.core import env_name, has_critic_observation, is_multi_agent
from hordax.training.config import TrainerConfig, resolve, validate_trainer
from hordax.training.core.estimators import bootstrap_values, compute_gae
from hordax.training.core.metrics import episode_metrics, finiteness, team_episode_metrics
from hordax.training.core.multi_agent import TeamAgent, env_teams
from hordax.training.core.rollout import recurrent_rollout, rollout
from hordax.training.core.trainer import UpdateLoop
from hordax.training.core.types import Algorithm, Resolved, TrainState
from hordax.validation import need


class PPOTrainer(UpdateLoop):
    """PPO on a single-agent or multi-agent environment (see the module docstring).

    Args:
        trainer_cfg: batch and budget sizes.
        agent_cfg: PPO hyperparameters.
        env, env_params: the raw environment and its params (wrapped here).
        resolved: derived sizes; computed from ``trainer_cfg`` when omitted.
    """

    name = "PPO"
    multi_agent_ok = True

    def __init__(
        self,
        trainer_cfg: TrainerConfig,
        agent_cfg: Any,
        env: Any,
        env_params: Any,
        resolved: Resolved | None = None,
    ):
        if resolved is None:  # built from Python, not through trainers.validate: check here
            validate_trainer(trainer_cfg)
            validate(agent_cfg, trainer_cfg)
            resolved = resolve(trainer_cfg)
        self.critic_obs = bool(getattr(agent_cfg, "critic_obs", False))
        need(
            not self.critic_obs or has_critic_observation(env),
            "agent.critic_obs",
            self.critic_obs,
            f"{env_name(env)} has no critic_observation "
            "(agent=mappo and critic_obs=true need an env that provides one)",
        )
        super().__init__(trainer_cfg, agent_cfg, env, env_params, resolved)
        self.multi_agent = is_multi_agent(env)
        if self.multi_agent:
            self.agent = make_team_agent(
                agent_cfg, env, env_params, self.critic_obs, trainer_cfg, resolved.num_updates
            )
            return
        for key, value in _multi_agent_settings(agent_cfg).items():
            need(
                False,
                f"agent.{key}",
                value,
                f"a multi-agent setting, and {env_name(env)} "
                "is a single-agent env (leave it unset)",
            )
        obs_shape = agent_obs_shape(agent_cfg, env, env_params)
        self.agent = make_agent(agent_cfg, obs_shape, self.action_space, resolved.num_updates)

    def init(self, key: jax.Array) -> TrainState:
        key, key_agent, key_env = jax.random.split(key, 3)
        obs, env_state = self.env.reset(key_env, self.env_params)
        state = TrainState(self.agent.init(key_agent), env_state, obs, key, jnp.int32(0))
        if self.agent.recurrent:
            n = self.cfg.num_envs
            state = state.replace(carry=self.agent.initial_carry(n), reset=jnp.ones((n,), bool))
        if self.multi_agent:
            state = state.replace(agent_mask=self.env.agent_mask(env_state, self.env_params))
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
        T, B = tr.terminated.shape
        flat = lambda x: jax.tree.map(lambda y: y.reshape((T * B, *y.shape[2:])), x)  # noqa: E731
        value = tr.extras["value"]  # [T, B] ([T, B, n] multi-agent)
        if not agent.recurrent:
            # Bootstrap through truncation: V of the true next state (final_observation
            # where the episode was truncated).
            next_value = bootstrap_values(
                lambda o: agent.value(state.agent, o), value, tr.next_obs, obs, tr.truncated
            )
        terminated, truncated = tr.terminated, tr.truncated
        if self.multi_agent:  # per agent: its own terminal flag, the episode's truncation
            terminated = tr.info["agent_terminated"] | terminated[..., None]
            truncated = jnp.broadcast_to(truncated[..., None], terminated.shape)
        if not acfg.bootstrap_truncation:  # the fixed horizon is the task: no bootstrap
            terminated = terminated | truncated
        advantage, target = compute_gae(
            tr.reward,
            value,
            next_value,
            terminated,
            truncated,
            acfg.gamma,
            state.agent.hparams["gae_lambda"],
        )
        seq = (tr.obs, tr.action, tr.extras["log_prob"], value, advantage, target)
        agent_mask = state.agent_mask
        if self.multi_agent:
            # The agents active when they acted: the state's mask, then each step's.
            next_mask = tr.info["next_agent_mask"]
            mask = jnp.concatenate([state.agent_mask[None], next_mask[:-1]])
            fields = dict(zip(_SEQ, seq, strict=True))
            batch = agent.batches(fields, mask, PPOBatch)
            agent_mask = next_mask[-1]
            episodes = team_episode_metrics(tr.info, agent.teams)
        elif agent.recurrent:
            batch = RecurrentPPOBatch(*seq, reset=tr.extras["reset"], carry0=state.carry)
            episodes = episode_metrics(tr.info)
        else:
            batch = PPOBatch(*(flat(x) for x in seq))
            episodes = episode_metrics(tr.info)
        agent_state, losses = agent.update(state.agent, batch, key_update)
        metrics = {**losses, **episodes, **finiteness(losses, agent_state)}
        new_state = TrainState(
            agent_state, env_state, obs, key, state.update_idx + 1, carry, reset, agent_mask
        )
        return new_state, metrics

    def summary(self, saved: dict, row: dict) -> dict:
        """Per-team final returns (multi-agent envs with several teams)."""
        prefix, suffix = "team/", "/episode_return"
        teams = {k[len(prefix) : -len(suffix)]: v for k, v in row.items()
                 if k.startswith(prefix) and k.endswith(suffix)}  # fmt: skip
        return {"final_team_returns": teams} if teams else {}


_SEQ = ("obs", "action", "log_prob", "value", "advantage", "target")


def _multi_agent_settings(agent_cfg: Any) -> dict[str, Any]:
    """The multi-agent-only settings of ``agent_cfg`` that are set (``agent_id``,
    ``team_hidden_sizes``, ``team_ent_coef``): a single-agent run has no agent axis or teams
    for them, so it refuses them rather than run plain PPO without them."""
    out = {}
    if getattr(agent_cfg, "agent_id", False):
        out["agent_id"] = agent_cfg.agent_id
    for key in ("team_hidden_sizes", "team_ent_coef"):
        value = dict(getattr(agent_cfg, key, None) or {})
        if value:
            out[key] = value
    return out


def agent_obs_shape(agent_cfg: Any, env: Any, env_params: Any) -> tuple | dict:
    """The observation shape a single-agent network is built for: the env's observation
    space's, or with ``agent.critic_obs`` the pair ``{"actor": that, "critic": the env's
    critic_observation_space shape}`` (the critic reads the privileged observation). The
    trainer and ``hordax eval`` build the same network from it."""
    shape = tuple(env.observation_space(env_params).shape)
    if getattr(agent_cfg, "critic_obs", False):
        return {"actor": shape, "critic": tuple(env.critic_observation_space(env_params).shape)}
    return shape


def make_team_agent(
    agent_cfg: Any,
    env: Any,
    env_params: Any,
    critic_obs: bool,
    trainer_cfg: TrainerConfig,
    num_updates: int,
) -> TeamAgent:
    """One PPO learner per team of a multi-agent env (checks naming ``agent.<key>``)."""
    rnn_size = int(agent_cfg.network.rnn_size)
    need(rnn_size == 0, "agent.network.rnn_size", rnn_size, "multi-agent PPO is feed-forward (0)")
    teams = env_teams(env, env_params)
    names = [t.name for t in teams]
    n = int(env.num_agents)
    agent_id = bool(getattr(agent_cfg, "agent_id", False))
    hidden = dict(getattr(agent_cfg, "team_hidden_sizes", None) or {})
    ent = dict(getattr(agent_cfg, "team_ent_coef", None) or {})
    for key, named in (("team_hidden_sizes", hidden), ("team_ent_coef", ent)):
        for name in named:
            need(name in names, f"agent.{key}", name, f"unknown team; the env's teams are {names}")
    for name, coef in ent.items():
        ok = isinstance(coef, int | float) and math.isfinite(coef) and coef >= 0
        need(ok, f"agent.team_ent_coef.{name}", coef, "must be a finite number >= 0")
    critic_dim = None
    if critic_obs:
        critic_dim = int(env.critic_observation_space(env_params).shape[-1])
    rows = trainer_cfg.num_envs * trainer_cfg.rollout_length
    agents = {}
    for team in teams:
        cfg = agent_cfg
        if team.name in hidden:
            net = dataclasses.replace(agent_cfg.network, hidden_sizes=list(hidden[team.name]))
            cfg = dataclasses.replace(agent_cfg, network=net)
        size = rows * len(team.slots)
        need(
            size % agent_cfg.num_minibatches == 0,
            "agent.num_minibatches",
            agent_cfg.num_minibatches,
            f"must divide team {team.name}'s batch num_envs * rollout_length * "
            f"{len(team.slots)} agents = {size}",
        )
        shape = TeamAgent.input_shape(team, n, agent_id, critic_dim)
        agents[team.name] = make_agent(cfg, shape, team.action_space, num_updates)
    team_hparams = {name: {"ent_coef": float(coef)} for name, coef in ent.items()}
    return TeamAgent(agents, teams, n, env.action_space(env_params), agent_id, team_hparams)


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


#: Multi-agent PPO: the same trainer, configs with the multi-agent fields.
IPPO_ALGORITHM = dataclasses.replace(ALGORITHM, name="ippo", config=IPPOConfig, check_member=None)
MAPPO_ALGORITHM = dataclasses.replace(
    ALGORITHM, name="mappo", config=MAPPOConfig, check_member=None
)

"""A saved agent as evaluation policies: every member of a run (one agent, a population's
members, a mixed ensemble's groups), acting greedily (deterministic) or by sampling.

``params.msgpack`` holds ``{"params", "normalizer": {"obs_stats", ...}}`` (a population:
every leaf stacked ``[K]``; a mixed ensemble: ``{"groups": {algorithm: that}}``). The agent is
rebuilt from the run's config through the algorithm registry; observations are normalized
with the saved, frozen statistics by the ``NormalizeObservation`` wrapper's formula.

Multi-agent runs (``agent=ippo``/``mappo``): the agent is the trainer's own
:class:`~hordax.training.core.multi_agent.TeamAgent` (``make_team_agent``: per-team
parameters ``{team: {"actor", "critic"}}``, the agent-id one-hot, MAPPO's critic shape), acting
on the env's ``[N, n, D]`` observations; the saved statistics are per team (``[K, D]``; with
MAPPO's critic observation the ``"actor"`` entry of ``{"actor", "critic"}``) and each agent
slot is normalized with its team's, as the wrapper does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hordax.envs.core import is_multi_agent
from hordax.envs.wrappers.normalize import RunningStats, normalize, slot_stats
from hordax.training.ensemble.members import Members, actor_obs_stats
from hordax.training.evaluation.episodes import Policy
from hordax.training.trainers import agent_config
from hordax.training.trainers.ppo import agent_obs_shape, make_team_agent
from hordax.training.trainers.registry import algorithm


@dataclass
class Group:
    """Members of one algorithm: ``members.params`` stacked ``[K]``."""

    algo: str
    agent: Any
    members: Members
    policy: Policy


#: Algorithms whose policy can be sampled (``deterministic=false``): PPO's, single or multi agent.
STOCHASTIC = ("ppo", "ippo", "mappo")


def make_policy(
    algo: str,
    agent: Any,
    deterministic: bool,
    team_index: Any = None,
    critic_shape: tuple[int, ...] | None = None,
) -> Policy:
    """The :class:`~hordax.training.evaluation.episodes.Policy` of a registered algorithm's
    agent: ``act_greedy`` (PPO the mean / most likely action, PQN ``argmax Q``, PQL its
    actor) or, with ``deterministic=False``, PPO's sampled action (recurrent PPO through
    its GRU carry: ``act_greedy_recurrent`` / ``act_recurrent``). ``team_index`` (a
    multi-agent env's static team of each slot): the saved statistics are per team.
    ``critic_shape`` (an agent trained with critic observations, e.g. MAPPO): sampling goes
    through ``agent.act``, which also returns the critic's value; its critic input is zeros
    of this shape, as the value is thrown away (and the critic dropped by XLA)."""
    inference_state = algorithm(algo).inference_state
    recurrent = bool(getattr(agent, "recurrent", False))
    policy = Policy()

    def prep(params, stats, obs):
        obs = obs.astype(jnp.float32)
        if stats is not None:
            frozen = RunningStats(stats["mean"], stats["var"], None)
            obs = normalize(obs, *slot_stats(frozen, team_index))
        return inference_state(params), obs

    if recurrent:
        policy.initial_carry = agent.initial_carry

        def act(params, stats, carry, obs, first, key):
            st, obs = prep(params, stats, obs)
            if deterministic:
                return agent.act_greedy_recurrent(st, obs, carry, first)
            action, _, carry = agent.act_recurrent(st, obs, key, carry, first)
            return action, carry

    else:
        policy.initial_carry = lambda n: ()

        def act(params, stats, carry, obs, first, key):
            st, obs = prep(params, stats, obs)
            if deterministic:
                return agent.act_greedy(st, obs), carry
            if critic_shape is not None:
                obs = {"actor": obs, "critic": jnp.zeros((obs.shape[0], *critic_shape))}
            return agent.act(st, obs, key)[0], carry

    policy.act = act
    return policy


def _as_members(saved: dict, stacked: bool) -> Members:
    """Members of a saved agent (``stacked``: leaves already carry the ``[K]`` axis)."""
    params, stats = saved["params"], actor_obs_stats(saved)
    if not stacked:
        params = jax.tree.map(lambda x: np.asarray(x)[None], params)
        stats = None if stats is None else jax.tree.map(lambda x: np.asarray(x)[None], stats)
    return Members(params, stats)


def _check_params(algo: str, agent: Any, members: Members, where: str) -> None:
    """The saved parameters fit the agent the config describes (else one line naming
    ``agent.name``: e.g. a run of another algorithm, or another network)."""
    want = jax.eval_shape(agent.init, jax.random.key(0)).params
    got = jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(np.shape(x)[1:], np.asarray(x).dtype), members.params
    )
    ok = jax.tree.structure(want) == jax.tree.structure(got) and all(
        tuple(a.shape) == tuple(b.shape)
        for a, b in zip(jax.tree.leaves(want), jax.tree.leaves(got), strict=True)
    )
    if not ok:
        raise ValueError(
            f"{where}: the saved parameters do not fit agent.name={algo}'s network as the run's"
            " config.yaml describes it (a run of another algorithm or network?)"
        )


def groups_of(
    cfg: Any, saved: dict, env: Any, env_params: Any, deterministic: bool, where: str = "params"
) -> list[Group]:
    """Every member of a run as policy groups (in member order): one group for a single run
    or a population, one per algorithm for a mixed ensemble.

    ``ValueError`` (one line) for a stochastic evaluation of a non-PPO agent or parameters
    that do not fit the config's agent."""
    if cfg.ensemble.algorithms:
        algos = list(cfg.ensemble.algorithms)
        groups = saved.get("groups") or {}
        parts = [(a, agent_config(cfg, a), _as_members(groups[a], True)) for a in algos]
    else:
        stacked = cfg.population.size > 1
        parts = [(cfg.agent.name, cfg.agent, _as_members(saved, stacked))]
    out = []
    for algo, acfg, members in parts:
        if not deterministic and algo not in STOCHASTIC:
            raise ValueError(
                f"deterministic=false: agent.name={algo} has no stochastic policy to sample"
                " (only PPO's is); use deterministic=true"
            )
        agent = _make_agent(cfg, algo, acfg, env, env_params)
        team_index = env.team_index if is_multi_agent(env) else None
        shape = agent_obs_shape(acfg, env, env_params)
        critic_shape = shape["critic"] if isinstance(shape, dict) else None
        _check_params(algo, agent, members, where)
        policy = make_policy(algo, agent, deterministic, team_index, critic_shape)
        out.append(Group(algo, agent, members, policy))
    return out


def _make_agent(cfg: Any, algo: str, acfg: Any, env: Any, env_params: Any) -> Any:
    """The agent a run trained: the registry's for one agent, the PPO trainer's team agent
    for a multi-agent env (the same network application as in training)."""
    if is_multi_agent(env):
        critic_obs = bool(getattr(acfg, "critic_obs", False))
        return make_team_agent(acfg, env, env_params, critic_obs, cfg.trainer, 1)
    space = env.action_space(env_params)
    return algorithm(algo).make_agent(acfg, agent_obs_shape(acfg, env, env_params), space, 1)

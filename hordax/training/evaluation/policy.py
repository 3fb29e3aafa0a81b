"""A saved agent as evaluation policies: every member of a run (one agent, a population's
members, a mixed ensemble's groups), acting greedily (deterministic) or by sampling.

``params.msgpack`` holds ``{"params", "normalizer": {"obs_stats", ...}}`` (a population:
every leaf stacked ``[K]``; a mixed ensemble: ``{"groups": {algorithm: that}}``). The agent is
rebuilt from the run's config through the algorithm registry; observations are normalized
with the saved, frozen statistics by the ``NormalizeObservation`` wrapper's formula.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import serialization

from hordax.envs.wrappers.normalize import normalize
from hordax.training.ensemble.members import Members
from hordax.training.evaluation.episodes import Policy
from hordax.training.trainers import agent_config
from hordax.training.trainers.registry import algorithm


@dataclass
class Group:
    """Members of one algorithm: ``members.params`` stacked ``[K]``."""

    algo: str
    agent: Any
    members: Members
    policy: Policy


def make_policy(algo: str, agent: Any, deterministic: bool) -> Policy:
    """The :class:`~hordax.training.evaluation.episodes.Policy` of a registered algorithm's
    agent: ``act_greedy`` (PPO the mean / most likely action, PQN ``argmax Q``, PQL its
    actor) or, with ``deterministic=False``, PPO's sampled action (recurrent PPO through
    its GRU carry: ``act_greedy_recurrent`` / ``act_recurrent``)."""
    inference_state = algorithm(algo).inference_state
    recurrent = bool(getattr(agent, "recurrent", False))
    policy = Policy()

    def prep(params, stats, obs):
        obs = obs.astype(jnp.float32)
        if stats is not None:
            obs = normalize(obs, stats["mean"], stats["var"])
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
            return agent.act(st, obs, key)[0], carry

    policy.act = act
    return policy


def _as_members(saved: dict, stacked: bool) -> Members:
    """Members of a saved agent (``stacked``: leaves already carry the ``[K]`` axis)."""
    stats = (saved.get("normalizer") or {}).get("obs_stats")
    if stats is not None:  # RunningStats (in a live run) or its state dict (from a file)
        stats = serialization.to_state_dict(stats)
        stats = {"mean": stats["mean"], "var": stats["var"]}
    params, stats = saved["params"], stats
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
        if not deterministic and algo != "ppo":
            raise ValueError(
                f"deterministic=false: agent.name={algo} has no stochastic policy to sample"
                " (only PPO's is); use deterministic=true"
            )
        agent = algorithm(algo).make_agent(
            acfg, env.observation_space(env_params).shape, env.action_space(env_params), 1
        )
        _check_params(algo, agent, members, where)
        out.append(Group(algo, agent, members, make_policy(algo, agent, deterministic)))
    return out


def load_saved(path: str) -> dict:
    """``params.msgpack`` as a nested dict of numpy arrays."""
    with open(path, "rb") as f:
        return serialization.msgpack_restore(f.read())

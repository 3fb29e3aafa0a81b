"""An ensemble's members: loading them from a run directory and acting greedily with them.

A population run (``population.size = K``, :mod:`hordax.training.trainers.population`)
leaves ``params.msgpack`` with every leaf stacked on a leading ``[K]`` member axis (plus
the members' normalizer statistics); a mixed ensemble (``ensemble.algorithms``,
:mod:`hordax.training.trainers.mixed`) one such group per algorithm. Every member acts
greedily through its agent's ``act_greedy`` (PPO the Gaussian mean / the most likely
action, PQN ``argmax_a Q``, PQL its deterministic actor), with its own frozen
observation-normalizer statistics; the agent and its inference state come from the
algorithm registry.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from flax import serialization

from hordax.envs.wrappers.normalize import OBS_CLIP, OBS_EPS, normalize
from hordax.training.config import TrainConfig, group_sizes
from hordax.training.trainers import agent_config
from hordax.training.trainers.registry import ALGORITHMS, algorithm


@dataclass
class Members:
    """K trained members of one algorithm (numpy pytrees with a leading ``[K]`` axis)."""

    params: Any  # e.g. PPO's {"actor": ..., "critic": ...} stacked [K]
    obs_stats: Any  # {"mean": [K, *obs], "var": [K, *obs]} or None (no normalization)

    @property
    def size(self) -> int:
        return int(jax.tree.leaves(self.params)[0].shape[0])


@dataclass
class MixedMembers:
    """Members of several algorithms: ``groups = [(algorithm, Members), ...]`` in the order
    of ``ensemble.algorithms``; member ``j`` counts across groups."""

    groups: list[tuple[str, Members]]

    @property
    def size(self) -> int:
        return sum(m.size for _, m in self.groups)

    @property
    def labels(self) -> list[str]:
        """The algorithm of every member."""
        return [a for a, m in self.groups for _ in range(m.size)]


def actor_obs_stats(saved: dict) -> dict | None:
    """The observation-normalizer statistics a saved agent's actor acts with, ``{"mean",
    "var"}`` (None: no normalization). ``saved["normalizer"]["obs_stats"]`` is a live run's
    ``RunningStats`` or its state dict (from ``params.msgpack``); with critic observations
    (``agent.critic_obs``) it is ``{"actor", "critic"}`` and the actor's entry is taken."""
    stats = (saved.get("normalizer") or {}).get("obs_stats")
    if stats is None:
        return None
    stats = serialization.to_state_dict(stats)
    if "actor" in stats:  # {"actor", "critic"}: the critic's statistics never act
        stats = stats["actor"]
    return {"mean": stats["mean"], "var": stats["var"]}


def _members_of(saved: dict) -> Members:
    return Members(saved["params"], actor_obs_stats(saved))


def read_saved(path: str) -> dict:
    """A run's ``params.msgpack`` as a nested dict of numpy arrays; ``ValueError`` naming the
    file when it is not a whole msgpack (msgpack's own "Unpack failed: incomplete input"
    named nothing)."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        saved = serialization.msgpack_restore(data)
    except Exception as e:  # noqa: BLE001 - msgpack raises several types
        raise ValueError(
            f"{path}: not a readable params file ({e}); the run's saved agent is damaged"
        ) from None
    if not isinstance(saved, dict):
        raise ValueError(f"{path}: not a hordax params file (a {type(saved).__name__})")
    return saved


def load_members(path: str, algorithms: list[str] | None = None) -> Members | MixedMembers:
    """Read ``params.msgpack`` of a population run (or, with ``algorithms``, of a mixed
    ensemble: one group per algorithm, in that order)."""
    saved = read_saved(path)
    if algorithms:
        groups = saved.get("groups")
        if not isinstance(groups, dict) or set(groups) != set(algorithms):
            found = sorted(groups) if isinstance(groups, dict) else "no groups"
            raise ValueError(
                f"{path}: holds {found}, the config's ensemble.algorithms={list(algorithms)}"
            )
        return MixedMembers([(a, _members_of(groups[a])) for a in algorithms])
    return _members_of(saved)


def greedy_policy(
    agent: Any, obs_clip: float = OBS_CLIP, obs_eps: float = OBS_EPS, algo: str = "ppo"
):
    """``act(member_params, obs_stats | None, obs) -> action`` for one member and one obs,
    through ``agent.act_greedy`` (``algo``: the registered algorithm whose inference state
    to build).

    Observations are normalized as :class:`~hordax.envs.wrappers.NormalizeObservation`
    does, with frozen statistics (its default clip and eps)."""
    inference_state = algorithm(algo).inference_state

    def act(params: Any, stats: Any, obs: jax.Array) -> jax.Array:
        obs = obs.astype(jnp.float32)
        if stats is not None:
            obs = normalize(obs, stats["mean"], stats["var"], obs_clip, obs_eps)
        return agent.act_greedy(inference_state(params), obs[None])[0]

    return act


def all_member_actions(act: Any, members: Members, obs: jax.Array) -> jax.Array:
    """``[K, *A]``: every member's greedy action for one observation."""
    return jax.vmap(act, in_axes=(0, 0 if members.obs_stats is not None else None, None))(
        members.params, members.obs_stats, obs
    )


def _on_device(members: Members) -> Members:
    stats = None if members.obs_stats is None else jax.tree.map(jnp.asarray, members.obs_stats)
    return Members(jax.tree.map(jnp.asarray, members.params), stats)


def member_actions_fn(
    agent: Any, members: Members | MixedMembers, discrete: bool, algo: str = "ppo"
):
    """``actions(obs) -> [K, *A]`` of all members (``algo``: the members' algorithm; mixed:
    ``agent`` is one agent per group and the groups' actions are concatenated in member
    order, as int32 or float32)."""
    if not isinstance(members, MixedMembers):
        act, mem = greedy_policy(agent, algo=algo), _on_device(members)
        return lambda obs: all_member_actions(act, mem, obs)
    dtype = jnp.int32 if discrete else jnp.float32
    parts = [
        (greedy_policy(ag, algo=a), _on_device(m))
        for ag, (a, m) in zip(agent, members.groups, strict=True)
    ]

    def actions(obs):
        return jnp.concatenate(
            [all_member_actions(act, m, obs).astype(dtype) for act, m in parts], axis=0
        )

    return actions


@dataclass
class LoadedRun:
    """A population run rebuilt from its directory."""

    run_dir: str
    cfg: Any  # TrainConfig
    members: Members | MixedMembers


def load_config(run_dir: str) -> Any:
    """The ``TrainConfig`` of a finished run (its ``config.yaml``); ``ValueError`` with a
    clear message for a missing directory, missing files or an unknown algorithm."""
    from omegaconf import OmegaConf  # the run's config.yaml, as the CLI wrote it

    if not os.path.isdir(run_dir):
        raise ValueError(f"run_dir={run_dir!r}: no such directory")
    for name in ("config.yaml", "params.msgpack"):
        if not os.path.isfile(os.path.join(run_dir, name)):
            raise ValueError(
                f"run_dir={run_dir!r}: {name} is missing (not a finished hordax train run)"
            )
    try:
        raw = OmegaConf.load(os.path.join(run_dir, "config.yaml"))
    except Exception as e:  # noqa: BLE001 - yaml's parser errors (a traceback from the CLI)
        first = " ".join(str(e).split())
        raise ValueError(
            f"run_dir={run_dir!r}: config.yaml is not readable YAML ({first})"
        ) from None
    if not hasattr(raw, "keys"):
        raise ValueError(f"run_dir={run_dir!r}: config.yaml is not a hordax run config")
    raw = OmegaConf.masked_copy(raw, [k for k in raw if k != "hydra"])
    algo = OmegaConf.select(raw, "agent.name", default="ppo")
    if algo not in ALGORITHMS:
        raise ValueError(
            f"run_dir={run_dir!r}: config.yaml has agent.name={algo!r}; allowed values are"
            f" {list(ALGORITHMS)}"
        )
    schema = OmegaConf.structured(TrainConfig)
    schema.agent = OmegaConf.structured(algorithm(algo).config)  # typed Any: the run's agent
    try:
        return OmegaConf.to_object(OmegaConf.merge(schema, raw))
    except Exception as e:  # omegaconf's errors: a key or type the schemas do not have
        first = str(e).splitlines()[0]
        raise ValueError(
            f"run_dir={run_dir!r}: config.yaml does not fit agent.name={algo}'s config"
            f" ({first}; a run of another algorithm or hordax version?)"
        ) from None


def load_run(run_dir: str) -> LoadedRun:
    """Rebuild the config and members of ``run_dir``; ``ValueError`` with a clear message
    for a missing directory, missing files or a run that is not a population."""
    cfg = load_config(run_dir)
    if cfg.ensemble.algorithms:  # a mixed ensemble
        members = load_members(os.path.join(run_dir, "params.msgpack"), cfg.ensemble.algorithms)
        got = [m.size for _, m in members.groups]
        if got != group_sizes(cfg.ensemble):
            raise ValueError(
                f"run_dir={run_dir!r}: params.msgpack holds {got} members per algorithm,"
                f" config says {group_sizes(cfg.ensemble)}"
            )
        return LoadedRun(run_dir, cfg, members)
    if cfg.population.size < 2:
        raise ValueError(
            f"run_dir={run_dir!r}: population.size={cfg.population.size}; an ensemble needs a"
            " population run (train with agent=ensemble or population.size >= 2)"
        )
    members = load_members(os.path.join(run_dir, "params.msgpack"))
    if members.size != cfg.population.size:
        raise ValueError(
            f"run_dir={run_dir!r}: params.msgpack holds {members.size} members, config says"
            f" population.size={cfg.population.size}"
        )
    return LoadedRun(run_dir, cfg, members)


def agent_for(cfg: Any, env: Any, env_params: Any) -> Any:
    """The members' agent, of ``cfg.agent.name``; mixed: one agent per group, from that
    group's config (:func:`hordax.training.trainers.agent_config`)."""
    if cfg.ensemble.algorithms:
        return [
            member_agent(a, agent_config(cfg, a), env, env_params) for a in cfg.ensemble.algorithms
        ]
    return member_agent(cfg.agent.name, cfg.agent, env, env_params)


def member_agent(algo: str, acfg: Any, env: Any, env_params: Any) -> Any:
    """The agent of one registered algorithm whose members act greedily (ensemble members
    only: e.g. feed-forward PPO; ``ValueError`` naming the key otherwise)."""
    alg = algorithm(algo)
    if alg.check_member is not None:
        alg.check_member(acfg)
    obs_shape = env.observation_space(env_params).shape
    return alg.make_agent(acfg, obs_shape, env.action_space(env_params), 1)


def member_algorithms(cfg: Any, members: Members | MixedMembers) -> list[str]:
    """The algorithm of every member."""
    if isinstance(members, MixedMembers):
        return members.labels
    return [cfg.agent.name] * members.size

"""Mixed-algorithm ensembles: populations of different algorithms in one jitted program.

``agent=ensemble ensemble.algorithms=[ppo,pqn]`` trains one population group per algorithm
(``ensemble.sizes``, default ``ensemble.members`` each) side by side: :class:`MixedTrainer`
is one :class:`~hordax.training.core.types.Trainer` whose state is the tuple of the groups'
population states and whose chunk runs every group's vmapped chunk of updates
(:mod:`hordax.training.trainers.population`) on the same env and trainer sizes. Members are
numbered across groups in the order of ``ensemble.algorithms``; member ``j`` has seed
``seed + j``, so member ``j`` computes what a separate single-algorithm run with that seed
computes (tested).

Agent configs: the algorithm named by ``agent`` (PPO for ``agent=ensemble``) uses the
``agent`` config; every other algorithm its defaults (``hordax/configs/agent/<name>.yaml``,
equal to the dataclass defaults) with ``ensemble.agents.<name>.<key>=value`` overrides
(checked against that algorithm's schema, the key named on error).

``params.msgpack`` holds ``{"groups": {name: {"params": [P, ...], "normalizer": ...}}}``
(each group as a single-algorithm population saves it), enough to rebuild every member's
greedy policy (:func:`hordax.training.ensemble.load_run`).

Not supported in a mixed run: checkpoints and resume, ``population.hparams`` (members
differ by seed and algorithm), recurrent PPO.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from hordax.training.config import group_sizes
from hordax.training.core import report
from hordax.training.trainers.population import PopulationTrainer
from hordax.training.trainers.registry import ALGORITHMS, algorithm


def agent_config(cfg: Any, algo: str) -> Any:
    """The agent config of ``algo``'s group (see the module docstring)."""
    from omegaconf import OmegaConf  # the config layer's merge; hydra is the CLI's alone
    from omegaconf.errors import OmegaConfBaseException

    overrides = dict(cfg.ensemble.agents.get(algo, {}) or {})
    if cfg.agent.name == algo:
        base = OmegaConf.structured(cfg.agent)
    else:
        base = OmegaConf.structured(algorithm(algo).config)
    try:
        merged = OmegaConf.merge(base, OmegaConf.create(overrides))
        out = OmegaConf.to_object(merged)
    except OmegaConfBaseException as e:
        key = getattr(e, "full_key", None) or "?"
        first = str(e).splitlines()[0]
        raise ValueError(f"ensemble.agents.{algo}.{key}: {first}") from None
    if out.name != algo:
        raise ValueError(f"ensemble.agents.{algo}.name={out.name!r}: must be {algo!r}")
    return out


def validate_mixed(cfg: Any) -> None:
    """Host-side checks of a mixed ensemble's config (``ValueError`` naming the key)."""
    ens = cfg.ensemble
    algos = list(ens.algorithms)
    for a in algos:
        if a not in ALGORITHMS:
            raise ValueError(
                f"ensemble.algorithms={algos}: unknown algorithm {a!r}; allowed values are"
                f" {list(ALGORITHMS)}"
            )
    if len(set(algos)) != len(algos):
        raise ValueError(
            f"ensemble.algorithms={algos}: an algorithm may appear once (use ensemble.sizes"
            " for more members of it)"
        )
    if list(ens.sizes) and len(ens.sizes) != len(algos):
        raise ValueError(
            f"ensemble.sizes={list(ens.sizes)}: needs one size per algorithm in"
            f" ensemble.algorithms={algos}"
        )
    sizes = group_sizes(ens)
    if any(s < 1 for s in sizes) or sum(sizes) < 2:
        raise ValueError(
            f"ensemble.sizes={sizes}: every size must be >= 1 and the ensemble needs >= 2 members"
        )
    unknown = sorted(set(ens.agents) - set(algos))
    if unknown:
        raise ValueError(
            f"ensemble.agents.{unknown[0]}: {unknown[0]!r} is not in ensemble.algorithms={algos}"
        )
    if cfg.population.size not in (1, sum(sizes)):
        raise ValueError(
            f"population.size={cfg.population.size}: a mixed ensemble has sum(ensemble.sizes)"
            f" = {sum(sizes)} members (leave population.size unset)"
        )
    if cfg.population.hparams:
        raise ValueError(
            f"population.hparams={dict(cfg.population.hparams)}: not supported with"
            " ensemble.algorithms (members of a mixed ensemble differ by seed and algorithm)"
        )
    if cfg.checkpoint.every or cfg.resume:
        raise ValueError(
            "checkpoint.every / resume: not supported with ensemble.algorithms (a mixed"
            " ensemble runs from start to end)"
        )
    for a in algos:
        alg = algorithm(a)
        try:
            acfg = agent_config(cfg, a)
            alg.validate(acfg, cfg.trainer)
            if alg.check_member is not None:
                alg.check_member(acfg)
        except ValueError as e:
            msg = str(e)
            if a != cfg.agent.name and msg.startswith("agent."):  # name the key as given
                msg = f"ensemble.agents.{a}." + msg[len("agent.") :]
            raise ValueError(msg) from None


def check_action_space(cfg: Any, env: Any, env_params: Any) -> None:
    """Every algorithm must support the env's actions (PQN discrete, PQL continuous); the
    error names the key."""
    from gymnax.environments import spaces

    space = env.action_space(env_params)
    algos = list(cfg.ensemble.algorithms)
    kind = "discrete" if isinstance(space, spaces.Discrete) else "continuous"
    for a in algos:
        need = algorithm(a).action_space
        if need not in ("any", kind):
            want = "continuous (Box)" if need == "continuous" else "discrete"
            fits = [b for b, alg in ALGORITHMS.items() if alg.action_space == kind]
            raise ValueError(
                f"ensemble.algorithms={algos}: {a} needs {want} actions, {cfg.env.id} has"
                f" {type(space).__name__} actions (use {' or '.join(fits)} for this env)"
            )


def member_seeds(cfg: Any) -> list[list[int]]:
    """Per group, the seeds of its members: member ``j`` (over all groups) has ``seed + j``."""
    out, j = [], 0
    for s in group_sizes(cfg.ensemble):
        out.append([cfg.seed + j + i for i in range(s)])
        j += s
    return out


class MixedTrainer:
    """One population group per algorithm of ``cfg.ensemble.algorithms``, trained in one
    program: the :class:`Trainer` protocol over a tuple of group states.

    Args:
        cfg: the run's TrainConfig (validated).
        env, env_params: the raw env and its params (every group's trainer wraps them).
        resolved: derived sizes (the same for every group).
    """

    member_axis = True
    driver = "jit"

    def __init__(self, cfg: Any, env: Any, env_params: Any, resolved: Any):
        check_action_space(cfg, env, env_params)
        self.algorithms = list(cfg.ensemble.algorithms)
        self.sizes = group_sizes(cfg.ensemble)
        self.seeds = member_seeds(cfg)
        self.resolved = resolved
        self.members = sum(self.sizes)
        self.seed_axis = math.gcd(*self.sizes)
        self.groups = []
        for a, seeds in zip(self.algorithms, self.seeds, strict=True):
            acfg = agent_config(cfg, a)
            single = algorithm(a).trainer(cfg.trainer, acfg, env, env_params, resolved)
            self.groups.append(PopulationTrainer(single, len(seeds), seeds[0]))

    def init_key(self, seed: int) -> tuple:
        return tuple(jnp.stack([jax.random.key(s) for s in seeds]) for seeds in self.seeds)

    def init(self, keys: tuple) -> tuple:
        return tuple(g.init(k) for g, k in zip(self.groups, keys, strict=True))

    def run_chunk(self, states: tuple, num_updates: int | None = None) -> tuple:
        outs = [g.run_chunk(s, num_updates) for g, s in zip(self.groups, states, strict=True)]
        return tuple(o[0] for o in outs), tuple(o[1] for o in outs)

    def train(self, keys: tuple) -> tuple:
        return self.run_chunk(self.init(keys), self.resolved.num_updates)

    def saved_agent(self, states: tuple) -> dict:
        """``params.msgpack`` content: per algorithm, stacked params and normalizer stats."""
        return {
            "groups": {
                a: g.saved_agent(s)
                for a, g, s in zip(self.algorithms, self.groups, states, strict=True)
            }
        }

    def label(self) -> str:
        return " " + "+".join(f"{a}x{s}" for a, s in zip(self.algorithms, self.sizes, strict=True))

    def chunk_row(self, metrics: tuple) -> dict:
        members = [
            {"algorithm": a, **m}
            for a, g, gm in zip(self.algorithms, self.groups, metrics, strict=True)
            for m in g.member_rows(gm)
        ]
        best = report.best_index([m["episode_return"] for m in members])
        return {"episode_return": members[best]["episode_return"], "members": members}

    def check_finite(self, metrics: tuple, first_update: int) -> None:
        for a, m in zip(self.algorithms, metrics, strict=True):
            try:
                report.check_finite(m, first_update, True)
            except report.NonFiniteError as e:
                raise report.NonFiniteError(f"{a} group: {e}") from None

    def summary(self, saved: dict, row: dict) -> dict:
        out_members, j = [], 0
        for a, seeds in zip(self.algorithms, self.seeds, strict=True):
            group = saved["groups"][a]
            for i, seed in enumerate(seeds):
                one = jax.tree.map(lambda x, i=i: x[i], group)
                out_members.append(
                    {
                        "member": j,
                        "algorithm": a,
                        "seed": seed,
                        "final_return": row["members"][j].get("episode_return", math.nan),
                        "final_episode_length": row["members"][j].get("episode_length", math.nan),
                        "params_checksum": report.params_checksum(one),
                    }
                )
                j += 1
        best = out_members[report.best_index([m["final_return"] for m in out_members])]
        return {
            "agent": "ensemble",
            "algorithms": dict(zip(self.algorithms, self.sizes, strict=True)),
            "final_return": best["final_return"],
            "final_episode_length": best["final_episode_length"],
            "population_size": self.members,
            "members": out_members,
            "best_member": best["member"],
        }

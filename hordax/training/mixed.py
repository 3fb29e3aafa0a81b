"""Mixed-algorithm ensembles: populations of different algorithms in one jitted program.

``agent=ensemble ensemble.algorithms=[ppo,pqn]`` trains one population group per algorithm
(``ensemble.sizes``, default ``ensemble.members`` each) side by side: one ``jax.jit`` whose
body runs every group's vmapped chunk of updates (:mod:`hordax.training.population`) on
the same env and trainer sizes. Members are numbered across groups in the order of
``ensemble.algorithms``; member ``j`` has seed ``seed + j``, so member ``j`` computes what
a separate single-algorithm run with that seed computes (tested).

Agent configs: the algorithm named by ``agent`` (PPO for ``agent=ensemble``) uses the
``agent`` config; every other algorithm its defaults (``hordax/configs/agent/<name>.yaml``, equal
to the dataclass defaults) with ``ensemble.agents.<name>.<key>=value`` overrides (checked
against that algorithm's schema, the key named on error).

``params.msgpack`` holds ``{"groups": {name: {"params": [P, ...], "normalizer": ...}}}``
(each group as a single-algorithm population saves it), enough to rebuild every member's
greedy policy (:func:`hordax.training.ensemble.load_run`).

Not supported in a mixed run: checkpoints and resume, ``population.hparams`` (members
differ by seed and algorithm), recurrent PPO.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from typing import Any

import jax
import jax.numpy as jnp
from flax import serialization

from hordax import strict_json
from hordax.training import population as pop
from hordax.training import sharding

ALGORITHMS = ("ppo", "pqn", "pql")


def is_mixed(cfg: Any) -> bool:
    """Whether ``cfg`` (a TrainConfig) asks for a mixed-algorithm ensemble."""
    ens = getattr(cfg, "ensemble", None)
    return bool(ens is not None and ens.enabled and list(ens.algorithms))


def group_sizes(ens: Any) -> list[int]:
    """Members per algorithm: ``ensemble.sizes`` or ``ensemble.members`` each."""
    sizes = list(ens.sizes) if list(ens.sizes) else [int(ens.members)] * len(ens.algorithms)
    return [int(s) for s in sizes]


def agent_schema(algo: str) -> Any:
    """The config dataclass of ``algo`` (ppo | pqn | pql)."""
    if algo == "pqn":
        from hordax.agents.pqn import PQNConfig

        return PQNConfig
    if algo == "pql":
        from hordax.agents.pql import PQLConfig

        return PQLConfig
    from hordax.agents.ppo import PPOConfig

    return PPOConfig


def agent_config(cfg: Any, algo: str) -> Any:
    """The agent config of ``algo``'s group (see the module docstring)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    overrides = dict(cfg.ensemble.agents.get(algo, {}) or {})
    if cfg.agent.name == algo:
        base = OmegaConf.structured(cfg.agent)
    else:
        base = OmegaConf.structured(agent_schema(algo))
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
        try:
            _validate_agent(cfg, a)
        except ValueError as e:
            msg = str(e)
            if a != cfg.agent.name and msg.startswith("agent."):  # name the key as given
                msg = f"ensemble.agents.{a}." + msg[len("agent.") :]
            raise ValueError(msg) from None


def _validate_agent(cfg: Any, a: str) -> None:
    """``a``'s own checks (its messages name ``agent.<key>``)."""
    tr = cfg.trainer
    acfg = agent_config(cfg, a)
    if a == "pqn":
        from hordax.agents.pqn import validate_pqn

        validate_pqn(acfg, batch_size=tr.num_envs * tr.rollout_length)
    elif a == "pql":
        from hordax.agents.pql import validate_pql

        validate_pql(acfg, tr.num_envs, tr.rollout_length)
        if acfg.mode != "sync":
            raise ValueError(
                f"agent.mode={acfg.mode!r}: a mixed ensemble trains its PQL members with"
                " the synchronous schedule inside its one program (mode=sync)"
            )
    else:
        from hordax.agents.ppo import validate_ppo

        validate_ppo(acfg, batch_size=tr.num_envs * tr.rollout_length)
        if int(acfg.network.rnn_size):
            raise ValueError(
                f"agent.network.rnn_size={acfg.network.rnn_size}: ensembles combine"
                " feed-forward members only (rnn_size=0)"
            )


def check_action_space(cfg: Any, env: Any, env_params: Any) -> None:
    """PQN needs discrete actions and PQL continuous ones; the error names the key."""
    from gymnax.environments import spaces

    space = env.action_space(env_params)
    algos = list(cfg.ensemble.algorithms)
    discrete = isinstance(space, spaces.Discrete)
    for a in algos:
        if (a == "pql" and discrete) or (a == "pqn" and not discrete):
            want = "continuous (Box)" if a == "pql" else "discrete"
            raise ValueError(
                f"ensemble.algorithms={algos}: {a} needs {want} actions, {cfg.env.id} has"
                f" {type(space).__name__} actions (use "
                f"{'pqn' if a == 'pql' else 'pql'} for this env)"
            )


def member_seeds(cfg: Any) -> list[list[int]]:
    """Per group, the seeds of its members: member ``j`` (over all groups) has ``seed + j``."""
    out, j = [], 0
    for s in group_sizes(cfg.ensemble):
        out.append([cfg.seed + j + i for i in range(s)])
        j += s
    return out


@dataclasses.dataclass
class MixedPrograms:
    """One jitted init and one jitted chunk for all groups (tuples of group states)."""

    algorithms: list[str]
    sizes: list[int]
    trainers: list[Any]
    mesh: Any
    shardings: Any
    init: Any  # init(keys tuple) -> tuple of group states
    init_args: tuple
    chunk: Any  # chunk(states) -> (states, tuple of group metrics [P_g, chunk_updates])


def make_mixed_programs(cfg: Any, env: Any, env_params: Any, resolved: Any) -> MixedPrograms:
    """Every group's vmapped init and chunk inside one ``jax.jit`` each."""
    from hordax.training.run import make_trainer

    algos = list(cfg.ensemble.algorithms)
    sizes = group_sizes(cfg.ensemble)
    trainers = [
        make_trainer(
            dataclasses.replace(cfg, agent=agent_config(cfg, a)), env, env_params, resolved
        )
        for a in algos
    ]
    keys = tuple(jnp.stack([jax.random.key(s) for s in seeds]) for seeds in member_seeds(cfg))
    inits = [pop.vmapped_init(t.init) for t in trainers]
    chunks = [pop.vmapped_chunk(t.run_chunk, resolved.chunk_updates) for t in trainers]

    def init_fn(keys):
        return tuple(f(k, {}) for f, k in zip(inits, keys, strict=True))

    def chunk_fn(states):
        outs = [f(s) for f, s in zip(chunks, states, strict=True)]
        return tuple(o[0] for o in outs), tuple(o[1] for o in outs)

    mesh = sharding.train_mesh(cfg.mesh, cfg.trainer.num_envs, math.gcd(*sizes))
    abstract = jax.eval_shape(init_fn, keys)
    shardings = tuple(
        sharding.train_state_shardings(a, mesh, cfg.trainer.num_envs, True) for a in abstract
    )
    return MixedPrograms(
        algorithms=algos,
        sizes=sizes,
        trainers=trainers,
        mesh=mesh,
        shardings=shardings,
        init=jax.jit(init_fn, out_shardings=shardings),
        init_args=(keys,),
        chunk=jax.jit(chunk_fn, in_shardings=(shardings,), out_shardings=(shardings, None)),
    )


def saved_groups(algorithms: list[str], states: tuple) -> dict:
    """``params.msgpack`` content: per algorithm, stacked params and normalizer stats."""
    from hordax.training.run import normalizer_stats

    return {
        "groups": {
            a: {"params": s.agent.params, "normalizer": normalizer_stats(s)}
            for a, s in zip(algorithms, states, strict=True)
        }
    }


def train_mixed(cfg: Any, env: Any, env_params: Any, resolved: Any) -> dict:
    """Train a mixed ensemble; write ``metrics.jsonl``, ``params.msgpack`` and
    ``summary.json`` (when ``cfg.run_dir``); return the summary (members with algorithm,
    seed, final return and checksum)."""
    from hordax.training.logging import make_logger
    from hordax.training.run import (
        NonFiniteError,
        check_finite,
        params_checksum,
        progress_bar,
        summarize_chunk,
    )
    from hordax.training.run import best_index as best_of
    from hordax.training.rundir import write_atomic

    validate_mixed(cfg)
    check_action_space(cfg, env, env_params)
    run_dir = cfg.run_dir or None
    t_start = time.perf_counter()
    progs = make_mixed_programs(cfg, env, env_params, resolved)
    algos, sizes = progs.algorithms, progs.sizes
    total = sum(sizes)
    states = progs.init(*progs.init_args)
    chunk = progs.chunk.lower(states).compile()
    compile_s = time.perf_counter() - t_start
    logger = make_logger(cfg.logger, run_dir, cfg)
    metrics_file = open(os.path.join(run_dir, "metrics.jsonl"), "w") if run_dir else None  # noqa: SIM115
    steps_per_chunk = resolved.chunk_updates * resolved.steps_per_update
    groups = "+".join(f"{a}x{s}" for a, s in zip(algos, sizes, strict=True))
    bar = progress_bar(cfg, resolved, f"{cfg.env.id} {groups}")
    t_run = time.perf_counter()
    row: dict[str, Any] = {}
    try:
        for c in range(resolved.num_chunks):
            states, metrics = chunk(states)
            metrics = jax.device_get(metrics)
            elapsed = time.perf_counter() - t_run
            env_steps = (c + 1) * steps_per_chunk
            members = []
            for a, m, s in zip(algos, metrics, sizes, strict=True):
                try:
                    check_finite(m, c * resolved.chunk_updates + 1, True)
                except NonFiniteError as e:
                    raise NonFiniteError(f"{a} group: {e}") from None
                for i in range(s):
                    members.append(
                        {"algorithm": a, **summarize_chunk({k: v[i] for k, v in m.items()})}
                    )
            best = best_of([m["episode_return"] for m in members])
            row = {
                "chunk": c,
                "env_steps": env_steps,
                "wall_s": round(elapsed, 3),
                "sps": (c + 1) * steps_per_chunk * total / elapsed,
                "episode_return": members[best]["episode_return"],
                "members": members,
            }
            if metrics_file:
                metrics_file.write(strict_json.dumps(row) + "\n")
                metrics_file.flush()
            logger.log({k: v for k, v in row.items() if k != "members"}, step=env_steps)
            bar.update(steps_per_chunk)
            bar.set_postfix(ret=f"{row['episode_return']:.1f}", sps=f"{row['sps']:.3g}")
    finally:
        bar.close()
        if metrics_file:
            metrics_file.close()
    run_s = time.perf_counter() - t_run
    saved = jax.device_get(saved_groups(algos, states))
    if run_dir:
        write_atomic(os.path.join(run_dir, "params.msgpack"), serialization.to_bytes(saved))
    seeds = [s for group in member_seeds(cfg) for s in group]
    out_members = []
    j = 0
    for a, s in zip(algos, sizes, strict=True):
        group = saved["groups"][a]
        for i in range(s):
            one = jax.tree.map(lambda x, i=i: x[i], group)
            out_members.append(
                {
                    "member": j,
                    "algorithm": a,
                    "seed": seeds[j],
                    "final_return": row["members"][j].get("episode_return", math.nan),
                    "final_episode_length": row["members"][j].get("episode_length", math.nan),
                    "params_checksum": params_checksum(one),
                }
            )
            j += 1
    best = out_members[best_of([m["final_return"] for m in out_members])]
    summary: dict[str, Any] = {
        "env": cfg.env.id,
        "agent": "ensemble",
        "algorithms": dict(zip(algos, sizes, strict=True)),
        "seed": cfg.seed,
        "env_steps": resolved.env_steps,
        "wall_s": round(time.perf_counter() - t_start, 3),
        "compile_s": round(compile_s, 3),
        "sps": round(resolved.env_steps * total / run_s, 1) if run_s > 0 else math.nan,
        "final_return": best["final_return"],
        "final_episode_length": best["final_episode_length"],
        "params_checksum": params_checksum(saved),
        "devices": int(progs.mesh.devices.size),
        "resumed_from_chunk": None,
        "run_dir": run_dir,
        "population_size": total,
        "members": out_members,
        "best_member": best["member"],
    }
    if run_dir:
        write_atomic(os.path.join(run_dir, "summary.json"), strict_json.dumps(summary, indent=1))
    logger.finish(summary)
    return summary

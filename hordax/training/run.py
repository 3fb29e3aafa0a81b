"""Run a trainer on the host: compile, run chunks, guard, checkpoint, log, summarize.

Files in ``run_dir`` (when set): ``config.yaml`` (resolved config, written by the CLI),
``metrics.jsonl`` (one JSON line per chunk), ``checkpoints/`` (orbax, every
``checkpoint.every`` chunks, the newest ``checkpoint.keep`` kept; see
:mod:`hordax.training.checkpoint`), ``params.msgpack`` (final agent parameters and
normalizer statistics, flax serialization) and ``summary.json`` (the final line). Files are
written whole or not at all (:func:`hordax.training.rundir.write_atomic`), so a run killed
at any moment and resumed ends with the files of an uninterrupted run.

A population (``population.size > 1``) runs every member in one vmapped program; the
summary lists each member and the best one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import time
from typing import Any

import jax
import numpy as np
from flax import serialization

from hordax import strict_json
from hordax.training import population as pop
from hordax.training import sharding
from hordax.training.checkpoint import Checkpointer
from hordax.training.config import LoggerConfig, Resolved, TrainConfig
from hordax.training.logging import make_logger
from hordax.training.on_policy import OnPolicyTrainer, TrainState
from hordax.training.rundir import fault_point, new_run_id, write_atomic

NONFINITE_PREFIX = "nonfinite/"


class NonFiniteError(RuntimeError):
    """Training produced a non-finite loss, gradient or parameter (the NaN guard)."""


def progress_bar(cfg: Any, resolved: Any, desc: str, initial: int = 0, enabled: bool = True) -> Any:
    """The live progress bar on stderr (env steps; off with ``progress=false`` or
    ``enabled=False``)."""
    from tqdm.auto import tqdm

    return tqdm(
        total=resolved.env_steps,
        initial=initial,
        unit="step",
        unit_scale=True,
        disable=not (cfg.progress and enabled),
        dynamic_ncols=True,
        desc=desc,
    )


def params_checksum(tree: Any) -> str:
    """A stable hash of a pytree of arrays (leaf order, dtype, shape and bytes)."""
    h = hashlib.sha256()
    for leaf in jax.tree.leaves(jax.device_get(tree)):
        arr = np.ascontiguousarray(np.asarray(leaf))
        h.update(f"{arr.dtype.str}{arr.shape}".encode())
        h.update(arr.tobytes())
    return h.hexdigest()[:16]


def normalizer_stats(env_state: Any) -> dict[str, Any]:
    """Running statistics held by normalization wrappers in a batch env state (or by the
    train state itself: PQL keeps ``obs_stats`` there, next to ``env_state``)."""
    out: dict[str, Any] = {}
    node = env_state
    while node is not None:
        for name in ("obs_stats", "return_stats"):
            if getattr(node, name, None) is not None:
                out[name] = getattr(node, name)
        node = getattr(node, "env_state", None)
    return out


def saved_agent(state: TrainState) -> dict[str, Any]:
    """What is saved with the agent: parameters plus normalizer statistics."""
    return {"params": state.agent.params, "normalizer": normalizer_stats(state)}


def summarize_chunk(metrics: dict[str, np.ndarray]) -> dict[str, float]:
    """Chunk means: episode statistics weighted by episode count, others plain means."""
    count = float(np.sum(metrics["episode_count"]))
    row: dict[str, float] = {"episodes": count}
    for name, value in metrics.items():
        if name == "episode_count" or name.startswith(NONFINITE_PREFIX):
            continue
        if name.endswith("_sum"):
            row[name[: -len("_sum")]] = float(np.sum(value)) / count if count else math.nan
        else:
            row[name] = float(np.mean(value))
    return row


def check_finite(metrics: dict[str, np.ndarray], first_update: int, population: bool) -> None:
    """The NaN guard: raise :class:`NonFiniteError` naming the first bad quantity and update.

    ``metrics["nonfinite/<quantity>"]`` are ``bool[chunk_updates]`` (``[P, chunk_updates]``
    for a population); ``first_update`` is the 1-based number of the chunk's first update.
    """
    flags = {
        k[len(NONFINITE_PREFIX) :]: np.asarray(v)
        for k, v in metrics.items()
        if k.startswith(NONFINITE_PREFIX)
    }
    if not flags or not any(f.any() for f in flags.values()):
        return
    per_update = {k: (f.any(axis=0) if population else f) for k, f in flags.items()}
    u = min(int(np.argmax(f)) for f in per_update.values() if f.any())
    order = ("loss", "gradient", "parameters")  # cause before effect
    names = sorted(
        (k for k, f in per_update.items() if f[u]),
        key=lambda k: order.index(k) if k in order else len(order),
    )
    where = f"update {first_update + u}"
    if population:
        members = sorted({int(m) for k in names for m in np.nonzero(flags[k][:, u])[0]})
        where += f", population member(s) {members}"
    raise NonFiniteError(f"non-finite {' and '.join(names)} at {where}")


def best_index(returns: list[float]) -> int:
    """Index of the highest return; NaN (no finished episode) counts as the lowest."""
    return max(
        range(len(returns)), key=lambda i: -math.inf if math.isnan(returns[i]) else returns[i]
    )


def _cfg_dict(cfg: TrainConfig) -> dict:
    return json.loads(strict_json.dumps(dataclasses.asdict(cfg), default=str))


def member_summaries(cfg: TrainConfig, saved: Any, row: dict, size: int) -> list[dict[str, Any]]:
    """One dict per population member: seed, hyperparameters, final return, checksum
    (``saved``: the population's :func:`saved_agent`, on the host)."""
    out = []
    for i in range(size):
        member = jax.tree.map(lambda x, i=i: x[i], saved)
        out.append(
            {
                "member": i,
                "seed": cfg.seed + i,
                "hparams": {k: v[i] for k, v in cfg.population.hparams.items()},
                "final_return": row["members"][i].get("episode_return", math.nan),
                "final_episode_length": row["members"][i].get("episode_length", math.nan),
                "params_checksum": params_checksum(member),
            }
        )
    return out


@dataclasses.dataclass
class Programs:
    """The jitted programs of a run and how their state is laid out over devices."""

    mesh: Any  # jax.sharding.Mesh, axes ("seed", "data")
    abstract: Any  # ShapeDtypeStruct tree of the (population) TrainState
    shardings: Any  # NamedSharding tree matching ``abstract``
    init: Any  # jitted init(*init_args) -> state, laid out by ``shardings``
    init_args: tuple  # (key,) or (keys [P], hparams {name: [P]})
    chunk: Any  # jitted chunk(state) -> (state, metrics [chunk_updates] or [P, ...])


def _strongly_typed(init_fn):
    """``init_fn`` with weak-typed state leaves (e.g. an env's ``time = 0``) made strong.

    A checkpoint stores no weak types, so without this a resumed state's types differ from a
    fresh one's and ``chunk.lower(state)`` compiles a second program instead of hitting the
    persistent compilation cache. The values are unchanged (same dtype).
    """

    def strong(x):
        return jax.lax.convert_element_type(x, x.dtype) if jax.typeof(x).weak_type else x

    return lambda *args: jax.tree.map(strong, init_fn(*args))


def make_programs(cfg: TrainConfig, trainer: OnPolicyTrainer, resolved: Resolved) -> Programs:
    """Init and one chunk of updates as ``jax.jit`` programs sharded over the run's mesh.

    The env batch is split over the mesh's ``data`` axis, population members over ``seed``;
    everything else is replicated (see :mod:`hordax.training.sharding`).
    """
    size = cfg.population.size
    is_pop = size > 1
    mesh = sharding.train_mesh(cfg.mesh, cfg.trainer.num_envs, size)
    if is_pop:
        init_fn = pop.vmapped_init(trainer.init)
        init_args = (pop.member_keys(cfg.seed, size), pop.member_hparams(cfg.population))
        chunk_fn = pop.vmapped_chunk(trainer.run_chunk, resolved.chunk_updates)
    else:
        init_fn, init_args = trainer.init, (jax.random.key(cfg.seed),)

        def chunk_fn(state: TrainState) -> tuple[TrainState, dict]:
            return trainer.run_chunk(state, resolved.chunk_updates)

    init_fn = _strongly_typed(init_fn)
    abstract = jax.eval_shape(init_fn, *init_args)
    shardings = sharding.train_state_shardings(abstract, mesh, cfg.trainer.num_envs, is_pop)
    return Programs(
        mesh=mesh,
        abstract=abstract,
        shardings=shardings,
        init=jax.jit(init_fn, out_shardings=shardings),
        init_args=init_args,
        chunk=jax.jit(chunk_fn, in_shardings=(shardings,), out_shardings=(shardings, None)),
    )


def make_trainer(cfg: TrainConfig, env: Any, env_params: Any, resolved: Resolved) -> Any:
    """The trainer for ``cfg.agent.name``: PPO (on-policy), PQN or PQL."""
    if cfg.agent.name == "pqn":
        from hordax.training.pqn import PQNTrainer

        return PQNTrainer(cfg.trainer, cfg.agent, env, env_params, resolved)
    if cfg.agent.name == "pql":
        from hordax.training.off_policy import PQLTrainer

        return PQLTrainer(cfg.trainer, cfg.agent, env, env_params, resolved)
    return OnPolicyTrainer(cfg.trainer, cfg.agent, env, env_params, resolved)


def train_and_log(cfg: TrainConfig, env: Any, env_params: Any, resolved: Resolved) -> dict:
    """Train with progress, NaN guard, checkpoints and files; return the summary dict.

    Raises:
        NonFiniteError: the NaN guard stopped the run (the last good checkpoint is kept).
        CheckpointError: ``cfg.resume`` names a missing, corrupt or incompatible checkpoint,
            or a fresh run finds another run's checkpoints in ``run_dir``.
        KeyboardInterrupt: passed on after the files are closed (the last checkpoint stays).
    """

    from hordax.training.mixed import is_mixed

    if jax.process_count() > 1 and cfg.ensemble.enabled:
        raise ValueError(
            f"distributed=true over {jax.process_count()} processes: agent=ensemble is not "
            "supported yet (run it in one process)"
        )
    if is_mixed(cfg):  # agent=ensemble ensemble.algorithms=[...]: one program, all groups
        from hordax.training.mixed import train_mixed

        return train_mixed(cfg, env, env_params, resolved)
    if cfg.agent.name == "pql" and cfg.agent.mode == "parallel":
        from hordax.training.pql_parallel import train_and_log_parallel

        return train_and_log_parallel(cfg, env, env_params, resolved)
    run_dir = cfg.run_dir or None
    primary = sharding.is_primary()
    size = cfg.population.size
    is_pop = size > 1
    trainer = make_trainer(cfg, env, env_params, resolved)
    t_start = time.perf_counter()

    progs = make_programs(cfg, trainer, resolved)
    mesh, abstract, shardings = progs.mesh, progs.abstract, progs.shardings
    chunk = progs.chunk

    # --- fresh start or resume ----------------------------------------------------------
    ckpt = None
    if run_dir and (cfg.checkpoint.every > 0 or cfg.resume):
        # Every process: orbax writes each process's shards and lets process 0 commit.
        ckpt = Checkpointer(run_dir, keep=cfg.checkpoint.keep)
    start_chunk, metrics_file = 0, None
    try:  # the checkpointer is closed on every way out (its threads outlive an error)
        if cfg.resume:
            assert ckpt is not None
            ckpt.check_compatible(_cfg_dict(cfg), abstract)
            start_chunk, state = ckpt.restore(abstract, shardings)
        else:
            if ckpt is not None:
                # One run id for every process (process 0's); process 0 writes meta.json.
                run_id = sharding.primary_str(new_run_id())
                if primary:
                    ckpt.start(_cfg_dict(cfg), abstract, run_id)
                else:
                    ckpt.run_id = run_id
            state = progs.init(*progs.init_args)
        # Files, logs and the progress bar: process 0 only (every process computes the same
        # rows).
        metrics_file, row = _open_metrics(run_dir if primary else None, start_chunk)
        fault_point("compile")
        if start_chunk < resolved.num_chunks:  # a run resumed after its last chunk runs none
            chunk = chunk.lower(state).compile()
        compile_s = time.perf_counter() - t_start
        logger = make_logger(cfg.logger if primary else LoggerConfig(), run_dir, cfg)
    except BaseException:
        if metrics_file:
            metrics_file.close()
        if ckpt is not None:
            ckpt.close()
        raise
    steps_per_chunk = resolved.chunk_updates * resolved.steps_per_update
    bar = progress_bar(
        cfg,
        resolved,
        f"{cfg.env.id} {cfg.agent.name}" + (f" x{size}" if is_pop else ""),
        initial=start_chunk * steps_per_chunk,
        enabled=primary,
    )
    t_run = time.perf_counter()
    try:
        for c in range(start_chunk, resolved.num_chunks):
            state, metrics = chunk(state)
            metrics = sharding.to_host(metrics)  # blocks: timings below are real
            fault_point("chunk")
            elapsed = time.perf_counter() - t_run
            env_steps = (c + 1) * steps_per_chunk
            row = {"chunk": c, "env_steps": env_steps, "wall_s": round(elapsed, 3)}
            row["sps"] = (c + 1 - start_chunk) * steps_per_chunk * size / elapsed
            if is_pop:
                members = [
                    summarize_chunk({k: v[i] for k, v in metrics.items()}) for i in range(size)
                ]
                best = best_index([m["episode_return"] for m in members])
                row["episode_return"] = members[best]["episode_return"]
                row["members"] = members
            else:
                row.update(summarize_chunk(metrics))
            if metrics_file:
                metrics_file.write(strict_json.dumps(row) + "\n")
                metrics_file.flush()
                fault_point("metrics")
            check_finite(metrics, c * resolved.chunk_updates + 1, is_pop)
            every = cfg.checkpoint.every
            if (
                ckpt is not None
                and every > 0
                and ((c + 1) % every == 0 or c + 1 == resolved.num_chunks)
            ):
                ckpt.save(c + 1, state)
            logger.log({k: v for k, v in row.items() if k != "members"}, step=env_steps)
            bar.update(steps_per_chunk)
            bar.set_postfix(ret=f"{row['episode_return']:.1f}", sps=f"{row['sps']:.3g}")
    except NonFiniteError as e:
        last = ckpt.latest_step() if ckpt is not None else None
        kept = (
            f"last good checkpoint: {os.path.join(ckpt.dir, str(last))}"
            if last is not None
            else "no checkpoint kept (set checkpoint.every >= 1)"
        )
        raise NonFiniteError(f"{e}; training stopped, {kept}") from None
    finally:
        bar.close()
        if metrics_file:
            metrics_file.close()
        if ckpt is not None:
            ckpt.close()
    run_s = time.perf_counter() - t_run

    saved = sharding.to_host(saved_agent(state))
    if run_dir and primary:
        write_atomic(os.path.join(run_dir, "params.msgpack"), serialization.to_bytes(saved))
    ran_steps = (resolved.num_chunks - start_chunk) * steps_per_chunk * size
    summary: dict[str, Any] = {
        "env": cfg.env.id,
        "agent": cfg.agent.name,
        "seed": cfg.seed,
        "env_steps": resolved.env_steps,
        "wall_s": round(time.perf_counter() - t_start, 3),
        "compile_s": round(compile_s, 3),
        "sps": round(ran_steps / run_s, 1) if run_s > 0 else math.nan,
        "final_return": row.get("episode_return", math.nan),
        "final_episode_length": row.get("episode_length", math.nan),
        "params_checksum": params_checksum(saved),
        "metrics": {k[len("task/") :]: v for k, v in row.items() if k.startswith("task/")},
        "devices": int(mesh.devices.size),
        "processes": jax.process_count(),
        "resumed_from_chunk": start_chunk if cfg.resume else None,
        "run_dir": run_dir,
    }
    if is_pop:
        members = member_summaries(cfg, saved, row, size)
        best = members[best_index([m["final_return"] for m in members])]
        summary.update(population_size=size, members=members, best_member=best["member"])
        summary["final_return"] = best["final_return"]
        summary["final_episode_length"] = best["final_episode_length"]
    if run_dir and primary:
        write_atomic(os.path.join(run_dir, "summary.json"), strict_json.dumps(summary, indent=1))
    logger.finish(summary)
    return summary


def _open_metrics(run_dir: str | None, start_chunk: int) -> tuple[Any, dict]:
    """``(metrics.jsonl open for appending, last kept row)``; on resume, rows past the
    checkpoint are dropped (a killed run may have logged chunks it never checkpointed), and
    the last kept row stands for a run resumed after its final chunk. The kept rows are
    rewritten whole (a kill while rewriting leaves the old file)."""
    if not run_dir:
        return None, {}
    path = os.path.join(run_dir, "metrics.jsonl")
    kept: list[tuple[str, dict]] = []
    if start_chunk and os.path.isfile(path):
        with open(path) as f:
            kept = [(line, row) for line in f if (row := _parse_row(line)) is not None]
        kept = [(line, row) for line, row in kept if row["chunk"] < start_chunk]
    write_atomic(path, "".join(line for line, _ in kept))
    f = open(path, "a")  # noqa: SIM115 (closed by the caller)
    return f, (kept[-1][1] if kept else {})


def _parse_row(line: str) -> dict | None:
    """A whole metrics row, or None for a line a kill cut short (never checkpointed)."""
    if not line.endswith("\n"):
        return None
    try:
        row = json.loads(line)
    except json.JSONDecodeError:
        return None
    return row if isinstance(row, dict) and isinstance(row.get("chunk"), int) else None

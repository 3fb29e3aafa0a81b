"""The one host loop: every run (one algorithm, a population, a mixed ensemble, PQL's
parallel mode) is compiled, run chunk by chunk, guarded, checkpointed, logged and
summarized here.

Files in ``run_dir`` (when set): a fresh run first claims the directory
(:func:`hordax.training.host.rundir.claim`: refused if it holds a run unless
``overwrite=true``, which removes that run's files first), then writes the caller's
``files`` (the CLI's ``config.yaml``, the resolved config, and ``overrides.json``);
``metrics.jsonl`` (one JSON line per chunk), ``checkpoints/`` (orbax, every
``checkpoint.every`` chunks, the newest ``checkpoint.keep`` kept; see
:mod:`hordax.training.host.checkpoint`), ``params.msgpack`` (final agent parameters and
normalizer statistics, flax serialization) and ``summary.json`` (the final line). Files are
written whole or not at all (:func:`hordax.training.host.rundir.write_atomic`), so a run
killed at any moment and resumed ends with the files of an uninterrupted run.

What differs by trainer comes from the trainer (the
:class:`~hordax.training.core.types.Trainer` protocol: its chunk row, NaN guard and summary
fields) and from its driver: :class:`~hordax.training.host.programs.JitDriver` (jitted init
and chunk programs over the device mesh) or
:class:`~hordax.training.host.pql_parallel.ParallelDriver` (three host threads).

Extension point: ``hooks`` (:class:`ChunkHook`) run on the host after every chunk, before
its checkpoint, e.g. a curriculum that maps the chunk's row to new env params (its state
goes into the checkpoint with the train state; see ``docs/training.md``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from typing import Any, Protocol

import jax
from flax import serialization

from hordax import strict_json
from hordax.training.config import LoggerConfig, TrainConfig
from hordax.training.core.report import NonFiniteError, params_checksum
from hordax.training.core.types import Resolved
from hordax.training.host import sharding
from hordax.training.host.checkpoint import Checkpointer, NoCheckpointError
from hordax.training.host.logging import make_logger
from hordax.training.host.pql_parallel import ParallelDriver
from hordax.training.host.programs import JitDriver
from hordax.training.host.rundir import (
    RunDirError,
    claim,
    fault_point,
    locked,
    open_metrics,
    write_atomic,
)
from hordax.training.trainers import make_trainer

#: How the host runs a trainer, by the trainer's ``driver`` attribute.
DRIVERS = {"jit": JitDriver, "pql_parallel": ParallelDriver}


class ChunkHook(Protocol):
    """Host code run after every chunk (curricula, evaluation): ``after_chunk(driver, row)``
    may read and replace ``driver.state`` and add fields to ``row`` (it is written after);
    an optional ``summary(driver, saved) -> dict`` adds fields to the run's summary."""

    def after_chunk(self, driver: Any, row: dict) -> None: ...


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


def _claim_run_dir(
    run_dir: str, overwrite: bool, files: dict[str, str] | None, primary: bool
) -> None:
    """Process 0 claims a fresh run's directory (:func:`~hordax.training.host.rundir.claim`);
    every process then raises its refusal or goes on once the old run's files are gone (in a
    multi-process run a collective: no process opens the checkpoints before that)."""
    error = ""
    if primary:
        try:
            claim(run_dir, overwrite, files)
        except RunDirError as e:
            error = str(e)
    error = sharding.primary_str(error)
    if error:
        raise RunDirError(error)


def _finished_timings(run_dir: str | None, row: dict, checksum: str) -> dict:
    """The timings of a run resumed after its last chunk (this process trained nothing):
    those of the process that finished it. A finished run resumed again keeps its
    ``summary.json``'s (``wall_s``, ``compile_s``, ``sps``; that file's parameters must be
    these); a run stopped while writing its final files gets its last row's ``sps`` (the rate
    of the process that ran its last chunks; ``wall_s`` and ``compile_s`` go on as for any
    resumed run)."""
    if run_dir:
        try:
            with open(os.path.join(run_dir, "summary.json")) as f:
                old = json.load(f)
        except (OSError, ValueError):
            old = None
        keys = ("wall_s", "compile_s", "sps")
        if (
            isinstance(old, dict)
            and old.get("params_checksum") == checksum
            and all(isinstance(old.get(k), (int, float)) for k in keys)
        ):
            return {k: old[k] for k in keys}
    sps = row.get("sps")
    return {"sps": round(sps, 1)} if isinstance(sps, (int, float)) else {}


def train_and_log(
    cfg: TrainConfig,
    env: Any,
    env_params: Any,
    resolved: Resolved,
    hooks: tuple[ChunkHook, ...] = (),
    files: dict[str, str] | None = None,
) -> dict:
    """Train with progress, NaN guard, checkpoints and files; return the summary dict.

    A fresh run (``cfg.resume`` unset) claims ``cfg.run_dir`` first: a directory that holds
    a run is refused unless ``cfg.overwrite``, which removes that run's files; then
    ``files`` (name -> text: the CLI's ``config.yaml`` and ``overrides.json``) are written
    into it. A resumed run keeps its directory's files.

    The run holds a lock on ``run_dir`` from start to end
    (:func:`~hordax.training.host.rundir.locked`, process 0 of a multi-process run).

    Raises:
        RunDirError: a fresh run's ``run_dir`` holds a run and ``cfg.overwrite`` is false
            (the message names the directory and ``overwrite=true``; nothing is touched),
            or another process is running in ``run_dir``.
        NonFiniteError: the NaN guard stopped the run (the last good checkpoint is kept).
        CheckpointError: ``cfg.resume`` names a missing, corrupt or incompatible checkpoint,
            or a fresh run finds another run's checkpoints in ``run_dir``.
        KeyboardInterrupt: passed on after the files are closed (the last checkpoint stays).
    """
    # refusals of the config come before the run directory is locked or touched
    if jax.process_count() > 1 and cfg.ensemble.enabled:
        raise ValueError(
            f"distributed=true over {jax.process_count()} processes: agent=ensemble is not "
            "supported yet (run it in one process)"
        )
    with contextlib.ExitStack() as stack:
        if cfg.run_dir:  # the same on every process, so all of them reach the collective
            error = ""  # process 0 locks; every process raises its refusal (a collective)
            if sharding.is_primary():
                try:
                    stack.enter_context(locked(cfg.run_dir, create=not cfg.resume))
                except RunDirError as e:
                    error = str(e)
            error = sharding.primary_str(error)
            if error:
                raise RunDirError(error)
        return _train_and_log(cfg, env, env_params, resolved, hooks, files)


def _train_and_log(
    cfg: TrainConfig,
    env: Any,
    env_params: Any,
    resolved: Resolved,
    hooks: tuple[ChunkHook, ...],
    files: dict[str, str] | None,
) -> dict:
    run_dir = cfg.run_dir or None
    primary = sharding.is_primary()
    trainer = make_trainer(cfg, env, env_params, resolved)
    size = trainer.members
    t_start = time.perf_counter()
    driver = DRIVERS[trainer.driver](cfg, trainer)
    if run_dir and not cfg.resume:
        _claim_run_dir(run_dir, cfg.overwrite, files, primary)

    # --- fresh start or resume ----------------------------------------------------------
    ckpt = None
    if run_dir and cfg.resume and not os.path.isdir(os.path.join(run_dir, "checkpoints")):
        # before the Checkpointer, which would leave an empty checkpoints/ in the run
        raise NoCheckpointError(f"resume: {run_dir} has no checkpoint yet")
    if run_dir and (cfg.checkpoint.every > 0 or cfg.resume):
        # Every process: orbax writes each process's shards and lets process 0 commit.
        ckpt = Checkpointer(run_dir, keep=cfg.checkpoint.keep)
    start_chunk, metrics_file = 0, None
    try:  # the checkpointer is closed on every way out (its threads outlive an error)
        start_chunk = driver.start(ckpt, cfg)
        # Files, logs and the progress bar: process 0 only (every process computes the same
        # rows).
        metrics_file, row = open_metrics(run_dir if primary else None, start_chunk)
        fault_point("compile")
        driver.compile(start_chunk, resolved.num_chunks)
        compile_s = driver.compile_s
        if compile_s is None:
            compile_s = time.perf_counter() - t_start
        run_id = ckpt.run_id if ckpt is not None else None  # a resumed run: its W&B run
        logger = make_logger(cfg.logger if primary else LoggerConfig(), run_dir, cfg, run_id)
    except BaseException:
        if metrics_file:
            metrics_file.close()
        if ckpt is not None:
            ckpt.close()
        raise
    steps_per_chunk = resolved.chunk_updates * resolved.steps_per_update
    # A resumed run's clock goes on from its last kept row: rows' `wall_s` (training time
    # after compile) and the summary's add the earlier processes' training time up to the
    # checkpoint (their compile and any chunk computed after it are not counted).
    wall_before = float(row.get("wall_s", 0.0))  # a fresh run has no kept row: 0
    bar = progress_bar(
        cfg,
        resolved,
        f"{cfg.env.id} {driver.label}",
        initial=start_chunk * steps_per_chunk,
        enabled=primary,
    )
    t_run = time.perf_counter()
    chunks = driver.chunks(start_chunk, resolved.num_chunks)
    try:
        for c, metrics in chunks:
            fault_point("chunk")
            elapsed = time.perf_counter() - t_run
            env_steps = (c + 1) * steps_per_chunk
            row = {"chunk": c, "env_steps": env_steps, "wall_s": round(wall_before + elapsed, 3)}
            row["sps"] = (c + 1 - start_chunk) * steps_per_chunk * size / elapsed
            row.update(driver.row(metrics))
            for hook in hooks:
                hook.after_chunk(driver, row)
            if metrics_file:
                metrics_file.write(strict_json.dumps(row) + "\n")
                metrics_file.flush()
                fault_point("metrics")
            driver.check_finite(metrics, c)
            every = cfg.checkpoint.every
            if (
                ckpt is not None
                and every > 0
                and ((c + 1) % every == 0 or c + 1 == resolved.num_chunks)
            ):
                ckpt.save(c + 1, driver.state)
            logger.log({k: v for k, v in row.items() if k != "members"}, step=env_steps)
            bar.update(steps_per_chunk)
            bar.set_postfix(ret=f"{row['episode_return']:.1f}", sps=f"{row['sps']:.3g}")
    except NonFiniteError as e:
        last = ckpt.latest_step() if ckpt is not None else None
        if last is not None:
            kept = f"last good checkpoint: {os.path.join(ckpt.dir, str(last))}"
        else:
            kept = driver.not_kept()
            if kept and cfg.checkpoint.every > 0:  # on, but the guard stopped it before one
                every = cfg.checkpoint.every
                kept = (
                    f"no checkpoint kept yet (checkpoint.every={every}: the first is written "
                    f"after chunk {every} of {resolved.num_chunks})"
                )
        raise NonFiniteError(f"{e}; training stopped, {kept}" if kept else str(e)) from None
    finally:
        chunks.close()  # a driver with threads (PQL parallel) stops them here
        bar.close()
        if metrics_file:
            metrics_file.close()
        if ckpt is not None:
            ckpt.close()
    run_s = driver.run_s if driver.run_s is not None else time.perf_counter() - t_run

    saved = driver.saved()
    if run_dir and primary:
        write_atomic(os.path.join(run_dir, "params.msgpack"), serialization.to_bytes(saved))
    ran_steps = (resolved.num_chunks - start_chunk) * steps_per_chunk * size
    checksum = params_checksum(saved)
    timings = {
        "wall_s": round(wall_before + time.perf_counter() - t_start, 3),
        "compile_s": round(compile_s, 3),
        "sps": round(ran_steps / run_s, 1) if run_s > 0 else math.nan,
    }
    if start_chunk and start_chunk == resolved.num_chunks:  # resumed with nothing left to run
        timings.update(_finished_timings(run_dir if primary else None, row, checksum))
    summary: dict[str, Any] = {
        "env": cfg.env.id,
        "agent": cfg.agent.name,
        "seed": cfg.seed,
        "env_steps": resolved.env_steps,
        **timings,
        "final_return": row.get("episode_return", math.nan),
        "final_episode_length": row.get("episode_length", math.nan),
        "params_checksum": checksum,
        "metrics": {k[len("task/") :]: v for k, v in row.items() if k.startswith("task/")},
        "devices": driver.devices,
        "processes": jax.process_count(),
        "resumed_from_chunk": start_chunk if cfg.resume else None,
        "run_dir": run_dir,
    }
    summary.update(trainer.summary(saved, row))
    summary.update(driver.summary)
    for hook in hooks:  # e.g. the curriculum's level, the last evaluation
        if hasattr(hook, "summary"):
            summary.update(hook.summary(driver, saved))
    if run_dir and primary:
        write_atomic(os.path.join(run_dir, "summary.json"), strict_json.dumps(summary, indent=1))
    logger.finish(summary)
    return summary

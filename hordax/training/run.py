"""Run a trainer on the host: compile, run chunks, show progress, write the run directory.

Files in ``run_dir`` (when set): ``config.yaml`` (resolved config, written by the CLI),
``metrics.jsonl`` (one JSON line per chunk), ``params.msgpack`` (final agent parameters
and normalizer statistics, flax serialization) and ``summary.json`` (the final line).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from typing import Any

import jax
import numpy as np
from flax import serialization

from hordax.training import sharding
from hordax.training.config import Resolved, TrainConfig
from hordax.training.logging import make_logger
from hordax.training.on_policy import OnPolicyTrainer, TrainState


def params_checksum(tree: Any) -> str:
    """A stable hash of a pytree of arrays (leaf order, dtype, shape and bytes)."""
    h = hashlib.sha256()
    for leaf in jax.tree.leaves(jax.device_get(tree)):
        arr = np.ascontiguousarray(np.asarray(leaf))
        h.update(f"{arr.dtype.str}{arr.shape}".encode())
        h.update(arr.tobytes())
    return h.hexdigest()[:16]


def normalizer_stats(env_state: Any) -> dict[str, Any]:
    """Running statistics held by normalization wrappers in a batch env state."""
    out: dict[str, Any] = {}
    node = env_state
    while node is not None:
        for name in ("obs_stats", "return_stats"):
            if hasattr(node, name):
                out[name] = getattr(node, name)
        node = getattr(node, "env_state", None)
    return out


def saved_agent(state: TrainState) -> dict[str, Any]:
    """What is saved with the agent: parameters plus normalizer statistics."""
    return {"params": state.agent.params, "normalizer": normalizer_stats(state.env_state)}


def summarize_chunk(metrics: dict[str, np.ndarray]) -> dict[str, float]:
    """Chunk means: episode statistics weighted by episode count, others plain means."""
    count = float(np.sum(metrics["episode_count"]))
    row: dict[str, float] = {"episodes": count}
    for name, value in metrics.items():
        if name == "episode_count":
            continue
        if name.endswith("_sum"):
            row[name[: -len("_sum")]] = float(np.sum(value)) / count if count else math.nan
        else:
            row[name] = float(np.mean(value))
    return row


def train_and_log(cfg: TrainConfig, env: Any, env_params: Any, resolved: Resolved) -> dict:
    """Train with progress and files; return the summary dict (the CLI's JSON line)."""
    from tqdm.auto import tqdm

    run_dir = cfg.run_dir or None
    trainer = OnPolicyTrainer(cfg.trainer, cfg.agent, env, env_params, resolved)
    logger = make_logger(cfg.logger, run_dir, cfg)
    t_start = time.perf_counter()
    key = jax.random.key(cfg.seed)
    min_envs = cfg.mesh.min_envs_per_device if cfg.mesh.data == -1 else 1
    mesh = sharding.fit_data_axis(sharding.make_mesh(cfg.mesh), cfg.trainer.num_envs, min_envs)
    shardings = sharding.train_state_shardings(
        jax.eval_shape(trainer.init, key), mesh, cfg.trainer.num_envs
    )
    init = jax.jit(trainer.init, out_shardings=shardings).lower(key).compile()
    state = init(key)
    chunk = (
        jax.jit(
            trainer.run_chunk,
            static_argnums=1,
            in_shardings=(shardings,),
            out_shardings=(shardings, None),
        )
        .lower(state, resolved.chunk_updates)
        .compile()
    )
    compile_s = time.perf_counter() - t_start

    metrics_file = open(os.path.join(run_dir, "metrics.jsonl"), "w") if run_dir else None  # noqa: SIM115
    bar = tqdm(
        total=resolved.env_steps,
        unit="step",
        unit_scale=True,
        disable=not cfg.progress,
        dynamic_ncols=True,
        desc=f"{cfg.env.id} {cfg.agent.name}",
    )
    t_run = time.perf_counter()
    row: dict[str, float] = {}
    try:
        for c in range(resolved.num_chunks):
            state, metrics = chunk(state)
            metrics = jax.device_get(metrics)  # blocks: timings below are real
            elapsed = time.perf_counter() - t_run
            env_steps = (c + 1) * resolved.chunk_updates * resolved.steps_per_update
            row = {
                "chunk": c,
                "env_steps": env_steps,
                "wall_s": round(elapsed, 3),
                "sps": env_steps / elapsed,
                **summarize_chunk(metrics),
            }
            if metrics_file:
                metrics_file.write(json.dumps(row) + "\n")
                metrics_file.flush()
            logger.log(row, step=env_steps)
            bar.update(resolved.chunk_updates * resolved.steps_per_update)
            bar.set_postfix(ret=f"{row['episode_return']:.1f}", sps=f"{row['sps']:.3g}")
    finally:
        bar.close()
        if metrics_file:
            metrics_file.close()
    run_s = time.perf_counter() - t_run
    saved = saved_agent(state)
    if run_dir:
        with open(os.path.join(run_dir, "params.msgpack"), "wb") as f:
            f.write(serialization.to_bytes(jax.device_get(saved)))
    summary = {
        "env": cfg.env.id,
        "agent": cfg.agent.name,
        "seed": cfg.seed,
        "env_steps": resolved.env_steps,
        "wall_s": round(time.perf_counter() - t_start, 3),
        "compile_s": round(compile_s, 3),
        "sps": round(resolved.env_steps / run_s, 1),
        "final_return": row.get("episode_return", math.nan),
        "final_episode_length": row.get("episode_length", math.nan),
        "params_checksum": params_checksum(saved),
        "metrics": {k[len("task/") :]: v for k, v in row.items() if k.startswith("task/")},
        "devices": int(mesh.devices.size),
        "run_dir": run_dir,
    }
    if run_dir:
        with open(os.path.join(run_dir, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
    logger.finish(summary)
    return summary

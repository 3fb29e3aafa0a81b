"""Throughput measurements behind ``hordax bench`` (no hydra here; the CLI composes).

- ``mode=random``: env steps/s of ``num_envs`` environments stepped with uniformly random
  actions inside one jitted ``lax.scan``, through the same wrapper stack the trainers use
  (``VecEnv(LogEpisode(ClipAction(env)))``, amortized fresh resets per ``reset_pool``), the
  batch sharded over the mesh's ``data`` axis. With ``baseline=true`` the bare
  ``jax.vmap(env.step)`` of the same env (gymnax's own API, no hordax wrapper) is timed in
  the same process on the same mesh, and
  ``overhead_pct`` is how much slower hordax's stack is (negative where the stack's
  amortized resets save more than its wrappers cost; ``reset_pool=0`` compares like for like).
- ``mode=train``: env steps/s of whole PPO updates (rollout, GAE, minibatch epochs) at
  ``num_envs``, through the trainer's own sharded chunk program.

Random mode is timed by the shared harness (:mod:`hordax.benchmarking.harness`): the last
step's every output (observation, reward, done flags, ``info``) stays in the timed scan's
carry, so XLA computes all of them on both sides, and the two programs' runs interleave.
Compile time is measured apart from run time; ``sps`` is the median over ``repeats``
timed runs after compilation (``sps_min``/``sps_max`` their spread). Each measurement
is one dict (the CLI prints it as one JSON line and appends it to ``results.csv``;
:func:`plot_csv` draws steps/s against ``num_envs``).
"""

from __future__ import annotations

import csv
import os
import platform
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from hordax.agents.ppo import PPOConfig
from hordax.benchmarking import harness
from hordax.benchmarking.subjects import action_sampler, batch_subject, vmap_subject
from hordax.envs.registry import make
from hordax.training.config import EnvConfig, MeshConfig, TrainConfig, TrainerConfig, validate_mesh
from hordax.training.core.env_stack import make_env_stack
from hordax.training.host import sharding
from hordax.training.host.programs import make_programs
from hordax.training.trainers import PPOTrainer, validate

CSV_FIELDS = (
    "mode",
    "env",
    "num_envs",
    "steps",
    "devices",
    "device_kind",
    "compile_s",
    "run_s",
    "sps",
    "sps_min",
    "sps_max",
    "baseline_sps",
    "overhead_pct",
    "load_before",
    "load_after",
    "jax",
)


@dataclass
class BenchConfig:
    """``hordax bench`` (hordax/configs/bench.yaml)."""

    env: EnvConfig = field(default_factory=EnvConfig)
    """Env id, constructor kwargs and params overrides (``env=<id>`` sets ``env.id``)."""
    num_envs: int = 4096
    """Parallel environments."""
    steps: int = 1000
    """Steps per environment in one timed run (train mode: rounded to whole updates)."""
    mode: str = "random"
    """'random' (random-action env stepping) or 'train' (PPO training steps/s)."""
    repeats: int = 5
    """Timed runs after compilation (interleaved with the baseline's); the median is reported."""
    baseline: bool = True
    """random mode: also time the bare vmapped env.step (gymnax API) in the same process."""
    rollout_length: int = 32
    """train mode: steps per env per PPO update."""
    num_minibatches: int = 4
    """train mode: PPO minibatches per epoch."""
    reset_pool: int = -1
    """Fresh resets per step in the env stack (VecEnv): -1 auto, 0 off (in-step), k >= 1."""
    mesh: MeshConfig = field(default_factory=MeshConfig)
    results: str = "results.csv"
    """CSV (appended) in the output directory; a PNG plot is drawn beside it."""


def validate_bench(cfg: BenchConfig) -> None:
    """Host-side checks; ``ValueError`` names the key, the value and what is allowed."""
    if cfg.mode not in ("random", "train"):
        raise ValueError(f"mode={cfg.mode}: allowed values are ['random', 'train']")
    validate_mesh(cfg.mesh)
    for key in ("num_envs", "steps", "repeats", "rollout_length", "num_minibatches"):
        if int(getattr(cfg, key)) < 1:
            raise ValueError(f"{key}={getattr(cfg, key)}: must be an integer >= 1")
    if int(cfg.reset_pool) < -1:
        raise ValueError(
            f"reset_pool={cfg.reset_pool}: must be -1 (auto), 0 (off: in-step reset of every "
            "env) or an integer >= 1"
        )
    if not cfg.results.lower().endswith(".csv") or not os.path.basename(cfg.results)[:-4]:
        raise ValueError(
            f"results={cfg.results!r}: must be a file name ending in .csv (the plot is"
            " written beside it as .png)"
        )
    if cfg.mode == "train" and (cfg.num_envs * cfg.rollout_length) % cfg.num_minibatches:
        raise ValueError(
            f"num_minibatches={cfg.num_minibatches}: must divide num_envs * rollout_length = "
            f"{cfg.num_envs * cfg.rollout_length}"
        )


def _timed(fn: Any, state: Any, repeats: int) -> tuple[float, float, Any]:
    """(compile_s, median run_s) of ``fn(state)``; ``fn`` is a jitted function."""
    t = time.perf_counter()
    compiled = fn.lower(state).compile()
    compile_s = time.perf_counter() - t
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        state = jax.block_until_ready(compiled(state))
        times.append(time.perf_counter() - t)
    return compile_s, statistics.median(times), state


def measure_random(cfg: BenchConfig) -> dict[str, Any]:
    """Random-action env steps/s of hordax's wrapper stack (and the bare env as baseline),
    timed by :func:`hordax.benchmarking.harness.compare` (every output of every step kept)."""
    env, params = _make(cfg)
    mesh = sharding.train_mesh(cfg.mesh, cfg.num_envs)
    n = cfg.num_envs
    batch = NamedSharding(mesh, P(sharding.DATA_AXIS))
    repl = NamedSharding(mesh, P())

    def shard(tree: Any) -> Any:
        # Every array with an axis is a batch [B, ...]; keys and scalars are replicated.
        return jax.tree.map(lambda x: jax.device_put(x, batch if x.ndim else repl), tree)

    stack = make_env_stack(env, None, n, cfg.reset_pool)
    sides = [batch_subject(stack, params, n, "hordax", f"VecEnv(reset_pool={cfg.reset_pool})")]
    if cfg.baseline:
        sides.append(vmap_subject(env, params, n, "bare", library="gymnax"))
    rows = harness.compare(
        sides, action_sampler(env, params, n), cfg.steps, cfg.repeats, place=shard
    )
    row = _row(cfg, mesh, rows[0]["compile_s"], rows[0]["run_s"], cfg.steps * n)
    row.update(sps_min=rows[0]["sps_min"], sps_max=rows[0]["sps_max"])
    row.update(load_before=rows[0]["load_before"], load_after=rows[0]["load_after"])
    if cfg.baseline:
        row["baseline_sps"] = rows[1]["sps"]
        row["overhead_pct"] = round(100.0 * (rows[0]["run_s"] / rows[1]["run_s"] - 1.0), 2)
    return row


def measure_train(cfg: BenchConfig) -> dict[str, Any]:
    """PPO training env steps/s (whole updates) at ``num_envs``."""
    env, params = _make(cfg)
    updates = max(1, cfg.steps // cfg.rollout_length)
    steps_per_update = cfg.num_envs * cfg.rollout_length
    train_cfg = TrainConfig(
        trainer=TrainerConfig(
            num_envs=cfg.num_envs,
            rollout_length=cfg.rollout_length,
            total_env_steps=updates * steps_per_update,
            num_chunks=1,
            reset_pool=cfg.reset_pool,
        ),
        agent=PPOConfig(num_minibatches=cfg.num_minibatches),
        mesh=cfg.mesh,
    )
    resolved = validate(train_cfg)
    progs = make_programs(
        train_cfg, PPOTrainer(train_cfg.trainer, train_cfg.agent, env, params, resolved)
    )
    state = progs.init(*progs.init_args)
    compile_s, run_s, _ = _timed(jax.jit(lambda s: progs.chunk(s)[0]), state, cfg.repeats)
    return _row(cfg, progs.mesh, compile_s, run_s, resolved.env_steps)


def _make(cfg: BenchConfig) -> tuple[Any, Any]:
    return make(cfg.env.id, params=dict(cfg.env.params), **dict(cfg.env.kwargs))


def _row(cfg: BenchConfig, mesh: Any, compile_s: float, run_s: float, steps: int) -> dict:
    return {
        "mode": cfg.mode,
        "env": cfg.env.id,
        "num_envs": cfg.num_envs,
        "steps": steps,
        "devices": int(mesh.devices.size),
        "device_kind": f"{jax.devices()[0].device_kind} ({platform.machine()}, "
        f"{os.cpu_count()} cores)",
        "compile_s": round(compile_s, 3),
        "run_s": round(run_s, 6),
        "sps": round(steps / run_s, 1),
        "reset_pool": cfg.reset_pool,
        "jax": jax.__version__,
    }


def run_bench(cfg: BenchConfig) -> dict[str, Any]:
    validate_bench(cfg)
    return measure_random(cfg) if cfg.mode == "random" else measure_train(cfg)


def append_csv(path: str, row: dict[str, Any]) -> None:
    """Append ``row`` (the :data:`CSV_FIELDS`) to ``path``, writing a header if new."""
    new = not os.path.isfile(path)
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        if new:
            w.writeheader()
        w.writerow({k: row.get(k, "") for k in CSV_FIELDS})


def plot_csv(path: str, png: str) -> None:
    """Steps/s against num_envs (log-log), one line per (mode, env) and per baseline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(path) as f:
        rows = list(csv.DictReader(f))
    series: dict[str, list[tuple[int, float]]] = {}
    for r in rows:
        series.setdefault(f"{r['env']} ({r['mode']}, hordax)", []).append(
            (int(r["num_envs"]), float(r["sps"]))
        )
        if r.get("baseline_sps"):
            series.setdefault(f"{r['env']} ({r['mode']}, bare gymnax vmap)", []).append(
                (int(r["num_envs"]), float(r["baseline_sps"]))
            )
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, pts in sorted(series.items()):
        pts.sort()
        ax.plot(
            [p[0] for p in pts],
            [p[1] for p in pts],
            marker="o",
            linestyle="--" if "gymnax" in label else "-",
            label=label,
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("num_envs")
    ax.set_ylabel("env steps / s")
    kind = rows[0]["device_kind"] if rows else ""
    ax.set_title(f"hordax bench ({kind})", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)

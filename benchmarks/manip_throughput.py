"""Random-action env steps/s of a manipulation task: hordax (MJX) beside MuJoCo C's
``mujoco.rollout`` on the same compiled model, in one run, for several ``num_envs``.

hordax side: ``hordax bench``'s random mode (:func:`hordax.training.bench.measure_random`):
``jit(scan)`` of the trainer's env stack (``VecEnv(LogEpisode(ClipAction(env)))``, fresh
auto-resets through the reset pool, rewards and episode ends consumed) with uniformly random
actions, the batch sharded over one host device per core (``use_all_cpu_cores``; the mesh
puts >= 128 envs on a device, so small batches run on one), compile timed apart, median of
``--repeats`` timed runs of ``--steps`` steps per env.

MuJoCo C side: ``mujoco.rollout.rollout`` (C++ threads, one ``MjData`` per thread,
``nthread`` = all cores by default, a persistent thread pool) of the env's own compiled
``MjModel`` (``env.model``, the model MJX was built from, float64), ``num_envs`` open-loop
trajectories of ``steps x n_substeps`` physics steps from the env's reset pose, each env
step's control drawn uniformly in the actuator ranges and held for ``n_substeps`` physics
steps (as the env holds its joint targets). Physics only: no observations, rewards or resets,
so the ratio is an upper bound on what C would cost as an env. Output arrays are allocated
once, outside the timed calls. Env steps/s = num_envs x steps / s.

Works for any manipulation id (the family's envs carry ``model`` and ``n_substeps``)::

    PYTHONPATH=$PWD python benchmarks/manip_throughput.py --env Manip-Reach-v0 \\
        --num-envs 16 64 256 1024 --steps 100 --repeats 5

Rows of this env replace its earlier rows in ``--csv`` (default
``benchmarks/manip_throughput.csv``; other envs' rows stay), and ``--png`` draws every env
in the CSV. Results go to ``benchmarks/RESULTS.md`` by hand, with the command.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import statistics
import time

from hordax.training.host.sharding import use_all_cpu_cores

use_all_cpu_cores()  # before jax initializes: one host device per core

import jax  # noqa: E402
import mujoco  # noqa: E402
import mujoco.rollout  # noqa: E402
import numpy as np  # noqa: E402

import hordax  # noqa: E402
from hordax.training.bench import BenchConfig, measure_random  # noqa: E402
from hordax.training.config import EnvConfig  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIELDS = (
    "env",
    "num_envs",
    "steps",
    "n_substeps",
    "hordax_sps",
    "hordax_compile_s",
    "hordax_devices",
    "mujoco_c_sps",
    "mujoco_c_nthread",
    "ratio_hordax_over_c",
    "load1",
    "machine",
)


def c_rollout_sps(
    model: mujoco.MjModel,
    qpos0: np.ndarray,
    num_envs: int,
    steps: int,
    n_substeps: int,
    nthread: int,
    repeats: int,
    seed: int = 0,
) -> float:
    """Median env steps/s of ``mujoco.rollout.rollout`` over ``repeats`` timed calls (one
    untimed warm-up call first: thread pool start, page faults of the output buffers)."""
    rng = np.random.default_rng(seed)
    low, high = model.actuator_ctrlrange[:, 0], model.actuator_ctrlrange[:, 1]
    ctrl = rng.uniform(low, high, (num_envs, steps, model.nu))
    control = np.repeat(ctrl, n_substeps, axis=1)  # held for n_substeps physics steps
    data = mujoco.MjData(model)
    data.qpos[:] = qpos0
    mujoco.mj_forward(model, data)
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state0 = np.empty(mujoco.mj_stateSize(model, spec))
    mujoco.mj_getState(model, data, state0, spec)
    initial = np.tile(state0, (num_envs, 1))
    nstep = steps * n_substeps
    out = np.empty((num_envs, nstep, state0.size))
    sens = np.empty((num_envs, nstep, model.nsensordata))
    datas = [mujoco.MjData(model) for _ in range(nthread)]

    def call() -> float:
        t = time.perf_counter()
        mujoco.rollout.rollout(
            model, datas, initial, control, state=out, sensordata=sens, persistent_pool=True
        )
        return time.perf_counter() - t

    call()
    assert np.all(np.isfinite(out[:, -1])), "MuJoCo C rollout diverged"
    moved = np.abs(out[:, -1, 1 : 1 + model.nq] - qpos0).max()
    assert moved > 1e-3, "the C rollout did not move the joints (controls not applied?)"
    return num_envs * steps / statistics.median(call() for _ in range(repeats))


def measure(env_id: str, num_envs: int, steps: int, repeats: int, nthread: int) -> dict:
    env, params = hordax.make(env_id)
    missing = [a for a in ("model", "n_substeps") if not hasattr(env, a)]
    if missing:
        raise ValueError(f"--env {env_id}: not an MJX manipulation env (no {missing})")
    cfg = BenchConfig(
        env=EnvConfig(id=env_id),
        num_envs=num_envs,
        steps=steps,
        repeats=repeats,
        baseline=False,
    )
    row = measure_random(cfg)
    _, state = env.reset(jax.random.key(0), params)
    qpos0 = np.asarray(getattr(state, "qpos", env.model.qpos0), np.float64)
    c_sps = c_rollout_sps(env.model, qpos0, num_envs, steps, env.n_substeps, nthread, repeats)
    return {
        "env": env_id,
        "num_envs": num_envs,
        "steps": steps,
        "n_substeps": env.n_substeps,
        "hordax_sps": round(row["sps"], 1),
        "hordax_compile_s": row["compile_s"],
        "hordax_devices": row["devices"],
        "mujoco_c_sps": round(c_sps, 1),
        "mujoco_c_nthread": nthread,
        "ratio_hordax_over_c": round(row["sps"] / c_sps, 3),
        "load1": round(os.getloadavg()[0], 2),
        "machine": f"{jax.devices()[0].device_kind}, {platform.machine()}, {os.cpu_count()} "
        f"cores, jax {jax.__version__}, mujoco {mujoco.__version__}",
    }


def write_csv(path: str, env_id: str, rows: list[dict]) -> list[dict]:
    """Replace ``env_id``'s rows in ``path`` by ``rows``; returns every row now in it."""
    kept = []
    if os.path.isfile(path):
        with open(path) as f:
            kept = [r for r in csv.DictReader(f) if r["env"] != env_id]
    allrows = kept + rows
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows({k: r.get(k, "") for k in FIELDS} for r in allrows)
    return allrows


def plot(rows: list[dict], png: str) -> None:
    """Env steps/s against num_envs (log-log): hordax solid, MuJoCo C dashed, per env."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for env_id in sorted({r["env"] for r in rows}):
        mine = sorted((r for r in rows if r["env"] == env_id), key=lambda r: int(r["num_envs"]))
        n = [int(r["num_envs"]) for r in mine]
        line = ax.plot(n, [float(r["hordax_sps"]) for r in mine], "o-", label=f"{env_id} hordax")
        ax.plot(
            n,
            [float(r["mujoco_c_sps"]) for r in mine],
            "s--",
            color=line[0].get_color(),
            label=f"{env_id} MuJoCo C rollout ({mine[0]['mujoco_c_nthread']} threads)",
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("num_envs")
    ax.set_ylabel("env steps / s (random actions)")
    loads = [float(r["load1"]) for r in rows]
    ax.set_title(
        f"manipulation throughput, CPU ({rows[0]['machine']}; load {min(loads):g}-{max(loads):g})",
        fontsize=8,
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--env", default="Manip-Reach-v0", help="a manipulation id")
    ap.add_argument("--num-envs", type=int, nargs="+", default=[16, 64, 256, 1024])
    ap.add_argument("--steps", type=int, default=100, help="env steps per env per timed run")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--nthread", type=int, default=os.cpu_count() or 1, help="C threads")
    ap.add_argument("--csv", default=os.path.join(HERE, "manip_throughput.csv"))
    ap.add_argument("--png", default=os.path.join(HERE, "manip_throughput.png"))
    args = ap.parse_args()
    for key in ("steps", "repeats", "nthread"):
        if getattr(args, key) < 1:
            ap.error(f"--{key}={getattr(args, key)}: must be an integer >= 1")
    if min(args.num_envs) < 1:
        ap.error(f"--num-envs={args.num_envs}: every value must be an integer >= 1")
    rows = []
    for n in args.num_envs:
        row = measure(args.env, n, args.steps, args.repeats, args.nthread)
        print(row, flush=True)
        rows.append(row)
        # after each size, so a run cut short by a time limit keeps the sizes it finished
        plot(write_csv(args.csv, args.env, rows), args.png)
        print(f"wrote {args.csv} and {args.png}")


if __name__ == "__main__":
    main()

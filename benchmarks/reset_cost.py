"""What auto-reset costs per batch step: ``step_env`` alone vs gymnax's in-step reset vs
``VecEnv``'s amortized fresh resets (issue #12).

    python benchmarks/reset_cost.py --num-envs 1024 16384 --json out.json

Per env id and ``num_envs``, three programs, each one ``jit(scan)`` of ``--steps`` random-action
batch steps (rewards and episode ends consumed in the carry, so nothing is dead code):

- ``step_env``: ``vmap`` of ``step_env`` + ``is_truncated`` (no reset at all; finished
  episodes keep stepping). The floor.
- ``plain``: ``VecEnv(env, n, reset_pool=0)``, i.e. ``vmap(env.step)``: ``reset_env`` for every
  env every step, then a select.
- ``pool``: ``VecEnv(env, n)`` with the default pool (``ceil(n / 64)`` resets per step;
  ``--pools`` adds other sizes).

Timed runs are chained (each starts where the previous one stopped, so synchronized
truncation bursts land in the window in proportion) and interleaved between programs; the
median is reported, compile time apart. The ``pool`` rows also report how many episodes
ended per step and on how many steps more than ``k`` ended (extra rounds). Each
``num_envs`` table runs in its own process (``--one``, spawned by the parent).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from typing import Any

import jax
import jax.numpy as jnp

from hordax import strict_json

IDS = [
    "Grid-FourRooms-v0",
    "Grid-DoorKey-8x8-v0",
    "Grid-XLand-R1-9x9-v0",
    "Aerial-Navigate-v0",
    "Aerial-Hover-v0",
]


def programs(env_id: str, n: int, steps: int, pools: list[int]) -> dict[str, tuple]:
    """name -> (jitted ``carry -> carry``, initial carry, pool size or None)."""
    import hordax
    from hordax.envs.core import step_no_reset
    from hordax.envs.wrappers import VecEnv

    env, params = hordax.make(env_id)
    space = env.action_space(params)

    def make(step_batch: Any, k: int | None) -> tuple:
        def run(carry: tuple) -> tuple:
            def body(c: tuple, _: None) -> tuple:
                key, state, obs_sum, reward_sum, ends, over = c
                key, key_act, key_step = jax.random.split(key, 3)
                action = jax.vmap(space.sample)(jax.random.split(key_act, n))
                obs, state, reward, terminated, truncated, _ = step_batch(key_step, state, action)
                done = (terminated | truncated).astype(jnp.int32)
                # consume obs as well: the camera / grid view must not be dead code
                obs_sum = obs_sum + sum(
                    jnp.sum(x.astype(jnp.float32)) for x in jax.tree.leaves(obs)
                )
                num_done = jnp.sum(done)
                over = over + (num_done > (k or n)).astype(jnp.int32)
                return (
                    key,
                    state,
                    obs_sum,
                    reward_sum + jnp.sum(reward),
                    ends + num_done,
                    over,
                ), None

            return jax.lax.scan(body, carry, None, length=steps)[0]

        vec = VecEnv(env, n, reset_pool=0)
        _, state = vec.reset(jax.random.key(0), params)
        zero_f, zero_i = jnp.float32(0), jnp.int32(0)
        carry = (jax.random.key(1), state, zero_f, zero_f, zero_i, zero_i)
        return jax.jit(run), carry, k

    def bare(key: jax.Array, state: Any, action: Any) -> tuple:
        keys = jax.random.split(key, n)
        return jax.vmap(lambda k, s, a: step_no_reset(env, k, s, a, params))(keys, state, action)

    out = {"step_env": make(bare, None)}
    plain = VecEnv(env, n, reset_pool=0)
    out["plain"] = make(lambda k, s, a: plain.step(k, s, a, params), None)
    for pool in pools:
        vec = VecEnv(env, n, reset_pool=pool)
        name = "pool" if pool == -1 else f"pool={vec.reset_pool}"
        out[name] = make(lambda k, s, a, vec=vec: vec.step(k, s, a, params), vec.reset_pool)
    return out


def measure_table(n: int, ids: list[str], steps: int, repeats: int, pools: list[int]) -> list:
    rows = []
    for env_id in ids:
        progs = programs(env_id, n, steps, pools)
        compiled, carries, compile_s = {}, {}, {}
        for name, (fn, carry, _) in progs.items():
            t = time.perf_counter()
            compiled[name] = fn.lower(carry).compile()
            compile_s[name] = time.perf_counter() - t
            carries[name] = jax.block_until_ready(compiled[name](carry))  # warm-up run
        times: dict[str, list[float]] = {name: [] for name in progs}
        for _ in range(repeats):  # interleaved, chained
            for name in progs:
                t = time.perf_counter()
                carries[name] = jax.block_until_ready(compiled[name](carries[name]))
                times[name].append(time.perf_counter() - t)
        base = statistics.median(times["step_env"])
        for name, (_, _, k) in progs.items():
            run_s = statistics.median(times[name])
            total_steps = steps * (repeats + 1)  # warm-up included in the episode counters
            row = {
                "env": env_id,
                "num_envs": n,
                "program": name,
                "reset_pool": k,
                "compile_s": round(compile_s[name], 3),
                "run_s": round(run_s, 6),
                "sps": round(steps * n / run_s, 1),
                "x_step_env": round(run_s / base, 3),
            }
            if name != "step_env":
                row["ends_per_step"] = round(int(carries[name][4]) / total_steps, 2)
            if k is not None:
                row["overflow_steps_pct"] = round(100.0 * int(carries[name][5]) / total_steps, 2)
            rows.append(row)
            print(strict_json.dumps(row), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-envs", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--ids", nargs="+", default=IDS)
    parser.add_argument("--steps", type=int, default=200, help="batch steps per timed run")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--pools", type=int, nargs="+", default=[-1], help="VecEnv reset_pool values (-1 auto)"
    )
    parser.add_argument("--json", default="", help="write all rows (and the machine) here")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:  # child: one table, rows as JSON lines on stdout
        measure_table(args.num_envs[0], args.ids, args.steps, args.repeats, args.pools)
        return
    machine = {
        "device": f"{jax.devices()[0].device_kind} ({platform.machine()}, {os.cpu_count()} cores)",
        "jax": jax.__version__,
        "load_avg": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }
    print(strict_json.dumps(machine), flush=True)
    rows = []
    for n in args.num_envs:
        cmd = [sys.executable, __file__, "--one", "--num-envs", str(n), "--steps", str(args.steps)]
        cmd += ["--repeats", str(args.repeats), "--ids", *args.ids]
        cmd += ["--pools", *map(str, args.pools)]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
        table = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        rows += table
        print(f"\nnum_envs={n}  ({machine['device']})")
        print(f"{'env':24s} {'program':10s} {'steps/s':>12s} {'x step_env':>10s} {'compile s':>9s}")
        for r in table:
            print(
                f"{r['env']:24s} {r['program']:10s} {r['sps']:12,.0f} {r['x_step_env']:10.2f} "
                f"{r['compile_s']:9.2f}"
            )
    if args.json:
        with open(args.json, "w") as f:
            strict_json.dump({"machine": machine, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

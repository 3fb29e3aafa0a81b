"""Random-action env steps/s: hordax's MPE vs JaxMARL's MPE (``jaxmarl`` 0.2.0), same process.

Both sides: ``num_envs`` envs of the same scenario (PettingZoo's defaults: simple_spread 3
agents, simple_tag 3 adversaries + 1 good agent + 2 obstacles), every agent picks a uniform
discrete action (5 moves), fresh auto-resets after 25 steps, one jitted ``lax.scan`` over
``steps`` of ``vmap(step)``; all rewards are summed in the carry so neither side can drop
work. hordax steps ``VecEnv(env, num_envs)`` (its batch layer: amortized fresh resets, a pool
of ``--reset-pool`` resets per step, default ``ceil(num_envs / 64)``; ``0`` is gymnax's
in-step reset of every env, as JaxMARL does); JaxMARL steps ``jax.vmap(env.step)`` over dicts
of per-agent actions (its own auto-reset). An env step is one step of one env (all agents).
Compile excluded (reported apart), median of ``--repeats`` interleaved runs, the load average
printed beside every row. Writes ``--csv`` and, with more than one ``--num-envs``, ``--png``.
``--breakdown`` instead times hordax's step part by part (actions, physics, observations and
rewards, resets), the profile behind the table.

    pip install jaxmarl==0.2.0      # the bench extra; it shares hordax's pinned jax
    python benchmarks/mpe_vs_jaxmarl.py --num-envs 64 256 1024 4096 16384 --steps 100
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import time

import jax
import jax.numpy as jnp

import hordax
from hordax.envs.wrappers import VecEnv

PAIRS = [  # hordax id, JaxMARL id
    ("MPE-SimpleSpread-v0", "MPE_simple_spread_v3"),
    ("MPE-SimpleTag-v0", "MPE_simple_tag_v3"),
]


def hordax_program(env_id: str, n: int, steps: int, reset_pool: int):
    env, params = hordax.make(env_id)
    vec = VecEnv(env, n, reset_pool=reset_pool)
    _, state = vec.reset(jax.random.key(0), params)
    nvec = jnp.asarray(env.action_space(params).nvec)

    def run(carry):
        def body(c, _):
            key, state, total = c
            key, k_act, k_step = jax.random.split(key, 3)
            action = jax.random.randint(k_act, (n, nvec.size), 0, nvec)
            _, state, reward, *_ = vec.step(k_step, state, action, params)
            return (key, state, total + reward.sum(-1)), None

        return jax.lax.scan(body, carry, None, length=steps)[0]

    return jax.jit(run), (jax.random.key(1), state, jnp.zeros(n))


def jaxmarl_program(env_id: str, n: int, steps: int):
    import jaxmarl

    env = jaxmarl.make(env_id)
    agents = list(env.agents)
    nvec = jnp.asarray([env.action_space(a).n for a in agents])
    _, state = jax.vmap(env.reset)(jax.random.split(jax.random.key(0), n))
    vstep = jax.vmap(env.step)

    def run(carry):
        def body(c, _):
            key, state, total = c
            key, k_act, k_step = jax.random.split(key, 3)
            action = jax.random.randint(k_act, (n, nvec.size), 0, nvec)
            actions = {a: action[:, i] for i, a in enumerate(agents)}
            _, state, reward, _, _ = vstep(jax.random.split(k_step, n), state, actions)
            return (key, state, total + sum(reward[a] for a in agents)), None

        return jax.lax.scan(body, carry, None, length=steps)[0]

    return jax.jit(run), (jax.random.key(1), state, jnp.zeros(n))


def measure(env_ids: tuple[str, str], n: int, steps: int, repeats: int, reset_pool: int):
    """``({side: steps/s}, {side: compile s})``, the two sides timed interleaved."""
    progs, comp = {}, {}
    for side in ("hordax", "jaxmarl"):
        if side == "hordax":
            fn, carry = hordax_program(env_ids[0], n, steps, reset_pool)
        else:
            fn, carry = jaxmarl_program(env_ids[1], n, steps)
        t = time.perf_counter()
        fn = fn.lower(carry).compile()
        comp[side] = time.perf_counter() - t
        jax.block_until_ready(fn(carry))  # warm-up
        progs[side] = (fn, carry)
    return {k: n * steps / t for k, t in interleaved_medians(progs, repeats).items()}, comp


def interleaved_medians(progs: dict, repeats: int) -> dict[str, float]:
    """``{name: median seconds}`` of compiled ``(fn, carry)`` programs, run in turn."""
    times = {k: [] for k in progs}
    for _ in range(repeats):
        for k, (fn, carry) in progs.items():
            t = time.perf_counter()
            jax.block_until_ready(fn(carry))
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def breakdown_programs(env_id: str, n: int, steps: int) -> dict:
    """Programs that add one part of hordax's batch step at a time (``--breakdown``)."""
    from hordax.envs.mpe import world

    env, params = hordax.make(env_id)
    nvec = jnp.asarray(env.action_space(params).nvec)
    _, state = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(jax.random.key(0), n), params
    )

    def physics(k, s, a):
        move = jax.vmap(lambda s, a: world.step_world(s, a, params, env.layout, False))
        return move(s, a), jnp.zeros(n)

    def step_env(k, s, a):
        out = jax.vmap(env.step_env, in_axes=(0, 0, 0, None))(jax.random.split(k, n), s, a, params)
        return out[1], out[2].sum(-1)

    def vec(pool):
        v = VecEnv(env, n, reset_pool=pool)

        def step(k, s, a):
            out = v.step(k, s, a, params)
            return out[1], out[2].sum(-1)

        return step

    parts = {
        "random actions only": lambda k, s, a: (s, a.sum(-1).astype(jnp.float32)),
        "+ physics (world.step_world)": physics,
        "+ observations, rewards, info (step_env)": step_env,
        "+ truncation and fresh resets (VecEnv, pool)": vec(-1),
        "VecEnv, in-step resets (reset_pool=0)": vec(0),
    }
    programs = {}
    for name, step in parts.items():

        def run(carry, step=step):
            def body(c, _):
                key, s, total = c
                key, k_act, k_step = jax.random.split(key, 3)
                a = jax.random.randint(k_act, (n, nvec.size), 0, nvec)
                s, r = step(k_step, s, a)
                return (key, s, total + r), None

            return jax.lax.scan(body, carry, None, length=steps)[0]

        programs[name] = (jax.jit(run), (jax.random.key(1), state, jnp.zeros(n)))
    return programs


def breakdown(env_id: str, n: int, steps: int, repeats: int) -> None:
    """Print the time per env step of each part (interleaved medians)."""
    progs = {}
    for name, (fn, carry) in breakdown_programs(env_id, n, steps).items():
        fn = fn.lower(carry).compile()
        jax.block_until_ready(fn(carry))
        progs[name] = (fn, carry)
    times = interleaved_medians(progs, repeats)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{env_id}, {n} envs: ns per env step (median of {repeats}), load {load}")
    print("| program | ns / env step |\n|---|---:|")
    for k, v in times.items():
        print(f"| {k} | {v / (n * steps) * 1e9:.0f} |")


def plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(PAIRS), figsize=(5 * len(PAIRS), 3.6), squeeze=False)
    for ax, (hid, _) in zip(axes[0], PAIRS, strict=True):
        mine = [r for r in rows if r["env"] == hid]
        xs = [r["num_envs"] for r in mine]
        ax.plot(xs, [r["hordax_sps"] for r in mine], "o-", label="hordax (VecEnv)")
        ax.plot(xs, [r["jaxmarl_sps"] for r in mine], "s--", label="JaxMARL 0.2.0")
        ax.set(xscale="log", yscale="log", xlabel="num_envs", ylabel="env steps/s", title=hid)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle(f"random actions, jit(scan(vmap(step))), {jax.devices()[0].device_kind}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--num-envs", nargs="+", type=int, default=[4096])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--reset-pool", type=int, default=-1, help="VecEnv reset_pool (-1 auto, 0 off)")
    ap.add_argument("--csv", default="benchmarks/mpe_vs_jaxmarl.csv")
    ap.add_argument("--png", default="benchmarks/mpe_vs_jaxmarl.png")
    ap.add_argument(
        "--breakdown", action="store_true", help="time hordax's step part by part instead"
    )
    args = ap.parse_args()
    if args.breakdown:
        for hid, _ in PAIRS:
            for n in args.num_envs:
                breakdown(hid, n, args.steps, args.repeats)
        return
    import jaxmarl  # noqa: F401  (fail early when it is missing)

    print(
        f"jax {jax.__version__} (both sides) on {jax.devices()[0].device_kind}, "
        f"steps={args.steps}, repeats={args.repeats}, hordax reset_pool={args.reset_pool}"
    )
    print(
        "| env | num_envs | hordax steps/s | JaxMARL steps/s | ratio | compile h / j (s) | load |"
    )
    print("|---|---:|---:|---:|---:|---:|---|")
    rows = []
    for pair in PAIRS:
        for n in args.num_envs:
            sps, comp = measure(pair, n, args.steps, args.repeats, args.reset_pool)
            load = " ".join(f"{x:.1f}" for x in os.getloadavg())
            ratio = sps["hordax"] / sps["jaxmarl"]
            print(
                f"| {pair[0]} | {n} | {sps['hordax']:,.0f} | {sps['jaxmarl']:,.0f} | "
                f"{ratio:.2f}x | {comp['hordax']:.1f} / {comp['jaxmarl']:.1f} | {load} |",
                flush=True,
            )
            rows.append(
                {
                    "env": pair[0],
                    "num_envs": n,
                    "hordax_sps": sps["hordax"],
                    "jaxmarl_sps": sps["jaxmarl"],
                    "ratio": ratio,
                    "hordax_compile_s": comp["hordax"],
                    "jaxmarl_compile_s": comp["jaxmarl"],
                    "loadavg_1m": os.getloadavg()[0],
                }
            )
    with open(args.csv, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    if len(args.num_envs) > 1:
        plot(rows, args.png)
    print(f"wrote {args.csv}" + (f" and {args.png}" if len(args.num_envs) > 1 else ""))


if __name__ == "__main__":
    main()

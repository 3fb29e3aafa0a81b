"""Random-action agent-steps/s of hordax's driving env vs ``highway-env``, in one run.

hordax side (this process, one CPU device): ``Drive-USAIntersection-v0`` (the INTERACTION
USA_Intersection-1 map, GPUDrive's observation shapes: 63 partners, 200 road points) with
``--agents`` controlled agents and ``--background`` IDM vehicles per scene, ``--envs``
scenes: ``jit(scan(VecEnv.step))`` with random actions, fresh auto-resets through the reset
pool, observations consumed (as ``benchmarks/aerial_throughput.py``, but the params are an
argument of the program: closed over, the scene arrays become constants that XLA folds at
compile time, for minutes); compile timed apart. Agent-steps/s = envs x agents x steps / s.

highway-env side (a subprocess with the other venv's python, ``--highway-python``):
``intersection-v1`` with ``controlled_vehicles = k`` (``MultiAgentAction`` of
``DiscreteMetaAction``, ``MultiAgentObservation`` of ``Kinematics``), one env stepped with
``action_space.sample()`` for ``--hw-seconds``, reset when it ends; two variants:
``10hz`` (policy and simulation at 10 Hz: one 0.1 s physics step per env step, hordax's
dt) and ``default`` (its 1 Hz policy over 15 Hz simulation: 15 physics steps per env step).

The two sides alternate ``--repeats`` times; medians are reported with the load average.

    python3 -m venv /work/venvs/driving-highway
    /work/venvs/driving-highway/bin/pip install highway-env==1.12.1
    PYTHONPATH=$PWD python benchmarks/driving_throughput.py \\
        --highway-python /work/venvs/driving-highway/bin/python --out benchmarks/driving_cpu

GPU (no peer): ``PYTHONPATH=$PWD python benchmarks/driving_throughput.py --no-peer
--envs 256 1024 4096 16384 --agents 8 32 --steps 50 --out benchmarks/driving_gpu``.
Writes ``OUT.csv`` and ``OUT.png`` (agent-steps/s vs envs, one line per agents/scene).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import time


# --- the highway-env side (runs in the other venv; imports nothing from hordax or jax) -------
def highway_worker(variant: str, agents: int, seconds: float) -> dict:
    import warnings

    import gymnasium as gym
    import highway_env  # noqa: F401  (registers the envs)

    warnings.filterwarnings("ignore")
    config = {
        "controlled_vehicles": agents,
        "action": {
            "type": "MultiAgentAction",
            "action_config": {"type": "DiscreteMetaAction"},
        },
        "observation": {
            "type": "MultiAgentObservation",
            "observation_config": {"type": "Kinematics"},
        },
    }
    if variant == "10hz":
        config.update(policy_frequency=10, simulation_frequency=10)
    env = gym.make("intersection-v1", config=config)
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(3):
        env.step(env.action_space.sample())
    steps, ends = 0, 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        steps += 1
        if term or trunc:
            env.reset()
            ends += 1
    elapsed = time.perf_counter() - start
    live = len(env.unwrapped.controlled_vehicles)
    return {
        "agent_sps": steps * live / elapsed,
        "sps": steps / elapsed,
        "agents": live,
        "episode_ends": ends,
    }


def run_worker(python: str, variant: str, agents: int, seconds: float) -> dict:
    cmd = [python, os.path.abspath(__file__), "--worker", variant, "--hw-agents", str(agents)]
    cmd += ["--hw-seconds", str(seconds)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise RuntimeError(f"highway-env worker {variant} failed:\n{proc.stderr[-2000:]}")
    return json.loads(lines[-1][len("RESULT ") :])


# --- the driver (this venv: hordax) ---------------------------------------------------------
def random_action_program(env_id: str, num_envs: int, num_steps: int, **kwargs):
    """``(run, carry)``: ``run(carry) -> carry`` steps ``VecEnv(env, num_envs)`` ``num_steps``
    times with random actions; ``carry = (params, key, batch state, f32[] sum)``."""
    import jax
    import jax.numpy as jnp

    import hordax
    from hordax.envs.wrappers import VecEnv

    env, params = hordax.make(env_id, **kwargs)
    space = env.action_space(params)
    vec = VecEnv(env, num_envs)
    _, state = vec.reset(jax.random.key(0), params)

    def run(carry):
        def body(c, _):
            params, key, state, total = c
            key, k_a, k_s = jax.random.split(key, 3)
            actions = jax.vmap(space.sample)(jax.random.split(k_a, num_envs))
            obs, state, reward, *_ = vec.step(k_s, state, actions, params)
            return (params, key, state, total + jnp.sum(reward) + jnp.mean(obs)), None

        return jax.lax.scan(body, carry, None, length=num_steps)[0]

    return run, (params, jax.random.key(1), state, jnp.float32(0.0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", choices=["10hz", "default"], help=argparse.SUPPRESS)
    ap.add_argument("--highway-python", default="/work/venvs/driving-highway/bin/python")
    ap.add_argument("--no-peer", action="store_true", help="hordax only (e.g. on a GPU)")
    ap.add_argument("--env", default="Drive-USAIntersection-v0")
    ap.add_argument("--envs", type=int, nargs="+", default=[64, 1024])
    ap.add_argument("--agents", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--background", type=int, default=4)
    ap.add_argument("--max-partners", type=int, default=63, help="GPUDrive's 63")
    ap.add_argument("--max-road-points", type=int, default=200, help="GPUDrive's 200")
    ap.add_argument("--steps", type=int, default=20, help="hordax steps per timed run")
    ap.add_argument("--hw-agents", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--hw-seconds", type=float, default=8.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="driving_throughput", help="OUT.csv and OUT.png")
    args = ap.parse_args()
    if args.worker:
        row = highway_worker(args.worker, args.hw_agents[0], args.hw_seconds)
        # The worker runs in highway-env's own venv, without hordax: strict JSON (no NaN)
        # from the standard library's encoder.
        print("RESULT " + json.JSONEncoder(allow_nan=False).encode(row))
        return
    if not args.no_peer and not os.path.isfile(args.highway_python):
        ap.error(f"--highway-python={args.highway_python}: no such file (see the docstring)")

    import jax

    from hordax import strict_json

    programs = {}
    for agents in args.agents:
        for envs in args.envs:
            run, carry = random_action_program(
                args.env,
                envs,
                args.steps,
                num_agents=agents,
                num_background=args.background,
                max_partners=args.max_partners,
                max_road_points=args.max_road_points,
            )
            t = time.perf_counter()
            run = jax.jit(run).lower(carry).compile()
            compile_s = time.perf_counter() - t
            carry = jax.block_until_ready(run(carry))  # warm-up
            programs[(agents, envs)] = (run, carry, compile_s)
            print(f"compiled agents={agents} envs={envs}: {compile_s:.1f} s", flush=True)
    hx = {k: [] for k in programs}
    peers = [] if args.no_peer else [(v, k) for v in ("10hz", "default") for k in args.hw_agents]
    hw = {p: [] for p in peers}
    loads = []
    for _ in range(args.repeats):  # alternate the two sides, so load drift hits both
        for (agents, envs), (run, carry, _) in programs.items():
            t = time.perf_counter()
            jax.block_until_ready(run(carry))
            hx[(agents, envs)].append(envs * agents * args.steps / (time.perf_counter() - t))
        for variant, k in peers:
            res = run_worker(args.highway_python, variant, k, args.hw_seconds)
            hw[(variant, k)].append(res["agent_sps"])
        loads.append(os.getloadavg()[0])
    load = round(statistics.median(loads), 2)
    rows = []
    for (agents, envs), (_, _, compile_s) in programs.items():
        h = statistics.median(hx[(agents, envs)])
        row = {
            "side": "hordax",
            "env": args.env,
            "agents": agents,
            "envs": envs,
            "agent_steps_per_s": round(h, 1),
            "compile_s": round(compile_s, 2),
            "load_avg_1m": load,
            "device": jax.devices()[0].platform,
            "device_kind": jax.devices()[0].device_kind,
            "jax": jax.__version__,
        }
        for variant, k in peers:
            if k == agents:
                row[f"ratio_vs_highway_{variant}"] = round(
                    h / statistics.median(hw[(variant, k)]), 1
                )
        rows.append(row)
    for (variant, k), vals in hw.items():
        rows.append(
            {
                "side": f"highway-env {variant}",
                "env": "intersection-v1",
                "agents": k,
                "envs": 1,
                "agent_steps_per_s": round(statistics.median(vals), 2),
                "compile_s": 0.0,
                "load_avg_1m": load,
            }
        )
    for r in rows:
        print(strict_json.dumps(r), flush=True)
    fields = sorted({k for r in rows for k in r}, key=lambda k: (k not in rows[0], k))
    with open(f"{args.out}.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    _plot(rows, f"{args.out}.png", load)
    print(f"wrote {args.out}.csv and {args.out}.png")


def _plot(rows: list[dict], path: str, load: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    hordax = [r for r in rows if r["side"] == "hordax"]
    for agents in sorted({r["agents"] for r in hordax}):
        pts = sorted((r["envs"], r["agent_steps_per_s"]) for r in hordax if r["agents"] == agents)
        ax.plot(*zip(*pts, strict=True), "o-", label=f"hordax, {agents} agents/scene")
    for r in rows:
        if r["side"] != "hordax":
            ax.axhline(r["agent_steps_per_s"], ls="--", lw=1, color="grey")
            ax.text(
                1.0,
                r["agent_steps_per_s"],
                f" {r['side']}, {r['agents']} agents",
                fontsize=7,
                va="bottom",
                transform=ax.get_yaxis_transform(),
                ha="right",
            )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="scenes (num_envs)",
        ylabel="agent-steps/s",
        title=f"Random-action driving throughput ({hordax[0]['device']}, load {load})",
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()

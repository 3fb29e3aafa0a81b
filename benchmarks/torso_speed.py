"""PPO training steps/s per network torso (mlp, cnn, grid) on Grid-DoorKey-8x8-v0.

The regression benchmark of issue #12 (CNN torsos trained ~360x slower than the MLP on CPU
because XLA:CPU ran the gradient convolutions inside ``lax.scan`` as a naive loop; see
``hordax/agents/networks.py``). One process; for each variant (a torso, ``/shared`` for
``network.shared_torso``) it builds the same sharded chunk program as ``hordax train`` (PPO
defaults: 4 epochs x 4 minibatches; the ``auto`` mesh, which keeps 64 envs on one device),
compiles it (``compile_s``, timed apart) and runs it once to warm up; then the variants'
timed runs of ``--updates`` whole updates (rollout, bootstrap values, GAE, minibatch epochs)
alternate, ``--repeats`` rounds, so that a shared machine's load hits every variant alike;
the median is reported as env steps/s, with the load average, and the fastest run (the
least disturbed on a shared machine).

``--conv lax`` swaps the torso's convolution back to ``jax.lax.conv_general_dilated`` (the
code before the CPU fix) to reproduce that "before" row; it is slow (minutes per torso on a
2-core CPU), so it is off by default.

    python benchmarks/torso_speed.py                          # mlp, cnn, grid, grid/shared
    python benchmarks/torso_speed.py --json torso_speed.json
    python benchmarks/torso_speed.py --torsos cnn grid --conv lax --updates 1 --repeats 1
    python benchmarks/torso_speed.py --torsos mlp grid/shared --hidden-sizes 64 --num-minibatches 8
    python benchmarks/torso_speed.py --torsos mlp grid/shared --baseline /path/to/other/checkout

Prints one JSON line per torso and a table; results go to ``benchmarks/RESULTS.md`` by hand.
"""

from __future__ import annotations

import hordax.training.host.sharding as sh
from hordax import strict_json

sh.use_all_cpu_cores()  # as the CLI does, before jax initializes

import argparse  # noqa: E402
import contextlib  # noqa: E402
import importlib.util  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402

import hordax  # noqa: E402
import hordax.agents.ppo.agent as ppo_agent  # noqa: E402
from hordax.agents import networks  # noqa: E402
from hordax.agents.networks import NetworkConfig  # noqa: E402
from hordax.agents.ppo import PPOConfig  # noqa: E402
from hordax.training.config import TrainConfig, TrainerConfig  # noqa: E402
from hordax.training.host.programs import make_programs  # noqa: E402
from hordax.training.trainers import make_trainer, validate  # noqa: E402

ENV_ID = "Grid-DoorKey-8x8-v0"


def build(
    variant: str,
    num_envs: int,
    rollout_length: int,
    updates: int,
    hidden_sizes: list[int] | None = None,
    num_minibatches: int = 4,
) -> dict:
    """The compiled chunk program of ``variant`` ("grid", "grid/shared", ...), its warmed-up
    state and compile time (``hidden_sizes``, ``num_minibatches``: PPO's defaults unless
    given)."""
    torso, _, shared = variant.partition("/")
    env, params = hordax.make(ENV_ID)
    cfg = TrainConfig(
        trainer=TrainerConfig(
            num_envs=num_envs,
            rollout_length=rollout_length,
            total_env_steps=updates * num_envs * rollout_length,
            num_chunks=1,
        ),
        agent=PPOConfig(
            num_minibatches=num_minibatches,
            network=NetworkConfig(
                torso=torso,
                shared_torso=shared == "shared",
                hidden_sizes=list(hidden_sizes or NetworkConfig().hidden_sizes),
            ),
        ),
    )
    resolved = validate(cfg)
    progs = make_programs(cfg, make_trainer(cfg, env, params, resolved))
    state = progs.init(*progs.init_args)
    t = time.perf_counter()
    chunk = progs.chunk.lower(state).compile()
    compile_s = time.perf_counter() - t
    state = jax.block_until_ready(chunk(state)[0])  # warm-up run
    return {
        "chunk": chunk,
        "state": state,
        "compile_s": compile_s,
        "env_steps": resolved.env_steps,
        "devices": int(progs.mesh.devices.size),
        "times": [],
        "loads": [],
    }


def run_once(prog: dict) -> None:
    """One timed run; the state carries on (the next run continues training)."""
    t = time.perf_counter()
    prog["state"] = jax.block_until_ready(prog["chunk"](prog["state"])[0])
    prog["times"].append(time.perf_counter() - t)
    prog["loads"].append(os.getloadavg()[0])


@contextlib.contextmanager
def baseline_heads(path: str):
    """PPO's networks built from another checkout's ``hordax/agents/networks.py`` (``path``:
    its root) while the block runs: an A/B of two versions of the torsos in one process."""
    file = os.path.join(path, "hordax", "agents", "networks.py")
    spec = importlib.util.spec_from_file_location("baseline_networks", file)
    module = importlib.util.module_from_spec(spec)
    sys.modules["baseline_networks"] = module  # flax's dataclasses look their module up
    spec.loader.exec_module(module)
    names = ("ActorCriticHead", "PolicyHead", "ValueHead")
    saved = {n: getattr(ppo_agent, n) for n in names}
    for n in names:
        setattr(ppo_agent, n, getattr(module, n))
    try:
        yield
    finally:
        for n, head in saved.items():
            setattr(ppo_agent, n, head)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--torsos",
        nargs="+",
        default=["mlp", "cnn", "grid", "grid/shared"],
        help="variants: mlp, cnn or grid, each optionally with /shared (one shared torso)",
    )
    ap.add_argument("--num-envs", type=int, default=64)
    ap.add_argument("--rollout-length", type=int, default=128)
    ap.add_argument(
        "--hidden-sizes",
        type=int,
        nargs="+",
        help="dense widths (default: PPO's 64 64; the tuned DoorKey config: 64)",
    )
    ap.add_argument(
        "--num-minibatches", type=int, default=4, help="4: PPO's default; the tuned config: 8"
    )
    ap.add_argument("--updates", type=int, default=4, help="PPO updates per timed run")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs (median reported)")
    ap.add_argument(
        "--conv",
        choices=["auto", "lax"],
        default="auto",
        help="auto: hordax's convolution on CPU; lax: jax.lax.conv_general_dilated (pre-fix)",
    )
    ap.add_argument(
        "--baseline",
        help="root of another hordax checkout: each conv/grid variant is also built with its "
        "networks.py (rows 'VARIANT@baseline'), timed interleaved with this tree's",
    )
    ap.add_argument("--json", help="also write all rows to this file")
    args = ap.parse_args()
    for key in ("num_envs", "rollout_length", "updates", "repeats", "num_minibatches"):
        if getattr(args, key) < 1:
            ap.error(f"--{key.replace('_', '-')}={getattr(args, key)}: must be an integer >= 1")
    for variant in args.torsos:
        torso, _, shared = variant.partition("/")
        if torso not in ("mlp", "cnn", "grid") or shared not in ("", "shared"):
            ap.error(f"--torsos: {variant!r} is not one of mlp, cnn, grid (optionally /shared)")
    if args.conv == "lax":
        # The torsos look the function up at call time, so this reinstates the old convolution.
        networks.conv_general_dilated = jax.lax.conv_general_dilated
    machine = f"{jax.devices()[0].device_kind} ({platform.machine()}, {os.cpu_count()} cores)"
    if args.hidden_sizes and min(args.hidden_sizes) < 1:
        ap.error(f"--hidden-sizes={args.hidden_sizes}: each width must be >= 1")
    progs = {
        v: build(
            v,
            args.num_envs,
            args.rollout_length,
            args.updates,
            args.hidden_sizes,
            args.num_minibatches,
        )
        for v in args.torsos
    }
    if args.baseline:
        with baseline_heads(args.baseline):
            for v in [v for v in args.torsos if not v.startswith("mlp")]:
                progs[f"{v}@baseline"] = build(
                    v,
                    args.num_envs,
                    args.rollout_length,
                    args.updates,
                    args.hidden_sizes,
                    args.num_minibatches,
                )
    for _ in range(args.repeats):
        for prog in progs.values():
            run_once(prog)
    rows = []
    for variant, prog in progs.items():
        run_s = statistics.median(prog["times"])
        row = {
            "torso": variant,
            "env": ENV_ID,
            "num_envs": args.num_envs,
            "rollout_length": args.rollout_length,
            "env_steps": prog["env_steps"],
            "devices": prog["devices"],
            "compile_s": round(prog["compile_s"], 2),
            "run_s": round(run_s, 4),
            "sps": round(prog["env_steps"] / run_s, 1),
            # the fastest run: on a shared machine, the least disturbed by other jobs
            "best_sps": round(prog["env_steps"] / min(prog["times"]), 1),
            "load_avg": round(statistics.median(prog["loads"]), 2),
            "conv": args.conv,
            "hidden_sizes": args.hidden_sizes or NetworkConfig().hidden_sizes,
            "num_minibatches": args.num_minibatches,
            "machine": machine,
            "jax": jax.__version__,
        }
        print(strict_json.dumps(row), flush=True)
        rows.append(row)
    print(
        f"\n{ENV_ID}, PPO, {args.num_envs} envs x {args.rollout_length} steps, conv={args.conv}, "
        f"hidden {rows[0]['hidden_sizes']}, {args.num_minibatches} minibatches"
    )
    print(
        f"{'torso':<20} {'compile_s':>10} {'train steps/s':>14} {'vs mlp':>8} "
        f"{'best steps/s':>13} {'vs mlp':>8} {'load':>6}"
    )
    mlp = next((r for r in rows if r["torso"] == "mlp"), None)
    for r in rows:
        ratio = f"{r['sps'] / mlp['sps']:.3f}" if mlp else "-"
        best = f"{r['best_sps'] / mlp['best_sps']:.3f}" if mlp else "-"
        print(
            f"{r['torso']:<20} {r['compile_s']:>10.1f} {r['sps']:>14,.0f} {ratio:>8} "
            f"{r['best_sps']:>13,.0f} {best:>8} {r['load_avg']:>6.1f}"
        )
    if args.json:
        with open(args.json, "w") as f:
            strict_json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()

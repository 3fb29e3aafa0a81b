"""Driving learning result: a trained IPPO run's held-out evaluation beside two references.

Reads ``RUN_DIR/eval_<split>.json`` (written by ``hordax eval RUN_DIR split=<split>``) and
plays the same held-out env (built as ``hordax eval`` builds it) with

- a random policy (uniform discrete actions), and
- the scripted ``route_follower`` (pure pursuit along the agent's route + IDM; it reads the
  route from the state, so it is an expert reference, not an observation-based policy),

on episodes from the same evaluation seed space, then prints one table row per policy:
goal rate, collision rate, off-road rate (per-episode fractions of the controlled agents)
with their spread. Usage (benchmarks/RESULTS.md, section 13, "Learning")::

    hordax train env=Drive-Maps-v0 agent=ippo population.size=3 hydra.run.dir=runs/drive
    hordax eval runs/drive split=test episodes=256
    python benchmarks/driving_learning.py runs/drive --split test --episodes 256
"""

from __future__ import annotations

import argparse
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from hordax.envs.driving.expert import route_follower
from hordax.training.ensemble.members import load_config
from hordax.training.evaluation.episodes import episode_keys
from hordax.training.evaluation.run import eval_env

METRICS = ("goal_rate", "collision_rate", "offroad_rate")


def play(
    env, params, policy: str, keys: jax.Array, yields: bool | None = None, **expert: float
) -> dict[str, np.ndarray]:
    """Every episode's ``info["metrics"]`` at its first end (``f32[N]`` each), one per key.
    ``yields``: whether the scripted driver yields at crossing conflicts (None: as the env's
    traffic does, ``Drive(yield_to_crossing=...)``); ``expert``: other ``route_follower``
    keywords (``target_speed``, ``lookahead``)."""
    steps = int(params.max_steps_in_episode)
    space = env.action_space(params)
    if yields is None:
        yields = getattr(env, "yield_to_crossing", False)

    def act(key, state):
        if policy == "scripted":
            return route_follower(env, state, params, yield_to_crossing=yields, **expert)
        return space.sample(key)

    def episode(key):
        k_reset, k_loop = jax.random.split(key)
        obs, state = env.reset(k_reset, params)

        def body(carry, k):
            state, done, out = carry
            k_act, k_step = jax.random.split(k)
            _, state, _, term, trunc, info = env.step(k_step, state, act(k_act, state), params)
            out = jax.tree.map(lambda o, m: jnp.where(done, o, m), out, info["metrics"])
            return (state, done | term | trunc, out), None

        zeros = {k: jnp.float32(0) for k in (*METRICS, "infeasible_rate")}
        carry = (state, jnp.bool_(False), zeros)
        (_, done, out), _ = jax.lax.scan(body, carry, jax.random.split(k_loop, steps))
        return out, done

    out, done = jax.jit(jax.vmap(episode))(keys)
    assert bool(np.all(np.asarray(done))), "an episode did not end within its time limit"
    return {k: np.asarray(out[k]) for k in METRICS}


def stats(x: np.ndarray) -> str:
    return f"{100 * x.mean():.1f} ± {100 * x.std(ddof=1):.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run_dir")
    ap.add_argument("--split", default="test", help="the held-out split ('' = the run's env)")
    ap.add_argument("--episodes", type=int, default=256)
    ap.add_argument("--seed", type=int, default=-1, help="-1: the run's seed (as hordax eval)")
    args = ap.parse_args()

    tc = load_config(args.run_dir)
    env, params, _ = eval_env(tc.env.id, dict(tc.env.kwargs), dict(tc.env.params), args.split)
    seed = tc.seed if args.seed < 0 else args.seed
    keys = episode_keys(seed, args.episodes)
    held_out = args.split == "test"
    names = env.test_scene_names if held_out else env.scene_names
    print(f"env {tc.env.id} split={args.split!r}: scenes {list(names)}")
    print("| policy | episodes | goal % | collision % | off-road % | load avg |")
    print("|---|---:|---:|---:|---:|---|")
    name = f"eval_{args.split}.json" if args.split else "eval.json"
    path = os.path.join(args.run_dir, name)
    if os.path.isfile(path):
        with open(path) as f:
            res = json.load(f)
        members = res.get("members") or [res]
        for i, m in enumerate(members):
            cells = " | ".join(
                f"{100 * m['metrics'][k]['mean']:.1f} ± {100 * m['metrics'][k]['std']:.1f}"
                for k in METRICS
            )
            episodes = res.get("episodes_per_member", res.get("episodes"))
            print(f"| IPPO seed {tc.seed + i} (greedy) | {episodes} | {cells} | |")
        if len(members) > 1:
            means = {k: np.array([m["metrics"][k]["mean"] for m in members]) for k in METRICS}
            cells = " | ".join(stats(means[k]) for k in METRICS)
            print(f"| IPPO, mean ± std over {len(members)} seeds | | {cells} | |")
    else:
        print(f"({path} not found: run `hordax eval {args.run_dir} split={args.split}` first)")
    for policy in ("random", "scripted"):
        t0 = time.perf_counter()
        out = play(env, params, policy, keys)
        cells = " | ".join(stats(out[k]) for k in METRICS)
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        label = "random" if policy == "random" else "route_follower (scripted expert)"
        print(
            f"| {label} | {args.episodes} | {cells} | {load} ({time.perf_counter() - t0:.0f} s) |"
        )


if __name__ == "__main__":
    main()

"""The scripted driver's goal, collision and off-road rates with and without yielding at
crossing conflicts, for the background traffic (``Drive(yield_to_crossing=...)``) and the
driver itself (``route_follower(..., yield_to_crossing=...)``): four rows per scene set.

    python benchmarks/driving_yield.py --scenes DEU_Kackertstrasse-1 --episodes 256
    python benchmarks/driving_yield.py --scenes DEU_AachenBendplatz-1 --lookahead 1

Each row plays the same ``--episodes`` fresh episodes (the same reset keys), 4 controlled
agents + 4 background cars, CPU observation sizes (the driver reads the state, not the
observation). Rates are per-episode fractions of the controlled agents, averaged.
"""

from __future__ import annotations

import argparse
import time

import jax
from driving_learning import METRICS, play  # benchmarks/ is on sys.path when run as a script

from hordax.envs.driving.env import Drive


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", default="DEU_Kackertstrasse-1", help="comma-separated")
    ap.add_argument("--episodes", type=int, default=256)
    ap.add_argument("--seed", type=int, default=123)
    ap.add_argument("--lookahead", type=float, default=3.0, help="route_follower's (m)")
    ap.add_argument("--target-speed", type=float, default=8.0, help="route_follower's (m/s)")
    args = ap.parse_args()
    if args.lookahead < 0 or args.target_speed <= 0 or args.episodes < 1:
        ap.error(
            f"--lookahead={args.lookahead} (>= 0), --target-speed={args.target_speed} (> 0),"
            f" --episodes={args.episodes} (>= 1): one is out of range"
        )
    expert = {"lookahead": args.lookahead, "target_speed": args.target_speed}
    scenes = args.scenes.split(",")
    keys = jax.random.split(jax.random.key(args.seed), args.episodes)
    print(f"scenes {scenes}, {args.episodes} episodes, route_follower {expert}")
    print("| traffic yields | driver yields | goal % | collision % | off-road % | wall s |")
    print("|---|---|---:|---:|---:|---:|")
    for traffic in (False, True):
        env = Drive(
            scenes=scenes,
            num_agents=4,
            num_background=4,
            max_partners=8,
            max_road_points=32,
            yield_to_crossing=traffic,
        )
        for driver in (False, True):
            t0 = time.perf_counter()
            out = play(env, env.default_params, "scripted", keys, yields=driver, **expert)
            cells = " | ".join(f"{100 * out[k].mean():.1f}" for k in METRICS)
            print(f"| {traffic} | {driver} | {cells} | {time.perf_counter() - t0:.0f} |")


if __name__ == "__main__":
    main()

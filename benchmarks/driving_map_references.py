"""Reference policies on each real-map env: the scripted route follower and random play.

For every ``Drive-<Map>-v0`` given (default: each registered env of one real map), with
traffic that yields at crossings (``yield_to_crossing=True``, as the tuned IPPO config
trains with), plays ``--episodes`` fresh episodes (``episode_keys(--seed, n)``, as ``hordax
eval`` draws them) with ``benchmarks/driving_learning.py``'s ``play`` and prints one table
row per map and policy: goal / collision / off-road rate (% of the controlled agents per
episode, mean ± std over episodes). Usage (benchmarks/RESULTS.md, section 13g)::

    python benchmarks/driving_map_references.py --episodes 64
"""

from __future__ import annotations

import argparse

from driving_learning import METRICS, play, stats

import hordax
from hordax.envs.driving.maps import MAPS
from hordax.training.evaluation.episodes import episode_keys


def real_map_envs() -> list[str]:
    """The registered ``Drive-*`` ids whose scenes are one shipped real map each."""
    ids = [i for i in hordax.registered_envs() if i.startswith("Drive-")]
    names = {i: getattr(hordax.make(i)[0], "scene_names", ()) for i in ids}  # DriveLog: none
    return [i for i in ids if len(names[i]) == 1 and names[i][0] in MAPS]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("envs", nargs="*", help="env ids (default: every real-map env)")
    ap.add_argument("--episodes", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    keys = episode_keys(args.seed, args.episodes)
    print("| env | policy | episodes | goal % | collision % | off-road % |")
    print("|---|---|---:|---:|---:|---:|")
    for env_id in args.envs or real_map_envs():
        env, params = hordax.make(env_id, yield_to_crossing=True)
        for policy, label in (("scripted", "route_follower"), ("random", "random")):
            out = play(env, params, policy, keys)
            cells = " | ".join(stats(out[k]) for k in METRICS)
            print(f"| {env_id} | {label} | {args.episodes} | {cells} |")


if __name__ == "__main__":
    main()

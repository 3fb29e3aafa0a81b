"""Extreme-action stress runs (issue #17's robustness must-show) of any registered env:
``num_envs x num_steps`` env steps of actions +-1e6, +-inf, NaN, U(-10, 10) through the
trainer's env stack (:func:`hordax.training.core.stress.extreme_action_run`), one JSON line
per env id: the must-hold flags, non-finite physics, terminations and truncations, time.

    python benchmarks/extreme_actions.py --env Manip-Push-v0 --num-envs 512 --num-steps 200

Exits 1 when a flag fails or the physics went non-finite.
"""

from __future__ import annotations

import argparse
import sys
import time

import jax

import hordax
from hordax import strict_json
from hordax.training.core import stress


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", nargs="+", required=True, help="registered env ids")
    parser.add_argument("--num-envs", type=int, default=512)
    parser.add_argument("--num-steps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    status = 0
    for env_id in args.env:
        env, params = hordax.make(env_id)
        t0 = time.perf_counter()
        first, out = stress.extreme_action_run(
            env, params, jax.random.key(args.seed), args.num_envs, args.num_steps
        )
        errors = stress.failures(first, out)
        nonfinite = int(out["nonfinite"].sum())
        row = {
            "env": env_id,
            "env_steps": args.num_envs * args.num_steps,
            "failures": errors,
            "nonfinite_physics": nonfinite,
            "terminated": int(out["terminated"].sum()),
            "truncated": int(out["truncated"].sum()),
            "seconds_with_compile": round(time.perf_counter() - t0, 1),
            "device": jax.devices()[0].device_kind,
        }
        print(strict_json.dumps(row), flush=True)
        status |= int(bool(errors) or nonfinite > 0)
    return status


if __name__ == "__main__":
    sys.exit(main())

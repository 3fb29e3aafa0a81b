"""Where hordax's wrapper overhead comes from: random-action steps/s of one env through
``bare`` (``jax.vmap(env.step)``, gymnax's API), ``ClipAction`` only, ``LogEpisode`` only and
the trainers' full stack ``VecEnv(LogEpisode(ClipAction(env)))``, timed interleaved in one
process (median of ``--repeats``), compile excluded.

    python benchmarks/wrapper_overhead.py --envs CartPole-v1 Pendulum-v1 --num-envs 1024 16384
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax

import hordax
from hordax.envs.wrappers import ClipAction, LogEpisode, VecEnv
from hordax.training.bench import random_rollout_carry, random_rollout_fn


def programs(env_id: str, n: int, steps: int) -> dict:
    env, params = hordax.make(env_id)
    space = env.action_space(params)

    def sample(key):
        return space.sample(key)

    vreset = jax.vmap(env.reset, in_axes=(0, None))
    vstep = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    stacks = {
        "bare": (
            lambda k: vreset(jax.random.split(k, n), params),
            lambda k, s, a: vstep(jax.random.split(k, n), s, a, params),
        )
    }
    for name, wrapped in (
        ("clip", VecEnv(ClipAction(env), n)),
        ("log", VecEnv(LogEpisode(env), n)),
        ("full", VecEnv(LogEpisode(ClipAction(env)), n)),
    ):
        stacks[name] = (
            lambda k, w=wrapped: w.reset(k, params),
            lambda k, s, a, w=wrapped: w.step(k, s, a, params),
        )
    out = {}
    for name, (reset, step) in stacks.items():
        obs, state = reset(jax.random.key(0))
        carry = random_rollout_carry(jax.random.key(1), state, obs, n)
        fn = jax.jit(random_rollout_fn(step, sample, steps, n)).lower(carry).compile()
        jax.block_until_ready(fn(carry))
        out[name] = (fn, carry)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--envs", nargs="+", default=["CartPole-v1", "Pendulum-v1"])
    ap.add_argument("--num-envs", nargs="+", type=int, default=[1024, 16384])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    print(f"jax {jax.__version__} on {jax.devices()[0].device_kind}, steps={args.steps}")
    print("| env | num_envs | bare steps/s | clip | log | full | full overhead |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for env_id in args.envs:
        for n in args.num_envs:
            progs = programs(env_id, n, args.steps)
            times = {k: [] for k in progs}
            for _ in range(args.repeats):
                for name, (fn, carry) in progs.items():
                    t = time.perf_counter()
                    jax.block_until_ready(fn(carry))
                    times[name].append(time.perf_counter() - t)
            med = {k: statistics.median(v) for k, v in times.items()}
            sps = {k: n * args.steps / v for k, v in med.items()}
            print(
                f"| {env_id} | {n} | {sps['bare']:,.0f} | {sps['clip']:,.0f} | {sps['log']:,.0f}"
                f" | {sps['full']:,.0f} | {100 * (med['full'] / med['bare'] - 1):+.1f}% |",
                flush=True,
            )


if __name__ == "__main__":
    main()

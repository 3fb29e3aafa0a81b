"""Random-action env steps/s: hordax's grid envs vs XLand-MiniGrid (``xminigrid``), same run.

Both sides: ``num_envs`` envs, uniformly random actions, auto-reset in the step
(hordax: gymnax's in-``step`` reset; xminigrid: its ``GymAutoResetWrapper``), one jitted
``lax.scan`` over ``steps`` of a ``vmap``; rewards summed in the carry so neither side can
drop work; compile excluded, median of ``--repeats`` interleaved runs.

    pip install xminigrid   # test-time only; not a hordax dependency
    python benchmarks/grid_vs_xminigrid.py --num-envs 1024 16384 --steps 1000
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp

import hordax

PAIRS = [  # hordax id, xminigrid id
    ("Grid-Empty-8x8-v0", "MiniGrid-Empty-8x8"),
    ("Grid-DoorKey-8x8-v0", "MiniGrid-DoorKey-8x8"),
    ("Grid-FourRooms-v0", "MiniGrid-FourRooms"),
]


def hordax_program(env_id: str, n: int, steps: int):
    env, params = hordax.make(env_id)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(jax.random.key(0), n), params
    )
    vstep = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def run(carry):
        def body(c, _):
            key, state, total = c
            key, ka, ks = jax.random.split(key, 3)
            action = jax.random.randint(ka, (n,), 0, 6)
            _, state, reward, *_ = vstep(jax.random.split(ks, n), state, action, params)
            return (key, state, total + reward), None

        return jax.lax.scan(body, carry, None, length=steps)[0]

    return jax.jit(run), (jax.random.key(1), state, jnp.zeros(n))


def xminigrid_program(env_id: str, n: int, steps: int):
    import xminigrid
    from xminigrid.wrappers import GymAutoResetWrapper

    env, params = xminigrid.make(env_id)
    env = GymAutoResetWrapper(env)
    ts = jax.vmap(env.reset, in_axes=(None, 0))(params, jax.random.split(jax.random.key(0), n))
    vstep = jax.vmap(env.step, in_axes=(None, 0, 0))

    def run(carry):
        def body(c, _):
            key, ts, total = c
            key, ka = jax.random.split(key)
            action = jax.random.randint(ka, (n,), 0, 6)
            ts = vstep(params, ts, action)
            return (key, ts, total + ts.reward), None

        return jax.lax.scan(body, carry, None, length=steps)[0]

    return jax.jit(run), (jax.random.key(1), ts, jnp.zeros(n))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--num-envs", nargs="+", type=int, default=[1024, 16384])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    print(f"jax {jax.__version__} on {jax.devices()[0].device_kind}, steps={args.steps}")
    print(
        "| hordax id | num_envs | hordax steps/s | xminigrid steps/s | ratio | compile h / x (s) |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for hid, xid in PAIRS:
        for n in args.num_envs:
            progs, comp = {}, {}
            for name, make in (("h", hordax_program), ("x", xminigrid_program)):
                fn, carry = make(hid if name == "h" else xid, n, args.steps)
                t = time.perf_counter()
                fn = fn.lower(carry).compile()
                comp[name] = time.perf_counter() - t
                jax.block_until_ready(fn(carry))
                progs[name] = (fn, carry)
            times = {k: [] for k in progs}
            for _ in range(args.repeats):
                for k, (fn, carry) in progs.items():
                    t = time.perf_counter()
                    jax.block_until_ready(fn(carry))
                    times[k].append(time.perf_counter() - t)
            sps = {k: n * args.steps / statistics.median(v) for k, v in times.items()}
            print(
                f"| {hid} | {n} | {sps['h']:,.0f} | {sps['x']:,.0f} | {sps['h'] / sps['x']:.2f}x"
                f" | {comp['h']:.1f} / {comp['x']:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()

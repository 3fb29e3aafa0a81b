"""Random-action env steps/s: hordax's grid envs vs XLand-MiniGrid (``xminigrid``), same run.

Both sides: ``num_envs`` envs, uniformly random actions, auto-reset with a fresh draw
(hordax: ``VecEnv``, whose amortized resets compute ``--reset-pool`` fresh resets per step,
default ``ceil(num_envs / 64)``; ``--reset-pool 0`` is gymnax's in-``step`` reset of every
env; xminigrid: its ``GymAutoResetWrapper``, a reset per env per step), one jitted
``lax.scan`` over ``steps``; rewards summed in the carry so neither side can drop work;
compile excluded, median of ``--repeats`` interleaved runs.

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
from hordax.envs.wrappers import VecEnv

PAIRS = [  # hordax id, xminigrid id
    ("Grid-Empty-8x8-v0", "MiniGrid-Empty-8x8"),
    ("Grid-DoorKey-8x8-v0", "MiniGrid-DoorKey-8x8"),
    ("Grid-FourRooms-v0", "MiniGrid-FourRooms"),
    # hordax generates a fresh task (3 rules, 9 objects) at every reset; xminigrid runs one
    # fixed ruleset of the same sizes (its benchmark rulesets are downloaded, so none ships)
    ("Grid-XLand-R1-9x9-v0", "XLand-MiniGrid-R1-9x9"),
]


def fixed_xland_ruleset():
    """One hand-written xminigrid ruleset with hordax's Grid-XLand-R1-9x9-v0 sizes: an
    ``AgentNear`` goal, 3 ``TileNear`` rules, 9 initial objects."""
    from xminigrid.core.constants import TILES_REGISTRY, Colors, Tiles
    from xminigrid.core.goals import AgentNearGoal
    from xminigrid.core.rules import TileNearRule
    from xminigrid.types import RuleSet

    def t(tile, color):
        return TILES_REGISTRY[tile, color]

    objs = [
        t(Tiles.BALL, Colors.RED),
        t(Tiles.SQUARE, Colors.GREEN),
        t(Tiles.PYRAMID, Colors.BLUE),
        t(Tiles.KEY, Colors.YELLOW),
        t(Tiles.STAR, Colors.PURPLE),
        t(Tiles.HEX, Colors.ORANGE),
        t(Tiles.BALL, Colors.GREY),
        t(Tiles.SQUARE, Colors.PINK),
        t(Tiles.PYRAMID, Colors.RED),
    ]
    rules = [
        TileNearRule(tile_a=objs[0], tile_b=objs[1], prod_tile=t(Tiles.STAR, Colors.GREEN)),
        TileNearRule(tile_a=objs[2], tile_b=objs[3], prod_tile=t(Tiles.HEX, Colors.BLUE)),
        TileNearRule(tile_a=objs[4], tile_b=objs[5], prod_tile=t(Tiles.KEY, Colors.PINK)),
    ]
    return RuleSet(
        goal=AgentNearGoal(tile=t(Tiles.STAR, Colors.GREEN)).encode(),
        rules=jnp.stack([r.encode() for r in rules]),
        init_tiles=jnp.stack(objs),
    )


def hordax_program(env_id: str, n: int, steps: int, reset_pool: int = -1):
    env, params = hordax.make(env_id)
    vec = VecEnv(env, n, reset_pool=reset_pool)
    obs, state = vec.reset(jax.random.key(0), params)

    def run(carry):
        def body(c, _):
            key, state, total = c
            key, ka, ks = jax.random.split(key, 3)
            action = jax.random.randint(ka, (n,), 0, 6)
            _, state, reward, *_ = vec.step(ks, state, action, params)
            return (key, state, total + reward), None

        return jax.lax.scan(body, carry, None, length=steps)[0]

    return jax.jit(run), (jax.random.key(1), state, jnp.zeros(n))


def xminigrid_program(env_id: str, n: int, steps: int):
    import xminigrid
    from xminigrid.wrappers import GymAutoResetWrapper

    env, params = xminigrid.make(env_id)
    if env_id.startswith("XLand"):
        params = params.replace(ruleset=fixed_xland_ruleset())
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
    ap.add_argument("--reset-pool", type=int, default=-1, help="VecEnv reset_pool (-1 auto, 0 off)")
    args = ap.parse_args()
    print(
        f"jax {jax.__version__} on {jax.devices()[0].device_kind}, steps={args.steps}, "
        f"hordax reset_pool={args.reset_pool}"
    )
    print(
        "| hordax id | num_envs | hordax steps/s | xminigrid steps/s | ratio | compile h / x (s) |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for hid, xid in PAIRS:
        for n in args.num_envs:
            progs, comp = {}, {}
            for name in ("h", "x"):
                if name == "h":
                    fn, carry = hordax_program(hid, n, args.steps, args.reset_pool)
                else:
                    fn, carry = xminigrid_program(xid, n, args.steps)
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

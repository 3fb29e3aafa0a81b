"""Grid worlds: random-action env steps/s of hordax against XLand-MiniGrid and NAVIX.

Every layout that hordax shares with one of them, through the shared harness
(:mod:`hordax.benchmarking`): each side's observation, reward, done flags and the rest of
its step's outputs stay in the timed program, every side draws its actions with the same
sampler (uniform over the 6 MiniGrid actions) and the same keys, the sides' runs
interleave in one process. hordax is timed on the two paths users take:

- ``vmap(env.step)``: gymnax's in-step auto-reset, a fresh reset for every env every step
  (the path of the quick start and of any gymnax-style user);
- ``VecEnv``: hordax's batch layer, whose amortized resets compute ``ceil(num_envs / 64)``
  fresh resets per step (the trainers' path).

Peers: xminigrid with its ``GymAutoResetWrapper`` (a reset per env per step, selected),
NAVIX with its built-in auto-reset (``lax.cond``, a select under ``vmap``), its
first-person symbolic observation (7x7x3; hordax and xminigrid give 7x7x2) and the
episode limit set to hordax's (NAVIX's default is 100 steps for every layout). NAVIX's
DoorKey is its ``-Random-`` variant: the agent starts anywhere in the left room as in
MiniGrid (NAVIX's also draws the goal's cell).

XLand: hordax generates a new task (3 rules, 9 objects) at every reset; xminigrid steps one
fixed ruleset of the same sizes (its benchmark rulesets are a download, so none ships).

    pip install -e ".[bench]"
    python benchmarks/grid_vs_peers.py   # writes benchmarks/results/grid_vs_peers.json
    python benchmarks/grid_vs_peers.py --num-envs 16384 65536 131072 \
        --out benchmarks/results/grid_vs_peers_gpu.json   # a GPU: every layout at these
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

import hordax
from hordax.benchmarking import Subject, runner, uniform_discrete
from hordax.benchmarking.subjects import vecenv_subject, vmap_subject

#: (layout, hordax id, xminigrid id or None, NAVIX id or None)
LAYOUTS = [
    ("Empty-5x5", "Grid-Empty-5x5-v0", "MiniGrid-Empty-5x5", "Navix-Empty-5x5-v0"),
    ("Empty-8x8", "Grid-Empty-8x8-v0", "MiniGrid-Empty-8x8", "Navix-Empty-8x8-v0"),
    ("Empty-16x16", "Grid-Empty-16x16-v0", "MiniGrid-Empty-16x16", "Navix-Empty-16x16-v0"),
    (
        "Empty-Random-8x8",
        "Grid-Empty-Random-8x8-v0",
        "MiniGrid-EmptyRandom-8x8",
        "Navix-Empty-Random-8x8-v0",
    ),
    ("DoorKey-5x5", "Grid-DoorKey-5x5-v0", "MiniGrid-DoorKey-5x5", "Navix-DoorKey-Random-5x5-v0"),
    ("DoorKey-8x8", "Grid-DoorKey-8x8-v0", "MiniGrid-DoorKey-8x8", "Navix-DoorKey-Random-8x8-v0"),
    (
        "DoorKey-16x16",
        "Grid-DoorKey-16x16-v0",
        "MiniGrid-DoorKey-16x16",
        "Navix-DoorKey-Random-16x16-v0",
    ),
    ("FourRooms", "Grid-FourRooms-v0", "MiniGrid-FourRooms", "Navix-FourRooms-v0"),
    ("Unlock", "Grid-Unlock-v0", "MiniGrid-Unlock", None),
    ("UnlockPickUp", "Grid-UnlockPickUp-v0", "MiniGrid-UnlockPickUp", None),
    ("BlockedUnlockPickUp", "Grid-BlockedUnlockPickUp-v0", "MiniGrid-BlockedUnlockPickUp", None),
    ("LockedRoom", "Grid-LockedRoom-v0", "MiniGrid-LockedRoom", None),
    ("Memory-S8", "Grid-Memory-S8-v0", "MiniGrid-MemoryS8", None),
    ("Memory-S16", "Grid-Memory-S16-v0", "MiniGrid-MemoryS16", None),
    ("Playground", "Grid-Playground-v0", "MiniGrid-Playground", None),
    ("XLand-R1-9x9", "Grid-XLand-R1-9x9-v0", "XLand-MiniGrid-R1-9x9", None),
    ("XLand-R4-13x13", "Grid-XLand-R4-13x13-v0", "XLand-MiniGrid-R4-13x13", None),
]
#: Layouts timed at every default size; the others at 4,096 envs only (CPU time).
HEADLINE = {"Empty-8x8", "DoorKey-8x8", "FourRooms", "XLand-R1-9x9"}
NUM_ACTIONS = 6  # MiniGrid's left, right, forward, pickup, drop, toggle (all three sides)


def fixed_xland_ruleset():
    """One hand-written xminigrid ruleset with hordax's XLand sizes: an ``AgentNear`` goal,
    3 ``TileNear`` rules, 9 initial objects."""
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


def xminigrid_subject(env_id: str, n: int, max_steps: int) -> Subject:
    import xminigrid
    from xminigrid.wrappers import GymAutoResetWrapper

    env, params = xminigrid.make(env_id)
    params = params.replace(max_steps=max_steps)
    if env_id.startswith("XLand"):
        params = params.replace(ruleset=fixed_xland_ruleset())
    env = GymAutoResetWrapper(env)
    vstep = jax.vmap(env.step, in_axes=(None, 0, 0))

    def reset(key):
        return jax.vmap(env.reset, in_axes=(None, 0))(params, jax.random.split(key, n))

    def step(key, ts, action):
        ts = vstep(params, ts, action)
        return ts, {"obs": ts.observation, "reward": ts.reward, "done": ts.last(), "ts": ts}

    return Subject(f"xminigrid {_version('xminigrid')}", n, reset, step, "xminigrid", "vmap")


def navix_subject(env_id: str, n: int, max_steps: int) -> Subject:
    import navix as nx

    env = nx.make(env_id, max_steps=max_steps, observation_fn=nx.observations.symbolic_first_person)
    vstep = jax.vmap(env.step)

    def reset(key):
        return jax.vmap(env.reset)(jax.random.split(key, n))

    def step(key, ts, action):
        ts = vstep(ts, action)
        return ts, {"obs": ts.observation, "reward": ts.reward, "done": ts.is_done(), "ts": ts}

    return Subject(f"navix {_version('navix')}", n, reset, step, "navix", "vmap")


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def case(layout: str, hid: str, xid: str | None, nid: str | None) -> runner.Case:
    def build(n: int):
        env, params = hordax.make(hid)
        limit = int(params.max_steps_in_episode)
        sides = [
            vecenv_subject(env, params, n, name="hordax VecEnv"),
            vmap_subject(env, params, n, name="hordax vmap(env.step)"),
        ]
        if xid:
            sides.append(xminigrid_subject(xid, n, limit))
        if nid:
            sides.append(navix_subject(nid, n, limit))
        return sides, uniform_discrete(n, NUM_ACTIONS)

    note = (
        "hordax: a generated task per reset; xminigrid: one fixed ruleset" if "XLand" in hid else ""
    )
    sizes = None if layout in HEADLINE else (4096,)
    return runner.Case({"layout": layout}, build, note, sizes)


CASES = [case(*row) for row in LAYOUTS]

if __name__ == "__main__":
    runner.main(
        CASES,
        __doc__.splitlines()[0],
        sizes=(1024, 4096, 16384),
        steps=100,
        out="benchmarks/results/grid_vs_peers.json",
        packages=("xminigrid", "navix"),
    )

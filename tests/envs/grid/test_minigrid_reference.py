"""Equivalence with Farama ``minigrid`` 3.2 (the reference implementation).

For each layout: 1,000 minigrid resets (seeds 0..999) are translated into hordax states; one
random action sequence per reset (all six actions, forward-biased) is replayed in minigrid
step by step and in hordax under ``jit(vmap(scan(step_env)))``. Compared at every step until
minigrid terminates: agent position and direction, carried object, every door's state,
reward, termination, and the egocentric observation (minigrid ``gen_obs`` image with
occlusion); and the whole grid at the end of the sequence.

Random sequences seldom reach the goal in the larger layouts, so a second mode replays 100
episodes of a noisy scripted solver (BFS in minigrid's grid, 15% random actions) per layout:
>= 90% of them succeed, so rewards and termination are also compared on success steps.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("minigrid")
from minigrid import envs as mg  # noqa: E402

from hordax.envs.grid import env as grid_env  # noqa: E402
from hordax.envs.grid import world  # noqa: E402

from . import minigrid_ref as mref  # noqa: E402

NUM_SEQ = 1000
SEQ_LEN = 16
ACTION_P = np.array([0.4, 0.15, 0.15, 0.1, 0.1, 0.1])  # forward-biased, all six actions

CASES = {
    "Empty-8x8": (lambda: mg.EmptyEnv(size=8), lambda: grid_env.Empty(8)),
    "Empty-Random-6x6": (
        lambda: mg.EmptyEnv(size=6, agent_start_pos=None),
        lambda: grid_env.Empty(6, random_start=True),
    ),
    "FourRooms": (lambda: mg.FourRoomsEnv(), lambda: grid_env.FourRooms()),
    "DoorKey-8x8": (lambda: mg.DoorKeyEnv(size=8), lambda: grid_env.DoorKey(8)),
    "Unlock": (lambda: mg.UnlockEnv(), lambda: grid_env.Unlock()),
    "UnlockPickUp": (lambda: mg.UnlockPickupEnv(), lambda: grid_env.UnlockPickUp()),
    "LockedRoom": (lambda: mg.LockedRoomEnv(), lambda: grid_env.LockedRoom()),
}


def _run_minigrid(make_ref, actions, solver_seed=None):
    """Replay ``actions [N, L]`` (hordax ids) in minigrid; one reset (seed i) per sequence.

    With ``solver_seed``, the actions are chosen on the fly by the noisy scripted solver
    (``minigrid_ref.solver_action``) and written into ``actions``.
    """
    rng = None if solver_seed is None else np.random.default_rng(solver_seed)
    ref = make_ref()
    n, length = actions.shape
    out = {
        "start": [],
        "goal": [],
        "max_steps": ref.max_steps,
        "pos": np.zeros((n, length, 2), np.int32),
        "dir": np.zeros((n, length), np.int32),
        "carry": np.zeros((n, length, 2), np.uint8),
        "reward": np.zeros((n, length), np.float32),
        "terminated": np.zeros((n, length), bool),
        "valid": np.zeros((n, length), bool),
        "obs": None,
        "doors": [],
        "door_tiles": [],
        "final_grid": [],
    }
    obs_all = []
    for i in range(n):
        ref.reset(seed=i)
        out["start"].append(mref.snapshot(ref))
        out["goal"].append(mref.goal_of(ref))
        doors = [
            (x, y, ref.grid.get(x, y))
            for x in range(ref.width)
            for y in range(ref.height)
            if ref.grid.get(x, y) is not None and ref.grid.get(x, y).type == "door"
        ]
        out["doors"].append([(y, x) for x, y, _ in doors])
        door_tiles = np.zeros((length, len(doors)), np.int32)
        obs_seq = np.zeros((length, ref.agent_view_size, ref.agent_view_size, 2), np.uint8)
        for t in range(length):
            if rng is not None:
                actions[i, t] = mref.solver_action(ref, rng)
            obs, reward, terminated, _, _ = ref.step(int(mref.TO_MINIGRID_ACTION[actions[i, t]]))
            x, y = ref.agent_pos
            out["pos"][i, t] = (y, x)
            out["dir"][i, t] = ref.agent_dir
            out["carry"][i, t] = mref.carry_of(ref)
            out["reward"][i, t] = reward
            out["terminated"][i, t] = terminated
            out["valid"][i, t] = True
            obs_seq[t] = mref.translate_encoding(obs["image"])
            for k, (_, _, door) in enumerate(doors):
                door_tiles[t, k] = (
                    world.DOOR_OPEN
                    if door.is_open
                    else world.DOOR_LOCKED
                    if door.is_locked
                    else world.DOOR_CLOSED
                )
            if terminated:
                break
        out["door_tiles"].append(door_tiles)
        out["final_grid"].append(mref.snapshot(ref)["grid"])
        obs_all.append(obs_seq)
    out["obs"] = np.stack(obs_all)
    return out


@functools.cache
def _replay(env):
    """``jit(vmap(scan(step_env)))`` over stacked start states and action sequences."""

    def one(state, actions, params):
        def body(s, a):
            obs, s2, reward, terminated, _ = env.step_env(jax.random.key(0), s, a, params)
            rec = (s2.agent_pos, s2.agent_dir, s2.carry, reward, terminated, obs, s2.grid)
            return s2, rec

        return jax.lax.scan(body, state, actions)[1]

    return jax.jit(jax.vmap(one, in_axes=(0, 0, None)))


def _states(env, ref_out):
    starts = ref_out["start"]
    n = len(starts)
    return grid_env.GridState(
        grid=jnp.asarray(np.stack([s["grid"] for s in starts])),
        agent_pos=jnp.asarray(np.stack([s["pos"] for s in starts])),
        agent_dir=jnp.asarray(np.stack([s["dir"] for s in starts])),
        carry=jnp.asarray(np.stack([s["carry"] for s in starts])),
        goal=jnp.asarray(np.stack(ref_out["goal"])),
        fail=jnp.zeros((n, 5), jnp.int32),
        rules=jnp.zeros((n, 0, 7), jnp.int32),
        time=jnp.zeros(n, jnp.int32),
    )


def _first_mismatch(name, what, a, b, valid):
    bad = np.argwhere(~np.all((a == b).reshape(a.shape[0], a.shape[1], -1), -1) & valid)
    assert bad.size == 0, (
        f"{name}: {what} differs from minigrid in {len(bad)} steps; first at "
        f"(sequence, step) {tuple(bad[0])}: hordax {a[tuple(bad[0])]!r} vs "
        f"minigrid {b[tuple(bad[0])]!r}"
    )


SOLVED = ["Empty-8x8", "FourRooms", "DoorKey-8x8", "Unlock", "UnlockPickUp", "LockedRoom"]
NUM_SOLVED, SOLVED_LEN = 100, 80


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("name", "mode"), [(n, "random") for n in CASES] + [(n, "solver") for n in SOLVED]
)
@pytest.mark.slow
def test_minigrid_reference__same_trajectories(name, mode):
    """Position, direction, carry, doors, reward, termination, obs and grid equal minigrid's.

    ``random``: 1,000 random 16-step sequences. ``solver``: 100 sequences of up to 80 steps
    of a noisy scripted solver run in minigrid (15% random actions), replayed in hordax; most
    reach success, so rewards and termination are compared on successes too.
    """
    make_ref, make_env = CASES[name]
    env = make_env()
    seed = sum(map(ord, name + mode))
    if mode == "random":
        rng = np.random.default_rng(seed)
        actions = rng.choice(6, size=(NUM_SEQ, SEQ_LEN), p=ACTION_P).astype(np.int32)
        ref = _run_minigrid(make_ref, actions)
    else:
        actions = np.zeros((NUM_SOLVED, SOLVED_LEN), np.int32)
        ref = _run_minigrid(make_ref, actions, solver_seed=seed)
    params = env.default_params.replace(max_steps_in_episode=ref["max_steps"])
    assert env.default_params.max_steps_in_episode == ref["max_steps"], "default time limit"
    pos, d, carry, reward, term, obs, grids = jax.device_get(
        _replay(env)(_states(env, ref), jnp.asarray(actions), params)
    )
    valid = ref["valid"]
    # the start layouts are minigrid's own, so the layout generator is compared separately
    _first_mismatch(name, "agent position", pos, ref["pos"], valid)
    _first_mismatch(name, "agent direction", d, ref["dir"], valid)
    _first_mismatch(name, "carried object", carry, ref["carry"], valid)
    _first_mismatch(name, "terminated", term, ref["terminated"], valid)
    np.testing.assert_allclose(np.where(valid, reward, 0), ref["reward"], atol=1e-6)
    _first_mismatch(name, "observation", obs, ref["obs"], valid)
    last = valid.sum(1) - 1
    for i in range(len(actions)):
        np.testing.assert_array_equal(grids[i, last[i]], ref["final_grid"][i], f"grid, seq {i}")
        for k, (r, c) in enumerate(ref["doors"][i]):
            got = grids[i, : last[i] + 1, r, c, 0]
            np.testing.assert_array_equal(got, ref["door_tiles"][i][: last[i] + 1, k])
    # the sequences exercise what they claim to: report coverage
    successes = int(np.sum(ref["reward"] > 0))
    pickups = int(np.sum((carry[..., 0] != 0) & valid))
    print(
        f"{name} ({mode}): {len(actions)} sequences, {int(valid.sum())} steps, "
        f"{successes} successes, {pickups} steps carrying"
    )
    if mode == "solver":  # the solver's replays must exercise success, not just wander
        assert successes >= 0.9 * len(actions), f"{name}: {successes} solver successes"

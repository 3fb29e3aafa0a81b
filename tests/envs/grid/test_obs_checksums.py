"""Pinned digests of whole observation, reward and done sequences on the plain path.

Each id runs ``jax.vmap(env.step)`` (gymnax's reset of every finished env inside the step)
for 32 envs x 100 random steps from fixed keys, with a 25-step time limit so that every env
also goes through three fresh resets, and hashes every observation, reward,
terminated and truncated flag. A change that makes the grid faster must leave all of them
bit for bit the same; a change of semantics must change a digest here on purpose.
"""

from __future__ import annotations

import hashlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hordax

NUM_ENVS, STEPS = 32, 100

#: one id per layout generator, observation kind and episode rule
PINNED = {
    "Grid-Empty-5x5-v0": "01ae31b3b10ee927",
    "Grid-Empty-Random-6x6-v0": "65d6e26ff73ae74f",
    "Grid-DoorKey-8x8-v0": "c762d9a3bc4e9b7c",
    "Grid-DoorKey-16x16-v0": "afa0f8007902c754",
    "Grid-FourRooms-v0": "9a7ba655e94d0515",
    "Grid-Unlock-v0": "cc6a8c17ce95d6cb",
    "Grid-UnlockPickUp-v0": "301a34a2b4089a1d",
    "Grid-BlockedUnlockPickUp-v0": "993f11b0c35e753b",
    "Grid-LockedRoom-v0": "9a7ec751c390047c",
    "Grid-Memory-S8-v0": "54cfe6acb6120824",
    "Grid-Playground-v0": "c0f7c53fa88df48e",
    "Grid-XLand-R1-9x9-v0": "a15aa6ea577add12",
    "Grid-XLand-Trials-Harlow-R1-7x7-v0": "0f73b40600736c27",
}


def digest(env_id: str) -> str:
    """sha256 (first 16 hex digits) of every output of ``NUM_ENVS x STEPS`` random steps."""
    env, params = hordax.make(env_id)
    params = params.replace(max_steps_in_episode=25)
    n_actions = env.action_space(params).n

    @jax.jit
    def rollout(key):
        k_reset, k_run = jax.random.split(key)
        _, state = jax.vmap(env.reset, (0, None))(jax.random.split(k_reset, NUM_ENVS), params)

        def body(state, k):
            k_act, k_step = jax.random.split(k)
            action = jax.random.randint(k_act, (NUM_ENVS,), 0, n_actions)
            keys = jax.random.split(k_step, NUM_ENVS)
            obs, state, reward, term, trunc, _ = jax.vmap(env.step, (0, 0, 0, None))(
                keys, state, action, params
            )
            return state, (obs, reward, term, trunc)

        return jax.lax.scan(body, state, jax.random.split(k_run, STEPS))[1]

    obs, reward, term, trunc = (np.asarray(x) for x in rollout(jax.random.key(0)))
    # the reward to 1e-4: its last float bit depends on XLA's optimization level (the
    # tests compile without optimizations, the benchmarks with them)
    reward = np.round(reward.astype(np.float64) * 1e4).astype(np.int64)
    h = hashlib.sha256()
    for x in (obs, reward, term, trunc):
        h.update(np.ascontiguousarray(x).tobytes())
    return h.hexdigest()[:16]


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("env_id", list(PINNED))
def test_grid__observation_sequences_match_the_pinned_digest(env_id):
    assert digest(env_id) == PINNED[env_id]


@pytest.mark.timeout(120)
def test_grid_digest__sees_a_one_cell_change_of_the_observation(monkeypatch):
    """The digest is not blind: a view that differs in one cell of one step changes it."""
    from hordax.envs.grid import world

    base = digest("Grid-Empty-5x5-v0")
    view = world.egocentric_view

    def planted(grid, pos, direction, carry, view_size, see_through_walls=False):
        out = view(grid, pos, direction, carry, view_size, see_through_walls)
        return out.at[0, 0, 1].set(jnp.where(pos[1] == 3, 1, out[0, 0, 1]).astype(out.dtype))

    monkeypatch.setattr(world, "egocentric_view", planted)
    assert digest("Grid-Empty-5x5-v0") != base

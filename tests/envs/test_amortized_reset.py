"""VecEnv's amortized fresh resets (issue #12): a pool of ``k`` resets per step, overflow rounds.

Every test compares with, or checks properties of, the plain path (``reset_pool=0``:
``vmap`` of gymnax's in-step reset). Programs are compiled once per module (small batches).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnax.wrappers.purerl import FlattenObservationWrapper

import hordax
from hordax import testing
from hordax.envs.core import supports_step_no_reset
from hordax.envs.wrappers import ClipAction, LogEpisode, VecEnv, Wrapper
from hordax.envs.wrappers.vector import default_reset_pool, resolve_reset_pool

pytestmark = pytest.mark.timeout(900)

N, K = 8, 2
#: Per-slot time limits (domain-randomized params): slots finish on steps 3 (2 = K slots),
#: 4 (3 = K + 1), 6 (5), 8 (3), 9 (2) and 12 (all 8 at once).
MAX_STEPS = np.array([3, 3, 4, 4, 4, 6, 6, 6], np.int32)
T = 12


@functools.partial(jax.jit, static_argnames=("vec", "steps"))
def run(vec: VecEnv, params, key: jax.Array, steps: int):
    """``steps`` random-action steps of ``vec`` from ``vec.reset``; returns the ``reset``
    output and the stacked ``step`` outputs ``[steps, B, ...]``."""
    key_reset, key_steps = jax.random.split(key)
    obs0, state0 = vec.reset(key_reset, params)
    space = vec.unwrapped.action_space(vec.unwrapped.default_params)

    def body(state, k):
        k_act, k_step = jax.random.split(k)
        action = jax.vmap(space.sample)(jax.random.split(k_act, vec.num_envs))
        out = vec.step(k_step, state, action, params)
        return out[1], out

    return (obs0, state0), jax.lax.scan(body, state0, jax.random.split(key_steps, steps))[1]


def done_counts(out) -> np.ndarray:
    return (np.asarray(out[3]) | np.asarray(out[4])).sum(1)


def starts(out, state0) -> list[tuple[int, int, np.ndarray]]:
    """``(step, slot, flat start state)`` of every episode, the first ones included; the
    start state is the env state's leaves but ``time`` (LogEpisode counters dropped)."""

    def flat(state, idx):
        env_state = state.env_state if hasattr(state, "env_state") else state
        leaves = jax.tree_util.tree_flatten_with_path(env_state)[0]
        return np.concatenate(
            [
                np.asarray(x[idx], np.float64).ravel()
                for p, x in leaves
                if not jax.tree_util.keystr(p).endswith(".time")
            ]
        )

    found = [(0, i, flat(state0, i)) for i in range(np.asarray(out[3]).shape[1])]
    done = np.asarray(out[3]) | np.asarray(out[4])
    for t, i in zip(*np.nonzero(done), strict=True):
        found.append((int(t) + 1, int(i), flat(out[1], (t, i))))
    return found


def assert_all_distinct(found) -> None:
    for a in range(len(found)):
        for b in range(a + 1, len(found)):
            assert not np.array_equal(found[a][2], found[b][2]), (
                f"episode started at step {found[a][0]} in slot {found[a][1]} and the one at "
                f"step {found[b][0]} in slot {found[b][1]} start in the same state"
            )


@pytest.fixture(scope="module")
def point_mass_dr():
    """Debug-PointMass-v0 through the trainers' stack, params batched per slot (DR): time
    limits MAX_STEPS and a per-slot damping, plain path vs a pool of K (and of N)."""
    env, params = hordax.make("Debug-PointMass-v0")
    batched = jax.tree.map(lambda x: jnp.stack([jnp.asarray(x)] * N), params)
    batched = batched.replace(
        max_steps_in_episode=jnp.asarray(MAX_STEPS),
        damping=batched.damping * jnp.linspace(0.5, 1.5, N, dtype=jnp.float32),
    )
    stack = LogEpisode(ClipAction(env))
    key = jax.random.key(3)
    out = {}
    for pool in (0, K, N):
        vec = VecEnv(stack, N, params_batched=True, reset_pool=pool)
        out[pool] = (vec, run(vec, batched, key, T))
    return out


def test_pool__equals_in_step_resets_with_own_params_through_bursts(point_mass_dr):
    """reset_pool=2 of 8 DR envs equals the plain path (obs, state with LogEpisode counters,
    reward, flags, info incl. final_observation and episode returns) on steps where exactly
    K, K + 1, 5 and all 8 envs finish; floats to 1e-6 (same draws, other float fusion)."""
    vec, (first, out) = point_mass_dr[K]
    _, (first_plain, plain) = point_mass_dr[0]
    assert vec.amortized and vec.reset_pool == K
    counts = done_counts(plain)
    assert {K, K + 1, 5, N} <= set(counts.tolist()), counts
    testing.assert_trees_close(first, first_plain, "reset")
    for t in range(T):
        at = jax.tree.map(lambda x, t=t: x[t], (out, plain))
        testing.assert_trees_close(*at, f"step {t + 1}", rtol=1e-6, atol=1e-6)
    # Each finished slot got its own params: a slot's next episode truncates at its limit.
    np.testing.assert_array_equal(np.asarray(out[4]).sum(0), T // MAX_STEPS)


def test_pool__final_observation_is_the_last_step_not_the_reset(point_mass_dr):
    """On done steps info["final_observation"] is the pre-reset observation (it continues the
    episode: goal - pos in the obs is unchanged) and obs is the new episode's start."""
    _, (_, out) = point_mass_dr[K]
    done = np.asarray(out[3]) | np.asarray(out[4])
    final = np.asarray(out[5]["final_observation"])
    obs = np.asarray(out[0])
    t, i = np.nonzero(done)
    prev_obs = obs[t - 1, i]  # every done step here is t >= 3 (time limits >= 3)
    # Debug-PointMass obs = [pos, vel, goal - pos]: the goal does not move within an episode.
    np.testing.assert_allclose(
        (final[t, i, 4:] + final[t, i, :2]), (prev_obs[:, 4:] + prev_obs[:, :2]), atol=1e-5
    )
    assert not np.allclose(obs[t, i], final[t, i])
    log = out[5]["log"]
    np.testing.assert_array_equal(np.asarray(log["episode_length"])[t, i], MAX_STEPS[i])
    assert (np.asarray(out[1].episode_length)[t, i] == 0).all()


def test_pool_at_least_num_envs__is_the_plain_path_bit_for_bit(point_mass_dr):
    """reset_pool >= num_envs is the in-step path itself: every output equal, exactly."""
    vec, (first, out) = point_mass_dr[N]
    assert not vec.amortized and VecEnv(vec._env, N, reset_pool=10 * N).reset_pool == N
    testing.assert_trees_close((first, out), point_mass_dr[0][1], "pool N vs plain", exact=True)


def test_pool__every_episode_starts_from_its_own_draw(point_mass_dr):
    """8 + 23 episode starts of the DR run: no two alike, within a step or across steps."""
    _, ((_, state0), out) = point_mass_dr[K]
    found = starts(out, state0)
    assert len(found) == N + done_counts(out).sum() == 31
    assert_all_distinct(found)


class SharedPoolKey(VecEnv):
    """A broken pool: every pool entry of a step uses the first finished slot's key."""

    def _reset_keys(self, slot_keys):
        keys = super()._reset_keys(slot_keys)
        return keys[jnp.zeros(keys.shape[0], jnp.int32)]


@pytest.mark.parametrize("env_id", ["Debug-PointMass-v0", "Grid-FourRooms-v0"])
@pytest.mark.slow
def test_pool__fresh_starts_and_the_check_catches_a_shared_key(env_id):
    """16 envs, pool of 2, time limit 4 (bursts of 16 and random terminations): every one of
    the episodes starts differently; a pool that shares one key per step fails that check."""
    env, params = hordax.make(env_id)
    params = params.replace(max_steps_in_episode=4)
    good = VecEnv(env, 16, reset_pool=2)
    (_, state0), out = run(good, params, jax.random.key(0), 13)
    found = starts(out, state0)
    assert len(found) >= 16 + 3 * 16
    assert_all_distinct(found)
    (_, state0), out = run(SharedPoolKey(env, 16, reset_pool=2), params, jax.random.key(0), 13)
    with pytest.raises(AssertionError, match="start in the same state"):
        assert_all_distinct(starts(out, state0))


@pytest.mark.parametrize(
    ("env_id", "pool"),
    [("Debug-MultiPointMass-v0", 1), ("CartPole-v1", 2), ("Grid-DoorKey-5x5-v0", 1)],
)
@pytest.mark.slow
def test_pool__matches_in_step_resets_for_multi_agent_gymnax_and_grid(env_id, pool):
    """Multi-agent (scalar terminated, [n_agents] rewards and LogEpisode returns), a raw
    gymnax env and a grid env: the trainers' stack with a pool equals the plain path."""
    env, params = hordax.make(env_id)
    params = params.replace(max_steps_in_episode=3)
    stack = LogEpisode(ClipAction(env))
    pooled = VecEnv(stack, 4, reset_pool=pool)
    assert pooled.amortized
    a = run(pooled, params, jax.random.key(1), 8)
    b = run(VecEnv(stack, 4, reset_pool=0), params, jax.random.key(1), 8)
    assert done_counts(b[1]).max() > pool
    testing.assert_trees_close(a, b, env_id, rtol=1e-6, atol=1e-6)


def test_pool__under_a_population_vmap_rounds_per_member():
    """vmap over 2 members whose time limits differ (3 and 4): on step 3 one member needs 4
    rounds and the other one; both equal their plain-path runs."""
    env, params = hordax.make("Debug-PointMass-v0")
    members = jax.tree.map(lambda x: jnp.stack([jnp.asarray(x)] * 2), params)
    members = members.replace(max_steps_in_episode=jnp.array([3, 4], jnp.int32))
    keys = jax.random.split(jax.random.key(2), 2)

    def population(vec):
        return jax.jit(jax.vmap(lambda p, k: run.__wrapped__(vec, p, k, 9)))(members, keys)

    pooled = population(VecEnv(env, 4, reset_pool=1))
    plain = population(VecEnv(env, 4, reset_pool=0))
    np.testing.assert_array_equal(
        done_counts(jax.tree.map(lambda x: x[0], plain[1])), [0, 0, 4] * 3
    )
    testing.assert_trees_close(pooled, plain, "population", rtol=1e-6, atol=1e-6)


class StepOnlyWrapper(Wrapper):
    """Overrides step but not step_no_reset: VecEnv must not bypass it."""

    def step(self, key, state, action, params=None):
        obs, state, reward, terminated, truncated, info = self._env.step(key, state, action, params)
        return obs, state, reward + 1.0, terminated, truncated, info


def test_supports_step_no_reset__only_where_every_layer_has_it():
    """hordax's wrappers and gymnax envs: yes; a wrapper overriding step only, a gymnax
    wrapper or an env overriding step: no, and VecEnv then keeps in-step resets."""
    env, _ = hordax.make("CartPole-v1")
    assert supports_step_no_reset(env)
    assert supports_step_no_reset(LogEpisode(ClipAction(env)))
    assert not supports_step_no_reset(LogEpisode(StepOnlyWrapper(env)))
    assert not supports_step_no_reset(FlattenObservationWrapper(env))

    class OwnStep(type(env)):
        def step(self, key, state, action, params=None):
            return super().step(key, state, action, params)

    assert not supports_step_no_reset(OwnStep())
    assert not VecEnv(StepOnlyWrapper(env), 64).amortized
    assert VecEnv(ClipAction(env), 64).amortized


def test_reset_pool__default_and_bad_values():
    assert default_reset_pool(1) == 1 and default_reset_pool(1024) == 16
    assert default_reset_pool(1000) == 16 and default_reset_pool(4) == 1
    assert resolve_reset_pool(-1, 4096) == 64 and resolve_reset_pool(0, 4096) == 4096
    assert resolve_reset_pool(5, 4) == 4
    env, _ = hordax.make("CartPole-v1")
    with pytest.raises(ValueError, match=r"reset_pool=-2: must be -1 \(auto\), 0"):
        VecEnv(env, 4, reset_pool=-2)


def test_eager_step__compiles_once_and_equals_the_jitted_step():
    """Stepping a VecEnv outside jit compiles its step once: before, the reset rounds'
    ``while_loop`` closed over new functions on every call and recompiled every step."""
    env, params = hordax.make("CartPole-v1")
    vec = VecEnv(env, 4, reset_pool=1)
    compiles = []
    listener = lambda event, secs, **kw: compiles.append(event)  # noqa: E731
    _, state = vec.reset(jax.random.key(0), params)
    action = jnp.zeros((4,), jnp.int32)
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        outs = []
        for i in range(4):
            compiles.clear()
            outs.append(vec.step(jax.random.key(i), state, action, params))
            state = outs[-1][1]
            if i > 0:
                assert [e for e in compiles if e.endswith("backend_compile_duration")] == []
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    ref = jax.jit(vec.step)(jax.random.key(3), outs[2][1], action, params)
    for a, b in zip(jax.tree.leaves(outs[3]), jax.tree.leaves(ref), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))

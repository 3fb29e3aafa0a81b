"""VecEnv's staggered starts (``stagger=True``, ``trainer.stagger_starts``): each slot's first
episode starts at a random step counter, so fixed-length episodes end on different steps.

Checked against the plain stack (``stagger=False``) from the same key: the same reset
observations and env states but ``time``; the first episode of a slot drawn ``t`` ends after
``limit - t`` steps, every later one after ``limit``; per-slot limits (batched params) are
honoured; the counter is reached through stateful wrappers (LogEpisode, normalization).
"""

from __future__ import annotations

import functools
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hordax
from hordax.envs.wrappers import ClipAction, LogEpisode, VecEnv
from hordax.envs.wrappers.base import map_env_state
from hordax.training.core.env_stack import make_env_stack

pytestmark = pytest.mark.timeout(300)

N, LIMIT, T = 32, 10, 25


def inner_time(state) -> np.ndarray:
    while hasattr(state, "env_state"):
        state = state.env_state
    return np.asarray(state.time)


@functools.partial(jax.jit, static_argnames=("vec",))
def rollout(vec, params, key):
    """Reset plus ``T`` zero-action steps; returns ``(obs0, state0, done [T, N])``."""
    obs0, state0 = vec.reset(key, params)
    action = jnp.zeros((vec.num_envs, *vec.unwrapped.action_space(params).shape))

    def body(state, k):
        out = vec.step(k, state, action, params)
        return out[1], out[3] | out[4]

    return obs0, state0, jax.lax.scan(body, state0, jax.random.split(key, T))[1]


def assert_equal_but_time(vec, plain_state, staggered_state) -> None:
    """Every leaf of the two batch states equal (wrappers' fields included) once the
    staggered one's innermost counters are set back to the plain one's."""
    zeroed = jax.vmap(lambda s, t: map_env_state(vec._env, s, lambda e: e.replace(time=t)))(
        staggered_state, inner_time(plain_state)
    )
    assert jax.tree.all(jax.tree.map(jnp.array_equal, plain_state, zeroed))
    assert jax.tree.structure(plain_state) == jax.tree.structure(staggered_state)


def end_steps(done: np.ndarray, slot: int) -> list[int]:
    """1-based step numbers on which slot ``slot``'s episodes ended."""
    return [int(t) + 1 for t in np.nonzero(done[:, slot])[0]]


@pytest.fixture(scope="module")
def pendulum():
    """Pendulum-v1: episodes only truncate (never terminate), here after ``LIMIT`` steps."""
    env, params = hordax.make("Pendulum-v1")
    return env, params.replace(max_steps_in_episode=LIMIT)


def test_stagger__first_episode_shortened_then_full_length(pendulum):
    env, params = pendulum
    key = jax.random.key(7)
    plain = VecEnv(LogEpisode(ClipAction(env)), N)
    staggered = VecEnv(LogEpisode(ClipAction(env)), N, stagger=True)
    obs_p, state_p, done_p = rollout(plain, params, key)
    obs_s, state_s, done_s = rollout(staggered, params, key)

    # the same fresh resets (obs and every state leaf but the counter, LogEpisode's included)
    np.testing.assert_array_equal(np.asarray(obs_p), np.asarray(obs_s))
    np.testing.assert_array_equal(inner_time(state_p), 0)
    assert_equal_but_time(staggered, state_p, state_s)
    assert not np.array_equal(inner_time(state_s), inner_time(state_p))
    times = inner_time(state_s)
    assert times.min() >= 0 and times.max() <= LIMIT - 1
    assert len(set(times.tolist())) >= 6, f"{N} draws in [0, {LIMIT}) gave {sorted(set(times))}"
    for i in range(N):
        first = LIMIT - int(times[i])
        assert end_steps(np.asarray(done_s), i) == list(range(first, T + 1, LIMIT)), (i, times[i])
        assert end_steps(np.asarray(done_p), i) == list(range(LIMIT, T + 1, LIMIT))
    # the slots' episodes no longer end together
    assert len({end_steps(np.asarray(done_s), i)[0] for i in range(N)}) >= 6


def test_stagger__per_slot_limits_and_through_normalization(pendulum):
    env, params = pendulum
    limits = np.array([1, 2, 3, 50] * (N // 4), np.int32)
    batched = jax.tree.map(lambda x: jnp.stack([jnp.asarray(x)] * N), params)
    batched = batched.replace(max_steps_in_episode=jnp.asarray(limits))
    vec = VecEnv(LogEpisode(ClipAction(env)), N, params_batched=True, stagger=True)
    times = inner_time(vec.reset(jax.random.key(1), batched)[1])
    assert np.all(times >= 0) and np.all(times < limits), (times, limits)
    assert times[limits == 50].max() > 3  # the long slots' draws are not capped by the short

    # the trainers' stack: VecEnv inside the normalization wrappers, whose statistics and
    # observations are those of the plain stack
    cfg = types.SimpleNamespace(normalize_obs=True, normalize_reward=True, gamma=0.99)
    stack = make_env_stack(env, cfg, N, stagger=True)
    plain = make_env_stack(env, cfg, N)
    assert stack.unwrapped is env
    obs_s, state_s = stack.reset(jax.random.key(1), params)
    obs_p, state_p = plain.reset(jax.random.key(1), params)
    times = inner_time(state_s)
    assert times.max() > 0 and times.max() <= LIMIT - 1
    np.testing.assert_array_equal(np.asarray(obs_s), np.asarray(obs_p))
    unstaggered = stack.map_env_state(state_s, lambda e: e.replace(time=jnp.zeros_like(e.time)))
    assert jax.tree.all(jax.tree.map(jnp.array_equal, state_p, unstaggered))


def test_stagger__multi_agent_env():
    env, params = hordax.make("Aerial-MultiHover-v0")
    vec = VecEnv(LogEpisode(ClipAction(env)), 8, stagger=True)
    obs, state = vec.reset(jax.random.key(0), params)
    obs_p, state_p = VecEnv(LogEpisode(ClipAction(env)), 8).reset(jax.random.key(0), params)
    times = inner_time(state)
    assert times.shape == (8,) and len(set(times.tolist())) > 1
    assert np.all(times < params.max_steps_in_episode)
    np.testing.assert_array_equal(np.asarray(obs), np.asarray(obs_p))
    assert_equal_but_time(vec, state_p, state)


@pytest.mark.parametrize(
    "env_id",
    ["Aerial-Track-v0", "Grid-Empty-5x5-v0", "MemoryChain-bsuite", "Drive-GPUDriveJSON-v0"],
)
def test_stagger__refused_for_envs_that_read_their_step_counter(env_id):
    """Track's reference, the grid worlds' time-discounted reward, driving's log replay and
    bsuite's chains read ``state.time``: a staggered counter would change the task."""
    env, _ = hordax.make(env_id)
    with pytest.raises(
        ValueError, match=r"stagger=True \(trainer.stagger_starts\): \w+ reads its step counter"
    ):
        VecEnv(LogEpisode(ClipAction(env)), 4, stagger=True)
    VecEnv(LogEpisode(ClipAction(env)), 4)  # without stagger: fine


def test_stagger__xland_trials_whose_trial_clock_counts_only_to_truncation():
    """docs/env_protocol.md lists XLand trials among the envs that may be staggered: a
    trial's counter only counts towards its truncation (each episode inside it has its own
    clock, which the reward reads). It was refused, ``reads_time`` inherited from the grid
    worlds. A step from the same state with another trial counter gives the same
    observation, reward, termination and next state (but the counter)."""
    env, params = hordax.make("Grid-XLand-Trials-R1-9x9-v0", num_tasks=8)
    VecEnv(LogEpisode(ClipAction(env)), 4, stagger=True)  # accepted
    _, state = env.reset(jax.random.key(0), params)
    step = jax.jit(env.step_env)
    for action in range(6):
        a = step(jax.random.key(1), state, action, params)
        b = step(jax.random.key(1), state.replace(time=jnp.int32(700)), action, params)
        assert int(b[1].time) == 701
        b = (b[0], b[1].replace(time=a[1].time), *b[2:])
        jax.tree.map(np.testing.assert_array_equal, a, b)


@pytest.mark.parametrize("algo", ["ppo", "pqn"])
def test_stagger__trainer_config_reaches_the_env_stack(algo):
    """``trainer.stagger_starts``: the trainer's first env states carry drawn counters; off
    (the default) they start at 0. PPO (IPPO/MAPPO are the same trainer) and PQN; every
    trainer builds its stack in ``UpdateLoop``."""
    from hordax.agents.ppo import PPOConfig
    from hordax.agents.pqn import PQNConfig
    from hordax.training.config import TrainerConfig, resolve
    from hordax.training.trainers.ppo import PPOTrainer
    from hordax.training.trainers.pqn import PQNTrainer

    env_id, trainer_cls, agent = {
        "ppo": ("Pendulum-v1", PPOTrainer, PPOConfig(num_minibatches=1, num_epochs=1)),
        "pqn": ("CartPole-v1", PQNTrainer, PQNConfig(num_minibatches=1, num_epochs=1)),
    }[algo]
    env, params = hordax.make(env_id)
    for stagger in (False, True):
        tcfg = TrainerConfig(num_envs=N, rollout_length=8, total_env_steps=N * 8,
                             num_chunks=1, stagger_starts=stagger)  # fmt: skip
        trainer = trainer_cls(tcfg, agent, env, params, resolve(tcfg))
        times = inner_time(jax.jit(trainer.init)(jax.random.key(0)).env_state)
        assert (times.max() > 0) == stagger, (stagger, times)

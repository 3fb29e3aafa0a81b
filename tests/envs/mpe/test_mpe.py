"""The MPE scenarios beyond the reference test: protocol checks per scenario, fresh resets,
params and constructor validation, physics edge cases, the PettingZoo adapter (its API and
seed tests) for every id, and the Gymnasium adapter's refusal.

The env contract suite (``tests/contract``) runs its full set of checks once for the MPE
family (on ``MPE-SimpleTag-v0``: every id shares one entry point); here every scenario gets
the checks that exercise its own code (observations, teams, spaces, rewards, render).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

import hordax
from hordax import testing
from hordax.envs.gymnasium_adapter import GymnasiumEnv
from hordax.envs.mpe import SCENARIOS
from hordax.envs.mpe.simple_tag import SimpleTag
from hordax.envs.mpe.world import MPEState
from hordax.envs.pettingzoo_adapter import PettingZooParallelEnv

KEY = jax.random.key(0)
DISCRETE = [f"MPE-{name}-v0" for name in SCENARIOS]
CONTINUOUS = [f"MPE-{name}-Continuous-v0" for name in SCENARIOS]


@functools.cache
def _make(env_id: str):
    return hordax.make(env_id)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("env_id", DISCRETE)
@pytest.mark.slow
def test_scenario__protocol_checks(env_id):
    """The contract checks that depend on a scenario's own code, over one compiled 200-step
    random rollout (through auto-resets): the agent axis, teams, per-agent unpadded spaces
    and zero padding, the critic observation, the info schema, finiteness; observations,
    final observations and actions inside the stacked spaces with their dtypes; render."""
    env, params = _make(env_id)
    testing.check_multi_agent(env, params, KEY)  # with check_critic_observation
    testing.check_hordax_info(env, params, KEY)
    testing.check_finite(env, params, KEY)
    traj = jax.device_get(testing.rollout(env, params, KEY))  # the same compiled rollout
    for flag in ("obs_in_space", "next_obs_in_space", "final_obs_in_space", "action_in_space"):
        assert np.all(getattr(traj, flag)), flag
    assert traj.next_obs.dtype == np.float32 and traj.next_state.time.dtype == np.int32
    assert traj.action.dtype == np.int32 and traj.truncated.sum() == 200 // 25
    for t in (0, 24, 25):  # a step, the truncation step (auto-reset state), the next one
        frame = env.render(jax.tree.map(lambda x, t=t: x[t], traj.next_state), params)
        assert frame.dtype == np.uint8 and frame.shape == (128, 128, 3) and frame.std() > 0


@pytest.mark.parametrize("name", ["SimpleCrypto", "SimpleSpeakerListener", "SimpleWorldComm"])
@pytest.mark.slow
def test_scenario__nonfinite_continuous_actions_keep_the_state_finite(name):
    """NaN, +-inf and 1e30 actions given to the env itself: finite obs/state/reward. Every
    scenario decodes continuous actions with the same code (``world.decode_continuous``
    after ``clip_action``); these three cover its cases: agents that only talk, a talker
    beside a mover (different widths), and a mover that also talks, with contacts."""
    testing.check_nonfinite_actions(*_make(f"MPE-{name}-Continuous-v0"), KEY, wrap=False)


def test_scenario__critic_observation_is_every_agents_own_observation():
    """``critic_observation`` is the concatenation of the agents' unpadded observations
    (PettingZoo's ``state()``), the same row for every agent."""
    env, params = _make("MPE-SimpleWorldComm-v0")
    obs, state = env.reset(KEY, params)
    crit = np.asarray(jax.jit(env.critic_observation)(state, params))
    own = [np.asarray(obs)[i, : env.agent_obs_size(i)] for i in range(env.num_agents)]
    np.testing.assert_array_equal(crit, np.broadcast_to(np.concatenate(own), crit.shape))
    assert crit.shape == env.critic_observation_space(params).shape == (6, 4 * 34 + 2 * 28)


@pytest.mark.parametrize("name", list(SCENARIOS))
@pytest.mark.slow
def test_reset__fresh_uniform_draws(name):
    """4,000 resets: agents uniform over [-1, 1]^2, landmarks over [-spawn, spawn]^2, at rest
    and silent, goals uniform over the landmarks, every reset different."""
    env, params = _make(f"MPE-{name}-v0")
    keys = jax.random.split(KEY, 4000)
    _, states = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    pos, marks = np.asarray(states.pos), np.asarray(states.landmarks)
    assert np.abs(pos).max() <= 1.0 and np.abs(pos).max() > 0.99
    assert abs(pos.mean()) < 0.03 and abs(pos.std() - 1 / np.sqrt(3)) < 0.02  # U(-1, 1)
    for j, spawn in enumerate(env._spawn[:, 0]):
        assert np.abs(marks[:, j]).max() <= spawn and np.abs(marks[:, j]).max() > 0.99 * spawn
    assert not np.any(np.asarray(states.vel)) and not np.any(np.asarray(states.comm))
    assert not np.any(np.asarray(states.time))
    assert len(np.unique(pos.reshape(len(keys), -1), axis=0)) == len(keys)
    goal = np.asarray(states.goal)
    for g in range(goal.shape[1]):
        counts = np.bincount(goal[:, g], minlength=env.num_landmarks)
        assert counts.size == env.num_landmarks  # every choice is a landmark
        # each landmark about equally often (binomial: well within 5 standard deviations)
        expect = len(keys) / env.num_landmarks
        assert np.all(np.abs(counts - expect) < 5 * np.sqrt(expect))


def test_params__bad_values_and_options_name_the_field():
    with pytest.raises(ValueError, match=r"params.damping=1.5: must be in \[0, 1\]"):
        hordax.make("MPE-SimpleSpread-v0", damping=1.5)
    with pytest.raises(ValueError, match=r"params.local_ratio=-0.1: must be in \[0, 1\]"):
        hordax.make("MPE-SimpleReference-v0", local_ratio=-0.1)
    with pytest.raises(ValueError, match=r"params.agent_size=.*must be an array of shape \[3\]"):
        hordax.make("MPE-SimpleSpread-v0", agent_size=[0.1, 0.1])
    with pytest.raises(ValueError, match=r"params.mass=\[1.0, 0.0, 1.0, 1.0\]: every entry"):
        hordax.make("MPE-SimpleTag-v0", mass=[1.0, 0.0, 1.0, 1.0])
    with pytest.raises(ValueError, match=r"params.contact_margin=0.0: must be > 0"):
        hordax.make("MPE-SimpleTag-v0", contact_margin=0.0)
    with pytest.raises(ValueError, match="params.max_steps_in_episode=0"):
        hordax.make("MPE-Simple-v0", max_steps_in_episode=0)
    with pytest.raises(
        ValueError, match=r"^accel: neither .* its params \(allowed: \['max_steps_in"
    ):
        hordax.make("MPE-SimpleCrypto-v0", accel=[1.0, 1.0, 1.0])  # nothing moves
    with pytest.raises(ValueError, match="num_adversaries=0: must be an integer >= 1"):
        hordax.make("MPE-SimpleTag-v0", num_adversaries=0)
    with pytest.raises(ValueError, match=r"num_food: not an option of SimpleSpread"):
        hordax.make("MPE-SimpleSpread-v0", num_food=3)
    env, params = hordax.make("MPE-SimpleTag-v0", max_speed=[np.inf] * 5, num_good=2)
    assert env.num_agents == 5 and env.agents[-1] == "agent_1" and np.isinf(params.max_speed[0])


def test_physics__overlapping_agents_and_speed_caps():
    """Two agents on the same point keep obs, positions, velocities and rewards finite
    (PettingZoo divides by their distance and gives NaN: the one case where hordax differs);
    contact forces never push a capped agent past its max speed."""
    env = SimpleTag(num_good=1, num_adversaries=3, num_obstacles=2)
    params = env.default_params
    pos = jnp.array([[0.3, 0.3], [0.3, 0.3], [0.32, 0.3], [0.31, 0.29]])
    state = MPEState(
        time=jnp.int32(0),
        pos=pos,
        vel=jnp.zeros((4, 2)),
        landmarks=jnp.array([[0.35, 0.3], [-0.5, 0.5]]),
        comm=jnp.zeros((4, 2)),
        goal=jnp.zeros((0,), jnp.int32),
    )
    step = jax.jit(env.step_env)
    for t in range(5):
        obs, state, reward, _, _ = step(KEY, state, jnp.array([1, 2, 3, 4]), params)
        leaves = jax.tree.leaves((obs, state.pos, state.vel, reward))
        assert all(np.isfinite(np.asarray(x)).all() for x in leaves), f"step {t}"
        speed = np.linalg.norm(np.asarray(state.vel), axis=-1)
        assert np.all(speed <= np.asarray(params.max_speed) * (1 + 1e-6))


@pytest.mark.timeout(180)
@pytest.mark.parametrize("env_id", DISCRETE + CONTINUOUS)
@pytest.mark.slow
def test_pettingzoo__api_and_seed_tests_pass(env_id):
    """PettingZoo's own ``parallel_api_test`` (through an episode end) and
    ``parallel_seed_test`` on every MPE id, through hordax's PettingZoo adapter."""
    env = PettingZooParallelEnv(env_id)
    parallel_api_test(env, num_cycles=30)
    parallel_seed_test(lambda: PettingZooParallelEnv(env_id), num_cycles=30)
    base = env.env
    for i, agent in enumerate(env.possible_agents):  # heterogeneous, unpadded spaces
        assert env.observation_space(agent).shape == (base.agent_obs_size(i),)
    obs, _ = env.reset(seed=0)
    assert {a: o.shape for a, o in obs.items()} == {
        a: env.observation_space(a).shape for a in env.possible_agents
    }


def test_gymnasium__refuses_an_mpe_id_and_points_to_pettingzoo():
    with pytest.raises(
        ValueError,
        match="is multi-agent .*use hordax.envs.pettingzoo_adapter.PettingZooParallelEnv",
    ):
        GymnasiumEnv("MPE-SimpleSpread-v0")

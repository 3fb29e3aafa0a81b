"""The Gymnasium adapters: gymnasium's own checker passes, numpy outputs, seeding, same-step
auto-reset with the true final observation, and clear errors for bad actions."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode

import hordax
from hordax.envs import to_gymnasium
from hordax.envs.gymnasium_adapter import GymnasiumEnv, GymnasiumVectorEnv


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1", "Debug-PointMass-v0"])
def test_gymnasium_env__passes_gymnasiums_check_env(env_id):
    """gymnasium.utils.env_checker.check_env (spaces, reset/step types, seeding determinism)."""
    env = GymnasiumEnv(env_id)
    check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=3)
    assert isinstance(obs, np.ndarray) and env.observation_space.contains(obs)
    obs2, reward, terminated, truncated, info = env.step(env.action_space.sample())
    assert isinstance(reward, float) and isinstance(terminated, bool)
    assert isinstance(obs2, np.ndarray) and env.observation_space.contains(obs2)


def test_gymnasium_env__truncates_at_the_time_limit_without_auto_reset():
    """max_steps=5: the 5th step is truncated (not terminated); the env does not reset itself."""
    env = GymnasiumEnv("Debug-PointMass-v0", max_steps_in_episode=5, goal_radius=1e-6)
    env.reset(seed=0)
    flags = [env.step(np.zeros(2, np.float32))[2:4] for _ in range(5)]
    assert flags == [(False, False)] * 4 + [(False, True)]


def test_vector_env__same_step_autoreset_and_final_obs():
    """Where an episode ended, obs is a fresh first observation and info['final_obs'] holds the
    true last one (equal to a single env stepped with the same actions)."""
    venv = to_gymnasium(
        "Debug-PointMass-v0", num_envs=3, seed=1, max_steps_in_episode=4, goal_radius=1e-6
    )
    assert venv.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert venv.observation_space.shape == (3, 6) and venv.action_space.shape == (3, 2)
    obs, _ = venv.reset(seed=7)
    before = obs
    for _ in range(4):
        prev = obs
        obs, reward, terminated, truncated, info = venv.step(np.full((3, 2), 0.5, np.float32))
        assert obs.shape == (3, 6) and reward.shape == (3,) and reward.dtype == np.float64
    assert truncated.all() and not terminated.any() and info["_final_obs"].all()
    final = np.stack(info["final_obs"])
    # obs = [position, velocity, goal - position]: the final obs has the ended episode's goal
    # and a velocity from the pushes; the returned obs is a new episode (new goal, at rest).
    goal = lambda o: o[:, :2] + o[:, 4:]  # noqa: E731
    np.testing.assert_allclose(goal(final), goal(before), atol=1e-5)
    assert np.abs(final[:, 2:4]).min() > 0.0
    assert np.abs(goal(obs) - goal(before)).min() > 1e-3
    assert np.abs(obs[:, 2:4]).max() == 0.0
    assert not np.allclose(prev, before)


def test_vector_env__seed_fixes_the_run():
    a, b = GymnasiumVectorEnv("CartPole-v1", 4), GymnasiumVectorEnv("CartPole-v1", 4)
    oa, _ = a.reset(seed=11)
    ob, _ = b.reset(seed=11)
    np.testing.assert_array_equal(oa, ob)
    act = np.array([0, 1, 1, 0])
    np.testing.assert_array_equal(a.step(act)[0], b.step(act)[0])
    oc, _ = a.reset(seed=12)
    assert not np.array_equal(oa, oc)


@pytest.mark.parametrize(
    ("env_id", "action", "message"),
    [
        ("CartPole-v1", np.zeros(3, np.int64), r"actions has shape \(3,\), expected \(2,\)"),
        ("CartPole-v1", np.zeros(2, np.float32), "actions has dtype float32, expected an integer"),
        ("CartPole-v1", np.array([0, 5]), r"actions \[0, 5\] outside Discrete\(2\)"),
        ("Pendulum-v1", np.zeros((2, 2), np.float32), r"expected \(2, 1\)"),
        ("Pendulum-v1", np.array([["a"], ["b"]]), "expected a real dtype"),
    ],
)
def test_vector_env__bad_actions_raise_a_clear_error(env_id, action, message):
    venv = to_gymnasium(env_id, num_envs=2, seed=0)
    with pytest.raises(ValueError, match=message):
        venv.step(action)


def test_single_env__bad_action_and_make_kwargs_errors():
    env = GymnasiumEnv("CartPole-v1")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action has shape \(2,\), expected \(\)"):
        env.step(np.array([0, 1]))
    with pytest.raises(ValueError, match="make kwargs"):
        GymnasiumEnv(hordax.make("CartPole-v1")[0], gravity=3.0)
    assert isinstance(env, gymnasium.Env)

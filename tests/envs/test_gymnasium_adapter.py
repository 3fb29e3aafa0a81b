"""The Gymnasium adapters: gymnasium's own checker passes, numpy outputs, seeding, same-step
auto-reset with the true final observation, and clear errors for bad actions."""

from __future__ import annotations

import warnings

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


@pytest.mark.timeout(300)
@pytest.mark.parametrize("env_id", ["Catch-bsuite", "FourRooms-misc", "FrozenLake-misc"])
def test_adapters__observations_have_the_spaces_dtype(env_id):
    """gymnax's Catch returns float32 boards for its int32 Box, FourRooms int32 positions for
    its float32 Box, FrozenLake a 0-d int32 array for its Discrete space: the adapters hand
    out the declared type, so the observations lie in their spaces (check_env without its
    observation-type warnings, and the vector env's batches and final observations)."""
    env = GymnasiumEnv(env_id)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=True)
    assert not [w for w in caught if "obs returned" in str(w.message)], caught
    venv = to_gymnasium(env_id, num_envs=3, seed=0, max_steps_in_episode=10)
    obs, _ = venv.reset(seed=1)
    assert obs.dtype == venv.observation_space.dtype and venv.observation_space.contains(obs)
    ended = False
    for _ in range(10):
        obs, _, _, _, info = venv.step(venv.action_space.sample())
        assert obs.dtype == venv.observation_space.dtype
        if "final_obs" in info:
            final = info["final_obs"][np.nonzero(info["_final_obs"])[0][0]]
            assert venv.single_observation_space.contains(final)
            ended = True
    assert ended


@pytest.mark.timeout(300)
def test_adapters__return_writable_arrays_as_gymnasium_does():
    """gymnasium's envs and SyncVectorEnv hand out arrays the caller owns; views of jax
    buffers are read-only, so in-place updates (``obs -= mean``, ``done |= truncated``)
    raised ``ValueError: output array is read-only``."""
    env = GymnasiumEnv("Debug-PointMass-v0", render_mode="rgb_array", **POINT)
    obs, _ = env.reset(seed=0)
    obs2, _, _, _, info = env.step(np.zeros(2, np.float32))
    for a in (obs, obs2, env.render(), *info["reward_terms"].values()):
        a[...] = a
    venv = GymnasiumVectorEnv("Debug-PointMass-v0", 2, **POINT)
    obs, _ = venv.reset(seed=0)
    obs[...] = obs
    for _ in range(3):
        obs, reward, terminated, truncated, info = venv.step(np.zeros((2, 2), np.float32))
    assert truncated.all()
    metrics = info["final_info"]["metrics"]
    for a in (obs, reward, terminated, truncated, *info["final_obs"], *metrics.values()):
        a[...] = a


def test_gymnasium_env__truncates_at_the_time_limit_without_auto_reset():
    """max_steps=5: the 5th step is truncated (not terminated); the env does not reset itself."""
    env = GymnasiumEnv("Debug-PointMass-v0", max_steps_in_episode=5, goal_radius=1e-6)
    env.reset(seed=0)
    flags = [env.step(np.zeros(2, np.float32))[2:4] for _ in range(5)]
    assert flags == [(False, False)] * 4 + [(False, True)]


def test_vector_env__same_step_autoreset_and_final_obs():
    """Where an episode ended, obs is a fresh first observation (a new goal, at rest) and
    info['final_obs'] holds the true last one (the ended episode's goal, a pushed velocity)."""
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


# --- behaving like gymnasium's own vector env and Env (issue #18 item 8) ----------------------

POINT = {"max_steps_in_episode": 3, "goal_radius": 1e-6}


def _layout(info):
    """Keys, masks, dtypes and shapes of a vector info dict (values apart from masks aside)."""
    out = {}
    for k, v in info.items():
        if isinstance(v, dict):
            out[k] = _layout(v)
        elif k.startswith("_"):
            out[k] = v.tolist()
        else:
            out[k] = (v.dtype.str, v.shape, [x is None for x in v] if v.dtype == object else None)
    return out


def test_vector_env__matches_sync_vector_env_same_step():
    """Against gymnasium's SyncVectorEnv(SAME_STEP) of single envs, step by step: the same
    info layout (final_obs / final_info and every _mask), flags and reset_mask behaviour.
    Values are not compared: the vector env draws env i's keys from seed i differently
    from a single GymnasiumEnv (both reproducible per seed)."""
    n = 3
    ours = GymnasiumVectorEnv("Debug-PointMass-v0", n, **POINT)
    ref = gymnasium.vector.SyncVectorEnv(
        [lambda: GymnasiumEnv("Debug-PointMass-v0", **POINT) for _ in range(n)],
        autoreset_mode=AutoresetMode.SAME_STEP,
    )
    act = np.full((n, 2), 0.3, np.float32)
    for venv in (ours, ref):
        venv.reset(seed=[1, 2, 3])
    outs = {id(v): [] for v in (ours, ref)}
    for t in range(6):
        if t == 1:  # env 0 restarts: its episode ends one step after the others'
            mask = np.array([True, False, False])
            for venv in (ours, ref):
                obs_prev = outs[id(venv)][-1][0]
                obs, info = venv.reset(options={"reset_mask": mask})
                np.testing.assert_array_equal(obs[1:], obs_prev[1:])  # others untouched
                assert not np.array_equal(obs[0], obs_prev[0]) and info == {}
        for venv in (ours, ref):
            outs[id(venv)].append(venv.step(act))
        (o1, r1, te1, tr1, i1), (o2, r2, te2, tr2, i2) = outs[id(ours)][-1], outs[id(ref)][-1]
        assert o1.shape == o2.shape and r1.dtype == r2.dtype
        np.testing.assert_array_equal(te1, te2)
        np.testing.assert_array_equal(tr1, tr2)
        assert _layout(i1) == _layout(i2), t
    ended = [t for t, out in enumerate(outs[id(ours)]) if out[3].any()]
    assert ended == [2, 3, 5], ended  # envs 1-2 at step 3, env 0 a step later, then again
    info = outs[id(ours)][2][4]
    assert info["_final_info"].tolist() == [False, True, True]
    assert set(info["final_info"]) >= {"metrics", "_metrics", "reward_terms", "_reward_terms"}
    assert info["_metrics"].tolist() == [True, False, False]


def test_vector_env__seeds_as_gymnasium_int_list_and_per_env():
    """`seed=s` is `[s, s+1, ...]`; env i's first observation depends on its own seed only;
    a list of the wrong length names `seed`."""
    venv = GymnasiumVectorEnv("CartPole-v1", 3)
    a = venv.reset(seed=5)[0]
    b = venv.reset(seed=[5, 6, 7])[0]
    c = venv.reset(seed=[5, None, 0])[0]
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a[0], c[0])
    assert not np.array_equal(a[2], c[2])
    with pytest.raises(ValueError, match=r"seed=\[1, 2\]: must be None, an integer, or a list"):
        venv.reset(seed=[1, 2])
    with pytest.raises(ValueError, match=r"options\['reset_mask'\]=.*numpy bool array"):
        venv.reset(options={"reset_mask": [True, False, True]})


def test_vector_env__refuses_use_after_close_and_bad_num_envs():
    venv = GymnasiumVectorEnv("CartPole-v1", 2)
    venv.reset(seed=0)
    venv.close()
    with pytest.raises(gymnasium.error.ClosedEnvironmentError, match="was closed"):
        venv.step(np.zeros(2, np.int64))
    with pytest.raises(gymnasium.error.ClosedEnvironmentError):
        venv.reset()
    for bad in (2.7, "abc", 0, True, None):
        with pytest.raises(ValueError, match=r"num_envs=.*: must be an integer >= 1"):
            GymnasiumVectorEnv("CartPole-v1", bad)


def test_adapters__refuse_multi_agent_ids():
    for make_adapter in (GymnasiumEnv, lambda e: GymnasiumVectorEnv(e, 2)):
        with pytest.raises(ValueError, match="multi-agent.*PettingZooParallelEnv"):
            make_adapter("Debug-MultiPointMass-v0")


def test_single_env__render_mode_needs_a_render():
    """gymnax's CartPole has no render: render_mode='rgb_array' is refused when the adapter is
    built (it raised AttributeError on render()); a hordax env with render returns a frame."""
    with pytest.raises(ValueError, match=r"render_mode='rgb_array': CartPole has no render\(\)"):
        GymnasiumEnv("CartPole-v1", render_mode="rgb_array")
    assert GymnasiumEnv("CartPole-v1").metadata["render_modes"] == []
    env = GymnasiumEnv("Debug-PointMass-v0", render_mode="rgb_array")
    check_env(env)  # with its render check
    env.reset(seed=0)
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3

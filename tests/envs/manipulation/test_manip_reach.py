"""Manip-Reach-v0 (the MJX Panda arm): MJX against MuJoCo C, the action mapping, fresh
resets, NaN actions and params validation. Each compiled program is built once per module."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import hordax
from hordax.envs.core import step_no_reset
from hordax.envs.manipulation import physics

ID = "Manip-Reach-v0"
#: max |qpos_MJX - qpos_C| (rad) allowed over 200 control steps of random targets: float32
#: MJX against float64 MuJoCo C. Measured 4.9e-6 (this test's seed) and 4.1e-6 (another);
#: with the model's integrator switched to implicitfast the error is 1.25 rad (docs).
QPOS_TOL = 1e-4


@functools.cache
def _env():
    return hordax.make(ID)


T = 200  # every rollout has this length (one compiled program for the module)


@functools.cache
def _compiled_rollout():
    env, _ = _env()

    @jax.jit
    def run(key, actions, params):
        _, state0 = env.reset(key, params)

        def body(state, a):
            _, state, _, term, _, _ = step_no_reset(env, key, state, a, params)
            return state, (state.qpos, state.ee, term, env.critic_observation(state, params))

        _, (qpos, ee, term, crit) = jax.lax.scan(body, state0, actions)
        return state0, qpos, ee, term, crit

    return run


def _rollout(key, actions, params):
    """jit(scan) of ``step_no_reset`` over ``actions`` (padded with zeros to ``T`` steps)
    from ``reset(key)``: ``(reset state, qpos [T, 7], ee [T, 3], terminated [T], critic
    observation [T, 29])``."""
    actions = jnp.zeros((T, 7), jnp.float32).at[: len(actions)].set(actions)
    return _compiled_rollout()(key, actions, params)


def _c_model(env):
    return physics.load_model(env.model_file)


def _c_rollout(env, params, qpos0, actions):
    """The same control sequence with MuJoCo C (float64): ``mj_step`` x ``n_substeps``."""
    model = _c_model(env)
    data = mujoco.MjData(model)
    data.qpos[:] = qpos0
    low, high = model.actuator_ctrlrange[:, 0], model.actuator_ctrlrange[:, 1]
    home = np.asarray(env.home, np.float64)
    scale = np.asarray(params.action_scale, np.float64)
    out = []
    for a in actions:
        data.ctrl[:] = np.clip(home + scale * np.clip(a, -1.0, 1.0), low, high)
        for _ in range(env.n_substeps):
            mujoco.mj_step(model, data)
        out.append(data.qpos.copy())
    return np.stack(out)


def test_mjx_rollout_matches_mujoco_c_over_200_control_steps():
    """Must-show of #17: the env under jit(scan) and MuJoCo C's mj_step (float64), from the
    same reset pose under the same 200 random targets, agree in qpos within QPOS_TOL."""
    env, params = _env()
    actions = jax.random.uniform(jax.random.key(7), (200, 7), jnp.float32, -1.0, 1.0)
    state0, qpos, _, term, _ = _rollout(jax.random.key(3), actions, params)
    ref = _c_rollout(env, params, np.asarray(state0.qpos, np.float64), np.asarray(actions))
    err = np.abs(np.asarray(qpos, np.float64) - ref)
    assert not np.any(np.asarray(term))
    assert np.max(np.abs(ref[1:] - ref[:-1])) > 0.05  # the arm really moves
    assert err.max() < QPOS_TOL, f"max |dq| {err.max():.2e} rad at step {err.max(1).argmax()}"


def test_held_action_brings_the_hand_to_the_commanded_pose():
    """A held action drives the hand to MuJoCo C's forward kinematics of ``home + scale *
    action`` (action mapping, servos and gravity compensation together): < 2 mm in 2.5 s."""
    env, params = _env()
    action = np.array([0.3, -0.4, 0.2, 0.5, -0.3, 0.4, 0.1], np.float32)
    model = _c_model(env)
    data = mujoco.MjData(model)
    data.qpos[:] = np.asarray(env.home) + np.asarray(params.action_scale) * action
    mujoco.mj_forward(model, data)
    ee_ref = data.site_xpos[physics.site_id(model, "ee")]
    ee = _rollout(jax.random.key(0), jnp.tile(action, (50, 1)), params)[2]
    assert np.linalg.norm(np.asarray(ee[49]) - ee_ref) < 2e-3


def test_nan_action_acts_as_the_home_pose_and_inf_as_the_bound():
    """NaN entries act as 0 (target = home), +-inf as +-1 (docs: the action contract)."""
    env, params = _env()
    nan = jnp.full((3, 7), jnp.nan).at[1].set(jnp.inf).at[2].set(-jnp.inf)
    same = jnp.zeros((3, 7)).at[1].set(1.0).at[2].set(-1.0)
    a = _rollout(jax.random.key(1), nan, params)[1][:3]
    b = _rollout(jax.random.key(1), same, params)[1][:3]
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert np.all(np.isfinite(np.asarray(a)))


def test_critic_observation_is_the_privileged_state():
    """The critic observation (29 entries) along a rollout: joint state, hand position, its
    velocity as the finite difference of the hand positions over the control period,
    target, offset and distance, the log physics scales; inside its space, which the
    actor's observation (27 entries) is not the same as."""
    env, params = _env()
    params = params.replace(gain_scale=2.0, damping_scale=0.5)
    actions = jax.random.uniform(jax.random.key(4), (20, 7), jnp.float32, -1.0, 1.0)
    state0, qpos, ee, _, crit = _rollout(jax.random.key(6), actions, params)
    qpos, ee, crit = np.asarray(qpos), np.asarray(ee), np.asarray(crit)
    space = env.critic_observation_space(params)
    assert space.shape == (29,) and crit.shape == (T, 29)
    assert bool(jax.vmap(space.contains)(jnp.asarray(crit)).all())
    target = np.asarray(state0.target)
    np.testing.assert_allclose(crit[:, :7], qpos - np.asarray(env.home), atol=1e-6)
    np.testing.assert_allclose(crit[:, 14:17], ee, atol=1e-6)
    ee_prev = np.concatenate([np.asarray(state0.ee)[None], ee[:-1]])
    vel = (ee - ee_prev) / env.control_dt
    np.testing.assert_allclose(crit[:, 17:20], vel, rtol=1e-4, atol=1e-4)
    assert np.abs(vel[:20]).max() > 0.05  # the hand moves: the velocity is not trivially 0
    np.testing.assert_allclose(crit[:, 20:23], np.broadcast_to(target, (T, 3)), atol=1e-6)
    np.testing.assert_allclose(crit[:, 23:26], target - ee, atol=1e-6)
    np.testing.assert_allclose(crit[:, 26], np.linalg.norm(target - ee, axis=1), atol=1e-6)
    np.testing.assert_allclose(crit[:, 27:], np.log([[2.0, 0.5]] * T), atol=1e-6)
    reset_crit = np.asarray(env.critic_observation(state0, params))
    np.testing.assert_array_equal(reset_crit[17:20], 0.0)  # resets start at rest


def test_resets_are_fresh_and_match_forward_kinematics():
    """Each reset draws a new pose and target (inside jit); the hand position that
    the reset computes (``mjx.kinematics``) equals MuJoCo C's ``mj_forward`` at that pose."""
    env, params = _env()
    keys = jax.random.split(jax.random.key(5), 4)
    states = [env.reset(k, params)[1] for k in keys]
    qpos = np.stack([np.asarray(s.qpos) for s in states])
    targets = np.stack([np.asarray(s.target) for s in states])
    assert len({tuple(q) for q in qpos.round(6)}) == 4
    assert len({tuple(t) for t in targets.round(6)}) == 4
    assert np.all(np.abs(qpos - np.asarray(env.home)) <= float(params.home_noise) + 1e-6)
    lo = np.asarray(params.target_center - params.target_range)
    hi = np.asarray(params.target_center + params.target_range)
    assert np.all((targets >= lo) & (targets <= hi))
    model = _c_model(env)
    data = mujoco.MjData(model)
    for q, s in zip(qpos, states, strict=True):
        data.qpos[:] = q
        mujoco.mj_forward(model, data)
        ee = data.site_xpos[physics.site_id(model, "ee")]
        np.testing.assert_allclose(np.asarray(s.ee), ee, atol=1e-5)


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("action_scale", -np.ones(7, np.float32), "params.action_scale"),
        ("gain_scale", 0.0, "params.gain_scale"),
        ("damping_scale", -1.0, "params.damping_scale"),
        ("home_noise", -0.1, "params.home_noise"),
        ("target_center", np.array([1.0, 0.0, 0.3], np.float32), "params.target_center"),
        ("success_radius", 0.0, "params.success_radius"),
        ("obs_noise", -0.1, "params.obs_noise"),
        ("action_noise", np.nan, "params.action_noise"),
    ],
)
def test_make_rejects_invalid_params(field, value, match):
    with pytest.raises(ValueError, match=match):
        hordax.make(ID, **{field: value})


def test_params_change_the_dynamics():
    """gain_scale and damping_scale reach the MJX model (domain randomization by params)."""
    env, params = _env()
    actions = jnp.tile(jnp.full((7,), 0.5), (4, 1))
    base = np.asarray(_rollout(jax.random.key(2), actions, params)[1][:4])
    soft = np.asarray(_rollout(jax.random.key(2), actions, params.replace(gain_scale=0.5))[1][:4])
    damp = params.replace(damping_scale=20.0)
    damped = np.asarray(_rollout(jax.random.key(2), actions, damp)[1][:4])
    assert np.abs(base - soft).max() > 1e-3
    assert np.abs(base - damped).max() > 1e-4

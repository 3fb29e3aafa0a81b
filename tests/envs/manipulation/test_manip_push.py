"""Manip-Push-v0 (the MJX Panda pushing a cube, with contacts): MJX against MuJoCo C with
contacts, fresh resets, termination, NaN actions and params validation.

One jitted rollout program (reset state in, ``T`` control steps out) serves every test.
Truncation (``info["final_observation"]`` equal to ``step_env``'s observation, the auto-reset
to time 0) and fresh starts in one slot are the contract's ``terminal_semantics`` and
``fresh_resets`` checks, run on every manipulation env (tests/contract)."""

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
from hordax.envs.manipulation.push import CUBE_REST_Z

ID = "Manip-Push-v0"
T = 200  # every rollout has this length (one compiled program for the module)


@functools.cache
def _env():
    return hordax.make(ID)


@functools.cache
def _compiled():
    env, _ = _env()

    @jax.jit
    def run(state0, actions, params):
        key = jax.random.key(0)

        def body(state, a):
            _, state, reward, term, trunc, info = step_no_reset(env, key, state, a, params)
            return state, (state.qpos, reward, term, info["metrics"])

        return jax.lax.scan(body, state0, actions)[1]

    return jax.jit(env.reset), run


def _reset(key, params):
    return _compiled()[0](key, params)[1]


def _rollout(state0, actions, params):
    """jit(scan) of ``step_no_reset`` over ``actions`` (padded with zeros to ``T``) from
    ``state0``: ``(qpos [T, 14], reward [T], terminated [T], metrics {name: [T]})``."""
    actions = jnp.zeros((T, 7), jnp.float32).at[: len(actions)].set(actions)
    return _compiled()[1](state0, actions, params)


def _c_rollout(env, params, qpos0, actions):
    """The same control sequence with MuJoCo C (float64): ``mj_step`` x ``n_substeps``;
    returns ``(qpos [T, 14], finger-cube contact count)``."""
    model = physics.load_model(env.model_file)
    data = mujoco.MjData(model)
    data.qpos[:] = qpos0
    low, high = model.actuator_ctrlrange[:, 0], model.actuator_ctrlrange[:, 1]
    home = np.asarray(env.home, np.float64)
    scale = np.asarray(params.action_scale, np.float64)
    cube = model.geom("cube").id
    table = model.geom("table").id
    out, touches = [], 0
    for a in actions:
        data.ctrl[:] = np.clip(home + scale * np.clip(a, -1.0, 1.0), low, high)
        for _ in range(env.n_substeps):
            mujoco.mj_step(model, data)
            pairs = zip(data.contact.geom1, data.contact.geom2, strict=True)
            touches += any(cube in p and table not in p for p in pairs)
        out.append(data.qpos.copy())
    return np.stack(out), touches


def _ik(model, target, q0, iters=20):
    """Damped least squares on the grip site: position ``target`` with the fingers pointing
    down (+z of the site along -z of the world), from joint angles ``q0``."""
    data = mujoco.MjData(model)
    site = model.site("grip").id
    q = q0.copy()
    for _ in range(iters):
        data.qpos[:7] = q
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        jp, jr = np.zeros((3, model.nv)), np.zeros((3, model.nv))
        mujoco.mj_jacSite(model, data, jp, jr, site)
        z = data.site_xmat[site].reshape(3, 3)[:, 2]
        err = np.concatenate([target - data.site_xpos[site], np.cross(z, [0.0, 0.0, -1.0])])
        jac = np.vstack([jp[:, :7], jr[:, :7]])
        q = q + jac.T @ np.linalg.solve(jac @ jac.T + 1e-4 * np.eye(6), err)
    return q


def _scripted(env, params, path):
    """Actions whose joint targets put the grip (between the fingertips) at ``path[t]``
    (``[T, 3]``, m) with the fingers down, by IK from the home pose."""
    model = physics.load_model(env.model_file)
    q = np.asarray(env.home, np.float64)
    actions = []
    for p in path:
        q = _ik(model, p, q)
        actions.append((q - np.asarray(env.home)) / np.asarray(params.action_scale))
    return np.asarray(actions, np.float32)


def _fixed_params():
    """Default params with a deterministic reset (home pose, cube at (0.55, 0), yaw 0) and
    action_scale 2.5 rad (the scripted IK targets need no clipping)."""
    _, params = _env()
    return params.replace(
        home_noise=0.0,
        cube_range=jnp.zeros(2),
        cube_yaw_range=0.0,
        action_scale=jnp.full(7, 2.5, jnp.float32),
    )


def _compare(params, actions):
    """``(|qpos_MJX - qpos_C| [T, 14], C qpos [T, 14], finger-cube contact substeps,
    terminated [T])`` for ``actions`` from the deterministic reset of ``params``."""
    env, _ = _env()
    assert np.abs(actions).max() <= 1.0  # no clipping: the targets are the IK solutions
    state0 = _reset(jax.random.key(0), params)
    qpos, _, term, _ = _rollout(state0, actions, params)
    ref, touches = _c_rollout(env, params, np.asarray(state0.qpos, np.float64), actions)
    return np.abs(np.asarray(qpos, np.float64) - ref), ref, touches, np.asarray(term)


#: max |qpos_MJX - qpos_C| over 200 control steps with table contacts only (rad and m).
#: Measured 2.0e-6 (see the test); the arm alone without contacts: 4.9e-6 (Reach).
TABLE_TOL = 2e-5


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_mjx_matches_mujoco_c_over_200_steps_with_table_contacts():
    """Must-show of #17 with contacts: the fingertips press on and slide over the table
    (sphere-plane contacts with friction, the cube resting on its 4 box-plane contacts, the
    constraint solver on), weaving with random jitter; the env under jit(scan) and MuJoCo
    C's mj_step (float64) from the same reset agree in qpos within TABLE_TOL."""
    env, _ = _env()
    params = _fixed_params()
    t = np.arange(T)
    # the grip (fingertip centres, radius 1 cm) commanded 1 cm into the table: pressing
    path = np.stack([0.4 - 0.05 * np.sin(t / 20), 0.12 * np.sin(t / 13), 0.0 * t], 1)
    jitter = np.random.default_rng(0).uniform(-0.02, 0.02, (T, 7))
    actions = (_scripted(env, params, path) + jitter).astype(np.float32)
    err, ref, touches, term = _compare(params, actions)
    model = physics.load_model(env.model_file)
    data = mujoco.MjData(model)
    pressed = 0
    for q in ref:  # the fingertips touch the table through the rollout
        data.qpos[:] = q
        mujoco.mj_forward(model, data)
        pressed += data.ncon > 4
    assert not np.any(term) and touches == 0 and pressed > 80  # measured 105 of 200
    assert np.abs(ref[1:, :7] - ref[:-1, :7]).max() > 0.02  # the arm really moves
    assert err.max() < TABLE_TOL, f"max |dq| {err.max():.2e} at step {err.max(1).argmax()}"


#: max |qpos_MJX - qpos_C| while the fingers push the cube 23 cm (float32 MJX, float64 C).
#: Measured (see the test): no contact with the cube yet (37 steps) 1.6e-6; over 200 steps
#: arm 1.5e-4 rad, cube 7.2 mm and 0.096 in its quaternion. MJX run in float64
#: (jax_enable_x64) gives the same numbers to 3 digits: the gap is not float32 rounding but
#: MJX's box contacts (its generic convex colliders for sphere-box and plane-box) against
#: MuJoCo C's box routines, grown by the push (a two-point push of a box turns it one way or
#: the other: small differences in the contact points grow).
PUSH_TOL = {"before": 1e-5, "arm": 1e-3, "cube_pos": 0.015, "cube_quat": 0.2}


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_mjx_tracks_mujoco_c_over_200_steps_of_a_push():
    """Must-show of #17 with cube contacts: a scripted push (the fingertips sweep the cube
    ~23 cm across the table, turning it) by the env under jit(scan) and by MuJoCo C's
    mj_step (float64): equal to 1e-5 until the fingers touch the cube, then within
    PUSH_TOL (cube position to 1.5 cm of a 23 cm push) over the 200 control steps."""
    env, _ = _env()
    params = _fixed_params()
    t = np.arange(T)
    s = np.minimum(t / 120, 1.0)
    path = np.stack([0.42 + 0.33 * s, 0.02 * np.sin(t / 15), 0.03 + 0.0 * t], 1)
    err, ref, touches, term = _compare(params, _scripted(env, params, path))
    assert not np.any(term) and touches > 100  # substeps with a finger-cube contact
    assert np.linalg.norm(ref[-1, 7:9] - ref[0, 7:9]) > 0.2  # the cube was pushed > 20 cm
    first = int(np.argmax(np.linalg.norm(ref[:, 7:9] - ref[0, 7:9], axis=1) > 1e-4))
    worst = {
        "before": err[:first].max(),
        "arm": err[:, :7].max(),
        "cube_pos": err[:, 7:10].max(),
        "cube_quat": err[:, 10:].max(),
    }
    assert first > 30
    assert all(worst[k] < PUSH_TOL[k] for k in PUSH_TOL), worst


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_resets_are_fresh_at_rest_and_match_forward_kinematics():
    """Each reset draws a new arm pose, cube pose and target (inside jit): the cube rests on
    the table inside its reset box, the target lies at the drawn distance, the fingers are
    clear of the cube, and the grip position equals MuJoCo C's mj_forward at that pose."""
    env, params = _env()
    states = [_reset(k, params) for k in jax.random.split(jax.random.key(5), 4)]
    qpos = np.stack([np.asarray(st.qpos, np.float64) for st in states])
    target = np.stack([np.asarray(st.target) for st in states])
    for col in (slice(0, 7), slice(7, 9), slice(10, 14)):
        assert len({tuple(q) for q in qpos[:, col].round(6)}) == 4  # arm, cube xy, yaw
    assert len({tuple(x) for x in target.round(6)}) == 4
    assert np.all(np.abs(qpos[:, :7] - np.asarray(env.home)) <= float(params.home_noise) + 1e-6)
    lo = np.asarray(params.cube_center - params.cube_range)
    hi = np.asarray(params.cube_center + params.cube_range)
    assert np.all((qpos[:, 7:9] >= lo - 1e-6) & (qpos[:, 7:9] <= hi + 1e-6))
    np.testing.assert_allclose(qpos[:, 9], CUBE_REST_Z, atol=1e-7)  # resting on the table
    np.testing.assert_allclose(np.linalg.norm(qpos[:, 10:], axis=1), 1.0, atol=1e-6)
    yaw = 2 * np.arctan2(qpos[:, 13], qpos[:, 10])
    assert np.all(np.abs(yaw) <= float(params.cube_yaw_range) + 1e-5)
    dist = np.linalg.norm(target - qpos[:, 7:9], axis=1)
    assert np.all((dist >= 0.08 - 1e-5) & (dist <= 0.15 + 1e-5))
    model = physics.load_model(env.model_file)
    data = mujoco.MjData(model)
    for q, st in zip(qpos, states, strict=True):
        data.qpos[:] = q
        mujoco.mj_forward(model, data)
        np.testing.assert_allclose(
            np.asarray(st.grip), data.site_xpos[model.site("grip").id], atol=1e-5
        )
        assert not np.any(np.asarray(st.qvel))  # at rest
        table, cube = model.geom("table").id, model.geom("cube").id
        pairs = zip(data.contact.geom1, data.contact.geom2, strict=True)
        assert all({int(g1), int(g2)} == {table, cube} for g1, g2 in pairs)  # fingers clear


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_nan_and_inf_actions_keep_the_state_finite():
    """NaN entries act as 0 (target = home), +-inf as +-1 (the action contract), with the
    cube in play; the state stays finite."""
    env, params = _env()
    state0 = _reset(jax.random.key(1), params)
    nan = jnp.full((3, 7), jnp.nan).at[1].set(jnp.inf).at[2].set(-jnp.inf)
    same = jnp.zeros((3, 7)).at[1].set(1.0).at[2].set(-1.0)
    a = np.asarray(_rollout(state0, nan, params)[0])
    b = np.asarray(_rollout(state0, same, params)[0])
    np.testing.assert_array_equal(a[:3], b[:3])
    assert np.all(np.isfinite(a))


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_a_joint_swung_past_its_range_is_observed_inside_the_observation_space():
    """The arm has no joint-limit constraint (saturated targets swing the wrist past its
    range, as in Reach): its observed angle is clipped to +- the range width, the cube's
    entries are untouched."""
    env, params = _env()
    state = _reset(jax.random.key(2), params)
    span = env.ctrl_high - env.ctrl_low
    past = state.replace(qpos=state.qpos.at[5].add(2.0 * span[5]))
    obs = np.asarray(env.observe(jax.random.key(0), past, None, params))
    space = env.observation_space(params)
    assert np.all(obs >= np.asarray(space.low)) and np.all(obs <= np.asarray(space.high))
    assert obs[5] == pytest.approx(span[5])
    inside = np.asarray(env.observe(jax.random.key(0), state, None, params))
    np.testing.assert_array_equal(obs[7:], inside[7:])


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_cube_leaving_the_workspace_terminates_and_reward_follows_the_terms():
    """The cube off the table's workspace (x > 1 m) terminates at the first step; inside,
    the reward is 1 - tanh(5 g) + 2 reached (1 - tanh(5 d)) and "reached" latches."""
    env, params = _env()
    state0 = _reset(jax.random.key(2), params)
    out = state0.replace(qpos=state0.qpos.at[7].set(1.2))
    term = np.asarray(_rollout(out, jnp.zeros((1, 7)), params)[2])
    assert term[0]
    _, reward, term, metrics = _rollout(state0, jnp.zeros((1, 7)), params)
    assert not np.asarray(term)[0]
    g, d = float(metrics["grip_distance"][0]), float(metrics["distance"][0])
    assert g > 0.05 and not metrics["reached"][0]  # the home pose is clear of the cube
    np.testing.assert_allclose(float(reward[0]), 1 - np.tanh(5 * g), rtol=1e-5)
    near = state0.replace(reached=jnp.bool_(True))  # latched: stays on
    _, r2, _, m2 = _rollout(near, jnp.zeros((1, 7)), params)
    assert m2["reached"][0]
    np.testing.assert_allclose(
        float(r2[0]), 1 - np.tanh(5 * g) + 2 * (1 - np.tanh(5 * d)), rtol=1e-5
    )


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("action_scale", -np.ones(7, np.float32), "params.action_scale"),
        ("gain_scale", 0.0, "params.gain_scale"),
        ("home_noise", -0.1, "params.home_noise"),
        ("cube_center", np.array([0.3, 0.0], np.float32), "params.cube_center"),
        ("cube_range", np.array([0.05, 0.5], np.float32), "params.cube_range"),
        ("target_max_distance", 0.05, "params.target_max_distance"),
        ("target_min_distance", -0.1, "params.target_min_distance"),
        ("reached_radius", 0.0, "params.reached_radius"),
        ("push_weight", -1.0, "params.push_weight"),
        ("cube_mass_scale", 0.0, "params.cube_mass_scale"),
        ("obs_noise", -0.1, "params.obs_noise"),
    ],
)
@pytest.mark.timeout(120)
def test_make_rejects_invalid_params(field, value, match):
    with pytest.raises(ValueError, match=match):
        hordax.make(ID, **{field: value})


@pytest.mark.timeout(120)
def test_make_rejects_a_reached_radius_the_grip_cannot_come_within():
    """The grip sits between two fingertip spheres (1 cm radius), so it stays ~3.5 cm (3.45
    with an edge between the fingertips) from the 5 cm cube's centre unless the contacts are
    pressed in (MuJoCo C, the arm's servos pressing the fingertips onto the cube at full
    force: 2.2 cm at the least). Playground's 1.2 cm (for a gripper that closes around the
    box) was accepted, and `reached`, with the push reward it gates, never latched."""
    with pytest.raises(ValueError, match="params.reached_radius"):
        hordax.make(ID, reached_radius=0.012)
    env, _ = hordax.make(ID, reached_radius=0.04)
    assert env.min_grip_distance == pytest.approx(0.035)


@pytest.mark.timeout(60)
def test_push_scene_arm_is_the_reach_arm():
    """assets/panda_push.xml repeats panda.xml's arm (MJCF cannot attach the fingers inside
    an included body): the kinematic chain, inertias, joints and servos are equal."""
    arm = physics.load_model("panda.xml")
    push = physics.load_model("panda_push.xml")
    for name in [f"link{i}" for i in range(8)] + ["right_hand"]:
        a, b = arm.body(name), push.body(name)
        for field in ("pos", "quat", "ipos", "iquat", "inertia", "mass"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=name)
        np.testing.assert_array_equal(arm.body_gravcomp[a.id], push.body_gravcomp[b.id])
    # the arm's 7 joints come first (the cube's free joint after them)
    for field in ("jnt_range", "jnt_axis", "dof_damping", "dof_armature"):
        np.testing.assert_array_equal(getattr(arm, field), getattr(push, field)[:7], err_msg=field)
    for field in ("gainprm", "biasprm", "ctrlrange", "forcerange"):
        field = f"actuator_{field}"
        np.testing.assert_array_equal(getattr(arm, field), getattr(push, field), err_msg=field)

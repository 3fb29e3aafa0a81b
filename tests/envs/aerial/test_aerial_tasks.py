"""Aerial tasks: observation layout, reward and crash rules, action handling, robustness."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hordax
from hordax.envs.aerial import common
from hordax.envs.aerial import controllers as ctl
from hordax.envs.aerial import dynamics as dyn
from hordax.envs.aerial.track import reference

KEY = jax.random.key(0)


@functools.cache
def _make(env_id, **kwargs):
    return hordax.make(env_id, **kwargs)


@functools.cache
def _jit_step(env_id, **kwargs):
    env, _ = _make(env_id, **kwargs)
    return jax.jit(env.step_env)


def test_hover__observation_is_aerial_gyms_13():
    """obs = [target - pos, quat, R^T v, omega] of the state, at reset and after a step."""
    env, params = _make("Aerial-Hover-v0")
    obs, state = env.reset(KEY, params)
    for _ in range(2):
        q = state.quad
        rot = np.asarray(dyn.quat_to_rotmat(q.quat))
        expected = np.concatenate([state.target - q.pos, q.quat, rot.T @ q.vel, q.omega])
        np.testing.assert_allclose(obs, expected, rtol=1e-5, atol=1e-6)
        assert obs.shape == (13,) and obs.dtype == jnp.float32
        obs, state, *_ = env.step(KEY, state, jnp.zeros(4), params)


def test_hover__reward_matches_aerial_gym_formula():
    """reward = pos + dist + pos (up + spin) at a hand-built state (d = 0.5, tilted, spinning)."""
    env, params = _make("Aerial-Hover-v0")
    _, state = env.reset(KEY, params)
    quad = state.quad.replace(
        pos=state.target + jnp.array([0.3, 0.0, -0.4]),
        quat=dyn.quat_from_euler(0.4, 0.0, 0.0),
        omega=jnp.array([1.0, 0.0, 0.5]),
    )
    from hordax.envs.aerial.hover import hover_reward

    reward, terms, crashed, distance = hover_reward(quad, state.target, params)
    d = 0.5
    pos = 3 * np.exp(-8 * d**2) + 2 * np.exp(-4 * d**2)
    tilt = 1 - np.cos(0.4)
    up = 0.2 / (0.1 + tilt**2)
    spin = 3 / (1 + 1.25)
    np.testing.assert_allclose(distance, d, rtol=1e-6)
    np.testing.assert_allclose(reward, pos + (20 - d) / 40 + pos * (up + spin), rtol=1e-5)
    assert not bool(crashed)
    np.testing.assert_allclose(terms["up"], up, rtol=1e-5)


def test_hover__optional_sim2real_terms_add_precision_and_progress():
    """precision_gain exp(-50 d) + progress_scale (d_prev - d) on top of the base reward,
    by hand for one step; both off by default (the base task's reward)."""
    env, params = _make("Aerial-Hover-v0")
    on = params.replace(precision_gain=jnp.float32(3.0), progress_scale=jnp.float32(400.0))
    _, state = env.reset(KEY, params)
    state = state.replace(quad=state.quad.replace(pos=state.target + jnp.array([0.05, 0.0, 0.0])))
    action = jnp.zeros(4)
    _, nxt, r_off, _, info_off = env.step_env(KEY, state, action, params)
    _, _, r_on, _, info_on = env.step_env(KEY, state, action, on)
    d_prev, d = 0.05, float(info_on["metrics"]["distance"])
    expected = float(r_off) + 3.0 * np.exp(-50.0 * d) + 400.0 * (d_prev - d)
    np.testing.assert_allclose(float(r_on), expected, rtol=1e-5)
    np.testing.assert_allclose(float(info_off["reward_terms"]["progress"]), d_prev - d, atol=1e-6)
    with pytest.raises(ValueError, match="params.progress_scale"):
        env.validate_params(params.replace(progress_scale=-1.0))


@pytest.mark.parametrize(
    ("where", "why"),
    [((0.0, 0.0, -0.01), "below ground"), ((9.0, 0.0, 2.0), "beyond crash_distance")],
)
def test_hover__crash_terminates_with_crash_reward(where, why):
    """A step that ends below ground or > 8 m away: terminated, reward -20, crashed = 1."""
    env, params = _make("Aerial-Hover-v0")
    _, state = env.reset(KEY, params)
    quad = dyn.hover_state(params.quad, jnp.asarray(where, jnp.float32))
    state = state.replace(quad=quad.replace(vel=jnp.array([0.0, 0.0, -1.0])))
    _, _, reward, terminated, info = _jit_step("Aerial-Hover-v0")(KEY, state, jnp.zeros(4), params)
    assert bool(terminated), why
    assert float(reward) == -20.0
    assert float(info["metrics"]["crashed"]) == 1.0


@pytest.mark.parametrize("env_id", ["Aerial-Hover-v0", "Aerial-Track-v0"])
def test_tasks__nonfinite_and_out_of_range_actions_follow_the_documented_rule(env_id):
    """NaN acts as 0, +inf as 1, -inf as -1, 7 as 1, -1e30 as -1 (per entry)."""
    env, params = _make(env_id)
    step = _jit_step(env_id)
    _, state = env.reset(KEY, params)
    pairs = [
        ([np.nan, np.inf, -np.inf, 7.0], [0.0, 1.0, -1.0, 1.0]),
        ([-1e30, np.nan, 0.3, -np.inf], [-1.0, 0.0, 0.3, -1.0]),
    ]
    for bad, good in pairs:
        out_bad = step(KEY, state, jnp.asarray(bad, jnp.float32), params)
        out_good = step(KEY, state, jnp.asarray(good, jnp.float32), params)
        for a, b in zip(jax.tree.leaves(out_bad), jax.tree.leaves(out_good), strict=True):
            np.testing.assert_array_equal(a, b)


def test_tasks__non_finite_dynamics_end_the_episode_and_keep_the_last_finite_state():
    """If a step turns the state non-finite, fly() returns the previous state, finite=False."""
    quad, gains = common.airframe_presets("aerial_gym")
    state = dyn.hover_state(quad, jnp.array([0.0, 0.0, 2.0]))
    huge = state.replace(omega=jnp.array([3e38, 0.0, 0.0], jnp.float32))
    nxt, finite = common.fly(KEY, huge, jnp.zeros(4), "rates", quad, gains)
    assert not bool(finite)
    for a, b in zip(jax.tree.leaves(nxt), jax.tree.leaves(huge), strict=True):
        np.testing.assert_array_equal(a, b)
    ok, finite = common.fly(KEY, state, jnp.zeros(4), "rates", quad, gains)
    assert bool(finite) and dyn.is_finite(ok)


def test_tasks__make_rejects_bad_params_and_constructor_args():
    """Negative mass, zero inertia, unknown controller/airframe: ValueError naming the field."""
    env, params = _make("Aerial-Hover-v0")
    with pytest.raises(ValueError, match=r"params\.quad\.mass=-0\.2"):
        hordax.make("Aerial-Hover-v0", quad=params.quad.replace(mass=jnp.float32(-0.2)))
    with pytest.raises(ValueError, match=r"params\.quad\.inertia=\[0\.0"):
        hordax.make("Aerial-Track-v0", quad=params.quad.replace(inertia=jnp.zeros(3)))
    with pytest.raises(ValueError, match=r"params\.ctrl\.k_pos"):
        hordax.make("Aerial-Hover-v0", ctrl=params.ctrl.replace(k_pos=-jnp.ones(3)))
    with pytest.raises(ValueError, match=r"params\.target_center.*above ground_z"):
        hordax.make("Aerial-Hover-v0", target_center=jnp.array([0.0, 0.0, -1.0]))
    with pytest.raises(ValueError, match=r"controller='thrust'.*must be one of"):
        hordax.make("Aerial-Hover-v0", controller="thrust")
    with pytest.raises(ValueError, match=r"airframe='mavic'"):
        hordax.make("Aerial-Track-v0", airframe="mavic")
    cf_env, cf_params = hordax.make("Aerial-Hover-v0", airframe="crazyflie", controller="rates")
    assert cf_env.controller == "rates" and float(cf_params.quad.mass) == pytest.approx(0.0319)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("env_id", "override", "message"),
    [
        # 14 % of starts below ground (z in [-1, 5]): they crashed on their first step
        ("Aerial-Hover-v0", {"spawn_pos_range": [2.0, 2.0, 3.0]}, r"spawn_pos_range z = -1\.0"),
        # up to 11.3 m from the target: 23 % of episodes crashed on their first step
        ("Aerial-Hover-v0", {"spawn_pos_range": [8.0, 8.0, 1.0]}, r"within params\.crash_"),
        ("Aerial-Hover-v0", {"success_radius": -1.0}, r"params\.success_radius=-1\.0"),
        ("Aerial-Track-v0", {"spawn_pos_range": [0.5, 0.5, 2.5]}, r"above params\.ground_z"),
        ("Aerial-Track-v0", {"spawn_pos_range": [2.0, 2.0, 1.0]}, r"crash_distance=3\.0"),
        # every start 9 m from its goal: every episode ended on its first step
        ("Aerial-MultiHover-v0", {"ring_radius": 4.5}, r"2 params\.ring_radius .* = 9\.69"),
        ("Aerial-MultiHover-v0", {"spawn_pos_range": [0.0, 0.0, 2.0]}, r"above params\.ground"),
        ("Aerial-MultiHover-v0", {"success_radius": 0.0}, r"params\.success_radius=0\.0"),
    ],
)
def test_tasks__make_rejects_params_whose_starts_crash(env_id, override, message):
    """Spawn ranges that put a start below the ground or beyond the crash distance (those
    episodes end on their first step with the crash reward) and a non-positive success
    radius are refused at make, naming the fields; they were accepted."""
    with pytest.raises(ValueError, match=message):
        hordax.make(env_id, params=override)


def test_hover__position_controller_policy_reaches_the_setpoint():
    """Acting with the position controller toward the target (a = (target - p) / 2) from
    64 random starts (yaw up to +-pi away from the commanded 0): no crash, and after 5 s the
    mean final error < 5 cm, the worst < 25 cm (measured ~2 cm / 18 cm), both airframes."""
    env, _ = hordax.make("Aerial-Hover-v0", controller="position")

    @jax.jit
    def run(params):
        def episode(key):
            obs, state = env.reset(key, params)

            def body(carry, k):
                obs, state = carry
                action = jnp.concatenate([obs[:3] / params.ctrl.max_pos_offset, jnp.zeros(1)])
                obs, state, _, terminated, info = env.step_env(k, state, action, params)
                return (obs, state), (terminated, info["metrics"]["distance"])

            keys = jax.random.split(key, 500)
            _, (terminated, distance) = jax.lax.scan(body, (obs, state), keys)
            return terminated.any(), distance[-1]

        return jax.vmap(episode)(jax.random.split(KEY, 64))

    for airframe in common.AIRFRAMES:  # one compiled program, params differ
        _, params = hordax.make("Aerial-Hover-v0", controller="position", airframe=airframe)
        crashed, final = run(params)
        assert not np.any(crashed), airframe
        assert float(np.mean(final)) < 0.05, f"{airframe}: mean final error {np.mean(final):.3f}"
        assert float(np.max(final)) < 0.25, f"{airframe}: max final error {np.max(final):.3f}"


def test_track__reference_derivatives_are_consistent():
    """reference vel/acc equal central finite differences of pos (and vel)."""
    _, params = _make("Aerial-Track-v0")
    params = params.replace(amplitude=jnp.array([2.0, 1.0, 0.5]))
    h = 1e-3
    for t in (0.0, 1.3, 5.7):
        p_m, v_m, _ = reference(jnp.float32(t - h), 0.4, params)
        p_0, v_0, a_0 = reference(jnp.float32(t), 0.4, params)
        p_p, v_p, _ = reference(jnp.float32(t + h), 0.4, params)
        np.testing.assert_allclose((p_p - p_m) / (2 * h), v_0, atol=2e-3)
        np.testing.assert_allclose((v_p - v_m) / (2 * h), a_0, atol=2e-3)
    # a full period returns to the start; the x-y path crosses itself at the centre
    np.testing.assert_allclose(reference(8.0, 0.4, params)[0], reference(0.0, 0.4, params)[0], 1e-5)


def test_track__mean_tracking_error_is_the_running_mean_of_tracking_error():
    """``mean_tracking_error`` after k steps = the mean of the k steps' ``tracking_error``
    (at an episode's last step: the whole episode's mean, as the Lee reference reports)."""
    env, params = _make("Aerial-Track-v0")
    step = _jit_step("Aerial-Track-v0")
    _, state = env.reset(KEY, params)
    errors = []
    for action in (0.2, -0.3, 0.5):
        _, state, _, _, info = step(KEY, state, jnp.full(4, action), params)
        errors.append(float(info["metrics"]["tracking_error"]))
        np.testing.assert_allclose(
            float(info["metrics"]["mean_tracking_error"]), np.mean(errors), rtol=1e-6
        )
    assert len(set(errors)) == 3  # the steps differ: a real mean, not one value


def test_track__feedforward_position_controller_tracks_the_figure_eight():
    """Lee position control with the reference's velocity and acceleration feed-forward:
    mean tracking error after the first 2 s < 15 cm (measured 9 cm: the attitude loop and
    motor lag delay the feed-forward), never beyond the crash distance (default, 10 s)."""
    env, params = _make("Aerial-Track-v0")

    @jax.jit
    def run(key):
        _, state = env.reset(key, params)

        def body(state, k):
            t = (state.time + 1).astype(jnp.float32) * params.quad.dt
            ref_pos, ref_vel, ref_acc = reference(t, state.phase, params)
            cmd = ctl.position_control(
                state.quad, ref_pos, jnp.float32(0.0), params.quad, params.ctrl, ref_vel, ref_acc
            )
            quad = dyn.step(state.quad, cmd, params.quad)
            state = state.replace(quad=quad, time=state.time + 1)
            return state, jnp.linalg.norm(reference(t, state.phase, params)[0] - quad.pos)

        return jax.lax.scan(body, state, jax.random.split(key, 1000))[1]

    errors = run(KEY)
    assert float(errors[200:].mean()) < 0.15
    assert float(errors.max()) < 3.0  # never beyond the crash distance


# --------------------------------------------------------------------------------------------
# robustness: 10^6 random steps with extreme actions


def _extreme_actions(key, shape):
    """Uniform in [-1e3, 1e3], with 10 % NaN, 5 % +inf, 5 % -inf entries."""
    k_u, k_c = jax.random.split(key)
    u = jax.random.uniform(k_u, shape, jnp.float32, -1e3, 1e3)
    c = jax.random.uniform(k_c, shape)
    u = jnp.where(c < 0.1, jnp.nan, u)
    u = jnp.where((c >= 0.1) & (c < 0.15), jnp.inf, u)
    return jnp.where((c >= 0.15) & (c < 0.2), -jnp.inf, u)


def _all_finite(tree):
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree)]))


@functools.partial(jax.jit, static_argnames=("env", "num_envs", "num_steps"))
def _robustness_run(env, params, key, num_envs, num_steps):
    obs, state = jax.vmap(env.reset, (0, None))(jax.random.split(key, num_envs), params)
    vstep = jax.vmap(env.step, (0, 0, 0, None))

    def body(carry, k):
        obs, state, ok, episodes = carry
        k_a, k_s = jax.random.split(k)
        action = _extreme_actions(k_a, (num_envs, 4))
        obs, state, reward, terminated, truncated, _ = vstep(
            jax.random.split(k_s, num_envs), state, action, params
        )
        ok = ok & _all_finite((obs, state, reward))
        return (obs, state, ok, episodes + jnp.sum(terminated | truncated)), None

    init = (obs, state, jnp.bool_(True), jnp.int32(0))
    (obs, state, ok, episodes), _ = jax.lax.scan(body, init, jax.random.split(key, num_steps))
    return ok, episodes


@pytest.mark.timeout(300)
@pytest.mark.slow
def test_hover__no_nonfinite_state_in_1e6_extreme_action_steps():
    """1000 envs x 1000 steps (10^6 steps) of Aerial-Hover-v0, default (attitude) controller,
    actions uniform in [-1e3, 1e3] with NaN/+-inf entries: obs, state and reward stay finite
    at every step (episodes end by crashes and auto-reset)."""
    env, params = _make("Aerial-Hover-v0")
    ok, episodes = _robustness_run(env, params, KEY, 1000, 1000)
    assert bool(ok)
    assert int(episodes) > 1000  # extreme actions crash often: many auto-resets exercised


def test_controllers__extreme_actions_and_states_give_finite_commands_within_limits():
    """Every controller kind, both airframes: 4096 random states (any attitude incl. upside
    down, rates up to 50 rad/s, speeds up to 30 m/s) x extreme actions sanitized by the env
    rule give finite motor commands inside [thrust_min, thrust_max]."""
    k_s, k_q, k_a = jax.random.split(jax.random.key(5), 3)
    n = 4096
    quat = jax.random.normal(k_q, (n, 4))
    quat = quat / jnp.linalg.norm(quat, axis=-1, keepdims=True)
    u = jax.random.uniform(k_s, (n, 3, 3), jnp.float32, -1.0, 1.0)
    actions = jax.vmap(common.sanitize_action)(_extreme_actions(k_a, (n, 4)))
    fns = {
        kind: jax.jit(jax.vmap(functools.partial(ctl.motor_command, kind), (0, 0, None, None)))
        for kind in ctl.KINDS
    }
    for airframe in common.AIRFRAMES:  # same compiled programs for both airframes
        quad, gains = common.airframe_presets(airframe)
        states = dyn.QuadState(
            pos=20.0 * u[:, 0],
            vel=30.0 * u[:, 1],
            quat=quat,
            omega=50.0 * u[:, 2],
            thrust=jnp.full((n, 4), dyn.hover_thrust(quad)),
        )
        for kind, fn in fns.items():
            cmd = np.asarray(fn(actions, states, quad, gains))
            assert np.all(np.isfinite(cmd)), (airframe, kind)
            assert np.all(cmd >= float(quad.thrust_min) - 1e-7), (airframe, kind)
            assert np.all(cmd <= float(quad.thrust_max) + 1e-7), (airframe, kind)

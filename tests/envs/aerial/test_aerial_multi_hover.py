"""Aerial-MultiHover-v0: inter-drone collisions, per-agent masks, observation layout."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hordax
from hordax.envs.aerial import dynamics as dyn
from hordax.envs.aerial.expert import layered_velocity_action
from hordax.envs.aerial.multi_hover import MultiHover

KEY = jax.random.key(0)


@functools.cache
def _env():
    env, params = hordax.make("Aerial-MultiHover-v0", num_agents=4)
    return env, params, jax.jit(env.step_env)


def test_multi_hover__observation_has_own_13_relative_positions_and_velocities():
    env, params, _ = _env()
    obs, state = env.reset(KEY, params)
    assert obs.shape == (4, 13 + 9 + 9)
    assert env.observation_space(params).shape == (4, 13 + 9 + 9)
    pos, vel = np.asarray(state.quad.pos), np.asarray(state.quad.vel)
    assert np.abs(vel).max() > 0  # the spawn's random velocities: the check is not 0 == 0
    np.testing.assert_allclose(obs[1, 22:25], vel[0] - vel[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(obs[1, 25:28], vel[2] - vel[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(obs[:, :3], np.asarray(state.goal) - pos, rtol=1e-6)
    np.testing.assert_allclose(obs[1, 13:16], pos[0] - pos[1], rtol=1e-6)  # agent 1 sees 0 first
    np.testing.assert_allclose(obs[1, 16:19], pos[2] - pos[1], rtol=1e-6)
    gaps = np.linalg.norm(pos[:, None] - pos[None], axis=-1) + 10 * np.eye(4)
    assert gaps.min() > float(params.collision_distance)  # no collision at spawn


def test_multi_hover__collision_crashes_both_freezes_them_and_masks_them():
    """Agents 0 and 1 placed 0.2 m apart: both crash (reward -20), others fly on; next step
    the crashed pair is frozen with reward 0; the episode ends only when all crashed."""
    env, params, step = _env()
    _, state = env.reset(KEY, params)
    quad = jax.vmap(lambda p: dyn.hover_state(params.quad, p))(
        jnp.array([[0.0, 0.0, 2.0], [0.2, 0.0, 2.0], [2.0, 0.0, 2.0], [-2.0, 0.0, 2.0]])
    )
    state = state.replace(quad=quad)
    _, state1, reward, terminated, info = step(KEY, state, jnp.zeros((4, 4)), params)
    np.testing.assert_array_equal(info["agent_terminated"], [True, True, False, False])
    np.testing.assert_array_equal(info["agent_mask"], [False, False, True, True])
    np.testing.assert_array_equal(np.asarray(reward)[:2], -20.0)
    assert np.all(np.asarray(reward)[2:] > 0) and not bool(terminated)
    assert float(info["metrics"]["collisions"]) == 2.0
    _, state2, reward2, terminated2, _ = step(KEY, state1, jnp.ones((4, 4)), params)
    np.testing.assert_array_equal(np.asarray(reward2)[:2], 0.0)
    np.testing.assert_array_equal(state2.quad.pos[:2], state1.quad.pos[:2])
    assert not bool(terminated2)
    all_down = state2.replace(crashed=jnp.array([True, True, True, False]))
    all_down = all_down.replace(
        quad=all_down.quad.replace(pos=all_down.quad.pos.at[3, 2].set(-1.0))
    )
    _, _, _, terminated3, _ = step(KEY, all_down, jnp.zeros((4, 4)), params)
    assert bool(terminated3)


def test_multi_hover__others_see_a_crashed_drone_at_rest():
    """A crashed drone is frozen: the others observe its velocity as 0 (relative velocity
    = minus their own), not the velocity it had when it crashed."""
    env, params, step = _env()
    _, state = env.reset(KEY, params)
    vel = jnp.array([[3.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.5, 0.0, 0.0], [0.0, 0.0, 0.2]])
    state = state.replace(
        quad=state.quad.replace(vel=vel), crashed=jnp.array([True, False, False, False])
    )
    obs = np.asarray(env.observe(KEY, state, None, params))
    v = np.asarray(vel)
    np.testing.assert_allclose(obs[1, 22:25], 0.0 - v[1], atol=1e-6)  # agent 1 sees 0 first
    np.testing.assert_allclose(obs[1, 25:28], v[2] - v[1], atol=1e-6)  # live ones as before
    np.testing.assert_allclose(obs[2, 22:25], 0.0 - v[2], atol=1e-6)
    # after a step the crashed drone is still frozen and still seen at rest
    obs1, state1, *_ = step(KEY, state, jnp.zeros((4, 4)), params)
    assert bool(state1.crashed[0])
    np.testing.assert_array_equal(state1.quad.pos[0], state.quad.pos[0])
    np.testing.assert_allclose(obs1[1, 22:25], -np.asarray(state1.quad.vel[1]), atol=1e-6)


@pytest.mark.timeout(120)
def test_multi_hover__straight_line_flights_through_the_centre_collide():
    """Every agent flying straight at its goal (opposite on the ring) meets the others near
    the centre: collisions happen (in some episodes: the jitter lets most paths miss). The
    scripted reference (each agent on its own altitude layer, 0.8 m apart, while far from
    its goal) solves the task within its 500 steps: over 32 fresh episodes no collision, and
    every agent within ``success_radius`` at the end (the last step's ``all_success`` is 1)."""
    env, params, _ = _env()

    def run(key, layer):
        obs, state = env.reset(key, params)

        def body(carry, k):
            obs, state = carry
            action = layered_velocity_action(obs, layer=layer, max_speed=params.ctrl.max_speed)
            obs, state, _, _, info = env.step_env(k, state, action, params)
            return (obs, state), info["metrics"]

        steps = int(params.max_steps_in_episode)
        _, metrics = jax.lax.scan(body, (obs, state), jax.random.split(key, steps))
        return metrics["collisions"].sum(), metrics["all_success"][-1]

    run = jax.jit(jax.vmap(run, in_axes=(0, None)), static_argnums=1)
    keys = jax.random.split(KEY, 32)
    collisions, _ = run(keys, 0.0)
    assert int((collisions > 0).sum()) >= 4  # measured: 6 of the 32 episodes lose a pair
    collisions, all_success = run(keys, 0.8)
    assert float(collisions.sum()) == 0
    np.testing.assert_array_equal(np.asarray(all_success), 1.0)


def test_multi_hover__all_success_and_setpoint_terms():
    """``all_success`` is 1 only when every agent flies within ``success_radius`` of its goal
    (``success`` is the fraction); Hover's precision and progress terms add per agent."""
    env, params, step = _env()
    _, state = env.reset(KEY, params)
    offset = jnp.array([[0.0, 0.0, 0.05], [0.05, 0.0, 0.0], [0.0, 0.05, 0.0], [0.0, 0.0, 0.2]])
    quad = jax.vmap(lambda p: dyn.hover_state(params.quad, p))(state.goal + offset)
    state = state.replace(quad=quad)
    hover = jnp.zeros((4, 4))
    _, _, r_off, _, info = step(KEY, state, hover, params)
    assert float(info["metrics"]["success"]) == 0.75
    assert float(info["metrics"]["all_success"]) == 0.0
    near = state.replace(quad=quad.replace(pos=quad.pos.at[3].set(state.goal[3] + 0.05)))
    _, _, _, _, info = step(KEY, near, hover, params)
    assert float(info["metrics"]["all_success"]) == 1.0
    _, _, _, _, info = step(
        KEY, near.replace(crashed=jnp.array([False, False, False, True])), hover, params
    )
    assert float(info["metrics"]["all_success"]) == 0.0  # a crashed agent is no success
    on = params.replace(precision_gain=jnp.float32(3.0), progress_scale=jnp.float32(400.0))
    _, nxt, r_on, _, _ = step(KEY, state, hover, on)
    d_prev = np.linalg.norm(np.asarray(offset), axis=-1)
    d = np.linalg.norm(np.asarray(nxt.goal - nxt.quad.pos), axis=-1)
    expected = np.asarray(r_off) + 3.0 * np.exp(-50.0 * d) + 400.0 * (d_prev - d)
    np.testing.assert_allclose(np.asarray(r_on), expected, rtol=1e-4, atol=1e-3)
    with pytest.raises(ValueError, match="params.precision_gain"):
        env.validate_params(params.replace(precision_gain=-1.0))


def test_multi_hover__separation_penalty_by_hand():
    """Agents 0 and 1 hover 0.5 m apart (no collision), 2 and 3 far away: with
    ``separation_penalty`` 4 and ``separation_radius`` 1 m, agents 0 and 1 lose
    4 x (1 - gap / 1) each, agents 2 and 3 nothing; off by default."""
    env, params, step = _env()
    _, state = env.reset(KEY, params)
    quad = jax.vmap(lambda p: dyn.hover_state(params.quad, p))(
        jnp.array([[0.0, 0.0, 2.0], [0.5, 0.0, 2.0], [3.0, 0.0, 2.0], [-3.0, 0.0, 2.0]])
    )
    state = state.replace(quad=quad)
    hover = jnp.zeros((4, 4))
    _, nxt, r_off, _, info = step(KEY, state, hover, params)
    on = params.replace(separation_penalty=jnp.float32(4.0), separation_radius=jnp.float32(1.0))
    _, _, r_on, _, _ = step(KEY, state, hover, on)
    gap = float(np.linalg.norm(np.asarray(nxt.quad.pos[0] - nxt.quad.pos[1])))
    expected = np.array([4.0 * (1.0 - gap), 4.0 * (1.0 - gap), 0.0, 0.0])
    assert abs(gap - 0.5) < 0.01 and not bool(np.any(info["agent_terminated"]))
    np.testing.assert_allclose(np.asarray(r_off - r_on), expected, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="params.separation_radius"):
        env.validate_params(params.replace(separation_radius=0.0))


@pytest.mark.timeout(60)
def test_multi_hover__separation_horizon_penalizes_a_collision_course_before_it_is_near():
    """Agents 0 and 1 fly head-on at 1 m/s each, 2 m apart; agents 2 and 3 fly apart,
    0.8 m apart. With ``separation_horizon`` 0 only 2 and 3 (near now) pay; with 1.5 s
    the closing pair pays for its predicted closest approach (about 0 m: they would
    meet in about 1 s), the receding pair for its current gap, as a numpy reference
    of ``min over t in [0, T] of |p + v t|`` gives from the stepped state."""
    env, params, step = _env()
    _, state = env.reset(KEY, params)
    pos = jnp.array([[-1.0, 0.0, 2.0], [1.0, 0.0, 2.0], [0.0, 3.0, 2.0], [0.0, 3.8, 2.0]])
    quad = jax.vmap(lambda p: dyn.hover_state(params.quad, p))(pos)
    vel = jnp.array([[1.0, 0, 0], [-1.0, 0, 0], [0, -0.5, 0], [0, 0.5, 0]], jnp.float32)
    state = state.replace(quad=quad.replace(vel=vel))
    keep = jnp.array([[0.5, 0, 0, 0], [-0.5, 0, 0, 0], [0, -0.25, 0, 0], [0, 0.25, 0, 0]])
    on = params.replace(separation_penalty=jnp.float32(4.0), separation_radius=jnp.float32(1.0))
    _, nxt, r_now, _, _ = step(KEY, state, keep, on)
    _, _, r_ahead, _, info = step(KEY, state, keep, on.replace(separation_horizon=1.5))
    _, _, r_off, _, _ = step(KEY, state, keep, params)
    p, v = np.asarray(nxt.quad.pos, np.float64), np.asarray(nxt.quad.vel, np.float64)
    ts = np.linspace(0.0, 1.5, 30001)

    def miss(i, j):
        return np.linalg.norm((p[j] - p[i]) + ts[:, None] * (v[j] - v[i]), axis=-1).min()

    assert miss(0, 1) < 0.05 and not bool(np.any(info["agent_terminated"]))
    gap23 = np.linalg.norm(p[3] - p[2])
    now = np.array([0.0, 0.0, 4.0 * (1 - gap23), 4.0 * (1 - gap23)])
    ahead = 4.0 * np.maximum(0.0, 1.0 - np.array([miss(0, 1), miss(1, 0), miss(2, 3), miss(3, 2)]))
    np.testing.assert_allclose(np.asarray(r_off - r_now), now, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(np.asarray(r_off - r_ahead), ahead, rtol=1e-4, atol=1e-3)
    with pytest.raises(ValueError, match="params.separation_horizon"):
        env.validate_params(params.replace(separation_horizon=-1.0))


@pytest.mark.timeout(60)
def test_multi_hover__threat_sensing_observes_closing_drones_and_hides_far_ones_at_rest():
    """``sensing_radius`` 1.5 m, ``sensing_horizon`` 1 s: agents 0 and 1 fly head-on at
    1.5 m/s each, 3 m apart (farther than the radius, but they would meet within 1 s), so
    each observes the other; agents 2 and 3 hover at rest 2.5 m from everyone and are
    observed by nobody (zeros) and observe nobody. Without threat sensing (the default)
    every pair is observed, and the own 13 values never change."""
    env, params, _ = _env()
    _, state = env.reset(KEY, params)
    pos = jnp.array([[-1.5, 0.0, 2.0], [1.5, 0.0, 2.0], [0.0, 2.5, 2.0], [0.0, -2.5, 2.0]])
    quad = jax.vmap(lambda p: dyn.hover_state(params.quad, p))(pos)
    vel = jnp.array([[1.5, 0, 0], [-1.5, 0, 0], [0, 0, 0], [0, 0, 0]], jnp.float32)
    state = state.replace(quad=quad.replace(vel=vel))
    on = params.replace(sensing_radius=jnp.float32(1.5), sensing_horizon=jnp.float32(1.0))
    full = np.asarray(env.observe(KEY, state, None, params))
    obs = np.asarray(env.observe(KEY, state, None, on))
    np.testing.assert_array_equal(obs[:, :13], full[:, :13])
    others = obs[:, 13:].reshape(4, 2, 3, 3)  # [agent, pos | vel, other slot, xyz]
    seen = np.abs(others).sum(axis=(1, 3)) > 0  # [agent, other slot] (others in index order)
    np.testing.assert_array_equal(seen, [[1, 0, 0], [1, 0, 0], [0, 0, 0], [0, 0, 0]])
    np.testing.assert_allclose(obs[0, 13:16], pos[1] - pos[0], rtol=1e-6)  # 0 sees 1
    np.testing.assert_allclose(obs[0, 22:25], vel[1] - vel[0], rtol=1e-6)
    assert np.all(np.abs(full[:, 13:].reshape(4, 2, 3, 3)).sum(axis=(1, 3)) > 0)
    for bad in ({"sensing_radius": 0.0}, {"sensing_radius": float("nan")}):
        with pytest.raises(ValueError, match="params.sensing_radius"):
            env.validate_params(params.replace(**bad))
    with pytest.raises(ValueError, match="params.sensing_horizon"):
        env.validate_params(params.replace(sensing_horizon=-1.0))
    # inf (off, the default) is a value a config may set; NaN is refused at make
    _, off = hordax.make("Aerial-MultiHover-v0", params={"sensing_radius": float("inf")})
    assert np.isinf(off.sensing_radius)
    with pytest.raises(ValueError, match="params.sensing_radius=nan"):
        hordax.make("Aerial-MultiHover-v0", params={"sensing_radius": float("nan")})


@pytest.mark.timeout(60)
def test_multi_hover__fine_error_appends_the_saturated_goal_error():
    """``fine_error=0.2``: the own part grows to 16 values, the last three
    ``clip((goal - pos) / 0.2, -1, 1)`` (linear within 0.2 m of the goal, +-1 beyond); the
    first 13 and the others' vectors are those of the default env; the space bounds the three
    to [-1, 1]; a negative or non-finite value is refused at construction."""
    env, params, _ = _env()
    fine = MultiHover(fine_error=0.2)
    _, state = env.reset(KEY, params)
    near = state.goal + jnp.array([[0.05, -0.1, 0.0], [0.3, 0.0, -0.5], [0, 0, 0], [0, 0, 0]])
    state = state.replace(quad=state.quad.replace(pos=near))
    base = np.asarray(env.observe(KEY, state, None, params))
    obs = np.asarray(fine.observe(KEY, state, None, params))
    assert obs.shape == (4, 16 + 18) and fine.observation_space(params).shape == (4, 34)
    np.testing.assert_array_equal(obs[:, :13], base[:, :13])
    np.testing.assert_array_equal(obs[:, 16:], base[:, 13:])
    np.testing.assert_allclose(obs[:2, 13:16], [[-0.25, 0.5, 0.0], [-1.0, 0.0, 1.0]], atol=1e-5)
    space = fine.observation_space(params)
    assert np.all(np.asarray(space.high)[:, 13:16] == 1.0) and np.all(np.isinf(space.high[:, 16:]))
    assert fine.own_size == 16 and env.own_size == 13
    for bad in (-0.1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="fine_error"):
            MultiHover(fine_error=bad)


@pytest.mark.timeout(60)
def test_multi_hover__miss_vectors_give_the_offset_at_closest_approach():
    """``miss_vectors=True``: a third block per other drone, its predicted offset at the
    pair's closest approach within ``sensing_horizon``. Agents 0 and 1 fly head-on at 1.5 m/s
    each, 3 m apart with 0.2 m of height between them: within 1 s they pass 0.2 m apart
    (miss (0, 0, 0.2) for agent 0), within 0.5 s the offset is (1.5, 0, 0.2). Agents 2 and 3
    at rest: their current offset from each other, or zeros where threat sensing hides them
    (agent 0 passes 2 at 2.5 m after 1 s: hidden beyond 1.5 m). The first two
    blocks are those of the default env."""
    env, params, _ = _env()
    miss_env = MultiHover(miss_vectors=True)
    _, state = env.reset(KEY, params)
    pos = jnp.array([[-1.5, 0.0, 2.0], [1.5, 0.0, 2.2], [0.0, 2.5, 2.0], [0.0, -2.5, 2.0]])
    quad = jax.vmap(lambda p: dyn.hover_state(params.quad, p))(pos)
    vel = jnp.array([[1.5, 0, 0], [-1.5, 0, 0], [0, 0, 0], [0, 0, 0]], jnp.float32)
    state = state.replace(quad=quad.replace(vel=vel))
    assert miss_env.observation_space(params).shape == (4, 13 + 27) and miss_env.per_other == 9
    for horizon, want in ((1.0, [0.0, 0.0, 0.2]), (0.5, [1.5, 0.0, 0.2])):
        p = params.replace(sensing_horizon=jnp.float32(horizon))
        base = np.asarray(env.observe(KEY, state, None, p))
        obs = np.asarray(miss_env.observe(KEY, state, None, p))
        np.testing.assert_array_equal(obs[:, :31], base)
        miss = obs[:, 31:].reshape(4, 3, 3)  # [agent, other slot, xyz]
        np.testing.assert_allclose(miss[0, 0], want, atol=1e-5)
        np.testing.assert_allclose(miss[1, 0], -np.asarray(want), atol=1e-5)
        np.testing.assert_allclose(miss[2, 2], pos[3] - pos[2], atol=1e-6)  # both at rest: now
        # agent 0 flies past agent 2 (at rest 2.5 m off its line), abeam at t = 1 s
        np.testing.assert_allclose(miss[0, 1], [1.5 - 1.5 * horizon, 2.5, 0.0], atol=1e-5)
    with pytest.raises(ValueError, match="miss_vectors='false'"):
        MultiHover(miss_vectors="false")  # a string would otherwise read as True
    hidden = params.replace(sensing_radius=jnp.float32(1.5))
    miss = np.asarray(miss_env.observe(KEY, state, None, hidden))[:, 31:].reshape(4, 3, 3)
    assert np.all(miss[2:] == 0) and np.all(miss[0, 1:] == 0) and np.abs(miss[0, 0]).sum() > 0


@pytest.mark.timeout(60)
def test_multi_hover__yaw_frame_observation_is_invariant_to_turning_the_world():
    """``frame="yaw"``: every vector in the drone's yaw frame (the velocity command's frame)
    and the attitude without its yaw, so turning the whole scene about the vertical (goals,
    positions, velocities, headings) leaves every value unchanged, where the world-frame
    observation changes; with every heading at yaw 0 the two frames agree. Tested with the
    fine error and miss vectors on (every block rotated)."""
    kw = {"fine_error": 0.2, "miss_vectors": True}
    world, params = hordax.make("Aerial-MultiHover-v0", **kw)
    yaw_env, _ = hordax.make("Aerial-MultiHover-v0", frame="yaw", **kw)
    _, state = world.reset(jax.random.key(3), params)
    c, s = np.cos(0.7), np.sin(0.7)
    turn = jnp.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]], jnp.float32)
    q_turn = dyn.quat_from_euler(0.0, 0.0, 0.7)
    quad = state.quad
    turned = state.replace(
        goal=state.goal @ turn.T,
        quad=quad.replace(
            pos=quad.pos @ turn.T,
            vel=quad.vel @ turn.T,
            quat=jax.vmap(lambda q: dyn.quat_mul(q_turn, q))(quad.quat),
        ),
    )

    def obs(env, st):
        return np.asarray(env.observe(KEY, st, None, params))

    np.testing.assert_allclose(obs(yaw_env, turned), obs(yaw_env, state), atol=1e-5)
    assert np.abs(obs(world, turned) - obs(world, state)).max() > 0.5
    euler = jax.vmap(dyn.quat_to_euler)(quad.quat)
    assert np.abs(np.asarray(euler[:, 2])).min() > 0.05  # the spawn's headings are not 0
    level = state.replace(
        quad=quad.replace(
            quat=jax.vmap(dyn.quat_from_euler)(euler[:, 0], euler[:, 1], 0 * euler[:, 2])
        )
    )
    np.testing.assert_allclose(obs(yaw_env, level), obs(world, level), atol=1e-5)
    with pytest.raises(ValueError, match="frame='body'"):
        MultiHover(frame="body")

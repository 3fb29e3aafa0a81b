"""Depth camera (vs an independent numpy sphere-tracer) and the navigation task."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hordax
from hordax.envs.aerial import camera as cam
from hordax.envs.aerial import dynamics as dyn
from hordax.envs.aerial.navigate import STATE_DIM, curriculum_level, min_pool, vehicle_frame

KEY = jax.random.key(0)
ROOM_LO = np.array([0.0, -3.0, 0.0], np.float32)
ROOM_HI = np.array([10.0, 3.0, 4.0], np.float32)


def _scene(kinds, centers, sizes, active=None):
    k = len(kinds)
    return cam.Scene(
        room_lo=jnp.asarray(ROOM_LO),
        room_hi=jnp.asarray(ROOM_HI),
        kind=jnp.asarray(kinds, jnp.int32),
        center=jnp.asarray(centers, jnp.float32).reshape(k, 3),
        size=jnp.asarray(sizes, jnp.float32).reshape(k, 3),
        active=jnp.ones(k, bool) if active is None else jnp.asarray(active),
    )


def test_camera__analytic_hits_for_each_shape_and_the_room():
    """Rays with known answers: sphere, cylinder, box faces, wall, floor, inactive slot."""
    origin = jnp.array([1.0, 0.0, 2.0])
    fwd = jnp.array([[1.0, 0.0, 0.0]])
    down45 = jnp.array([[math.sqrt(0.5), 0.0, -math.sqrt(0.5)]])
    cases = [
        (_scene([cam.SPHERE], [4.0, 0.0, 2.0], [1.0, 1.0, 1.0]), fwd, 2.0),
        (_scene([cam.CYLINDER], [5.0, 0.0, 99.0], [0.5, 0.5, 0.5]), fwd, 3.5),
        (_scene([cam.BOX], [6.0, 0.0, 2.0], [0.5, 2.0, 2.0]), fwd, 4.5),
        (_scene([cam.SPHERE], [4.0, 0.0, 2.0], [1.0, 1.0, 1.0], [False]), fwd, 9.0),  # wall
        (_scene([cam.SPHERE], [4.0, 2.5, 2.0], [0.4, 0.4, 0.4]), down45, 2.0 * math.sqrt(2)),
    ]
    for scene, dirs, expected in cases:
        np.testing.assert_allclose(cam.ray_cast(origin, dirs, scene), [expected], rtol=1e-5)


def test_camera__ray_directions_cover_the_87_degree_fov():
    """Forward-facing unit rays; outermost columns at +-atan((1 - 1/W) tan(hfov/2))."""
    h, w = 16, 24
    d = np.asarray(cam.ray_directions(h, w, math.radians(87.0)))
    np.testing.assert_allclose(np.linalg.norm(d, axis=-1), 1.0, rtol=1e-6)
    assert np.all(d[..., 0] > 0)
    half = math.atan((1 - 1 / w) * math.tan(math.radians(43.5)))
    yaw_left = math.atan2(d[h // 2, 0, 1], d[h // 2, 0, 0])
    yaw_right = math.atan2(d[h // 2, -1, 1], d[h // 2, -1, 0])
    np.testing.assert_allclose([yaw_left, yaw_right], [half, -half], rtol=1e-5)
    assert d[0, w // 2, 2] > 0 > d[-1, w // 2, 2]  # row 0 looks up, the last row down


def _sdf(p, scene):
    """Independent numpy signed distance to the scene's surfaces (for sphere tracing)."""
    walls = np.min(np.minimum(p - ROOM_LO, ROOM_HI - p), axis=-1)
    out = walls
    for kind, c, s, a in zip(
        *(np.asarray(x) for x in (scene.kind, scene.center, scene.size, scene.active)), strict=True
    ):
        if not a:
            continue
        if kind == cam.SPHERE:
            d = np.linalg.norm(p - c, axis=-1) - s[0]
        elif kind == cam.CYLINDER:
            d = np.linalg.norm(p[..., :2] - c[:2], axis=-1) - s[0]
        else:
            q = np.abs(p - c) - s
            d = np.linalg.norm(np.maximum(q, 0), axis=-1) + np.minimum(q.max(-1), 0)
        out = np.minimum(out, d)
    return out


def test_camera__depth_matches_numpy_sphere_tracing_reference():
    """A 16x24 frame of a 9-obstacle scene from a tilted pose equals numpy sphere tracing
    of the signed distance field (max abs error < 1e-3 m in range, before clipping)."""
    rng = np.random.default_rng(0)
    kinds = [0, 1, 2] * 3
    centers = np.stack([rng.uniform(3, 8, 9), rng.uniform(-2, 2, 9), rng.uniform(0.5, 3.5, 9)], -1)
    sizes = rng.uniform(0.2, 0.6, (9, 3))
    scene = _scene(kinds, centers, sizes, [True] * 8 + [False])
    origin = np.array([1.0, 0.3, 1.8], np.float32)
    rot = np.asarray(dyn.quat_to_rotmat(dyn.quat_from_euler(0.1, -0.15, 0.2)))
    dirs = np.asarray(cam.ray_directions(16, 24)) @ rot.T
    ours = np.asarray(cam.ray_cast(jnp.asarray(origin), jnp.asarray(dirs), scene), np.float64)
    d64 = dirs.astype(np.float64)
    t = np.zeros(dirs.shape[:2])
    for _ in range(400):
        t = t + _sdf(origin + t[..., None] * d64, scene)
    np.testing.assert_allclose(ours, t, atol=1e-3)
    assert ours.min() < 5.0 and ours.max() > 5.0  # obstacles and far walls both in view
    # depth_image (rotation fused per pixel, slots past num_slots skipped: the last slot is
    # inactive) gives the same frame
    depth = cam.depth_image(
        jnp.asarray(origin), jnp.asarray(rot), cam.ray_directions(16, 24), scene, 0.01, 100.0, 8
    )
    np.testing.assert_allclose(np.asarray(depth) * 100.0, t, atol=1e-3)


def test_camera__noise_and_dropout_statistics():
    """dropout 0.3 zeroes ~30 % of pixels; noise std 0.05 keeps the mean, spreads values."""
    depth = jnp.full((64, 96), 0.5)
    dropped = cam.corrupt(KEY, depth, 0.0, 0.3)
    frac = float(np.mean(np.asarray(dropped) == 0.0))
    assert 0.27 < frac < 0.33
    np.testing.assert_array_equal(np.asarray(dropped)[np.asarray(dropped) > 0], 0.5)
    noisy = np.asarray(cam.corrupt(KEY, depth, 0.05, 0.0))
    assert abs(noisy.mean() - 0.5) < 0.002 and 0.02 < noisy.std() < 0.03


@pytest.mark.parametrize(
    ("h", "w", "ok"), [(16, 24, True), (135, 240, True), (15, 24, False), (32, 241, False)]
)
def test_navigate__camera_resolution_range(h, w, ok):
    if ok:
        env, params = hordax.make("Aerial-Navigate-v0", height=h, width=w)
        assert env.observation_space(params).shape == (STATE_DIM + h * w,)
    else:
        with pytest.raises(ValueError, match=r"camera resolution"):
            hordax.make("Aerial-Navigate-v0", height=h, width=w)


def test_navigate__vehicle_frame_undoes_the_velocity_commands_yaw_rotation():
    """``vehicle_frame`` is the inverse of the controller's Rz(yaw) command mapping."""
    q = dyn.quat_from_euler(0.1, -0.2, 2.5)
    v = jnp.array([1.0, -2.0, 0.5])
    c, s = math.cos(2.5), math.sin(2.5)
    rz = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    np.testing.assert_allclose(rz @ np.asarray(vehicle_frame(q, v)), v, atol=1e-5)


def test_navigate__state_only_observation_without_the_depth_image():
    """``depth_obs=False``: obs ``f32[17]`` equal to the full observation's first 17."""
    env, params = _nav(num_obstacles=2, height=16, width=24, depth_obs=False)
    full, _ = _nav(num_obstacles=2, height=16, width=24)
    assert env.observation_space(params).shape == (STATE_DIM,)
    obs, state = env.reset(KEY, params)
    assert obs.shape == (STATE_DIM,)
    np.testing.assert_array_equal(obs, full.observe(KEY, state, None, params)[:STATE_DIM])
    with pytest.raises(ValueError, match="depth_obs=False"):
        env.split_observation(obs)


@pytest.mark.timeout(60)
def test_navigate__pooled_depth_is_a_min_pool_of_the_camera_frame():
    """``depth_pool=(4, 6)``: obs ``f32[17 + 24]`` = the state, then the 16 x 24 frame
    min-pooled into 4 x 6 cells of 4 x 4 pixels (numpy reference), row-major."""
    env, params = _nav(num_obstacles=4, height=16, width=24, depth_pool=(4, 6))
    assert env.observation_space(params).shape == (STATE_DIM + 24,)
    obs, state = env.reset(KEY, params)
    assert obs.shape == (STATE_DIM + 24,) and obs.dtype == jnp.float32
    frame = np.asarray(env.depth(KEY, state, params))
    ref = frame.reshape(4, 4, 6, 4).min(axis=(1, 3))
    st, pooled = env.split_observation(obs)
    np.testing.assert_array_equal(pooled, ref)
    np.testing.assert_array_equal(obs[STATE_DIM:], ref.reshape(-1))
    np.testing.assert_array_equal(st, obs[:STATE_DIM])
    assert ref.min() > 0.0 and ref.max() <= 1.0
    # a dropped pixel (0) is no reading: it counts as max range, not as a touching obstacle
    d = jnp.asarray(frame).at[0, 0].set(0.0).at[:4, 4:8].set(0.0)
    p = np.asarray(min_pool(d, (4, 6)))
    assert p[0, 0] == frame[:4, :4].reshape(-1)[1:].min() and p[0, 1] == 1.0


def test_navigate__depth_pool_validation():
    with pytest.raises(ValueError, match=r"depth_pool=\[5, 6\].*dividing height=16"):
        hordax.make("Aerial-Navigate-v0", height=16, width=24, depth_pool=(5, 6))
    with pytest.raises(ValueError, match=r"depth_pool=\[4\]"):
        hordax.make("Aerial-Navigate-v0", depth_pool=[4])
    with pytest.raises(ValueError, match=r"depth_pool=\[4, 6\]: needs depth_obs=True"):
        hordax.make("Aerial-Navigate-v0", depth_obs=False, depth_pool=(4, 6))


def test_navigate__params_validation():
    with pytest.raises(ValueError, match=r"params\.num_obstacles=20.*max_obstacles=12"):
        hordax.make("Aerial-Navigate-v0", num_obstacles=20)
    with pytest.raises(ValueError, match=r"params\.depth_dropout=0\.1.*camera_noise=True"):
        hordax.make("Aerial-Navigate-v0", depth_dropout=0.1)
    env, params = hordax.make("Aerial-Navigate-v0", camera_noise=True, depth_dropout=0.1)
    with pytest.raises(ValueError, match=r"params\.quad\.mass"):
        hordax.make("Aerial-Navigate-v0", quad=params.quad.replace(mass=jnp.float32(0.0)))


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"goal_radius": -1.0}, r"params\.goal_radius=-1\.0: must be finite and > 0"),
        ({"collision_radius": -5.0}, r"params\.collision_radius=-5\.0: must be .*>= 0"),
        ({"collision_radius": 0.5}, r"params\.collision_radius=0\.5: .*< 0\.4"),
        ({"goal_x_range": [0.95, 1.5]}, r"params\.goal_x_range=\[0\.95, 1\.5\].*inside"),
        ({"goal_x_range": [0.94, 0.9]}, r"params\.goal_x_range=\[0\.94.*lo <= hi"),
        ({"goal_x_range": [0.05, 0.9]}, r"params\.goal_x_range=\[0\.05.*start"),
        ({"progress_scale": -1.0}, r"params\.progress_scale=-1\.0: must be finite and >= 0"),
        ({"action_penalty": -1.0}, r"params\.action_penalty=-1\.0"),
        ({"action_change_penalty": -1.0}, r"params\.action_change_penalty=-1\.0"),
    ],
)
def test_navigate__task_params_validation(override, message):
    """Goal, crash and reward params that make the task meaningless are refused at make,
    naming the field: a goal outside the room (unreachable: the walls crash first) or at
    the start, a negative goal radius (never reached), a negative collision radius (flying
    through walls and obstacles) or one at which a start can already be a crash (starts are
    0.4 m from the nearest obstacle surface), negative penalties. They were all accepted."""
    with pytest.raises(ValueError, match=message):
        hordax.make("Aerial-Navigate-v0", params=override)


def test_navigate__curriculum_rule():
    """+2 above 70 % success, -1 below 60 %, unchanged between, clipped to the range."""
    assert curriculum_level(4, 0.8) == 6
    assert curriculum_level(4, 0.5) == 3
    assert curriculum_level(4, 0.65) == 4
    assert curriculum_level(15, 0.9, max_level=16) == 16
    assert curriculum_level(0, 0.1) == 0


@functools.cache
def _nav(**kwargs):
    return hordax.make("Aerial-Navigate-v0", **kwargs)


def test_navigate__observation_layout_and_obstacle_count():
    """obs = [goal - pos (vehicle frame), quat, body vel, rates, prev action, depth
    row-major]; depth equals the camera frame; only num_obstacles slots are active."""
    env, params = _nav(num_obstacles=5)
    obs, state = env.reset(KEY, params)
    head, depth = env.split_observation(obs)
    yaw = float(dyn.quat_to_euler(state.quad.quat)[2])
    assert abs(yaw) > 0.01  # the reset's yaw is random: the frames differ
    world = np.asarray(state.goal - state.quad.pos, np.float64)
    c, s = math.cos(yaw), math.sin(yaw)
    expected = [c * world[0] + s * world[1], -s * world[0] + c * world[1], world[2]]
    np.testing.assert_allclose(head[:3], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(head[:3]), np.linalg.norm(world), rtol=1e-6)
    np.testing.assert_array_equal(head[13:], 0.0)
    np.testing.assert_allclose(depth, env.depth(KEY, state, params), rtol=1e-5)
    assert int(np.sum(np.asarray(state.scene.active))) == 5
    assert depth.shape == (32, 48) and float(depth.min()) >= 0.02 and float(depth.max()) <= 1.0


def test_navigate__collision_with_an_obstacle_is_a_crash():
    """A drone placed 0.1 m from a sphere's surface: terminated, reward -100, crashed."""
    env, params = _nav(num_obstacles=5)
    _, state = env.reset(KEY, params)
    c, r = state.scene.center[0], state.scene.size[0, 0]
    kind = int(state.scene.kind[0])
    offset = jnp.array([0.0, 0.0, 0.0]).at[0].set(-(r + 0.1))
    if kind == cam.BOX:
        offset = jnp.array([-(state.scene.size[0, 0] + 0.1), 0.0, 0.0])
    quad = dyn.hover_state(params.quad, c + offset)
    _, _, reward, terminated, info = jax.jit(env.step_env)(
        KEY, state.replace(quad=quad), jnp.zeros(4), params
    )
    assert bool(terminated) and float(reward) == -100.0
    assert float(info["metrics"]["crashed"]) == 1.0


def test_navigate__scripted_velocity_policy_reaches_the_goal_in_an_empty_room():
    """With no obstacles, flying at 1.5 m/s toward the goal (velocity controller, vehicle
    frame) succeeds in every one of 8 episodes within the 1000-step limit."""
    env, params = _nav(num_obstacles=0, height=16, width=24)

    def episode(key):
        obs, state = env.reset(key, params)

        def body(carry, k):
            obs, state, done, success = carry
            local = obs[:3]  # the goal in the vehicle frame: the velocity command's frame
            v = local / jnp.maximum(jnp.linalg.norm(local), 1e-6) * 1.5 / params.ctrl.max_speed
            action = jnp.concatenate([v, jnp.zeros(1)])
            obs2, state2, _, term, info = env.step_env(k, state, action, params)
            success = success | (~done & (info["metrics"]["success"] > 0))
            return (obs2, state2, done | term, success), None

        init = (obs, state, jnp.bool_(False), jnp.bool_(False))
        (_, _, _, success), _ = jax.lax.scan(body, init, jax.random.split(key, 1000))
        return success

    success = jax.jit(jax.vmap(episode))(jax.random.split(KEY, 8))
    assert bool(np.all(success))


@pytest.mark.timeout(120)
def test_navigate__surviving_under_exploration_noise_pays_more_than_crashing():
    """A fresh Gaussian policy (actions N(0, 1) per component, clipped by the env) that
    survives a whole episode in the empty room must earn more than a crash (-100): else
    crashing early is the better return and PPO learns to crash (RESULTS section 18's 94 %).
    With the old action-change penalty (0.05 |a - a_prev|^2) surviving cost ~ -226."""
    env, params = _nav(num_obstacles=0, height=16, width=24)

    def episode(key):
        k_reset, k_run = jax.random.split(key)
        obs, state = env.reset(k_reset, params)

        def body(carry, k):
            state, done, ret = carry
            k_act, k_step = jax.random.split(k)
            action = jax.random.normal(k_act, (4,))
            _, state2, reward, term, _ = env.step_env(k_step, state, action, params)
            ret = ret + jnp.where(done, 0.0, reward)
            return (state2, done | term, ret), None

        init = (state, jnp.bool_(False), jnp.float32(0.0))
        steps = params.max_steps_in_episode
        (_, done, ret), _ = jax.lax.scan(body, init, jax.random.split(k_run, steps))
        return done, ret

    done, ret = jax.jit(jax.vmap(episode))(jax.random.split(KEY, 32))
    done, ret = np.asarray(done), np.asarray(ret)
    assert (~done).sum() >= 16  # most noisy episodes survive the empty room
    assert ret[~done].mean() > float(params.crash_reward) + 30.0


def test_navigate__the_goal_is_never_inside_an_obstacle():
    """Obstacles are centred short of the goal range (x <= 0.90 L - 0.6), which binds only in
    rooms longer than 14 m: in a 40 m room with all 12 slots, 0.7 % of 20,000 goals were
    inside an obstacle (an episode no policy can succeed in); now none of 4,096. In the
    default 10 m room the centres still span x in [2, L - 2]."""
    env, params = _nav()
    reset = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))
    keys = jax.random.split(KEY, 4096)
    for length in (40.0, 10.0):
        room = jnp.array([length, 6.0, 4.0], jnp.float32)
        p = params.replace(num_obstacles=env.max_obstacles, room_size=room)
        _, states = reset(keys, p)
        goal_clear = jax.vmap(cam.clearance)(states.goal, states.scene)
        assert float(jnp.min(goal_clear)) > 0.0
    x = np.asarray(states.scene.center[..., 0])
    assert x.min() >= 2.0 and 7.99 < x.max() <= 8.0  # the default room: x in [2, L - 2]

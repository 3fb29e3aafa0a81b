"""Driving env behaviour: NaN/inf actions for every vehicle model, collision behaviours and
masking, goals reached by a scripted driver (reward and termination fire as documented),
collision-free spawns on every map, ego-frame observations, the PettingZoo adapter."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

import hordax
from hordax import testing
from hordax.envs.driving.env import Drive, DriveLog
from hordax.envs.driving.expert import route_follower
from hordax.envs.driving.geometry import box_corners, boxes_overlap, points_in_quads, rotate
from hordax.envs.driving.maps import MAPS
from hordax.envs.driving.scene import scene_at
from hordax.envs.pettingzoo_adapter import PettingZooParallelEnv

TINY = {"max_partners": 3, "max_road_points": 8}


@pytest.mark.parametrize("dynamics", ["classic", "bicycle", "delta_local", "state"])
def test_env__nan_and_inf_actions_never_make_a_nonfinite_state(dynamics):
    """Every model: NaN, +-inf and huge actions move the agents to finite states (clipped,
    NaN acting as 0); with absurd params (dt 1e30) a non-finite step is refused."""
    env = Drive(
        scenes="procedural-merge",
        num_agents=2,
        num_background=0,
        num_variants=1,
        dynamics=dynamics,
        action_type="continuous",
        **TINY,
    )
    params = env.default_params
    _, state = env.reset(jax.random.key(0), params)
    advance = jax.jit(env.advance_agents)
    space = env.action_space(params)
    for action in testing.nonfinite_actions(space, 7):
        for p in (params, params.replace(dt=1e30, max_speed=1e30)):
            pos, yaw, vel = advance(state, action, p)
            assert np.isfinite(np.asarray(pos)).all() and np.isfinite(np.asarray(yaw)).all()
            assert np.isfinite(np.asarray(vel)).all()
        state = state.replace(
            pos=state.pos.at[:2].set(pos),
            yaw=state.yaw.at[:2].set(yaw),
            vel=state.vel.at[:2].set(vel),
        )


def test_env__nan_and_inf_actions_through_the_whole_step():
    """hordax.testing's check (obs, state, reward finite; obs in space) on a rollout."""
    env = Drive(
        scenes="procedural-merge",
        num_agents=2,
        num_background=2,
        num_variants=1,
        dynamics="bicycle",
        action_type="continuous",
        **TINY,
    )
    testing.check_nonfinite_actions(env, env.default_params, jax.random.key(0), wrap=False)


def test_env__creeping_at_full_lock_is_not_kinematically_infeasible():
    """Waymax's test reads the curvature back from the realized step, ``dyaw / travel``;
    with agents at rest and a gentle start (0.08 m/s^2, 0.4 mm of travel) at the bicycle
    model's full curvature (0.3 = the infeasibility limit), the float32 rounding of the two
    yaws dominated that quotient and 17 % of such steps were flagged infeasible. The same
    start flags every agent when the limit is below the steering actually used."""
    env = Drive(
        scenes="procedural-roundabout",
        num_agents=4,
        num_background=0,
        num_variants=2,
        dynamics="bicycle",
        action_type="continuous",
        **TINY,
    )

    @jax.jit
    def flags(params, accel):
        def one(key):
            _, state = env.reset(key, params)
            action = jnp.tile(jnp.array([[accel, 1.0]], jnp.float32), (4, 1))
            return env.step_env(key, state, action, params)[4]["reward_terms"]["infeasible"]

        return jax.vmap(one)(jax.random.split(jax.random.key(0), 64))

    params = env.default_params.replace(init_speed_max=0.0)  # every agent starts at rest
    assert not np.asarray(flags(params, 0.02)).any()
    assert np.asarray(flags(params.replace(infeasible_curvature=0.2), 1.0)).all()


def test_env__quadratic_steer_spacing_keeps_the_ends_and_refines_the_centre():
    """``steer_spacing="quadratic"``: the same action count, accel values and steer ends as
    the linear grid, steer values ``sign(u) u^2 max_steer`` (smallest nonzero one
    ``max_steer / 36`` with 13 bins), and the step applies them: one step of a moving agent
    turns its heading by the classic model's ``v cos(beta) tan(steer) / length dt`` for
    the grid's smallest left steer. An unknown spacing is refused naming the field."""
    kw = dict(scenes="procedural-merge", num_agents=2, num_background=0, num_variants=1, **TINY)
    lin, quad = Drive(**kw), Drive(steer_spacing="quadratic", **kw)
    params = lin.default_params
    g_lin, g_quad = np.asarray(lin.action_grid(params)), np.asarray(quad.action_grid(params))
    assert g_lin.shape == g_quad.shape == (13 * 7, 2)
    np.testing.assert_array_equal(g_lin[:, 0], g_quad[:, 0])
    steer = np.unique(g_quad[:, 1])
    u = np.linspace(-1, 1, 13)
    np.testing.assert_allclose(steer, np.sign(u) * u**2 * params.max_steer, atol=1e-7)
    np.testing.assert_allclose(steer[[0, -1]], np.unique(g_lin[:, 1])[[0, -1]])
    np.testing.assert_allclose(steer[7], params.max_steer / 36, rtol=1e-6)

    _, state = quad.reset(jax.random.key(0), params)
    small_left = int(np.argmin(np.hypot(g_quad[:, 0], g_quad[:, 1] - steer[7])))
    action = jnp.full((2,), small_left, jnp.int32)
    pos, yaw, vel = jax.jit(quad.advance_agents)(state, action, params)
    speed = float(np.hypot(*np.asarray(state.vel[0])))
    assert speed > 1.0  # the check needs a moving agent
    tan_d = np.tan(steer[7])  # by hand: the classic bicycle at zero acceleration
    rate = speed * np.cos(np.arctan(0.5 * tan_d)) * tan_d / float(state.size[0, 0])
    np.testing.assert_allclose(float(yaw[0]), float(state.yaw[0]) + rate * params.dt, atol=1e-6)
    with pytest.raises(ValueError, match="steer_spacing"):
        Drive(steer_spacing="cubic", **kw)


@functools.cache
def _log_env(behavior: str) -> DriveLog:
    return DriveLog(num_agents=4, max_objects=8, collision_behavior=behavior, **TINY)


def _rear_end(behavior: str, steps: int = 40):
    """Agent 0 (8 m/s) floors it into agent 2 (5 m/s, braking) in the same lane."""
    env = _log_env(behavior)
    params = env.default_params
    grid = np.asarray(env.action_grid(params))  # (accel, steer) per discrete action
    full, brake, coast = (
        int(np.argmin(np.hypot(grid[:, 0] - a, grid[:, 1])))
        for a in (params.max_accel, -params.max_accel, 0.0)
    )
    action = jnp.array([full, coast, brake, coast], jnp.int32)
    obs, state = env.reset(jax.random.key(0), params)
    out = []
    step = jax.jit(env.step)
    for t in range(steps):
        obs, nxt, reward, term, trunc, info = step(jax.random.key(t), state, action, params)
        out.append((state, nxt, np.asarray(reward), info))
        state = nxt
    return out


@pytest.mark.parametrize("behavior", ["remove", "stop", "ignore"])
@pytest.mark.slow
def test_env__collision_behaviours_and_masking(behavior):
    out = _rear_end(behavior)
    hits = [t for t, (_, _, _, info) in enumerate(out) if info["reward_terms"]["collision"][0] > 0]
    assert hits, "agent 0 never reached agent 2"
    t = hits[0]
    prev, nxt, reward, info = out[t]
    assert bool(info["reward_terms"]["collision"][2])  # the overlap is mutual
    np.testing.assert_allclose(reward[[0, 2]], -0.75, atol=1e-6)  # GPUDrive's weight
    assert bool(prev.active[0]) and bool(prev.active[2])  # they acted from active states
    for _, after, _, step_info in out:  # info["agent_mask"]: the returned state's mask
        np.testing.assert_array_equal(np.asarray(step_info["agent_mask"]), after.active)
    if behavior == "ignore":
        assert not bool(info["agent_terminated"][0]) and bool(nxt.active[0])
        later = out[t + 1]
        assert bool(later[3]["agent_mask"][0])
        assert not np.allclose(np.asarray(later[1].pos[0]), np.asarray(nxt.pos[0]))
        return
    assert bool(info["agent_terminated"][0]) and bool(info["agent_terminated"][2])
    assert bool(nxt.exists[0]) == (behavior == "stop")
    for prev, after, reward, info in out[t + 1 :]:
        # done agents: masked, reward 0, frozen
        assert not bool(info["agent_mask"][0]) and not bool(info["agent_terminated"][0])
        assert reward[0] == 0.0 and reward[2] == 0.0
        np.testing.assert_array_equal(np.asarray(after.pos[0]), np.asarray(prev.pos[0]))
        np.testing.assert_array_equal(np.asarray(after.vel)[[0, 2]], 0.0)
    # the bystander in the other lane kept driving and is still unmasked
    assert bool(out[-1][3]["agent_mask"][1])


@pytest.mark.slow
def test_env__scripted_driver_reaches_goals_reward_and_termination():
    env, params = hordax.make("Drive-IntersectionSmall-v0")
    episodes, steps = 24, 91

    def run(key):
        def body(carry, k):
            obs, state = carry
            obs, nxt, reward, term, trunc, info = env.step(
                k, state, route_follower(env, state, params), params
            )
            return (obs, nxt), (reward, term | trunc, info, env.agent_mask(state, params))

        return jax.lax.scan(body, env.reset(key, params), jax.random.split(key, steps))[1]

    keys = jax.random.split(jax.random.key(1), episodes)
    reward, ends, info, mask = jax.jit(jax.vmap(run))(keys)  # mask: active when acting
    reward, ends, mask = np.asarray(reward), np.asarray(ends), np.asarray(mask)
    terms = {k: np.asarray(v) for k, v in info["reward_terms"].items()}
    done = np.asarray(info["agent_terminated"])
    # the reward is the documented weighted sum, and 0 for masked agents
    want = terms["goal"] - 0.75 * terms["collision"] - 0.75 * terms["offroad"]
    np.testing.assert_allclose(reward, np.where(mask, want, 0.0), atol=1e-6)
    assert np.all(reward[~mask] == 0) and not np.any(done & ~mask)
    # arrival ends the agent; the first episode end comes when all are done, or at 91 steps
    assert np.all(done[terms["goal"] > 0])
    first = np.argmax(ends, axis=1)
    # a step's info["agent_mask"] is the mask of the state it returns (within an episode)
    for e in range(episodes):
        got = np.asarray(info["agent_mask"][e, : first[e]])
        np.testing.assert_array_equal(got, mask[e, 1 : first[e] + 1])
    goal_rate = np.asarray(info["metrics"]["goal_rate"])[np.arange(episodes), first]
    crash = np.asarray(info["metrics"]["collision_rate"])[np.arange(episodes), first]
    assert goal_rate.mean() >= 0.75, goal_rate
    assert crash.mean() <= 0.15
    # agents that arrived are masked afterwards until the episode ends
    for e in range(episodes):
        for t, i in zip(*np.nonzero(terms["goal"][e] > 0), strict=True):
            if t + 1 < first[e]:
                assert not mask[e, t + 1 : first[e] + 1, i].any()


def test_env__spawns_are_collision_free_and_on_the_road_on_every_map():
    env = Drive(scenes=tuple(sorted(MAPS)), num_agents=4, num_background=4, **TINY)
    params = env.default_params
    episodes = 96

    def spawn(key, params):
        """One reset and its checks, in one program for all episodes (no per-episode
        host loop): boxes of existing objects pairwise apart, centres on the drivable area."""
        obs, s = env.reset(key, params)
        corners = box_corners(s.pos, s.yaw, s.size[:, 0], s.size[:, 1])
        both = s.exists[:, None] & s.exists[None] & ~jnp.eye(env.num_objects, dtype=bool)
        overlap = boxes_overlap(corners[:, None], corners[None]) & both
        road = scene_at(params.scenes, s.scene).road
        on_road = points_in_quads(s.pos, road.quads, road.quad_valid) | ~s.exists
        return s, jnp.any(overlap), jnp.all(on_road)

    keys = jax.random.split(jax.random.key(2), episodes)
    state, overlap, on_road = jax.jit(jax.vmap(spawn, in_axes=(0, None)))(keys, params)
    assert len(np.unique(np.asarray(state.scene))) == len(MAPS)  # every shipped map drawn
    assert not np.asarray(overlap).any() and np.asarray(on_road).all()
    assert np.all(np.asarray(state.active)) and np.all(np.asarray(state.goal_dist) > 2.0)
    # fresh draws: no two of the 96 episodes start alike (slots, sizes, speeds, goals)
    starts = np.concatenate(
        [np.asarray(state.pos).reshape(episodes, -1), np.asarray(state.goal).reshape(episodes, -1)],
        axis=1,
    )
    assert len({tuple(np.round(row, 3)) for row in starts}) == episodes


def test_env__observations_are_egocentric_and_pick_the_nearest():
    """Rotating and shifting the whole world leaves every observation unchanged; the partner
    rows are the nearest objects within the radius, nearest first."""
    env = Drive(
        scenes="procedural-roundabout",
        num_agents=4,
        num_background=6,
        num_variants=1,
        max_partners=5,
        max_road_points=24,
    )
    params = env.default_params
    obs, state = env.reset(jax.random.key(3), params)
    scene = scene_at(params.scenes, state.scene)
    road = scene.road
    angle, shift = 0.7, jnp.array([30.0, -12.0])
    c, s = jnp.cos(angle), jnp.sin(angle)

    def move(p):
        return rotate(p, c, s) + shift

    road2 = road.replace(
        seg=jnp.concatenate([move(road.seg[:, :2]), move(road.seg[:, 2:])], axis=1),
        quads=move(road.quads),
    )
    state2 = state.replace(
        pos=move(state.pos),
        yaw=state.yaw + angle,
        vel=rotate(state.vel, c, s),
        goal=move(state.goal),
    )
    observe = jax.jit(env._observe)
    parts = env.split_observation(observe(state, scene, params))
    moved = env.split_observation(observe(state2, scene.replace(road=road2), params))
    np.testing.assert_allclose(np.asarray(moved["ego"]), np.asarray(parts["ego"]), atol=2e-5)
    for part in ("partners", "roads"):  # rows as sets: equidistant rows may swap places
        for i in range(4):
            ra, rb = (np.round(np.asarray(x[part][i]), 3) for x in (parts, moved))
            ra, rb = ra[np.lexsort(ra.T[::-1])], rb[np.lexsort(rb.T[::-1])]
            np.testing.assert_allclose(ra, rb, atol=2e-3)
    pos = np.asarray(state.pos)
    for i in range(4):
        d = np.hypot(*(pos - pos[i]).T)
        d[i] = np.inf
        d[(d > params.obs_radius) | ~np.asarray(state.exists)] = np.inf
        nearest = np.sort(d)[:5]
        rows = np.asarray(parts["partners"][i])
        got = np.hypot(rows[:, 1], rows[:, 2]) * params.obs_radius
        valid = rows[:, 0] > 0
        np.testing.assert_allclose(got[valid], nearest[np.isfinite(nearest)], atol=1e-3)


def test_env__pettingzoo_adapter_api_and_seed_tests():
    # one env object for every adapter: they share its compiled reset and step (the env is
    # their static argument), so the seed test's two adapters compile nothing new
    env, params = hordax.make("Drive-IntersectionSmall-v0", max_steps_in_episode=15)

    def make():
        return PettingZooParallelEnv(env, params)

    parallel_api_test(make(), num_cycles=30)
    parallel_seed_test(make)


def test_env__train_test_splits_of_the_scene_batch():
    """split="train" / "test" / "all" hold the training, held-out and both scene lists; a
    procedural kind held out draws other layouts; shapes the policy sees do not change."""
    kw = dict(
        scenes=("procedural-merge", "DEU_Merging-1"),
        test_scenes="procedural-merge",
        num_agents=2,
        num_background=0,
        num_variants=2,
        **TINY,
    )
    envs = {s: Drive(split=s, **kw) for s in ("train", "test", "all")}
    seg = {s: np.asarray(e.default_params.scenes.road.seg) for s, e in envs.items()}
    assert [len(seg[s]) for s in ("train", "test", "all")] == [3, 2, 5]
    # "all" = train then test; the held-out merges are new layouts, the training ones repeat
    np.testing.assert_array_equal(seg["all"][:3, : seg["train"].shape[1]], seg["train"])
    np.testing.assert_array_equal(seg["all"][3:, : seg["test"].shape[1]], seg["test"])
    for i in (0, 1):  # training merges (rows 0, 1) vs held-out merges (rows 3, 4)
        for j in (3, 4):
            assert not np.array_equal(seg["all"][i], seg["all"][j])
    sizes = {(e.observation_size, e.action_space(e.default_params).shape) for e in envs.values()}
    assert len(sizes) == 1
    with pytest.raises(ValueError, match=r"split='test': needs held-out scenes"):
        Drive(split="test", scenes="procedural-merge")
    with pytest.raises(ValueError, match=r"split='valid': must be one of"):
        Drive(split="valid")
    with pytest.raises(ValueError, match=r"test_scenes: 'Atlantis' is not a shipped map"):
        Drive(test_scenes="Atlantis")


def test_env__route_points_are_the_lane_route_ahead_in_the_ego_frame():
    """``route_points=K``: each agent's observation ends with K points of its lane route
    ``route_spacing`` metres of arc apart, ahead of the route point nearest to it, in its ego
    frame; equal to a NumPy reference walked lane by lane; rows past the route's end are
    zeros; the default (0) leaves GPUDrive's layout as it was."""
    kw = dict(scenes="USA_Roundabout-1", num_agents=3, num_background=2, **TINY)
    plain = Drive(**kw)
    env = Drive(route_points=12, route_spacing=4.0, **kw)
    assert env.observation_size == plain.observation_size + 12 * 3
    assert env.split_observation(jnp.zeros(plain.observation_size + 36))["route"].shape == (12, 3)
    assert plain.split_observation(jnp.zeros(plain.observation_size))["route"].shape == (0, 3)
    params = env.default_params
    for seed in range(3):
        key = jax.random.key(seed)
        obs, state = jax.jit(env.reset)(key, params)
        obs_plain, _ = jax.jit(plain.reset)(key, params)
        np.testing.assert_array_equal(np.asarray(obs[:, : plain.observation_size]), obs_plain)
        got = np.asarray(env.split_observation(obs)["route"])
        lanes = scene_at(params.scenes, state.scene).lanes
        pts_all, npts = np.asarray(lanes.pts), np.asarray(lanes.npts)
        for i in range(3):
            lanes_i = [int(x) for x in np.asarray(state.route[i]) if x >= 0]
            poly = np.concatenate([pts_all[j][: npts[j]] for j in lanes_i])
            cum = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(poly, axis=0).T))])
            pos, yaw = np.asarray(state.pos[i]), float(state.yaw[i])
            here = cum[np.argmin(np.hypot(*(poly - pos).T))]
            want = np.zeros((12, 3))
            for k in range(12):
                target = here + 4.0 * (k + 1)
                if target <= cum[-1]:
                    d = poly[np.argmax(cum >= target)] - pos
                    c, s = np.cos(yaw), np.sin(yaw)
                    want[k] = (1.0, (c * d[0] + s * d[1]) / 50.0, (-s * d[0] + c * d[1]) / 50.0)
            np.testing.assert_allclose(got[i], want, atol=2e-4)
            assert got[i, 0, 0] == 1.0 and got[i, 0, 1] > 0.0  # the route starts ahead
    with pytest.raises(ValueError, match=r"route_points=-1: must be an integer >= 0"):
        Drive(route_points=-1, **kw)
    with pytest.raises(ValueError, match=r"route_spacing=0: must be a finite number"):
        Drive(route_spacing=0, **kw)


def test_env__lane_route_rows_are_the_interpolated_route_from_the_agents_foot():
    """``route_features="lane"``: row k is the route ``k * route_spacing`` metres of arc past
    the agent's projection on it (shapely's ``project`` and ``interpolate`` on the route
    polyline), in the ego frame, with cos/sin of the route's direction there minus the
    agent's heading; row 0 is the foot point (lateral offset, heading error). Checked after
    random steps, so the agents are off their lane centres."""
    from shapely.geometry import LineString, Point

    kw = dict(scenes="USA_Roundabout-1", num_agents=3, num_background=2, **TINY)
    env = Drive(route_points=6, route_spacing=4.0, route_features="lane", **kw)
    assert env.observation_size == Drive(**kw).observation_size + 6 * 5
    params = env.default_params
    step = jax.jit(env.step)
    checked = 0
    for seed in range(3):
        key = jax.random.key(seed)
        obs, state = jax.jit(env.reset)(key, params)
        for t in range(6):
            action = jax.random.randint(jax.random.fold_in(key, t), (3,), 0, 91)
            obs, state, *_ = step(jax.random.fold_in(key, 100 + t), state, action, params)
        got = np.asarray(env.split_observation(obs)["route"])
        lanes = scene_at(params.scenes, state.scene).lanes
        pts_all, npts = np.asarray(lanes.pts), np.asarray(lanes.npts)
        for i in range(3):
            if not bool(state.active[i]):
                continue
            lanes_i = [int(x) for x in np.asarray(state.route[i]) if x >= 0]
            poly = np.concatenate([pts_all[j][: npts[j]] for j in lanes_i])
            poly = poly[np.r_[True, np.hypot(*np.diff(poly, axis=0).T) > 0]]
            line = LineString(poly)
            cum = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(poly, axis=0).T))])
            pos, yaw = np.asarray(state.pos[i], np.float64), float(state.yaw[i])
            c, s = np.cos(yaw), np.sin(yaw)
            here = line.project(Point(pos))
            for k in range(6):
                target = here + 4.0 * k
                if target > line.length:
                    np.testing.assert_array_equal(got[i, k], 0.0)
                    continue
                p = np.asarray(line.interpolate(target).coords[0]) - pos
                seg = min(max(int(np.argmax(cum >= target)), 1), len(poly) - 1)
                d = poly[seg] - poly[seg - 1]
                heading = np.arctan2(d[1], d[0]) - yaw
                want = (1.0, (c * p[0] + s * p[1]) / 50, (-s * p[0] + c * p[1]) / 50)
                np.testing.assert_allclose(got[i, k, :3], want, atol=2e-4)
                np.testing.assert_allclose(
                    got[i, k, 3:], (np.cos(heading), np.sin(heading)), atol=2e-3
                )
                checked += 1
    assert checked >= 20  # active agents' rows were compared, not skipped
    with pytest.raises(ValueError, match=r"route_features='frenet': must be one of"):
        Drive(route_features="frenet", **kw)


def test_env__undirected_lines_turn_edges_and_lines_ahead_and_leave_the_rest():
    """``undirected_lines=True``: each road edge or road line row whose drawn direction
    points behind the agent is turned round (cos, sin negated: its direction modulo pi);
    lane rows and every other feature equal the default observation's. A roundabout has
    edges drawn both ways round its ring, so some rows do turn."""
    kw = dict(
        scenes="procedural-roundabout",
        num_agents=4,
        num_background=4,
        num_variants=1,
        max_partners=4,
        max_road_points=24,
    )
    plain, turned = Drive(**kw), Drive(undirected_lines=True, **kw)
    params = plain.default_params
    flipped = 0
    for seed in range(3):
        obs, _ = jax.jit(plain.reset)(jax.random.key(seed), params)
        obs_u, _ = jax.jit(turned.reset)(jax.random.key(seed), params)
        a, b = plain.split_observation(obs), turned.split_observation(obs_u)
        for part in a:
            if part != "roads":
                np.testing.assert_array_equal(np.asarray(a[part]), np.asarray(b[part]))
        ra, rb = np.asarray(a["roads"]), np.asarray(b["roads"])  # [n, K, 11]
        line = (ra[..., 0] > 0) & ((ra[..., 6] > 0) | (ra[..., 7] > 0))  # edge, line one-hot
        back = line & (ra[..., 4] < 0)
        want = ra.copy()
        want[back, 4:6] *= -1
        np.testing.assert_allclose(rb, want, atol=1e-6)
        assert np.all(rb[line, 4] >= 0)
        flipped += int(back.sum())
    assert flipped > 0


def test_render__goal_rings_have_the_params_goal_radius():
    """An agent's goal ring is drawn at ``params.goal_radius`` (the distance it arrives
    within), not a fixed 2 m: frames of one state with a 1 m and a 4 m radius differ."""
    env, params = hordax.make("Drive-IntersectionSmall-v0")
    _, state = env.reset(jax.random.key(0), params)
    small = env.render(state, params.replace(goal_radius=1.0))
    large = env.render(state, params.replace(goal_radius=4.0))
    assert np.any(small != large, axis=-1).sum() > 100

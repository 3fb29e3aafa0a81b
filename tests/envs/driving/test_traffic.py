"""Background traffic's car following (hordax/envs/driving/traffic.py): route sampling against
a NumPy reference, the conflict rule on hand-built scenes, and yielding's effect on crashes."""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hordax.envs.driving.env import Drive
from hordax.envs.driving.expert import route_follower
from hordax.envs.driving.observation import route_samples
from hordax.envs.driving.traffic import conflict_gaps, following_gaps

pytestmark = pytest.mark.timeout(300)


def test_route_samples__interpolate_the_polyline_as_numpy_does():
    """Points at given arc lengths along padded polylines: ``np.interp`` on the arc length
    of the valid points; past the route's end they are marked invalid."""
    rng = np.random.default_rng(0)
    b, n_pts = 3, 12
    pts = np.cumsum(rng.uniform(0.2, 3.0, (b, n_pts, 2)), axis=1).astype(np.float32)
    ok = np.arange(n_pts)[None] < np.array([12, 7, 2])[:, None]
    step = np.linalg.norm(np.diff(pts, axis=1), axis=-1) * (ok[:, 1:] & ok[:, :-1])
    cum = np.concatenate([np.zeros((b, 1)), np.cumsum(step, axis=1)], axis=1).astype(np.float32)
    target = np.sort(rng.uniform(0.0, 40.0, (b, 9)), axis=1).astype(np.float32)
    xy, tangent, valid = route_samples(
        jnp.asarray(pts), jnp.asarray(ok), jnp.asarray(cum), jnp.asarray(target)
    )
    for i in range(b):
        c, p = cum[i, ok[i]], pts[i, ok[i]]
        np.testing.assert_array_equal(np.asarray(valid[i]), target[i] <= c[-1])
        for k in np.nonzero(target[i] <= c[-1])[0]:
            want = [np.interp(target[i, k], c, p[:, 0]), np.interp(target[i, k], c, p[:, 1])]
            np.testing.assert_allclose(np.asarray(xy[i, k]), want, atol=1e-4)
            j = min(max(np.searchsorted(c, target[i, k]), 1), len(c) - 1)
            d = p[j] - p[j - 1]
            np.testing.assert_allclose(np.asarray(tangent[i, k]), d / np.linalg.norm(d), atol=1e-5)


def _scene(other_pos, other_vel, speed=8.0):
    """Object 0 drives a straight route along +x from the origin at ``speed``; object 1 is
    at ``other_pos`` with velocity ``other_vel``. Returns ``(state, route)`` for
    :func:`conflict_gaps` of object 0 alone."""
    other_vel = np.asarray(other_vel, np.float32)
    state = SimpleNamespace(
        pos=jnp.array([[0.0, 0.0], other_pos], jnp.float32),
        vel=jnp.array([[speed, 0.0], other_vel], jnp.float32),
        yaw=jnp.array([0.0, np.arctan2(other_vel[1], other_vel[0])], jnp.float32),
        size=jnp.array([[4.5, 1.9], [4.5, 1.9]], jnp.float32),
        exists=jnp.array([True, True]),
    )
    xs = np.arange(0.0, 61.0, 1.0, dtype=np.float32)
    pts = jnp.asarray(np.stack([xs, np.zeros_like(xs)], -1)[None])
    ok, cum = jnp.ones((1, xs.size), bool), jnp.asarray(xs[None])
    return state, (pts, ok, cum, jnp.zeros(1))


@pytest.mark.parametrize(
    "case, other_pos, other_vel, yields",
    [
        # a car from the right reaches the crossing at x = 15 first (1.2 s vs 1.7 s): yield
        ("crossing, it comes first", (15.0, -12.0), (0.0, 8.0), True),
        # the same car at half the speed comes second (2.4 s): go first
        ("crossing, we come first", (15.0, -12.0), (0.0, 4.0), False),
        # a faster car behind us in our lane: not yielded to (it must brake)
        ("faster car behind", (-8.0, 0.0), (12.0, 0.0), False),
        # oncoming traffic in the adjacent lane, 3.5 m to the left: no conflict
        ("oncoming, next lane", (30.0, 3.5), (-8.0, 0.0), False),
        # a slower car ahead in our lane: a conflict at once (as the lane leader)
        ("slower car ahead", (12.0, 0.0), (5.0, 0.0), True),
        # a stopped car on our route: a conflict at once
        ("stopped on the route", (20.0, 0.5), (0.0, 0.0), True),
    ],
)
def test_conflict_gaps__first_come_first_served(case, other_pos, other_vel, yields):
    state, route = _scene(other_pos, other_vel)
    gap, lead_speed = conflict_gaps(state, 0, 1, *route)
    gap, lead_speed = float(gap[0]), float(lead_speed[0])
    if not yields:
        assert gap == np.inf, (case, gap)
        return
    # the conflict is the first route sample (1.5 m apart) within 0.5 (1.9 + 1.9) + 0.4 =
    # 2.3 m of the other's predicted centre; the gap runs from our front bumper (2.25 m
    # ahead of our centre) to the conflict less the other's half width (0.95 m)
    x = other_pos[0]
    assert x - 2.3 - 3.2 <= gap <= x - 3.2, (case, gap)
    # its speed along our route: 0 when it crosses or stands, its speed when it leads
    np.testing.assert_allclose(lead_speed, other_vel[0], atol=1e-5)


def test_following_gaps__without_a_route_is_the_lane_leader_alone():
    """``route=None``: plain IDM car following, the crossing car is not seen; with the
    route, the conflict ahead of it is nearer and wins."""
    state, route = _scene((15.0, -12.0), (0.0, 8.0))
    gap, _ = following_gaps(state, 0, 1)
    assert float(gap[0]) == np.inf
    gap, speed = following_gaps(state, 0, 1, route)
    assert 8.0 < float(gap[0]) < 12.0 and abs(float(speed[0])) < 1e-5


@pytest.mark.slow
def test_yield_to_crossing__cuts_the_scripted_drivers_crashes():
    """On the held-out rounD roundabout (256 fresh episodes, 4 scripted agents + 4
    background cars): plain IDM traffic and a non-yielding driver collide in 4.4 % of the
    agents (measured); with both yielding at conflicts, 0.2 %, and as many goals reached
    (94.2 -> 96.1 %)."""
    results = {}
    info_keys = ("goal_rate", "collision_rate", "offroad_rate", "infeasible_rate")
    for yields in (False, True):
        env = Drive(
            scenes="DEU_Kackertstrasse-1",
            num_agents=4,
            num_background=4,
            max_partners=8,
            max_road_points=32,
            yield_to_crossing=yields,
        )
        params = env.default_params

        def episode(key, env=env, params=params, yields=yields):
            _, state = env.reset(key, params)

            def body(carry, k):
                state, done, out = carry
                act = route_follower(env, state, params, yield_to_crossing=yields)
                _, state, _, term, trunc, info = env.step(k, state, act, params)
                out = jax.tree.map(lambda o, m: jnp.where(done, o, m), out, info["metrics"])
                return (state, done | term | trunc, out), None

            zeros = {k: jnp.float32(0) for k in info_keys}
            carry = (state, jnp.bool_(False), zeros)
            return jax.lax.scan(body, carry, jax.random.split(key, 91))[0][2]

        out = jax.jit(jax.vmap(episode))(jax.random.split(jax.random.key(123), 256))
        results[yields] = {k: float(np.mean(v)) for k, v in out.items()}
    plain, yielding = results[False], results[True]
    assert plain["collision_rate"] >= 0.02, results
    assert yielding["collision_rate"] <= 0.4 * plain["collision_rate"], results
    assert yielding["collision_rate"] <= 0.015, results
    assert yielding["goal_rate"] >= plain["goal_rate"] - 0.01 and yielding["goal_rate"] >= 0.9


def test_route_arc__is_shapelys_projection_on_the_polyline():
    """The arc length of a point projected on its route polyline (padded, lanes joined by
    zero-length steps) equals shapely's ``LineString.project`` on the valid points."""
    from shapely.geometry import LineString, Point

    from hordax.envs.driving.observation import route_arc

    rng = np.random.default_rng(1)
    b, n_pts = 4, 10
    pts = np.cumsum(rng.uniform(-1.0, 3.0, (b, n_pts, 2)), axis=1).astype(np.float32)
    ok = np.arange(n_pts)[None] < np.array([10, 6, 3, 8])[:, None]
    ok[3, 4:6] = False  # a padded gap between two lanes ...
    pts[3, 6] = pts[3, 3]  # ... whose next lane starts where the last one ended
    step = np.linalg.norm(np.diff(pts, axis=1), axis=-1) * (ok[:, 1:] & ok[:, :-1])
    cum = np.concatenate([np.zeros((b, 1)), np.cumsum(step, axis=1)], axis=1).astype(np.float32)
    for trial in range(20):
        pos = (pts[:, 0] + rng.uniform(-5.0, 15.0, (b, 2))).astype(np.float32)
        got = np.asarray(
            route_arc(jnp.asarray(pts), jnp.asarray(ok), jnp.asarray(cum), jnp.asarray(pos))
        )
        for i in range(b):
            line = LineString(pts[i, ok[i]].astype(np.float64))
            np.testing.assert_allclose(
                got[i], line.project(Point(pos[i])), atol=1e-3, err_msg=f"trial {trial}, route {i}"
            )


def test_route_progress__sums_to_the_route_distance_gained():
    """``Drive(progress="route")``: an agent's progress terms over an episode add up to the
    arc length it gained along its lane route, capped at its goal (shapely's projection on
    the route as the reference), so the shaping is potential-based; the straight-line
    progress of the default differs on the same episodes (the routes curve)."""
    from shapely.geometry import LineString, Point

    from hordax.envs.driving.observation import route_polyline

    kw = dict(
        scenes="procedural-roundabout",
        num_agents=3,
        num_background=0,
        num_variants=2,
        max_partners=3,
        max_road_points=8,
    )
    sums = {}
    for progress in ("route", "euclidean"):
        env = Drive(progress=progress, **kw)
        params = env.default_params

        def run(key, env=env, params=params):
            _, state = env.reset(key, params)

            def body(state, k):
                act = route_follower(env, state, params)
                _, nxt, _, _, info = env.step_env(k, state, act, params)
                return nxt, info["reward_terms"]["progress"]

            final, prog = jax.lax.scan(body, state, jax.random.split(key, 60))
            return state, final, prog.sum(0)

        start, final, total = jax.jit(run)(jax.random.key(3))
        sums[progress] = np.asarray(total)
    lanes = jax.tree.map(lambda x: x[int(start.scene)], params.scenes.lanes)
    pts, ok, _ = (np.asarray(x) for x in route_polyline(lanes, start.route[:3]))
    for i in range(3):
        line = LineString(pts[i, ok[i]].astype(np.float64))
        goal = line.project(Point(np.asarray(start.goal[i], np.float64)))
        a = min(line.project(Point(np.asarray(start.pos[i], np.float64))), goal)
        b = min(line.project(Point(np.asarray(final.pos[i], np.float64))), goal)
        np.testing.assert_allclose(sums["route"][i], b - a, atol=0.05, err_msg=f"agent {i}")
        assert b - a > 5.0  # the scripted agents drove
    assert np.max(np.abs(sums["route"] - sums["euclidean"])) > 1.0, sums

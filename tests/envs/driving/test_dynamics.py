"""Vehicle models against references, the exact inverse of the invertible bicycle, and the
collision geometry against shapely on 10^4 random boxes."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from shapely.geometry import LineString, Point, Polygon

from hordax.envs.driving import dynamics as dyn
from hordax.envs.driving import geometry as geo

DT = 0.1


def _classic_reference(x, y, yaw, v, accel, steer, length):
    """GPUDrive's classic step written out by hand (float64 scalars)."""
    v_mid = v + 0.5 * accel * DT
    beta = math.atan(0.5 * math.tan(steer))
    x += v_mid * math.cos(yaw + beta) * DT
    y += v_mid * math.sin(yaw + beta) * DT
    yaw += v_mid * math.cos(beta) * math.tan(steer) / length * DT
    return x, y, (yaw + math.pi) % (2 * math.pi) - math.pi, v + accel * DT


def test_classic__matches_the_hand_integrated_reference_over_80_steps():
    rng = np.random.default_rng(0)
    accel = rng.uniform(-2, 2, 80)
    steer = rng.uniform(-0.5, 0.5, 80)
    ref = [(3.0, -2.0, 0.4, 6.0)]
    for a, d in zip(accel, steer, strict=True):
        ref.append(_classic_reference(*ref[-1], a, d, 4.5))
    step = jax.jit(dyn.classic_step)
    pos, yaw, speed = jnp.array([3.0, -2.0]), jnp.float32(0.4), jnp.float32(6.0)
    for t in range(80):
        pos, yaw, speed = step(pos, yaw, speed, accel[t], steer[t], 4.5)
        x, y, r_yaw, v = ref[t + 1]
        np.testing.assert_allclose(np.asarray(pos), [x, y], atol=2e-3)
        assert abs(float(geo.wrap_angle(yaw - r_yaw))) < 1e-4 and abs(float(speed) - v) < 1e-4


def test_classic__straight_line_and_steady_turn_radius():
    """No steering: x = v t + a t^2 / 2 exactly. Constant speed and steering: a circle of
    radius length / (cos(beta) tan(delta)) (the kinematic bicycle's turning radius)."""
    pos, yaw, v = jnp.zeros(2), jnp.float32(0.0), jnp.float32(2.0)
    for _ in range(30):
        pos, yaw, v = dyn.classic_step(pos, yaw, v, 1.5, 0.0, 4.5)
    t = 3.0
    np.testing.assert_allclose(np.asarray(pos), [2.0 * t + 0.75 * t * t, 0.0], atol=1e-4)
    delta, length, speed = 0.3, 4.5, 5.0
    beta = math.atan(0.5 * math.tan(delta))
    radius = length / (math.cos(beta) * math.tan(delta))
    pos, yaw, v = jnp.zeros(2), jnp.float32(0.0), jnp.float32(speed)
    pts = []
    for _ in range(200):
        pos, yaw, v = dyn.classic_step(pos, yaw, v, 0.0, delta, length)
        pts.append(np.asarray(pos))
    pts = np.asarray(pts)
    # least-squares circle through the path
    a = np.c_[2 * pts, np.ones(len(pts))]
    cx, cy, c = np.linalg.lstsq(a, (pts**2).sum(1), rcond=None)[0]
    fitted = math.sqrt(c + cx * cx + cy * cy)
    assert abs(fitted - radius) / radius < 2e-3
    assert np.std(np.hypot(pts[:, 0] - cx, pts[:, 1] - cy)) < 1e-3


def test_invertible_bicycle__inverse_recovers_random_actions():
    rng = np.random.default_rng(1)
    n, steps = 64, 40
    accel = rng.uniform(-3, 3, (steps, n)).astype(np.float32)
    curv = rng.uniform(-0.25, 0.25, (steps, n)).astype(np.float32)
    pos = jnp.asarray(rng.uniform(-50, 50, (n, 2)), jnp.float32)
    yaw = jnp.asarray(rng.uniform(-3, 3, n), jnp.float32)
    vel = jnp.asarray(rng.uniform(13, 16, n))[:, None] * dyn.heading(yaw)  # speed stays > 0
    step = jax.jit(dyn.invertible_step)
    inverse = jax.jit(dyn.invertible_inverse)
    for t in range(steps):
        nxt = step(pos, yaw, vel, accel[t], curv[t])
        a_hat, k_hat = inverse(yaw, vel, nxt[1], nxt[2])
        np.testing.assert_allclose(np.asarray(a_hat), accel[t], atol=2e-3)
        np.testing.assert_allclose(np.asarray(k_hat), curv[t], atol=2e-4)
        pos, yaw, vel = nxt


def test_delta_local_and_state_models():
    pos, yaw, vel = dyn.delta_local_step(
        jnp.array([1.0, 2.0]), jnp.float32(math.pi / 2), jnp.array([1.0, 0.5, 0.1])
    )
    np.testing.assert_allclose(np.asarray(pos), [0.5, 3.0], atol=1e-6)  # forward is +y
    np.testing.assert_allclose(np.asarray(vel), [-5.0, 10.0], atol=1e-5)
    assert abs(float(yaw) - (math.pi / 2 + 0.1)) < 1e-6
    pos, yaw, vel = dyn.state_step(jnp.array([4.0, 5.0, math.pi, 3.0]))
    np.testing.assert_allclose(np.asarray(vel), [-3.0, 0.0], atol=1e-5)


def _boxes(rng, k):
    return (
        rng.uniform(-6, 6, (k, 2)),
        rng.uniform(-np.pi, np.pi, k),
        rng.uniform(0.5, 6, k),
        rng.uniform(0.3, 3, k),
    )


def _poly(p, yaw, length, width):
    c = np.asarray(geo.box_corners(jnp.asarray(p), jnp.float32(yaw), length, width), float)
    return Polygon(c)


def test_box_overlap_matches_shapely_on_10000_pairs():
    rng = np.random.default_rng(2)
    k = 10_000
    a, b = _boxes(rng, k), _boxes(rng, k)
    ca = geo.box_corners(*(jnp.asarray(x, jnp.float32) for x in a))
    cb = geo.box_corners(*(jnp.asarray(x, jnp.float32) for x in b))
    got = np.asarray(jax.jit(geo.boxes_overlap)(ca, cb))
    ca, cb = np.asarray(ca, float), np.asarray(cb, float)
    want = np.array([Polygon(ca[i]).intersects(Polygon(cb[i])) for i in range(k)])
    # near-touching pairs may differ by float32 rounding: compare where the gap is clear
    gap = np.array([Polygon(ca[i]).distance(Polygon(cb[i])) for i in range(k)])
    depth = np.array([Polygon(ca[i]).intersection(Polygon(cb[i])).area for i in range(k)])
    clear = (gap > 1e-4) | (depth > 1e-4)
    assert clear.mean() > 0.99 and 0.1 < want.mean() < 0.9  # >= 1000 of each
    np.testing.assert_array_equal(got[clear], want[clear])


def test_segment_box_and_point_in_quad_match_shapely():
    rng = np.random.default_rng(3)
    k = 10_000
    pos, yaw, length, width = _boxes(rng, k)
    seg = rng.uniform(-8, 8, (k, 4))
    got = np.asarray(
        jax.jit(geo.segment_hits_box)(
            jnp.asarray(seg, jnp.float32),
            jnp.asarray(pos, jnp.float32),
            jnp.asarray(yaw, jnp.float32),
            jnp.asarray(length, jnp.float32),
            jnp.asarray(width, jnp.float32),
        )
    )
    corners = np.asarray(
        geo.box_corners(
            jnp.asarray(pos, jnp.float32),
            jnp.asarray(yaw, jnp.float32),
            jnp.asarray(length, jnp.float32),
            jnp.asarray(width, jnp.float32),
        ),
        float,
    )
    polys = [Polygon(corners[i]) for i in range(k)]
    lines = [LineString([seg[i, :2], seg[i, 2:]]) for i in range(k)]
    want = np.array([polys[i].intersects(lines[i]) for i in range(k)])
    clear = np.array(
        [
            polys[i].distance(lines[i]) > 1e-4 or polys[i].intersection(lines[i]).length > 1e-4
            for i in range(k)
        ]
    )
    assert clear.mean() > 0.99 and 0.1 < want.mean() < 0.9  # >= 1000 of each
    np.testing.assert_array_equal(got[clear], want[clear])

    # points in convex quads (boxes as quads)
    pts = rng.uniform(-8, 8, (k, 2))
    inside = jax.jit(
        jax.vmap(lambda p, q: geo.points_in_quads(p[None], q[None], jnp.ones(1, bool))[0])
    )
    got = np.asarray(inside(jnp.asarray(pts, jnp.float32), jnp.asarray(corners, jnp.float32)))
    want = np.array([polys[i].covers(Point(pts[i])) for i in range(k)])
    clear = np.array([polys[i].exterior.distance(Point(pts[i])) > 1e-4 for i in range(k)])
    np.testing.assert_array_equal(got[clear], want[clear])


@pytest.mark.parametrize("gap", [np.inf, 30.0, 5.0])
def test_idm__free_road_and_following(gap):
    class P:
        idm_max_accel, idm_comfort_decel, idm_min_gap, idm_time_headway = 1.5, 2.0, 2.0, 1.5

    a = float(dyn.idm_accel(jnp.float32(10.0), jnp.float32(12.0), jnp.float32(gap), 0.0, P))
    free = 1.5 * (1 - (10 / 12) ** 4)
    if np.isinf(gap):
        assert abs(a - free) < 1e-5
    else:
        s_star = 2.0 + 10.0 * 1.5
        assert abs(a - (free - 1.5 * (s_star / gap) ** 2)) < 1e-4

"""Procedural road layouts (host-side numpy): 4-way intersections, merges, roundabouts.

Each generator draws one layout from a numpy ``Generator`` (arm angles, lengths, lane
widths, radii vary) and returns CommonRoad-style lanelets
(:class:`~hordax.envs.driving.roadgraph.Lanelet`) and extra drivable polygons for
:func:`~hordax.envs.driving.roadgraph.build_map`. Traffic drives on the right; lanes are
built from a centre line and a width (left bound = centre + width/2 along the left normal).
"""

from __future__ import annotations

import numpy as np

from hordax.envs.driving.roadgraph import Lanelet


def _unit(theta: float) -> np.ndarray:
    return np.array([np.cos(theta), np.sin(theta)])


def lanelet(centre: np.ndarray, width: float) -> Lanelet:
    """A lanelet of constant ``width`` around ``centre [p, 2]`` (p >= 2)."""
    d = np.gradient(centre, axis=0)
    d /= np.maximum(np.hypot(d[:, 0], d[:, 1]), 1e-9)[:, None]
    left = np.stack([-d[:, 1], d[:, 0]], axis=1)
    return Lanelet(left=centre + 0.5 * width * left, right=centre - 0.5 * width * left)


def straight(p0: np.ndarray, p1: np.ndarray, step: float = 5.0) -> np.ndarray:
    k = max(1, int(np.ceil(np.hypot(*(p1 - p0)) / step)))
    return p0 + (p1 - p0) * np.linspace(0.0, 1.0, k + 1)[:, None]


def hermite(p0: np.ndarray, yaw0: float, p1: np.ndarray, yaw1: float, step: float = 1.5):
    """Cubic Hermite curve from pose (p0, yaw0) to pose (p1, yaw1)."""
    scale = np.hypot(*(p1 - p0))
    m0, m1 = scale * _unit(yaw0), scale * _unit(yaw1)
    t = np.linspace(0.0, 1.0, max(2, int(np.ceil(scale / step)) + 1))[:, None]
    h00, h10 = 2 * t**3 - 3 * t**2 + 1, t**3 - 2 * t**2 + t
    h01, h11 = -2 * t**3 + 3 * t**2, t**3 - t**2
    return h00 * p0 + h10 * m0 + h01 * p1 + h11 * m1


def arc(radius: float, a0: float, a1: float, step: float = 2.0) -> np.ndarray:
    """Counter-clockwise arc from angle a0 to a1 (a1 > a0) around the origin."""
    k = max(2, int(np.ceil(radius * (a1 - a0) / step)) + 1)
    a = np.linspace(a0, a1, k)
    return radius * np.stack([np.cos(a), np.sin(a)], axis=1)


def _link(lanelets: list[Lanelet], a: int, b: int) -> None:
    lanelets[a].successors.append(b)
    lanelets[b].predecessors.append(a)


def intersection(rng: np.random.Generator) -> tuple[list[Lanelet], list[np.ndarray]]:
    """Four arms (one lane each way) around a junction with every straight and turning
    connection (no U-turns); the junction's box is drivable area."""
    w = rng.uniform(3.2, 3.8)
    r0 = rng.uniform(10.0, 14.0)
    thetas = np.arange(4) * np.pi / 2 + rng.uniform(-0.15, 0.15, 4)
    out: list[Lanelet] = []
    incoming, outgoing = [], []
    for th in thetas:
        u, v = _unit(th), _unit(th + np.pi / 2)
        length = rng.uniform(40.0, 60.0)
        incoming.append(len(out))
        out.append(lanelet(straight(u * (r0 + length) + v * w / 2, u * r0 + v * w / 2), w))
        outgoing.append(len(out))
        out.append(lanelet(straight(u * r0 - v * w / 2, u * (r0 + length) - v * w / 2), w))
    for k, th in enumerate(thetas):
        for j, tj in enumerate(thetas):
            if j == k:
                continue
            p0 = out[incoming[k]]
            p0 = 0.5 * (p0.left[-1] + p0.right[-1])
            p1 = out[outgoing[j]]
            p1 = 0.5 * (p1.left[0] + p1.right[0])
            c = len(out)
            out.append(lanelet(hermite(p0, th + np.pi, p1, tj), w))
            _link(out, incoming[k], c)
            _link(out, c, outgoing[j])
    box = [_unit(th) * r0 + _unit(th + np.pi / 2) * w * side for th in thetas for side in (-1, 1)]
    return out, [np.asarray(box)]


def merge(rng: np.random.Generator) -> tuple[list[Lanelet], list[np.ndarray]]:
    """A two-lane carriageway with an on-ramp joining its right lane."""
    w = rng.uniform(3.3, 3.8)
    x0, xm, x1 = -rng.uniform(80.0, 110.0), rng.uniform(-10.0, 10.0), rng.uniform(70.0, 100.0)
    right_a = lanelet(straight(np.array([x0, -w / 2]), np.array([xm, -w / 2])), w)
    right_b = lanelet(straight(np.array([xm, -w / 2]), np.array([x1, -w / 2])), w)
    left_lane = lanelet(straight(np.array([x0, w / 2]), np.array([x1, w / 2])), w)
    drop = rng.uniform(15.0, 25.0)
    ramp_start = np.array([xm - rng.uniform(70.0, 90.0), -w / 2 - drop])
    ramp = lanelet(hermite(ramp_start, rng.uniform(0.0, 0.15), np.array([xm, -w / 2]), 0.0), w)
    out = [right_a, right_b, left_lane, ramp]
    _link(out, 0, 1)
    _link(out, 3, 1)
    return out, []


def roundabout(rng: np.random.Generator) -> tuple[list[Lanelet], list[np.ndarray]]:
    """A one-lane roundabout (counter-clockwise) with four two-way arms."""
    w = rng.uniform(3.8, 4.5)
    radius = rng.uniform(14.0, 20.0)
    gap = rng.uniform(7.0, 10.0)
    delta = 0.4
    thetas = np.arange(4) * np.pi / 2 + rng.uniform(-0.2, 0.2, 4)
    out: list[Lanelet] = []
    ring_to_exit, exit_to_entry, entry_conn, exit_conn = [], [], [], []
    for k, th in enumerate(thetas):
        nxt = thetas[(k + 1) % 4] + (2 * np.pi if k == 3 else 0.0)
        exit_to_entry.append(len(out))
        out.append(lanelet(arc(radius, th - delta, th + delta), w))
        ring_to_exit.append(len(out))
        out.append(lanelet(arc(radius, th + delta, nxt - delta), w))
    for th in thetas:
        u, v = _unit(th), _unit(th + np.pi / 2)
        length = rng.uniform(35.0, 50.0)
        inc = len(out)
        out.append(
            lanelet(
                straight(u * (radius + gap + length) + v * w / 2, u * (radius + gap) + v * w / 2), w
            )
        )
        og = len(out)
        out.append(
            lanelet(
                straight(u * (radius + gap) - v * w / 2, u * (radius + gap + length) - v * w / 2), w
            )
        )
        entry = radius * _unit(th + delta)
        conn_in = len(out)
        out.append(
            lanelet(
                hermite(u * (radius + gap) + v * w / 2, th + np.pi, entry, th + delta + np.pi / 2),
                w,
            )
        )
        exit_pt = radius * _unit(th - delta)
        conn_out = len(out)
        out.append(
            lanelet(hermite(exit_pt, th - delta + np.pi / 2, u * (radius + gap) - v * w / 2, th), w)
        )
        _link(out, inc, conn_in)
        _link(out, conn_out, og)
        entry_conn.append(conn_in)
        exit_conn.append(conn_out)
    for k in range(4):
        _link(out, exit_to_entry[k], ring_to_exit[k])
        _link(out, entry_conn[k], ring_to_exit[k])
        nk = (k + 1) % 4
        _link(out, ring_to_exit[k], exit_to_entry[nk])
        _link(out, ring_to_exit[k], exit_conn[nk])
    return out, []


GENERATORS = {
    "procedural-intersection": intersection,
    "procedural-merge": merge,
    "procedural-roundabout": roundabout,
}

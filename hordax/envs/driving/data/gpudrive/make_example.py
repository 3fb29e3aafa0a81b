"""Write ``example_scene.json``: a small hand-made scene in GPUDrive's JSON scene format.

    python hordax/envs/driving/data/gpudrive/make_example.py

A straight two-lane road (edges, centre line, lane centres, a crosswalk, a stop sign) with
three controllable cars, one car marked ``mark_as_expert`` (log replay), a pedestrian and
a cyclist that appears after 10 steps. 91 steps at 10 Hz, as GPUDrive's Waymo scenes.
Coordinates are offset by (1000, 2000) like the map frame of real logs.
"""

from __future__ import annotations

import os

import numpy as np

from hordax import strict_json

T = 91
OX, OY = 1000.0, 2000.0


def _track(x0, y0, vx, vy, valid_from=0, **extra):
    t = np.arange(T) * 0.1
    valid = [bool(i >= valid_from) for i in range(T)]
    x, y = x0 + vx * t, y0 + vy * t
    pos = [
        {"x": round(float(a) + OX, 3), "y": round(float(b) + OY, 3), "z": 0.0}
        if ok
        else {"x": -10000.0, "y": -10000.0, "z": -10000.0}
        for a, b, ok in zip(x, y, valid, strict=True)
    ]
    vel = [{"x": vx if ok else -10000.0, "y": vy if ok else -10000.0} for ok in valid]
    heading = [float(round(np.arctan2(vy, vx), 6)) if ok else -10000.0 for ok in valid]
    last = pos[-1]
    return {
        "position": pos,
        "velocity": vel,
        "heading": heading,
        "valid": valid,
        "goalPosition": dict(last),
        **extra,
    }


def _line(points, kind, rid):
    return {
        "geometry": [{"x": float(x) + OX, "y": float(y) + OY, "z": 0.0} for x, y in points],
        "type": kind,
        "id": rid,
        "map_element_id": {
            "road_edge": 15,
            "road_line": 6,
            "lane": 2,
            "crosswalk": 18,
            "stop_sign": 17,
        }[kind],
    }


def scene() -> dict:
    car = {"width": 2.0, "length": 4.6, "height": 1.6, "type": "vehicle"}
    objects = [
        _track(-50.0, -1.75, 8.0, 0.0, id=1, **car),
        _track(-40.0, 1.75, 6.0, 0.0, id=2, **car),
        _track(-20.0, -1.75, 5.0, 0.0, id=3, **car),
        _track(0.0, 1.75, 4.0, 0.0, id=4, mark_as_expert=True, **car),
        _track(40.0, -8.0, 0.0, 1.2, id=5, width=0.6, length=0.6, height=1.8, type="pedestrian"),
        _track(
            -55.0,
            -4.5,
            4.0,
            0.0,
            valid_from=10,
            id=6,
            width=0.7,
            length=1.8,
            height=1.7,
            type="cyclist",
        ),
    ]
    xs = np.linspace(-60.0, 60.0, 13)
    roads = [
        _line([(x, -3.5) for x in xs], "road_edge", 100),
        _line([(x, 3.5) for x in xs], "road_edge", 101),
        _line([(x, 0.0) for x in xs], "road_line", 102),
        _line([(x, -1.75) for x in xs], "lane", 103),
        _line([(x, 1.75) for x in xs], "lane", 104),
        _line([(20, -3.5), (24, -3.5), (24, 3.5), (20, 3.5), (20, -3.5)], "crosswalk", 105),
        _line([(30.0, 4.0)], "stop_sign", 106),
    ]
    return {
        "name": "example_scene.json",
        "scenario_id": "hordax-example-0",
        "objects": objects,
        "roads": roads,
        "tl_states": {},
        "metadata": {
            "sdc_track_index": 0,
            "tracks_to_predict": [{"track_index": 0, "difficulty": 0}],
            "objects_of_interest": [],
        },
    }


if __name__ == "__main__":
    path = os.path.join(os.path.dirname(__file__), "example_scene.json")
    with open(path, "w") as f:
        strict_json.dump(scene(), f, separators=(",", ":"))
    print(path, os.path.getsize(path), "bytes")

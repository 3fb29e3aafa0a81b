"""GPUDrive's JSON scene format: load (validated), write, and turn into env arrays.

One file per scene (anchors: GPUDrive ``data/processed``): ``objects`` (each with
``position`` (T ``{x, y, z}``), ``velocity`` (T ``{x, y}``), ``heading`` (T floats),
``valid`` (T bools), ``width``, ``length``, ``height``, ``goalPosition`` ``{x, y, z}``,
``type`` ``vehicle | pedestrian | cyclist`` (or ``unset | other``: loaded, not simulated,
as in GPUDrive), ``id``, optional ``mark_as_expert``),
``roads`` (each with ``geometry`` (``{x, y}`` points), ``type`` ``road_edge | road_line |
lane | crosswalk | speed_bump | stop_sign`` (``driveway`` is read as ``other``), ``id``),
``name``, ``scenario_id``, ``tl_states``, ``metadata``. Files converted from the Waymo Open
Motion Dataset by GPUDrive load unchanged (T = 91).

:func:`load` checks every field it uses and raises one ``ValueError`` naming the file and
the field (``scene.json: objects[3].position[17].x = nan: must be a finite number``).
Values of invalid steps are not used (GPUDrive writes -10000 there).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from typing import Any

import numpy as np

from hordax.envs.driving.roadgraph import ROAD_TYPES, densify, simplify

OBJECT_TYPES = {"vehicle": 1, "pedestrian": 2, "cyclist": 3}
#: the other object types GPUDrive's Waymo converter writes (WOMD's ``TYPE_UNSET`` and
#: ``TYPE_OTHER`` tracks): GPUDrive's simulator reads them as invalid objects and does not
#: simulate them; :func:`load` keeps them (``dump`` writes them back), :func:`log_arrays`
#: leaves them out of the env's object slots
UNSIMULATED_TYPES = ("unset", "other")
JSON_ROAD_TYPES = {
    "road_edge": "road_edge",
    "road_line": "road_line",
    "lane": "lane",
    "crosswalk": "crosswalk",
    "speed_bump": "other",
    "stop_sign": "other",
    "driveway": "other",
}
EXAMPLE = os.path.join(os.path.dirname(__file__), "data", "gpudrive", "example_scene.json")


@dataclasses.dataclass
class JsonScene:
    """A scene as in the file (world coordinates, every object and road)."""

    name: str
    scenario_id: str
    pos: np.ndarray  # f64[O, T, 2]
    vel: np.ndarray  # f64[O, T, 2]
    heading: np.ndarray  # f64[O, T]
    valid: np.ndarray  # bool[O, T]
    size: np.ndarray  # f64[O, 3] length, width, height
    goal: np.ndarray  # f64[O, 2]
    kind: list  # O type names
    ids: list
    expert: np.ndarray  # bool[O]
    roads: list  # (points f64[k, 2], type name, id)
    metadata: dict
    tl_states: Any


class _Reader:
    def __init__(self, path: str):
        self.path = os.path.basename(str(path))

    def fail(self, field: str, msg: str):
        raise ValueError(f"{self.path}: {field}: {msg}")

    def get(self, obj: Any, key: str, field: str, kind: type | tuple = object) -> Any:
        if not isinstance(obj, dict):
            self.fail(field or "<file>", f"must be a JSON object, got {type(obj).__name__}")
        where = f"{field}.{key}" if field else key
        if key not in obj:
            self.fail(where, "missing")
        value = obj[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        # JSON true/false are Python bools, which are ints: not numbers here
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            names = "/".join(k.__name__ for k in kinds)
            self.fail(where, f"must be {names}, got {type(value).__name__}")
        return value

    def number(self, obj: Any, key: str, field: str, check: bool = True) -> float:
        v = self.get(obj, key, field, (int, float))
        if check and not math.isfinite(v):
            self.fail(f"{field}.{key}", f"= {v}: must be a finite number")
        return float(v)

    def series(self, obj: dict, key: str, field: str, length: int | None) -> list:
        v = self.get(obj, key, field, list)
        if length is not None and len(v) != length:
            self.fail(
                f"{field}.{key}", f"has {len(v)} entries, expected {length} (as {field}.position)"
            )
        return v


def load(path: str) -> JsonScene:
    """Read and validate one GPUDrive JSON scene."""
    r = _Reader(path)
    try:
        with open(path) as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        r.fail("<file>", f"not valid JSON ({e})")
    if not isinstance(data, dict):
        r.fail("<file>", "the top level must be a JSON object")
    objects = r.get(data, "objects", "", list)
    roads = r.get(data, "roads", "", list)
    if not objects:
        r.fail("objects", "is empty: a scene needs at least one object")
    steps = None
    pos, vel, head, valid, size, goal, kind, ids, expert = ([] for _ in range(9))
    for i, o in enumerate(objects):
        f = f"objects[{i}]"
        positions = r.series(o, "position", f, None)
        steps = len(positions) if steps is None else steps
        if len(positions) != steps:
            r.fail(
                f"{f}.position",
                f"has {len(positions)} entries, expected {steps} (objects[0] has that many)",
            )
        if steps < 2:
            r.fail(f"{f}.position", f"has {steps} entries: a log needs at least 2 steps")
        ok = r.series(o, "valid", f, steps)
        for t, v in enumerate(ok):
            if not isinstance(v, bool | int) or v not in (0, 1):
                r.fail(f"{f}.valid[{t}]", f"= {v!r}: must be a bool")
        ok = [bool(v) for v in ok]
        vels, heads = r.series(o, "velocity", f, steps), r.series(o, "heading", f, steps)
        p = np.zeros((steps, 2))
        v_ = np.zeros((steps, 2))
        h = np.zeros(steps)
        for t in range(steps):
            check = ok[t]  # invalid steps hold placeholders (-10000) that are never used
            p[t] = [r.number(positions[t], a, f"{f}.position[{t}]", check) for a in "xy"]
            v_[t] = [r.number(vels[t], a, f"{f}.velocity[{t}]", check) for a in "xy"]
            hv = heads[t]
            if (
                not isinstance(hv, int | float)
                or isinstance(hv, bool)
                or (check and not math.isfinite(hv))
            ):
                r.fail(f"{f}.heading[{t}]", f"= {hv!r}: must be a finite number")
            h[t] = hv
        dims = [r.number(o, k, f) for k in ("length", "width")]
        height = (
            float(o.get("height", 0.0)) if isinstance(o.get("height", 0.0), int | float) else 0.0
        )
        if min(dims) <= 0:
            r.fail(f"{f}.length/width", f"= {dims}: must be > 0")
        t_name = r.get(o, "type", f, str)
        if t_name not in OBJECT_TYPES and t_name not in UNSIMULATED_TYPES:
            r.fail(
                f"{f}.type",
                f"= {t_name!r}: must be one of {sorted(OBJECT_TYPES) + list(UNSIMULATED_TYPES)}",
            )
        g = r.get(o, "goalPosition", f, dict)
        goal.append([r.number(g, a, f"{f}.goalPosition") for a in "xy"])
        pos.append(p)
        vel.append(v_)
        head.append(h)
        valid.append(ok)
        size.append(dims + [height])
        kind.append(t_name)
        ids.append(o.get("id", i))
        expert.append(bool(o.get("mark_as_expert", False)))
    road_list = []
    for j, rd in enumerate(roads):
        f = f"roads[{j}]"
        geometry = r.get(rd, "geometry", f, list)
        if not geometry:
            r.fail(f"{f}.geometry", "is empty")
        pts = np.array(
            [[r.number(q, a, f"{f}.geometry[{k}]") for a in "xy"] for k, q in enumerate(geometry)]
        )
        t_name = r.get(rd, "type", f, str)
        if t_name not in JSON_ROAD_TYPES:
            r.fail(f"{f}.type", f"= {t_name!r}: must be one of {sorted(JSON_ROAD_TYPES)}")
        road_list.append((pts, t_name, rd.get("id", j)))
    return JsonScene(
        name=str(data.get("name", os.path.basename(path))),
        scenario_id=str(data.get("scenario_id", "")),
        pos=np.asarray(pos),
        vel=np.asarray(vel),
        heading=np.asarray(head),
        valid=np.asarray(valid, bool),
        size=np.asarray(size),
        goal=np.asarray(goal),
        kind=kind,
        ids=ids,
        expert=np.asarray(expert, bool),
        roads=road_list,
        metadata=data.get("metadata", {}),
        tl_states=data.get("tl_states", {}),
    )


def dump(scene: JsonScene) -> dict:
    """The scene as a GPUDrive JSON object (the inverse of :func:`load`)."""
    objects = []
    for i in range(len(scene.kind)):
        objects.append(
            {
                "position": [{"x": float(x), "y": float(y), "z": 0.0} for x, y in scene.pos[i]],
                "velocity": [{"x": float(x), "y": float(y)} for x, y in scene.vel[i]],
                "heading": [float(h) for h in scene.heading[i]],
                "valid": [bool(v) for v in scene.valid[i]],
                "length": float(scene.size[i, 0]),
                "width": float(scene.size[i, 1]),
                "height": float(scene.size[i, 2]),
                "goalPosition": {
                    "x": float(scene.goal[i, 0]),
                    "y": float(scene.goal[i, 1]),
                    "z": 0.0,
                },
                "type": scene.kind[i],
                "id": scene.ids[i],
                "mark_as_expert": bool(scene.expert[i]),
            }
        )
    roads = [
        {"geometry": [{"x": float(x), "y": float(y)} for x, y in pts], "type": t, "id": rid}
        for pts, t, rid in scene.roads
    ]
    return {
        "name": scene.name,
        "scenario_id": scene.scenario_id,
        "objects": objects,
        "roads": roads,
        "tl_states": scene.tl_states,
        "metadata": scene.metadata,
    }


@dataclasses.dataclass
class LogArrays:
    """One scene's env arrays (numpy, recentred): roads and object slots (controlled first)."""

    road_seg: np.ndarray
    road_type: np.ndarray
    traj: np.ndarray  # f32[M, T, 5]
    valid: np.ndarray  # bool[M, T]
    size: np.ndarray  # f32[M, 2]
    kind: np.ndarray  # i32[M]
    goal: np.ndarray  # f32[M, 2]
    controlled: np.ndarray  # bool[M]


def log_arrays(
    scene: JsonScene, path: str, num_agents: int, max_objects: int, goal_radius: float = 2.0
) -> LogArrays:
    """Pick the controlled agents (vehicles valid at step 0, not ``mark_as_expert``, goal
    farther than ``goal_radius``: GPUDrive's ``all_non_trivial``; the first ``num_agents`` in
    file order), put them in slots ``0..num_agents-1`` and every other object that is ever
    valid after them (objects typed ``unset`` or ``other`` are left out, as GPUDrive does);
    recentre on the mean of the simulated objects' valid positions."""
    name = os.path.basename(str(path))
    simulated = np.array([k in OBJECT_TYPES for k in scene.kind])  # not 'unset' / 'other'
    ever = scene.valid.any(1) & simulated
    start_ok = scene.valid[:, 0]
    trivial = np.hypot(*(scene.goal - scene.pos[:, 0]).T) <= goal_radius
    can = np.array([k == "vehicle" for k in scene.kind]) & start_ok & ~scene.expert & ~trivial
    ctrl = list(np.flatnonzero(can)[:num_agents])
    if not ctrl:
        raise ValueError(
            f"{name}: objects: no controllable vehicle (type 'vehicle', valid at "
            "step 0, not mark_as_expert, goal farther than goal_radius)"
        )
    others = [i for i in np.flatnonzero(ever) if i not in ctrl]
    if num_agents + len(others) > max_objects:
        raise ValueError(
            f"{name}: objects: {len(others)} objects besides the {num_agents} agent slots, "
            f"but max_objects={max_objects} leaves {max_objects - num_agents} slots: raise "
            "max_objects"
        )
    offset = scene.pos[scene.valid & simulated[:, None]].mean(0)
    m, steps = max_objects, scene.pos.shape[1]
    slots = ctrl + [-1] * (num_agents - len(ctrl)) + others
    slots += [-1] * (m - len(slots))
    traj = np.zeros((m, steps, 5), np.float32)
    valid = np.zeros((m, steps), bool)
    size = np.ones((m, 2), np.float32)
    kind = np.zeros(m, np.int32)
    goal = np.zeros((m, 2), np.float32)
    for k, i in enumerate(slots):
        if i < 0:
            continue
        ok = scene.valid[i]
        traj[k, :, 0:2] = np.where(ok[:, None], scene.pos[i] - offset, 0.0)
        traj[k, :, 2] = np.where(ok, scene.heading[i], 0.0)
        traj[k, :, 3:5] = np.where(ok[:, None], scene.vel[i], 0.0)
        valid[k] = ok
        size[k] = scene.size[i, :2]
        kind[k] = OBJECT_TYPES[scene.kind[i]]
        goal[k] = scene.goal[i] - offset
    segs, types = [], []
    for pts, t_name, _ in scene.roads:
        pts = pts - offset
        if len(pts) > 1:
            pts = densify(pts[simplify([pts], 0.1)], 10.0)
        pair = np.concatenate([pts[:-1], pts[1:]], axis=1) if len(pts) > 1 else np.tile(pts, 2)
        segs.append(pair)
        types += [ROAD_TYPES[JSON_ROAD_TYPES[t_name]]] * len(pair)
    return LogArrays(
        road_seg=np.concatenate(segs).astype(np.float32) if segs else np.zeros((0, 4), np.float32),
        road_type=np.asarray(types, np.int32),
        traj=traj,
        valid=valid,
        size=size,
        kind=kind,
        goal=goal,
        controlled=np.arange(m) < len(ctrl),
    )
